"""`lstm`: a word-level LSTM language model (Zaremba et al. 2014; PyTorch's
word_language_model example), task "next-token".

embedding (vocab x embed) -> dropout -> `layers` LSTM layers of `hidden` units
(dropout between layers) -> dropout -> dense hidden -> vocab (logits per
position). Input: token ids (T,) per sample; output: logits (T, vocab),
trained with the mean cross-entropy over every position. No weight tying; each
sequence starts from a zero state (no hidden state carried across batches).
`vocab` None means the dataset's class count (a next-token dataset's classes
are its vocabulary). Defaults are Zaremba's "medium" model (2 x 650, dropout
0.5, vocabulary 10,000 as in Penn Treebank, sequence length 35: the dataset's
T, not a model option): 19,775,200 trainable parameters at vocab 10,000.

Bias convention (equal trainable counts in all three frameworks): ONE bias
vector per gate, 4H per LSTM layer, as in Keras and Flax. torch's nn.LSTM
always has two (b_ih and b_hh, 8H); the torch model keeps nn.LSTM (its fused
oneDNN/cuDNN kernels) and freezes every b_hh at zero (requires_grad False), so
the trainable count and the function class are those of one bias (b_ih + b_hh
only ever appears as a sum). GRU layers (deepspeech2) keep torch's and Keras'
reset_after form with two bias vectors (6H); Flax uses a cell with that same
layout (see `dlbench.models.lstm.jax`).

init "glorot-uniform" for recurrent layers means, in every framework, what
Keras does by default: Glorot-uniform over the fused input kernel (fan_in =
input features, fan_out = gates * hidden), orthogonal recurrent kernel (the
fused hidden x gates*hidden matrix), zero biases (no forget-gate bias of 1).
Embeddings: uniform in [-0.05, 0.05] (Keras' Embedding default).
"""

from __future__ import annotations

from typing import Any

from dlbench.models.spec import DEPTH, FRACTION, WIDTH, ModelSpec, Shape, dense_params

GATES = {"lstm": 4, "gru": 3}
EMBED_INIT_LIMIT = 0.05  # glorot-uniform mode: embeddings ~ U(-0.05, 0.05), Keras' default


def rnn_params(kind: str, in_features: int, hidden: int) -> int:
    """Trainable parameters of one recurrent layer, one direction.

    LSTM: 4H(in + H) + 4H (one bias per gate). GRU (reset_after, cuDNN / torch /
    Keras layout): 3H(in + H) + 6H (input and recurrent bias per gate).
    """
    if kind not in GATES:
        raise ValueError(f"recurrent layer type {kind!r} is not one of {', '.join(GATES)}")
    g = GATES[kind]
    biases = 4 * hidden if kind == "lstm" else 6 * hidden
    return g * hidden * (in_features + hidden) + biases


def check_input(shape: Shape) -> str | None:
    if len(shape) != 1:
        return f"lstm takes token sequences (T,), got input shape {shape}"
    return None


def resolve_vocab(vocab: Any, classes: int) -> int:
    if vocab is None:
        return classes
    if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab < classes:
        raise ValueError(f"lstm vocab must be None (= classes) or an integer >= classes ({classes}), got {vocab!r}")
    return vocab


def check_options(embed: int, hidden: int, layers: int, dropout: float) -> None:
    for name, value in (("embed", embed), ("hidden", hidden), ("layers", layers)):
        if value < 1:
            raise ValueError(f"lstm {name} must be >= 1, got {value}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"lstm dropout must be in [0, 1), got {dropout}")


def param_count(
    shape: Shape, classes: int, *, vocab: int | None, embed: int, hidden: int, layers: int, dropout: float
) -> int:
    check_options(embed, hidden, layers, dropout)
    v = resolve_vocab(vocab, classes)
    total = v * embed
    for layer in range(layers):
        total += rnn_params("lstm", embed if layer == 0 else hidden, hidden)
    return total + dense_params(hidden, classes)


SPEC = ModelSpec(
    name="lstm",
    description="word-level LSTM language model: embedding, stacked LSTM, dense to vocab (Zaremba medium)",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_source="no published count for this exact model; 19,775,200 at the defaults is derived "
    "(Zaremba's medium model with one bias per LSTM gate)",
    options={"vocab": None, "embed": 650, "hidden": 650, "layers": 2, "dropout": 0.5},
    tiny_options={"embed": 32, "hidden": 32, "layers": 2, "dropout": 0.1},
    # vocab None: the dataset's classes (checked against them when the model is built).
    option_ranges={"vocab": WIDTH, "layers": DEPTH, "dropout": FRACTION},
    tiny_shape=(12,),
    input_kind="tokens",
    task="next-token",
    # Synthetic data: sequences of 35 tokens (Zaremba's unroll) over the model's vocabulary.
    synthetic_data=lambda options: ((35,), options.get("vocab") or 10_000),
)
