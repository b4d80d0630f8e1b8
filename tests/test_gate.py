"""`dlbench gate A B`: the runs take turns until the sequential rule decides or the budget
is spent; a slower candidate fails (exit 1), identical code passes, bad input is one line."""

from __future__ import annotations

import re

from dlbench.store import Store


def _two_runs(tmp_path, faulty_run, faulty_plugin, slower: float | None):
    """Run A (1 thread) and run B (2 threads: compare and gate match across thread counts),
    each one block; B's train() sleeps `slower` s when given, A's 0.03 s."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    faulty_run(a, train_seconds=0.03, threads=1)
    if slower is not None:
        (faulty_plugin / "dlbench_faulty" / "train_seconds_2").write_text(str(slower))
    faulty_run(b, threads=2)
    return a, b


def test_a_slower_candidate_fails_the_gate_at_the_first_look_that_can_decide(tmp_path, faulty_run, faulty_plugin, cli):
    a, b = _two_runs(tmp_path, faulty_run, faulty_plugin, slower=0.09)  # 3x
    result = cli.result("gate", a, f"{b}:1", "--max-blocks", "12", "--metric", "train")
    assert result.exit_code == 1, result.output
    level = float(re.search(r"p <= ([0-9.e-]+)", result.output).group(1))
    rounds = int(re.search(r"stopped after (\d+) blocks? a run", result.output).group(1))
    # Every pair is 3x: the first look whose 2^-pairs reaches the level decides (pairs = rounds + 1).
    assert 2.0 ** -(rounds + 1) <= level < 2.0**-rounds
    assert "a regression" in result.output and "REGRESSION: slower beyond the band" in result.output
    for db in (a, b):
        with Store(db) as store:
            assert sorted(t["block"] for t in store.trials(1)) == list(range(rounds + 1))


def test_identical_code_passes_within_the_band_or_undecided(tmp_path, faulty_run, faulty_plugin, cli):
    a, b = _two_runs(tmp_path, faulty_run, faulty_plugin, slower=0.03)
    out = cli("gate", a, f"{b}:1", "--max-blocks", "9", "--metric", "train")
    assert "REGRESSION" not in out
    assert re.search(r"stopped after \d+ blocks? a run .*: (every comparison decided|the block budget)", out)
    # Fresh runs and a budget of one block: two pairs cannot reach the level either way.
    (tmp_path / "again").mkdir()
    a, b = _two_runs(tmp_path / "again", faulty_run, faulty_plugin, slower=0.03)
    out = cli("gate", a, f"{b}:1", "--max-blocks", "1", "--metric", "train", "--undecided", "fail", code=1)
    assert "stopped after 1 block a run" in out and "1 comparison(s) undecided at the budget" in out


def test_bad_gate_input_is_one_line_and_runs_nothing(tmp_path, faulty_run, cli):
    a = tmp_path / "a.db"
    faulty_run(a, train_seconds=0.01)
    assert "is named twice" in cli("gate", "1", a, "--db", a, code=2)
    assert "--undecided 'maybe': allowed: pass, fail" in cli(
        "gate", "1", "2", "--undecided", "maybe", "--db", a, code=2
    )
    assert "--max-blocks 0: allowed 1..199" in cli("gate", "1", "2", "--max-blocks", "0", "--db", a, code=2)
    assert "--metric speed: allowed train, infer, tta" in cli("gate", "1", "2", "--metric", "speed", "--db", a, code=2)
    with Store(a) as store:
        assert len(store.trials(1)) == 1
