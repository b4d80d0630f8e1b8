"""The PyTorch augmentation pipeline: tensor ops on the device the data lives on.

Images are NCHW, as the torch adapter preloads them. Per batch: index the
preloaded tensor with the batch's part of the permutation, ``F.pad`` with
zeros, take every sample's crop with one advanced-indexing gather on the
``unfold`` view of all possible windows (a view: nothing is copied until the
gather), mirror with ``torch.where(flip, crop.flip(-1), crop)``, normalize.
The epoch's draws go to the device once per epoch, so the loop issues only
device ops and never synchronizes (on a GPU it runs ahead of the consumer).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from dlbench.pipelines.params import EpochParams, check_params, check_stats, describe


class Augmenter:
    """Random crop (zero padding ``pad``) + horizontal flip + normalization on NCHW tensors."""

    name = "torch"

    def __init__(
        self,
        mean: np.ndarray | list[float],
        std: np.ndarray | list[float],
        pad: int = 4,
        device: str | torch.device = "cpu",
    ) -> None:
        m, s = check_stats(mean, std)
        self.pad = pad
        self.device = torch.device(device)
        # (C, 1, 1): broadcasts over N, H, W of an NCHW batch.
        self._mean = torch.from_numpy(m).view(-1, 1, 1).to(self.device)
        self._std = torch.from_numpy(s).view(-1, 1, 1).to(self.device)

    def prepare(self, x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """NHWC numpy -> NCHW float32 and int64 tensors on ``device`` (once, before timing)."""
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).permute(0, 3, 1, 2)
        return (
            xt.contiguous().to(self.device),
            torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64)).to(self.device),
        )

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(x - mean) / std`` per channel of an NCHW tensor, without augmentation."""
        return (x - self._mean.to(x.device)) / self._std.to(x.device)

    def epoch_batches(
        self, x: torch.Tensor, y: torch.Tensor, params: EpochParams, batch_size: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The epoch's full batches ``(xb (B, C, H, W), yb (B,))`` on ``x``'s device, in epoch order."""
        n, _, h, w = x.shape
        check_params(params, n, self.pad)
        device, p, steps = x.device, self.pad, params.steps(batch_size)
        mean, std = self._mean.to(device), self._std.to(device)
        used = steps * batch_size
        # One host->device copy per epoch of the draws, already cut into batches.
        perm = torch.from_numpy(params.perm[:used]).to(device).view(steps, batch_size)
        dy = torch.from_numpy(params.dy[:used]).to(device).view(steps, batch_size)
        dx = torch.from_numpy(params.dx[:used]).to(device).view(steps, batch_size)
        flip = torch.from_numpy(params.flip[:used]).to(device).view(steps, batch_size, 1, 1, 1)
        for step in range(steps):
            idx = perm[step]
            padded = F.pad(x[idx], (p, p, p, p))  # zeros on the left/right and top/bottom
            # (B, C, 2p+1, 2p+1, H, W): every window, as a view of `padded`.
            windows = padded.unfold(2, h, 1).unfold(3, w, 1)
            # Advanced indices around a slice: the result is (B, C, H, W).
            crop = windows[torch.arange(batch_size, device=device), :, dy[step], dx[step]]
            crop = torch.where(flip[step], crop.flip(-1), crop)
            yield (crop - mean) / std, y[idx]

    def settings(self) -> dict[str, object]:
        """What this pipeline does, for the fairness manifest."""
        return describe(
            self.name,
            self._mean.flatten().cpu().numpy(),
            self._std.flatten().cpu().numpy(),
            self.pad,
            torch=torch.__version__,
            device=str(self.device),
            layout="NCHW",
            implementation="per batch on the device: index, F.pad, unfold + advanced "
            "indexing, torch.where(flip, crop.flip(-1), crop), normalize",
        )
