"""The words follow the designs: every printed rule names the design that ran.

The study reports' agreement rule, the answer's test line, explain's verdict line and
plan's advice each state members, trials per case, paired or unpaired (and so which
test) and the Holm family. These tests build stored runs (3 members x 6 trials, 2 x 6,
2 x 4, 1 trial per case) and plans, and fail where a printed word differs from what
the comparisons actually ran (Results.compare's own test, pairing, n and family)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dlbench import config
from dlbench.analysis.comparisons import analyse, rankings
from dlbench.analysis.design import check, design, needed
from dlbench.plan import expand
from dlbench.report.answer import build_answer
from dlbench.report.explain import criteria_line
from dlbench.report.study_section import rule_of
from dlbench.report.words import check_words
from dlbench.results import Results
from dlbench.store import Measurement, Store
from dlbench.studies import paper_vs_run
from dlbench.studies.spec import Setting
from stored_cases import stored_case

FRAMEWORKS = ("torch", "tensorflow", "jax")


def _run(path: Path, members: int, trials: int, repeats: int = 2) -> tuple[Store, int]:
    """One stored run: `members` frameworks of one mlp case, `trials` interleaved blocks of
    one process each, `repeats` measured repeats per process; torch clearly fastest."""
    store = Store(path)
    run_id = store.create_run(
        name="study t v1 quick",
        command="test",
        config_source="test",
        config_text="",
        experiment={},
        environment={},
        version="0",
    )
    for block in range(trials):
        for position, fw in enumerate(FRAMEWORKS[:members]):
            tid = store.add_trial(
                run_id,
                case_key=fw,
                block=block,
                position=position,
                case=stored_case(fw, "v"),
                protocol={"repeats": repeats, "warmup": 0},
            )
            store.start_trial(tid)
            base = 1.0 + position + 0.01 * ((block * 7 + position * 3) % 5)
            rows = [Measurement(r, False, "train", "time", base + 0.001 * r, "s") for r in range(1, repeats + 1)]
            store.add_measurements(tid, rows)
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    return store, run_id


def _says(text: str, members: int, n: int, paired: bool, family: int, one_process: bool = False) -> None:
    """`text` states this design and no other: its members and trials per case, the test
    that pairing means, and its Holm family."""
    flat = " ".join(text.split())
    if one_process:
        assert f"{members} frameworks/variants x 1 trial per case: repeats of one process" in flat, flat
        assert "Wilcoxon" not in flat and "Mann-Whitney" not in flat, flat
        return
    assert f"{members} frameworks/variants x {n} trials per case" in flat, flat
    assert ("paired Wilcoxon" in flat) == paired, flat
    assert ("Mann-Whitney" in flat) == (not paired), flat
    holm = re.findall(r"Holm over (\d+)", flat)
    assert holm == ([str(family)] if family > 1 else []), flat
    assert (family == 1) == ("no Holm" in flat), flat


def _ran(store: Store, run_id: int) -> tuple[bool, int, int, bool]:
    """What the comparisons of this run actually did: (paired, n per side, Holm family,
    independent), from Results.compare, the frame every study report reads."""
    frame = Results.of_store(store).compare("torch", "tensorflow", metric="train.time", run=run_id)
    (row,) = frame.itertuples()
    members = len({t["case_key"] for t in store.trials(run_id)})
    paired = bool(row.paired) and bool(row.independent)
    assert paired == str(row.test).startswith("Wilcoxon"), row.test
    assert bool(row.paired) or str(row.test).startswith("Mann-Whitney"), row.test
    family = members * (members - 1) // 2
    # Holm over the set: an adjusted p where the set holds more than one comparison.
    assert (family > 1) == (not math.isnan(row.p_adjusted) and row.p_adjusted != row.p_value)
    return paired, int(row.n_a), family, bool(row.independent)


def _rule(machine: paper_vs_run.Machine) -> str:
    """The agreement rule a study report prints for this machine's run (study_section.build's)."""
    designs = tuple(paper_vs_run.run_designs(machine, Setting("this run", {})))
    comparison = paper_vs_run.Comparison([], [], [], ["this run"], [machine], designs)
    return rule_of(1.5, comparison).words()


@pytest.mark.parametrize(
    "members,trials,paired,family",
    [(3, 6, False, 3), (2, 6, True, 1), (2, 4, False, 1), (3, 7, True, 3)],
    ids=["3x6-unpaired", "2x6-paired", "2x4-unpaired", "3x7-paired"],
)
def test_the_study_rule_and_the_answer_name_the_design_that_ran(tmp_path, members, trials, paired, family):
    store, run_id = _run(tmp_path / "r.db", members, trials)
    ran_paired, n, _, independent = _ran(store, run_id)
    assert independent and (ran_paired, n) == (paired, trials)  # the fixture is the design it says
    results = Results.of_store(store)
    machine = paper_vs_run.Machine("m", run_id, results.summary(run_id), None, {})
    rule = _rule(machine)
    _says(rule, members, trials, paired, family)
    # The answer's test line: from the comparisons themselves.
    analysed = analyse(list(store.trials(run_id)), store.measurements(run_id, latency=False))
    answer = build_answer(rankings(analysed))
    (line,) = [n for n in answer.notes if n.startswith("ratio of medians")]
    _says(line, members, trials, paired, family)


def test_one_process_per_case_says_so_and_names_no_test(tmp_path):
    store, run_id = _run(tmp_path / "r.db", 3, 1, repeats=6)
    assert not _ran(store, run_id)[3]
    results = Results.of_store(store)
    machine = paper_vs_run.Machine("m", run_id, results.summary(run_id), None, {})
    rule = _rule(machine)
    _says(rule, 3, 1, False, 3, one_process=True)
    analysed = analyse(list(store.trials(run_id)), store.measurements(run_id, latency=False))
    (line,) = [n for n in build_answer(rankings(analysed)).notes if n.startswith("ratio of medians")]
    _says(line, 3, 1, False, 3, one_process=True)


def test_a_rule_without_a_known_design_states_the_general_rule():
    words = paper_vs_run.Rule(1.5, 0.02, 0.05).words()
    assert paper_vs_run.GENERAL_TEST in words and "paired Wilcoxon over trial medians, Holm;" not in words


def test_explain_states_the_design_of_its_own_comparison():
    from dlbench.analysis import stats

    c = stats.compare_two([1.0, 1.1, 1.2, 1.3, 1.4, 1.5], [2.0, 2.1, 2.2, 2.3, 2.4, 2.5], paired=True)

    class G:
        comparison = c

    line = criteria_line([G()])  # type: ignore[list-item]
    assert "2 cases x 6 trials per case, paired Wilcoxon" in line and "no Holm" in line and "Mann-Whitney" not in line


def _plan(frameworks: int, trials: int, repeats: int = 1):
    exp = config.override(
        config.default(), {"framework": list(FRAMEWORKS[:frameworks]), "model": ["mlp"]},
        {"repeats": repeats, "trials": trials},
    )  # fmt: skip
    return expand(exp)


@pytest.mark.parametrize("frameworks,trials", [(3, 1), (2, 1), (3, 4), (2, 3), (3, 6), (2, 6)])
def test_a_plans_design_words_are_the_design_check(frameworks, trials):
    d = check(_plan(frameworks, trials, repeats=3))
    assert d is not None
    _says(check_words(d), frameworks, d.n, d.paired, d.family, one_process=trials == 1)
    # The advice's design is what --trials N would run: unpaired where pair_by_block says so.
    advice = needed(d)
    assert advice == design(frameworks, d.trials_needed) and advice.decidable
    _says(check_words(advice), frameworks, d.trials_needed, advice.paired, d.family)


def test_plan_advice_names_the_design_the_advised_trials_run(cli):
    # 3 frameworks, 1 trial: --trials 5 of 3 members is unpaired (7 blocks would be needed to pair).
    one = " ".join(cli("plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--trials", "1").split())
    (advice,) = re.findall(r"Smallest design that decides: (--trials \d+ \(.*?\))\.", one)
    assert advice.startswith("--trials 5 (")
    _says(advice, 3, 5, False, 3)
    assert "paired by block" not in one
    # 2 frameworks, 3 trials: the warning states 3 trials unpaired, the advice 4 unpaired.
    few = " ".join(cli("plan", "--framework", "torch,jax", "--model", "mlp", "--trials", "3", code=None).split())
    warning, advice = few.split("Smallest design that can:")
    _says(warning, 2, 3, False, 1)
    _says(advice, 2, 4, False, 1)
