"""The shapes the analysis reads: stored records and case dicts.

A row is a record from dlbench.store (TrialRecord, MeasurementRecord, LatencyCall:
typed, frozen, their JSON columns already decoded, and still read by column name:
row["name"], row.keys()), or a dict with the same keys, as the tests build them (a trial
dict becomes a TrialRecord through dlbench.store.trial_record, which decodes its JSON
text). Typed Any so that both pass. A case is the dict a plan cell becomes (framework,
variant, model, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

Row: TypeAlias = Any
Rows: TypeAlias = Iterable[Row]
Case: TypeAlias = dict[str, Any]
