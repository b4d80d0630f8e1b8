"""PyTorch implementation of the `transformer` spec.

nn.Embedding for tokens and positions, LayerNorm + dropout, then torch's own
nn.TransformerEncoder of nn.TransformerEncoderLayer(batch_first=True,
norm_first=False, activation="gelu", layer_norm_eps=1e-12): the idiomatic
torch encoder, whose structure the spec describes. First-token pooling, then
nn.Linear to the classes. enable_nested_tensor=False: there is no padding
mask, so the nested-tensor path would only add a check.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.transformer import LAYER_NORM_EPS, check_length, config


class TransformerClassifier(nn.Module):
    def __init__(
        self, classes: int, *, layers: int, hidden: int, heads: int, ff: int, vocab: int, max_len: int, dropout: float
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden, eps=LAYER_NORM_EPS)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            hidden,
            heads,
            dim_feedforward=ff,
            dropout=dropout,
            activation="gelu",
            layer_norm_eps=LAYER_NORM_EPS,
            batch_first=True,
            norm_first=False,
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.drop(self.norm(self.tokens(tokens) + self.positions(positions)))
        x = self.encoder(x)
        return self.classifier(x[:, 0])  # first-token pooling


def build(input_shape: tuple[int], num_classes: int, **options: object) -> nn.Module:
    """The classifier for token sequences of `input_shape` (T,) and `num_classes` classes."""
    cfg = config(options)
    check_length(input_shape[0], cfg)
    return TransformerClassifier(num_classes, **cfg)
