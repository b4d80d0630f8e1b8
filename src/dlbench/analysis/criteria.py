"""The verdict criteria every sentence of dlbench is held to: one band, one alpha.

A difference within ±BAND (a fraction of the compared quantity) is "no meaningful
difference"; tests decide at ALPHA, family-wise (Holm within each comparison set
and metric). Reports, `compare`, `explain`, the hypothesis report and the study
claims all take these defaults, `--band` and `--alpha` set them, and every report
states the values it used. No imports: the command line reads these for its help
text without loading numpy.
"""

from __future__ import annotations

BAND = 0.02
ALPHA = 0.05
