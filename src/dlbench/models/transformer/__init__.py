"""`transformer`: a BERT-style Transformer encoder classifier, task "classify".

token embedding (vocab x hidden) + learned position embedding (max_len x
hidden) -> LayerNorm -> dropout -> `layers` post-LN encoder layers -> the
first token's vector (first-token pooling, BERT's [CLS] position) -> dense
hidden -> classes (logits). One encoder layer, as torch's
nn.TransformerEncoderLayer(norm_first=False, activation="gelu") computes it:

    x = LayerNorm(x + Dropout(SelfAttention(x)))        # heads, bias on Q, K, V, O;
                                                        # dropout on attention weights
    x = LayerNorm(x + Dropout(W2 Dropout(GELU(W1 x))))  # W1: hidden -> ff, W2: ff -> hidden

GELU is the exact (erf) form in every framework (BERT's; Flax's default is the
tanh approximation and is overridden); every LayerNorm uses eps 1e-12 (BERT's).
No attention mask: every synthetic sequence is full length. Input: token ids
(T,) with T <= max_len.

Options: `preset` "small" (4 layers, hidden 256, 4 heads, ff 1024, vocab 8000,
max_len 128) or "bert_base" (12 layers, hidden 768, 12 heads, ff 3072, vocab
30,522, max_len 512); any of layers, hidden, heads, ff, vocab, max_len given
explicitly overrides the preset; dropout 0.1 (BERT's).

Relation to BERT-base's published size: bert-base-uncased has 109,482,240
parameters = embeddings (word 30,522 x 768, position 512 x 768, token type
2 x 768, LayerNorm 2 x 768) + 12 layers x 7,087,872 + pooler (768 x 768 + 768).
This model has the word and position embeddings, the embedding LayerNorm and
the 12 identical layers, but no token-type embeddings (-1,536) and no pooler
(-590,592), and adds the classifier (768 x classes + classes). With 2 classes:
109,482,240 - 1,536 - 590,592 + 1,538 = 108,891,650 trainable parameters
(asserted in tests/conformance/test_zoo_sequence.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.models.spec import DEPTH, FRACTION, WIDTH, ModelSpec, Shape, dense_params

PRESETS: dict[str, dict[str, int]] = {
    "small": {"layers": 4, "hidden": 256, "heads": 4, "ff": 1024, "vocab": 8000, "max_len": 128},
    "bert_base": {"layers": 12, "hidden": 768, "heads": 12, "ff": 3072, "vocab": 30_522, "max_len": 512},
}
SIZES = ("layers", "hidden", "heads", "ff", "vocab", "max_len")
LAYER_NORM_EPS = 1e-12
EMBED_INIT_LIMIT = 0.05  # glorot-uniform mode: embeddings ~ U(-0.05, 0.05), as in dlbench.models.lstm
BERT_BASE_UNCASED = 109_482_240  # published (Devlin et al. 2019; Hugging Face bert-base-uncased)


def config(options: Mapping[str, Any]) -> dict[str, Any]:
    """The preset overlaid with explicit sizes; validated. Keys: SIZES + dropout."""
    preset = options.get("preset", "small")
    if preset not in PRESETS:
        raise ValueError(f"transformer preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    out: dict[str, Any] = dict(PRESETS[preset])
    for key in SIZES:
        value = options.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"transformer {key} must be a positive integer, got {value!r}")
        out[key] = value
    if out["hidden"] % out["heads"]:
        raise ValueError(f"transformer hidden ({out['hidden']}) must be divisible by heads ({out['heads']})")
    dropout = options.get("dropout", 0.1)
    if not isinstance(dropout, int | float) or isinstance(dropout, bool) or not 0.0 <= dropout < 1.0:
        raise ValueError(f"transformer dropout must be in [0, 1), got {dropout!r}")
    out["dropout"] = float(dropout)
    return out


def check_options(options: Mapping[str, Any]) -> None:
    """The rules across options (hidden divisible by heads), when an experiment is parsed."""
    config(options)


def token_vocab(options: Mapping[str, Any]) -> int:
    """Token ids the model embeds (0..vocab-1): what synthetic inputs may use."""
    return int(config(options)["vocab"])


def check_input(shape: Shape) -> str | None:
    if len(shape) != 1:
        return f"transformer takes token sequences (T,), got input shape {shape}"
    longest = max(p["max_len"] for p in PRESETS.values())
    if shape[0] > longest:
        return f"transformer sequences are at most {longest} tokens (bert_base max_len), got {shape[0]}"
    return None


def check_length(t: int, cfg: Mapping[str, Any]) -> None:
    if t > cfg["max_len"]:
        raise ValueError(f"transformer input length {t} exceeds max_len {cfg['max_len']}")


def encoder_layer_params(hidden: int, ff: int) -> int:
    attention = 4 * dense_params(hidden, hidden)  # Q, K, V, output projections
    layer_norms = 2 * 2 * hidden
    return attention + dense_params(hidden, ff) + dense_params(ff, hidden) + layer_norms


def param_count(shape: Shape, classes: int, **options: Any) -> int:
    c = config(options)
    h = c["hidden"]
    embeddings = c["vocab"] * h + c["max_len"] * h + 2 * h  # + the embedding LayerNorm
    return embeddings + c["layers"] * encoder_layer_params(h, c["ff"]) + dense_params(h, classes)


SPEC = ModelSpec(
    name="transformer",
    description="BERT-style post-LN Transformer encoder classifier (presets small, bert_base)",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_source="bert-base-uncased: 109,482,240 (with token-type embeddings and pooler); "
    "this model's bert_base preset with 2 classes: 108,891,650",
    options={
        "preset": "small",
        "layers": None,
        "hidden": None,
        "heads": None,
        "ff": None,
        "vocab": None,
        "max_len": None,
        "dropout": 0.1,
    },
    tiny_options={"layers": 2, "hidden": 32, "heads": 2, "ff": 64, "vocab": 64, "max_len": 32},
    # None: the preset's value.
    option_ranges={
        "layers": DEPTH,
        "hidden": WIDTH,
        "heads": WIDTH,
        "ff": WIDTH,
        "vocab": WIDTH,
        "max_len": WIDTH,
        "dropout": FRACTION,
    },
    option_choices={"preset": tuple(PRESETS)},
    check_options=check_options,
    tiny_shape=(16,),
    input_kind="tokens",
    task="classify",
    # Synthetic data: full-length sequences (max_len tokens: 128 small, 512 bert_base), 2 classes.
    synthetic_data=lambda options: ((config(options)["max_len"],), 2),
)
