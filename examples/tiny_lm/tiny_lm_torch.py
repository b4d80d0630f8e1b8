"""`tiny_lm` in PyTorch: (N, T) int64 token ids in, (N, T, vocab) logits out."""

from __future__ import annotations

import torch
from torch import nn

EPS = 1e-5


class TinyLM(nn.Module):
    def __init__(self, length: int, vocab: int, dim: int, heads: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(length, dim)
        self.norm1 = nn.LayerNorm(dim, eps=EPS)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, eps=EPS)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        self.norm3 = nn.LayerNorm(dim, eps=EPS)
        self.head = nn.Linear(dim, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        h = self.tokens(x) + self.positions(torch.arange(t, device=x.device))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)  # True: masked
        a = self.norm1(h)
        h = h + self.attention(a, a, a, attn_mask=causal, need_weights=False)[0]
        h = h + self.down(nn.functional.gelu(self.up(self.norm2(h))))
        return self.head(self.norm3(h))


def build(input_shape: tuple[int], vocab: int, dim: int = 32, heads: int = 2) -> nn.Module:
    return TinyLM(input_shape[0], vocab, dim, heads)
