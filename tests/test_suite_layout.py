"""The test suite's own layout: the files that run alone exist, and CI runs exactly the
README's test command."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import SERIAL

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_that_runs_alone_exists_and_says_why():
    for where, why in SERIAL.items():
        assert (ROOT / where).exists(), f"SERIAL names {where}, which does not exist"
        assert len(why) > 10, where


def test_ci_runs_exactly_the_readme_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    test_command = next(b for b in blocks if "scripts/setup.sh --dev" in b)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == test_command.strip()
    assert "scripts/test.sh" in test_command
