"""The results store, one package for both databases: SQLite (a file) and PostgreSQL
(`--db postgresql://...`).

- core: Store, the one class every command reads and writes through; it opens either
  database behind the one Connection interface of base;
- records: what Store's reads return, typed and frozen, JSON decoded once, here;
- migrations: the schema's versions (MIGRATIONS) and their data steps;
- base: the Connection interface, the SQL Dialect, StoreError;
- postgres: psycopg behind that interface, and PostgreSQL's dialect.

Nothing outside this package parses a stored JSON column (tests/test_store_records.py).
"""

from dlbench.store.base import Connection, Dialect, StoreError
from dlbench.store.core import LATENCY_PHASE, STATUSES, Measurement, Store, database_url, now, shown
from dlbench.store.migrations import MIGRATIONS
from dlbench.store.records import (
    LatencyCall,
    MeasurementRecord,
    RunRecord,
    SamplerRecord,
    SeriesPoint,
    SkippedRecord,
    TrialRecord,
    trial_record,
)

__all__ = [
    "LATENCY_PHASE",
    "MIGRATIONS",
    "STATUSES",
    "Connection",
    "Dialect",
    "LatencyCall",
    "Measurement",
    "MeasurementRecord",
    "RunRecord",
    "SamplerRecord",
    "SeriesPoint",
    "SkippedRecord",
    "Store",
    "StoreError",
    "TrialRecord",
    "database_url",
    "now",
    "shown",
    "trial_record",
]
