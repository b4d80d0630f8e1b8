"""Which cases an explanation compares and which toggles it tries, and the closure
statistic on hand-made step times (no framework runs here)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dlbench.explain import ablation, selection
from dlbench.plan import Case

BASE = Case(
    framework="torch", variant="eager", model="lenet5", dataset="synthetic", batch_size=32, init="glorot-uniform",
    optimizer="sgd", lr=0.01, momentum=0.0, epochs=None, steps=10, device="cpu", threads=2,
    synthetic=(28, 28, 1, 10, 256, 64),
)  # fmt: skip
TF = replace(BASE, framework="tensorflow", variant="graph")
JAX = replace(BASE, framework="jax", variant="jit")


def test_toggles_go_toward_a_where_the_cases_differ_and_to_the_best_known_value_elsewhere():
    b = replace(BASE, threads=1, init="framework-default")
    pair = ablation.pair_for(BASE, b, cores=2)
    got = {(t.setting, t.after, t.toward) for t in pair.toggles}
    assert got == {
        ("threads", 2, "A"),
        ("init", "glorot-uniform", "A"),
        ("variant", "compile", "best known"),
        ("layout", "channels-last", "best known"),
    }
    roles = [role for role, _, _ in pair.variants()]
    assert roles == ["A", "B", "threads", "variant", "layout", "init", "all"]


def test_only_narrows_the_toggles_and_can_name_the_target_value():
    pair = ablation.pair_for(JAX, TF, cores=2, only=("variant=xla", "layout"))
    assert [(t.setting, t.after, t.toward) for t in pair.toggles] == [("variant", "xla", "named")]
    assert [(t.setting, t.after) for t in ablation.pair_for(JAX, TF, cores=2, only=("variant",)).toggles] == [
        ("variant", "xla")  # the best known value: JAX and TensorFlow variants are not each other's
    ]
    eager = ablation.pair_for(JAX, TF, cores=2, only=("variant=eager", "threads=1"))
    assert [(t.setting, t.before, t.after) for t in eager.toggles] == [("threads", 2, 1), ("variant", "graph", "eager")]
    assert ablation.pair_for(JAX, TF, cores=2, only=("init=glorot-uniform",)).not_tried == (
        "init glorot-uniform: B has it already",
    )
    with pytest.raises(ablation.AblationError, match="unknown setting 'speed'"):
        ablation.pair_for(JAX, TF, cores=2, only=("speed",))
    with pytest.raises(ablation.AblationError, match="precision=fp8: allowed: float32, tf32, bf16-mixed"):
        ablation.pair_for(JAX, TF, cores=2, only=("precision=fp8",))
    with pytest.raises(ablation.AblationError, match="threads=two: a thread count is a whole number"):
        ablation.pair_for(JAX, TF, cores=2, only=("threads=two",))
    no_such = ablation.pair_for(JAX, TF, cores=2, only=("variant=compile",))
    assert no_such.toggles == () and "tensorflow has no variant 'compile'" in no_such.not_tried[0]


def test_a_toggle_that_cannot_run_is_listed_not_tried():
    b = replace(BASE, threads=1)
    pair = ablation.pair_for(replace(BASE, threads=4), b, cores=2, only=("threads",))
    assert pair.toggles == () and "4 threads but 2 cores here" in pair.not_tried[0]


def test_tf32_is_tried_on_a_gpu_only():
    pair = ablation.pair_for(BASE, replace(BASE, threads=1), cores=2, only=("precision=tf32",))
    assert pair.toggles == () and "TensorFloat-32 math mode of NVIDIA GPUs" in pair.not_tried[0]
    a, b = replace(BASE, device="cuda"), replace(BASE, device="cuda", threads=1)
    pair = ablation.pair_for(a, b, cores=2, only=("precision=tf32",))
    assert [(t.setting, t.before, t.after, t.toward) for t in pair.toggles] == [
        ("precision", "float32", "tf32", "named")
    ]


def test_cases_that_do_different_work_are_refused():
    with pytest.raises(ablation.AblationError, match="different work \\(batch_size differ\\)"):
        ablation.pair_for(BASE, replace(BASE, batch_size=64, threads=1), cores=2)


def test_selectors_name_one_case_or_say_what_tells_them_apart():
    cases = [BASE, TF, JAX, replace(BASE, threads=1)]
    assert selection.select(cases, "tensorflow:graph") == TF
    assert selection.select(cases, "threads=1") == cases[3]
    assert selection.select(cases, "framework=jax|tensorflow", where="variant=jit") == JAX
    with pytest.raises(ablation.AblationError, match="matches 2 cases; tell them apart with --where on threads"):
        selection.select(cases, "torch")


def test_default_pairs_put_each_sets_fastest_against_the_others():
    cases = {c.key: c for c in (BASE, TF, JAX)}
    medians = {BASE.key: 2.0, TF.key: 1.0, JAX.key: 3.0}
    pairs = selection.default_pairs(cases, medians)
    assert [(a.framework, b.framework) for a, b in pairs] == [("tensorflow", "torch"), ("tensorflow", "jax")]
    narrowed = selection.narrowed(cases, "framework=torch|jax")
    assert [(a.framework, b.framework) for a, b in selection.default_pairs(narrowed, medians)] == [("torch", "jax")]


def test_closure_is_the_share_of_the_gap_a_toggle_closes():
    b = replace(BASE, threads=1, init="framework-default")  # B with threads 2 alone is not A
    pair = ablation.pair_for(BASE, b, cores=2, only=("threads", "layout"))
    keys = [(block, r) for block in range(6) for r in range(4)]  # 6 blocks: the fewest that decide
    rng = np.random.default_rng(0)
    noise = {k: 1 + 0.01 * rng.standard_normal() for k in keys}
    times = {
        BASE.key: {k: 10.0 * noise[k] for k in keys},  # A: 10 ms
        b.key: {k: 20.0 * noise[k] for k in keys},  # B: 20 ms
        pair.toggled(pair.toggles[:1]).key: {k: 12.0 * noise[k] for k in keys},  # threads: 20 -> 12
        pair.toggled(pair.toggles[1:]).key: {k: 20.0 * noise[k] for k in keys},  # layout: no change
        pair.toggled(pair.toggles).key: {k: 12.0 * noise[k] for k in keys},
    }
    gap = ablation.analyse(pair, times)
    assert gap.significant and gap.ratio == pytest.approx(2.0, rel=0.01)
    effects = {e.role: e for e in gap.effects}
    assert effects["threads"].closure == pytest.approx(0.8, abs=0.02)  # (20 - 12) / (20 - 10)
    assert effects["threads"].measurable and effects["threads"].ci[0] > 0.7
    assert effects["layout"].closure == pytest.approx(0.0, abs=0.02)
    assert not effects["layout"].measurable or abs(effects["layout"].closure) < 0.05
    assert gap.n == 6  # one trial median per block, not 24 (block, repeat) values


def test_too_few_blocks_decide_nothing():
    """Three blocks of four repeats: the repeats of one process are no evidence, and the
    exact Wilcoxon test over three trial medians cannot reach p < 0.05 (2/2^3 = 0.25)."""
    b = replace(BASE, threads=1, init="framework-default")
    pair = ablation.pair_for(BASE, b, cores=2, only=("threads",))
    keys = [(block, r) for block in range(3) for r in range(4)]
    times = {
        BASE.key: {k: 10.0 for k in keys},
        b.key: {k: 20.0 for k in keys},
        pair.toggled(pair.toggles).key: {k: 12.0 for k in keys},
    }
    gap = ablation.analyse(pair, times)
    assert gap.n == 3 and not gap.significant
    assert gap.comparison is not None and gap.comparison.why.cause == "too few"
    assert all(not e.measurable for e in gap.effects)


def test_runtime_is_toggled_where_a_and_b_differ_or_when_asked_never_silently():
    # Agreeing (both defaults): no runtime toggle unless --only names it.
    assert "runtime" not in {t.setting for t in ablation.pair_for(BASE, replace(BASE, threads=1), cores=2).toggles}
    asked = ablation.pair_for(BASE, replace(BASE, threads=1), cores=2, only=("runtime",))
    assert [(t.setting, t.before, t.after, t.toward) for t in asked.toggles] == [
        ("runtime", "defaults", "all", "other")
    ]
    # Differing: toward A's value, as every other setting.
    b = replace(BASE, runtime="all")
    toggles = ablation.pair_for(BASE, b, cores=2).toggles
    assert [(t.after, t.toward) for t in toggles if t.setting == "runtime"] == [("defaults", "A")]
    named = ablation.pair_for(BASE, replace(BASE, threads=1), cores=2, only=("runtime=interop-fixed+malloc-fixed",))
    assert [(t.after, t.toward) for t in named.toggles] == [("malloc-fixed+interop-fixed", "named")]
    # A named setting that does not concern B's framework is not tried, and says why.
    jax = ablation.pair_for(BASE, JAX, cores=2, only=("runtime=autotune-off",))
    assert jax.toggles == () and "autotune-off applies to tensorflow, not to jax" in jax.not_tried[0]
    with pytest.raises(ablation.AblationError, match="runtime 'fast': unknown setting 'fast'"):
        ablation.pair_for(BASE, JAX, cores=2, only=("runtime=fast",))
