"""`deepspeech2`: Deep Speech 2 (Amodei et al. 2016), task "ctc".

Input: a spectrogram (T frames x F features) per sample (F = 161 for 20 ms
windows at 16 kHz, as in DS2 and deepspeech.pytorch). Front end: two 2D
convolutions over (time, frequency), `conv_channels` filters each, no bias
(batch norm follows), each followed by batch norm (eps 1e-5, running-average
momentum 0.1 in torch's convention = decay 0.9 in Keras/Flax) and a ReLU
clipped at 20 (hardtanh(0, 20)):

    conv1: kernel 11 (time) x 41 (freq), stride 2 x 2, zero padding 5 x 20
    conv2: kernel 11 (time) x 21 (freq), stride 1 x 2, zero padding 5 x 10

(the DS2 paper's "2-layer 2D" front end with deepspeech.pytorch's paddings):
T' = ceil(T / 2) output frames, F2 = ceil(ceil(F / 2) / 2) frequency bins.
Then `rnn_layers` bidirectional recurrent layers (`rnn` = "gru" as in the DS2
paper, or "lstm"; `hidden` units per direction, directions merged by
concatenation, no batch norm between them) and a dense layer 2*hidden ->
classes (the alphabet incl. blank: 29 = blank + 28 symbols for English).
Logits (T', classes), trained with CTC (blank id 0).

Training loss: per-utterance CTC negative log-likelihood divided by the
utterance's label length, averaged over the batch (torch's F.ctc_loss
reduction "mean"; TF and optax compute the same quantity explicitly).

"Accuracy" for ctc is 1 - character error rate of greedy (best-path)
decoding on the test split: per frame argmax, repeats merged, blanks dropped,
Levenshtein distance to the label summed over utterances and divided by the
total label length (see `dlbench.models.deepspeech2.ctc`), clipped at 0.

Recurrent bias and init conventions: see `dlbench.models.lstm`.
Defaults (GRU, 5 layers x 800, 32 channels, F = 161, 29 symbols):
56,563,133 trainable parameters (derived; DS2 publishes no count for it).
"""

from __future__ import annotations

from dlbench.models.lstm import GATES, rnn_params
from dlbench.models.spec import DEPTH, ModelSpec, Shape, batchnorm_params, conv_out, dense_params

# (kernel, stride, padding) along time and frequency for the two convolutions.
CONV1 = {"kernel": (11, 41), "stride": (2, 2), "padding": (5, 20)}
CONV2 = {"kernel": (11, 21), "stride": (1, 2), "padding": (5, 10)}
CLIP = 20.0
BN_EPS = 1e-5
BN_DECAY = 0.9  # Keras/Flax momentum; torch momentum = 1 - 0.9 = 0.1 (its default)


def front_end_out(t: int, f: int) -> tuple[int, int]:
    """(frames, frequency bins) after the two convolutions."""
    for conv in (CONV1, CONV2):
        t = conv_out(t, conv["kernel"][0], conv["padding"][0], conv["stride"][0])
        f = conv_out(f, conv["kernel"][1], conv["padding"][1], conv["stride"][1])
    return t, f


def check_input(shape: Shape) -> str | None:
    if len(shape) != 2:
        return f"deepspeech2 takes spectrograms (T, F), got input shape {shape}"
    return None


def check_options(rnn: str, rnn_layers: int, hidden: int, conv_channels: int) -> None:
    if rnn not in GATES:
        raise ValueError(f"deepspeech2 rnn must be one of {', '.join(GATES)}, got {rnn!r}")
    for name, value in (("rnn_layers", rnn_layers), ("hidden", hidden), ("conv_channels", conv_channels)):
        if value < 1:
            raise ValueError(f"deepspeech2 {name} must be >= 1, got {value}")


def param_count(shape: Shape, classes: int, *, rnn: str, rnn_layers: int, hidden: int, conv_channels: int) -> int:
    check_options(rnn, rnn_layers, hidden, conv_channels)
    _, f2 = front_end_out(*shape)
    c = conv_channels
    kt1, kf1 = CONV1["kernel"]
    kt2, kf2 = CONV2["kernel"]
    total = kt1 * kf1 * 1 * c + batchnorm_params(c) + kt2 * kf2 * c * c + batchnorm_params(c)
    for layer in range(rnn_layers):
        total += 2 * rnn_params(rnn, c * f2 if layer == 0 else 2 * hidden, hidden)
    return total + dense_params(2 * hidden, classes)


SPEC = ModelSpec(
    name="deepspeech2",
    description="Deep Speech 2: 2D conv front end, bidirectional GRU/LSTM layers, CTC over an alphabet",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_source="no published count for this configuration; 56,563,133 at the defaults "
    "(F = 161, 29 symbols) is derived from the architecture",
    options={"rnn": "gru", "rnn_layers": 5, "hidden": 800, "conv_channels": 32},
    tiny_options={"rnn_layers": 1, "hidden": 32, "conv_channels": 8},
    option_choices={"rnn": tuple(GATES)},
    option_ranges={"rnn_layers": DEPTH},
    tiny_shape=(32, 16),
    input_kind="spectrogram",
    task="ctc",
    # Synthetic data: 2 s utterances (200 frames of 10 ms) x 161 features, 29 symbols incl. blank.
    synthetic_data=lambda options: ((200, 161), 29),
)
