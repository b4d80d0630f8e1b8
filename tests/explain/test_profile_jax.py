"""`dlbench.explain.profile_jax` on real traces: a few steady-state steps of the JAX
adapter's lenet5 and resnet18 (32x32x3) trainers under jax.profiler, reduced to
OpEvents and split by RULES; and the rules on hand-made events, one per family.

Both trainers run in one process, so the resnet18 profile holds two compiled modules
named "jit_step": its scopes must come from its own."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import defaultdict

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax.linen")
pytest.importorskip("optax")

from dlbench.datasets.arrays import Arrays, ArraySplit  # noqa: E402
from dlbench.explain import profile_jax  # noqa: E402
from dlbench.explain.categories import CATEGORIES, Breakdown, attribute, categorize  # noqa: E402
from dlbench.explain.events import OpEvent, Recording  # noqa: E402
from dlbench.explain.profile_jax import RULES, record  # noqa: E402
from dlbench.frameworks.jax import JaxFramework  # noqa: E402
from dlbench.frameworks.protocol import TrainSettings  # noqa: E402

STEPS = 2


def _arrays(shape: tuple[int, ...]) -> Arrays:
    rng = np.random.default_rng(0)

    def split(n: int) -> ArraySplit:
        return ArraySplit(rng.random((n, *shape), dtype=np.float32), rng.integers(0, 10, n).astype(np.int64))

    return Arrays("tiny", split(64), split(16), 10)


@pytest.fixture(scope="module")
def fw() -> JaxFramework:
    framework = JaxFramework()
    framework.setup(variant="jit", threads=2, seed=0, device="cpu")
    return framework


def _profile(fw: JaxFramework, model: str, shape: tuple[int, ...]) -> tuple[Recording, Breakdown, float]:
    """(recording, breakdown, unprofiled wall of the same steps) of STEPS warm steps."""
    settings = TrainSettings(model=model, batch_size=16, epochs=None, steps=STEPS, optimizer="sgd", lr=0.01, seed=0)
    trainer = fw.build(fw.prepare(_arrays(shape)), settings)
    trainer.first_step()
    trainer.train()  # warm: compiled, buffers allocated
    t0 = time.perf_counter()
    trainer.train()
    unprofiled = time.perf_counter() - t0
    rec = record(trainer.train)
    return rec, attribute(rec.events, RULES, rec.wall_s, steps=STEPS), unprofiled


@pytest.fixture(scope="module")
def lenet(fw):
    return _profile(fw, "lenet5", (28, 28, 1))


@pytest.fixture(scope="module")
def resnet(fw, lenet):  # after lenet5: two "jit_step" modules in the profile
    return _profile(fw, "resnet18", (32, 32, 3))


def _named(rec: Recording, pattern: str) -> list[OpEvent]:
    return [e for e in rec.events if re.search(pattern, e.name)]


def test_recording_says_what_recorded_it(lenet):
    rec, _, _ = lenet
    assert rec.source == f"jax.profiler (jax {jax.__version__})"
    assert "fusion" in rec.note and "optimizer" in rec.note
    assert "no name stacks" not in rec.note  # the HLO metadata was found


@pytest.mark.parametrize("which", ["lenet", "resnet"])
def test_events_nest_on_each_lane_and_lie_in_the_call(which, request):
    rec, _, _ = request.getfixturevalue(which)
    lanes: dict[str, list[OpEvent]] = defaultdict(list)
    for e in rec.events:
        assert e.dur_us > 0 and not e.name.startswith("$") and not e.name.startswith("ThreadpoolListener")
        lanes[e.lane].append(e)
    for events in lanes.values():
        stack: list[OpEvent] = []
        for e in sorted(events, key=lambda e: (e.start_us, -e.dur_us)):
            while stack and stack[-1].end_us <= e.start_us:
                stack.pop()
            assert not stack or e.end_us <= stack[-1].end_us + 1e-3, (stack[-1], e)
            stack.append(e)
    span_us = max(e.end_us for e in rec.events) - min(e.start_us for e in rec.events)
    assert span_us <= rec.wall_s * 1e6 * 1.05 + 100  # clipped to the profiled call


def _share(b: Breakdown, category: str) -> float:
    return b.per_step[category] * b.steps / b.busy_s


def test_lenet5_breakdown(lenet):
    rec, b, _ = lenet
    for category in ("convolution", "matmul", "elementwise", "reduction", "optimizer", "data_movement"):
        assert b.per_step[category] > 0, category
    assert b.per_step["normalization"] == 0  # LeNet-5 has none
    assert b.per_step["compile"] == 0  # steady state
    assert _share(b, "other") < 0.10
    assert 0 < b.busy_s <= rec.wall_s * 1.05  # no double counting across lanes
    assert b.step_s == pytest.approx(max(rec.wall_s, b.busy_s) / STEPS, rel=1e-6)


def test_resnet18_breakdown(resnet):
    rec, b, _ = resnet
    ops = {c: v for c, v in b.per_step.items() if c != "overhead"}
    assert max(ops, key=ops.__getitem__) == "convolution"
    for category in ("convolution", "normalization", "reduction", "optimizer", "data_movement", "elementwise"):
        assert b.per_step[category] > 0, category
    assert b.per_step["compile"] == 0
    assert _share(b, "other") < 0.10
    assert 0 < b.busy_s <= rec.wall_s * 1.05


def test_profiler_cost_is_small(resnet):
    rec, _, unprofiled = resnet
    # Loose: the machine is shared; the runtime's own trace events cost microseconds a step.
    assert rec.wall_s < 3 * unprofiled + 0.05


def test_known_names_on_real_traces(lenet, resnet):
    lrec, rrec = lenet[0], resnet[0]
    expected = [
        (lrec, r"^conv_general_dilated\.\d+$", "convolution"),
        (lrec, r"^convolution(\.\d+)?$", "convolution"),
        (lrec, r"^dot(\.\d+)?$", "matmul"),
        (lrec, r"^wrapped_reduce-window", "reduction"),
        (lrec, r"^broadcast_maximum_fusion", "elementwise"),  # bias add + ReLU
        (lrec, r"^transpose_copy_fusion", "data_movement"),
        (lrec, r"^ThunkExecutor::Execute", "overhead"),
        (lrec, r"^end: ", "overhead"),
        (lrec, r"^PjitFunction\(step\)$", "overhead"),
        (rrec, r"^(convolution|conv_general_dilated)", "convolution"),
        (rrec, r"^(copy_reverse_fusion|wrapped_reverse)", "data_movement"),  # kernel flips
        (rrec, r"^bitcast_rsqrt_fusion", "normalization"),  # batch norm's 1/sqrt(var + eps)
    ]
    for rec, pattern, category in expected:
        events = _named(rec, pattern)
        assert events, pattern
        assert {categorize(e, RULES) for e in events} == {category}, pattern
    # The YNNPACK fusions: what they compute comes from the HLO, not the name.
    fc1 = [e for e in _named(lrec, r"^ynn_fusion") if any(s.endswith("/fc1/dot_general") for s in e.scopes)]
    assert fc1 and {categorize(e, RULES) for e in fc1} == {"matmul"}
    # optax's apply_updates, by its source frame; the loss (optax's too) is not the optimizer.
    update = [e for e in lrec.events if any(s.startswith("optax/_src/update.py:") for s in e.scopes)]
    assert update and {categorize(e, RULES) for e in update} == {"optimizer"}
    loss = [e for e in lrec.events if any(s.startswith("optax/losses/") for s in e.scopes)]
    assert loss and {categorize(e, RULES) for e in loss} == {"reduction"}


def test_scopes_are_the_instructions_own_module(resnet):
    rec, _, _ = resnet
    convs = _named(rec, r"^conv_general_dilated\.\d+$")
    assert convs
    for e in convs:
        assert e.scopes[0].startswith("jit(step)/") and "(ResNet)" in e.scopes[0], e.scopes
        assert any(s.startswith("flax/linen/linear.py:") for s in e.scopes)
    batch_norm = [e for e in rec.events if any(s.startswith("flax/linen/normalization.py:") for s in e.scopes)]
    assert batch_norm and {categorize(e, RULES) for e in batch_norm} == {"normalization"}
    runtime = _named(rec, r"^ThunkExecutor::Execute$")
    assert runtime and all(e.scopes[0].startswith("thread:") for e in runtime)


def _event(name: str, *scopes: str) -> OpEvent:
    return OpEvent(name=name, lane="1:1", start_us=0.0, dur_us=1.0, scopes=scopes)


UPDATE = "optax/_src/update.py:42 apply_updates.<locals>.<lambda>"
BATCH_NORM = "flax/linen/normalization.py:120 _compute_stats"
LOSS = "optax/losses/_classification.py:403 softmax_cross_entropy_with_integer_labels"


@pytest.mark.parametrize(
    ("event", "category"),
    [
        # runtime activity and compilation
        (_event("ThunkExecutor::Execute", "thread:tf_XLAEigen"), "overhead"),
        (_event("end: convolution.2", "thread:tf_XLAEigen"), "overhead"),
        (_event("end: convolution.2"), "overhead"),
        (_event("PjitFunction(step)"), "overhead"),
        (_event("shard_args", "thread:python", "PjitFunction(step)"), "overhead"),
        (_event("simplification", "thread:tf_PjRtCompilerThreadPool", "PjRtCpuClient::Compile"), "compile"),
        (_event("TaskDispatcher::dispatch", "thread:tf_xla-cpu-codegen"), "compile"),
        (_event("backend_compile_and_load", "thread:python"), "compile"),
        (_event("PjRtCpuClient::Compile"), "compile"),
        # convolution, matmul: by name, by a library fusion's contents or name stack
        (_event("convolution.12"), "convolution"),
        (_event("convolution-base-dilated.3"), "convolution"),
        (_event("conv_general_dilated.5", "jit(step)/jvp(M)/conv1/conv_general_dilated"), "convolution"),
        (_event("ynn_fusion.2", "fused:convolution"), "convolution"),
        (_event("custom-call.4", "jit(step)/jvp(M)/conv/conv_general_dilated"), "convolution"),
        (_event("dot.3"), "matmul"),
        (_event("ynn_fusion.7", "jit(step)/jvp(M)/fc1/dot_general"), "matmul"),
        (_event("custom-call.1", "jit(step)/jvp(M)/fc/dot_general", UPDATE), "optimizer"),  # root says
        (_event("ynn_fusion.3", "jit(step)/jvp(M)/fc/add", "fused:dot", "jit(step)/jvp(M)/fc/dot_general"), "matmul"),
        # optimizer, loss and batch norm by their source frames
        (_event("multiply_add_fusion.5", "jit(step)/add", UPDATE), "optimizer"),
        (_event("copy_add_fusion", "jit(step)/add", UPDATE), "optimizer"),
        (_event("subtract_exponential_fusion", "jit(step)/jvp()/exp", LOSS), "reduction"),
        (_event("broadcast_subtract_fusion.19", "jit(step)/jvp(R)/bn1/sub", BATCH_NORM), "normalization"),
        (_event("ynn_fusion.130", "jit(step)/jvp(R)/bn1/reduce_sum", BATCH_NORM), "normalization"),
        (_event("add_reduce_fusion", "jit(step)/jvp(M)/BatchNorm_0/reduce_sum"), "normalization"),
        # reductions, elementwise, data movement by opcode tokens
        (_event("all-reduce.3"), "data_movement"),  # a collective, not a reduction
        (_event("reduce-precision.1"), "elementwise"),
        (_event("rng-bit-generator.2"), "elementwise"),
        (_event("wrapped_reduce-window.1"), "reduction"),
        (_event("reduce.4"), "reduction"),
        (_event("add_reduce_fusion"), "reduction"),
        (_event("select-and-scatter.2"), "reduction"),
        (_event("wrapped_scatter.1", "jit(step)/transpose(jvp(M))/select_and_scatter"), "reduction"),
        (_event("fusion.5"), "elementwise"),
        (_event("loop_fusion.2"), "elementwise"),
        (_event("add.3"), "elementwise"),
        (_event("multiply"), "elementwise"),
        (_event("wrapped_add"), "elementwise"),
        (_event("broadcast_maximum_fusion.3"), "elementwise"),
        (_event("compare_select_fusion"), "elementwise"),
        (_event("copy.30"), "data_movement"),
        (_event("transpose.1"), "data_movement"),
        (_event("dynamic-slice.2"), "data_movement"),
        (_event("gather"), "data_movement"),
        (_event("bitcast_gather_fusion.1"), "data_movement"),
        (_event("copy_reverse_fusion.3"), "data_movement"),
        (_event("wrapped_iota"), "data_movement"),
        # a library fusion known only by its name stack's last primitive
        (_event("ynn_fusion.9", "jit(step)/jvp(M)/reduce_window_max"), "reduction"),
        (_event("ynn_fusion.1", "jit(step)/jvp(M)/select_n"), "elementwise"),
        (_event("custom-call.9", "jit(step)/jvp(M)/transpose"), "data_movement"),
        # unknown
        (_event("while.106"), "other"),
        (_event("ynn_fusion.4"), "other"),
    ],
)
def test_rule_families(event, category):
    assert categorize(event, RULES) == category


def test_rules_are_valid_and_ordered():
    for rule in RULES:
        re.compile(rule.pattern)
        assert rule.category in CATEGORIES
    runtime = [i for i, r in enumerate(RULES) if r.category in ("overhead", "compile")]
    assert max(runtime) < min(i for i, r in enumerate(RULES) if r.category == "convolution")


def test_protobuf_fields_packed_and_not():
    # field 1 varint 150; field 38 packed [1, 300]; field 38 unpacked 7; field 2 bytes "ab"
    buf = bytes([0x08, 0x96, 0x01]) + bytes([0xB2, 0x02, 0x03, 0x01, 0xAC, 0x02]) + bytes([0xB0, 0x02, 0x07])
    buf += bytes([0x12, 0x02]) + b"ab"
    assert list(profile_jax._fields(buf))[0] == (1, 150)
    assert profile_jax._ints(buf, 38) == [1, 300, 7]
    assert profile_jax._text(buf, 2) == "ab" and profile_jax._int(buf, 1) == 150


def test_a_failing_call_leaves_the_profiler_usable():
    def boom() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        record(boom)
    rec = record(lambda: jax.block_until_ready(jax.numpy.ones(8) + 1))
    assert rec.wall_s > 0 and rec.source.startswith("jax.profiler")


def _write_trace(folder, events) -> None:
    path = folder / "plugins" / "profile" / "run"
    path.mkdir(parents=True)
    with gzip.open(path / "perfetto_trace.json.gz", "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)


def _meta(kind: str, pid: int, name: str, tid: int | None = None) -> dict:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}


def _x(name: str, pid: int, tid: int, ts: float, dur: float, **args: str) -> dict:
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_event_selection_on_a_synthetic_trace(tmp_path):
    _write_trace(
        tmp_path,
        [
            _meta("process_name", 1, "/host:CPU"),
            _meta("thread_name", 1, "python", 10),
            _meta("thread_name", 1, "tf_XLAEigen/-123", 11),
            _meta("thread_name", 1, "tf_PjRtCompilerThreadPool/5", 12),
            _x(profile_jax._WINDOW, 1, 10, 100, 1000),
            _x("PjitFunction(step)", 1, 10, 50, 200),  # starts before the call: clipped
            _x("ParseArguments", 1, 10, 120, 10),
            _x("$train.py:1 train", 1, 10, 100, 900),  # the Python tracer
            _x("ThreadpoolListener::Record", 1, 11, 150, 1e-6),
            _x("ThunkExecutor::Execute", 1, 11, 200, 500),
            _x("convolution.1", 1, 11, 210, 100, hlo_module="jit_step", hlo_op="convolution.1"),
            _x("end: convolution.1", 1, 11, 320, 1),
            _x("simplification", 1, 12, 300, 10),
            _x("dot.1", 1, 11, 2000, 10, hlo_module="jit_step", hlo_op="dot.1"),  # after the call
        ],
    )
    (tmp_path / "plugins" / "profile" / "run" / "host.xplane.pb").write_bytes(b"\x0f\xff")  # undecodable
    events, found = profile_jax._read(str(tmp_path))
    assert not found  # no HLO metadata: names only
    by_name = {e.name: e for e in events}
    assert set(by_name) == {
        "PjitFunction(step)",
        "ParseArguments",
        "ThunkExecutor::Execute",
        "convolution.1",
        "end: convolution.1",
        "simplification",
    }
    assert (by_name["PjitFunction(step)"].start_us, by_name["PjitFunction(step)"].dur_us) == (100, 150)
    assert by_name["ParseArguments"].scopes == ("thread:python", "PjitFunction(step)")
    assert by_name["convolution.1"].scopes == () and by_name["convolution.1"].lane == "1:11"
    assert by_name["simplification"].scopes == ("thread:tf_PjRtCompilerThreadPool",)
    categories = {name: categorize(e, RULES) for name, e in by_name.items()}
    assert categories == {
        "PjitFunction(step)": "overhead",
        "ParseArguments": "overhead",
        "ThunkExecutor::Execute": "overhead",
        "convolution.1": "convolution",
        "end: convolution.1": "overhead",
        "simplification": "compile",
    }


def test_with_an_accelerator_the_host_side_of_an_instruction_is_its_launch(tmp_path):
    _write_trace(
        tmp_path,
        [
            _meta("process_name", 1, "/host:CPU"),
            _meta("process_name", 2, "/device:GPU:0"),
            _meta("thread_name", 1, "python", 10),
            _meta("thread_name", 2, "Stream #7", 7),
            _x("Thunk", 1, 10, 100, 5, hlo_module="jit_step", hlo_op="fusion.3"),
            _x("loop_add_fusion", 2, 7, 110, 50, hlo_module="jit_step", hlo_op="fusion.3"),
        ],
    )
    events, _ = profile_jax._read(str(tmp_path))
    assert {(e.name, e.lane, categorize(e, RULES)) for e in events} == {
        ("Thunk", "1:10", "overhead"),
        ("fusion.3", "2:7", "elementwise"),
    }
