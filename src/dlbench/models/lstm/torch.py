"""PyTorch implementation of the `lstm` spec (word-level language model).

Written like PyTorch's word_language_model example: nn.Embedding -> dropout ->
one multi-layer nn.LSTM (its `dropout` argument drops between layers) ->
dropout -> nn.Linear to the vocabulary; batch_first, since the data is (N, T).

One bias per gate (the spec's convention): nn.LSTM always allocates b_ih and
b_hh; every b_hh is zeroed and frozen here, at construction, so the trainable
count is the spec's 4H per layer whatever the init, while the fused
oneDNN/cuDNN LSTM kernels stay in use. `freeze_recurrent_biases` is shared
with deepspeech2's LSTM option.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.lstm import check_options, resolve_vocab


def freeze_recurrent_biases(rnn: nn.LSTM | nn.GRU) -> None:
    """Zero and freeze b_hh of every layer and direction (one trainable bias per gate)."""
    for name, param in rnn.named_parameters():
        if name.startswith("bias_hh"):
            with torch.no_grad():
                param.zero_()
            param.requires_grad_(False)


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int, classes: int, embed: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(embed, hidden, num_layers=layers, dropout=dropout if layers > 1 else 0.0, batch_first=True)
        freeze_recurrent_biases(self.rnn)
        self.decoder = nn.Linear(hidden, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.embedding(tokens))
        x, _ = self.rnn(x)  # zero initial state per sequence
        return self.decoder(self.drop(x))  # (N, T, vocab) logits


def build(
    input_shape: tuple[int],
    num_classes: int,
    *,
    vocab: int | None,
    embed: int,
    hidden: int,
    layers: int,
    dropout: float,
) -> nn.Module:
    """The model for token sequences of `input_shape` (T,) over a vocabulary of `num_classes`."""
    check_options(embed, hidden, layers, dropout)
    return LSTMLanguageModel(resolve_vocab(vocab, num_classes), num_classes, embed, hidden, layers, dropout)
