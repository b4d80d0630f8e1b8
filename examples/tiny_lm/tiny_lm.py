"""`tiny_lm`: a small decoder-only transformer language model, as your own model.

Next-token prediction on token ids (N, T): the builders' second argument is the
vocabulary; the output is (N, T, vocab) logits, position t predicting token t+1.
The network (pre-norm, GPT-style):

    embed:  token embedding (vocab x d) + learned position embedding (T x d)
    block:  x + attention(LayerNorm(x)), causal, `heads` heads, biases on;
            x + MLP(LayerNorm(x)): dense d -> 4d, exact (erf) GELU, dense 4d -> d
    head:   LayerNorm, dense d -> vocab

LayerNorm epsilon 1e-5 everywhere (torch's default; Keras' is 1e-3, Flax's 1e-6, so
both are given). dlbench reports token accuracy and perplexity, lower is better.
`python data.py markov.npz` writes token sequences from a random Markov chain,
x = s[:T], y = s[1:T+1].
"""

import dlbench

DIM, HEADS = 32, 2


def param_count(input_shape: tuple[int], vocab: int, dim: int = DIM, heads: int = HEADS) -> int:
    (length,) = input_shape
    embed = vocab * dim + length * dim
    attention = 4 * (dim * dim + dim)
    mlp = dim * 4 * dim + 4 * dim + 4 * dim * dim + dim
    norms = 3 * 2 * dim
    return embed + attention + mlp + norms + dim * vocab + vocab


def _check(options: dict) -> None:
    if options["dim"] % options["heads"]:
        raise ValueError(f"tiny_lm: dim {options['dim']} must be divisible by heads {options['heads']}")


MODEL = dlbench.Model(
    name="tiny_lm",
    description="decoder-only transformer LM: 1 pre-norm block, causal attention",
    builders={
        "torch": "tiny_lm_torch:build",
        "tensorflow": "tiny_lm_tensorflow:build",
        "jax": "tiny_lm_jax:build",
    },
    input_kind="tokens",
    task="next-token",
    options={"dim": DIM, "heads": HEADS},
    param_count=param_count,
    tiny_options={"dim": 16, "heads": 2},
)
