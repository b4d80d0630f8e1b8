"""`bigru` in torch, as a new user writes it from docs/tutorial.md."""

import torch
from torch import nn


class BiGRU(nn.Module):
    def __init__(self, channels, classes, hidden):
        super().__init__()
        self.gru = nn.GRU(channels, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):  # (N, C, L) as dlbench gives series to torch
        out, _ = self.gru(x.transpose(1, 2))
        return self.head(torch.relu(out.mean(dim=1)))


def build(input_shape, num_classes, hidden=16):
    return BiGRU(input_shape[1], num_classes, hidden)
