"""Print how many fuzzed inputs the session tried (shown with or without -s)."""

from __future__ import annotations

from .invariants import COUNTS


def pytest_terminal_summary(terminalreporter):
    if not COUNTS:
        return
    kinds = sorted(k for k in COUNTS if not k.endswith((" accepted", " refused")))
    terminalreporter.section("fuzz inputs tried")
    for kind in kinds:
        terminalreporter.write_line(
            f"{kind}: {COUNTS[kind]} ({COUNTS[kind + ' accepted']} accepted, {COUNTS[kind + ' refused']} refused)"
        )
    total = sum(COUNTS[k] for k in kinds)
    terminalreporter.write_line(
        f"total: {total} inputs, every one parsed, refused with one line or accepted and checked; no other exception"
    )
