"""Print how many fuzzed inputs the session tried (shown with or without -s)."""

from __future__ import annotations

import pytest

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


@pytest.fixture(scope="package", autouse=True)
def _registry_read_once():
    """dlbench.frameworks.registry() reads every installed distribution's entry points
    on each call (about 20 ms here), which would be most of a fuzzed input's time;
    the fuzz tests read it once. No test here installs a framework plugin."""
    import dlbench.frameworks
    import dlbench.plan

    frameworks = dlbench.frameworks.registry()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dlbench.frameworks, "registry", lambda: frameworks)
        mp.setattr(dlbench.plan, "registry", lambda: frameworks)
        yield
