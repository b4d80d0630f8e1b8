"""Host-side CTC evaluation shared by every framework: greedy (best-path)
decoding and "accuracy" = 1 - character error rate.

The adapters hand over the per-frame argmax ids (N, T') of the test split;
decoding and edit distances run here in numpy, so the metric is the same code
for all three frameworks and stays out of every timed region.
"""

from __future__ import annotations

import numpy as np

BLANK = 0


def greedy_decode(best: np.ndarray) -> list[np.ndarray]:
    """Best-path decoding of (N, T') argmax ids: merge repeats, then drop blanks."""
    best = np.asarray(best)
    keep = np.ones(best.shape, dtype=bool)
    keep[:, 1:] = best[:, 1:] != best[:, :-1]
    keep &= best != BLANK
    return [row[mask] for row, mask in zip(best, keep)]


def edit_distance(a: np.ndarray, b: np.ndarray) -> int:
    """Levenshtein distance (insertions, deletions, substitutions cost 1), one DP row at a time."""
    prev = np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = np.empty_like(prev)
        cur[0] = i
        sub = prev[:-1] + (b != a[i - 1])
        # Deletions/substitutions first, then insertions need a left-to-right scan.
        cur[1:] = np.minimum(sub, prev[1:] + 1)
        for j in range(1, len(b) + 1):
            if cur[j - 1] + 1 < cur[j]:
                cur[j] = cur[j - 1] + 1
        prev = cur
    return int(prev[-1])


def character_error_rate(best: np.ndarray, labels: np.ndarray) -> float:
    """Summed edit distance of the greedy decodings over the summed label length.

    ``labels`` is (N, L) padded with -1.
    """
    decoded = greedy_decode(best)
    errors = 0
    total = 0
    for hyp, row in zip(decoded, np.asarray(labels)):
        ref = row[row >= 0]
        errors += edit_distance(hyp, ref)
        total += len(ref)
    return errors / max(total, 1)


def ctc_accuracy(best: np.ndarray, labels: np.ndarray) -> float:
    """1 - CER, clipped at 0 (a CER above 1 means more insertions than labels)."""
    return max(0.0, 1.0 - character_error_rate(best, labels))
