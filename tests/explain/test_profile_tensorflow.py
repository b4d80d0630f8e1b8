"""`profile_tensorflow`: the TensorFlow profiler's trace as OpEvents, and the rules.

Real traces of the dlbench Keras trainer (LeNet-5 with SGD and ResNet-18 with Adam
in graph mode, LeNet-5 under XLA and eagerly) must come out categorised: the
model's main work in its category, less than 10% of op time in "other", no op
counted twice (busy time within the wall time), events nesting on their lanes. A
hand-made XPlane checks how eager ops and compilation ranges are read, and
hand-made OpEvents each rule family. Data and step counts are tiny (TF is slow to
import and trace on 2 cores)."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.explain.categories import Breakdown, attribute, categorize
from dlbench.explain.events import OpEvent, Recording
from dlbench.frameworks import FRAMEWORKS
from dlbench.frameworks.protocol import TrainSettings

pytestmark = pytest.mark.skipif(
    FRAMEWORKS["tensorflow"].unavailable_reason() is not None, reason=str(FRAMEWORKS["tensorflow"].unavailable_reason())
)

THREADS = 2  # TF keeps the first value set in a process; the other TF tests use 2 as well


@pytest.fixture(scope="module")
def pt():
    from dlbench.explain import profile_tensorflow

    return profile_tensorflow


@pytest.fixture(scope="module")
def fw():
    from dlbench.frameworks import tensorflow as tfmod

    fw = tfmod.TensorFlowFramework()
    fw.setup(variant="graph", threads=THREADS, seed=0, device="cpu")
    return fw


def _arrays(shape: tuple[int, int, int], n: int = 64, classes: int = 10) -> Arrays:
    rng = np.random.default_rng(0)

    def split(count: int) -> ArraySplit:
        return ArraySplit(
            rng.random((count, *shape), dtype=np.float32), rng.integers(0, classes, count).astype(np.int64)
        )

    return Arrays("random", split(n), split(16), classes)


def _profile(pt, fw, variant: str, model: str, optimizer: str, steps: int) -> tuple[Recording, Breakdown]:
    """`steps` steady-state steps of a warmed-up trainer under the profiler."""
    shape = (28, 28, 1) if model == "lenet5" else (32, 32, 3)
    fw.setup(variant=variant, threads=THREADS, seed=0, device="cpu")
    try:
        native = fw.prepare(_arrays(shape))
        settings = TrainSettings(
            model=model, batch_size=16, epochs=None, steps=steps, optimizer=optimizer, lr=0.01, seed=0
        )
        trainer = fw.build(native, settings)
    finally:
        fw.setup(variant="graph", threads=THREADS, seed=0, device="cpu")
    trainer.first_step()
    trainer.train()  # the first train() builds its iterator and callbacks once
    rec = pt.record(trainer.train)
    return rec, attribute(rec.events, pt.RULES, rec.wall_s, steps=steps)


@pytest.fixture(scope="module")
def lenet5_graph(pt, fw):
    return _profile(pt, fw, "graph", "lenet5", "sgd", steps=3)


@pytest.fixture(scope="module")
def resnet18_graph(pt, fw):
    return _profile(pt, fw, "graph", "resnet18", "adam", steps=2)


@pytest.fixture(scope="module")
def lenet5_xla(pt, fw):
    return _profile(pt, fw, "xla", "lenet5", "sgd", steps=3)


@pytest.fixture(scope="module")
def lenet5_eager(pt, fw):
    return _profile(pt, fw, "eager", "lenet5", "sgd", steps=2)


def _share(b: Breakdown, category: str) -> float:
    return b.per_step[category] * b.steps / b.busy_s


def _assert_sound(rec: Recording, b: Breakdown) -> None:
    """What every real trace must satisfy."""
    import tensorflow as tf

    assert rec.source == f"tensorflow profiler (tensorflow {tf.__version__})"
    assert rec.note and rec.wall_s > 0 and b.busy_s > 0
    # No op counted twice: the union of op time fits in the call.
    assert b.busy_s <= rec.wall_s * 1.05
    # The trace is cut to the call's own range.
    span_us = max(e.end_us for e in rec.events) - min(e.start_us for e in rec.events)
    assert span_us <= rec.wall_s * 1e6 * 1.05 + 100
    assert _share(b, "other") < 0.10, b.top_ops.get("other")
    # Events on one lane nest: two events are disjoint or one holds the other
    # (0.01 us for the picosecond -> microsecond rounding).
    lanes: dict[str, list[OpEvent]] = defaultdict(list)
    for e in rec.events:
        assert e.dur_us > 0
        lanes[e.lane].append(e)
    for events in lanes.values():
        open_ends: list[float] = []
        for e in sorted(events, key=lambda e: (e.start_us, -e.dur_us)):
            while open_ends and open_ends[-1] <= e.start_us + 0.01:
                open_ends.pop()
            assert not open_ends or e.end_us <= open_ends[-1] + 0.01, (e, open_ends[-1])
            open_ends.append(e.end_us)
    # Known op families land in their category wherever they show up among the top ops.
    families = {
        r"^(?:_Mkl\w*)?Conv2D|^convolution": "convolution",
        r"^(?:_Mkl\w*)?MatMul": "matmul",
        r"^(?:_Mkl\w*)?MaxPool|reduce-window": "reduction",
        r"^Iterator::": "data_movement",
        r"^(?:ExecutorState::|EagerLocalExecute: |TFE_|KernelAndDeviceFunc::Run$)": "overhead",
    }
    for category, ops in b.top_ops.items():
        for name, _ in ops:
            for pattern, expected in families.items():
                if re.search(pattern, name):
                    assert category == expected, (name, category)


def test_graph_lenet5_splits_into_its_layers(lenet5_graph):
    rec, b = lenet5_graph
    _assert_sound(rec, b)
    for category in ("convolution", "matmul", "reduction", "optimizer", "data_movement", "overhead"):
        assert b.per_step[category] > 0, category
    assert b.per_step["convolution"] > b.per_step["elementwise"]
    # Graph ops carry their full name as scope: "StatefulPartitionedCall/sgd/...:AssignSubVariableOp".
    updates = [e for e in rec.events if e.name == "AssignSubVariableOp"]
    assert updates and all(re.search(r"(?:^|/)sgd(?:_\d+)?/", e.scopes[0]) for e in updates)
    assert all(e.scopes[0].endswith(":" + e.name) for e in rec.events if e.name in ("Mul", "ReluGrad"))


def test_graph_resnet18_finds_batch_norm_and_adam(resnet18_graph):
    rec, b = resnet18_graph
    _assert_sound(rec, b)
    assert _share(b, "convolution") > 0.4
    assert b.per_step["normalization"] > 0 and b.per_step["optimizer"] > 0
    # Keras 3 batch norm is plain math under tf.nn.moments / batch_normalization scopes.
    norm_ops = {name for name, _ in b.top_ops["normalization"]}
    assert norm_ops & {"Mean", "SquaredDifference", "Mul", "Sub", "Rsqrt", "Tile", "Sum"}, norm_ops
    # Adam's math (square, sqrt, divide) is optimizer work by its scope, not elementwise.
    adam_ops = {name for name, _ in b.top_ops["optimizer"]}
    assert adam_ops & {"Square", "Sqrt", "RealDiv", "Sub", "Mul"}, adam_ops
    assert "Sqrt" not in {name for name, _ in b.top_ops.get("elementwise", [])}


def test_xla_lenet5_scopes_hlo_ops_by_their_tf_op(lenet5_xla):
    rec, b = lenet5_xla
    _assert_sound(rec, b)
    for category in ("convolution", "matmul", "reduction", "optimizer"):
        assert b.per_step[category] > 0, category
    hlo = [e for e in rec.events if re.match(r"^(?:convolution|MatMul|\w+_fusion)", e.name)]
    assert hlo, "no XLA instruction in the trace"
    # The HLO protos in the trace name the TF op each instruction came from.
    assert any(s.endswith(":Conv2D") for e in hlo for s in e.scopes)
    assert any(re.match(r"sgd(?:_\d+)?/", s) for e in hlo for s in e.scopes)  # Keras numbers later optimizers
    assert not any(e.name.startswith("end: ") or e.name.startswith("ThreadpoolListener") for e in rec.events)


def test_eager_lenet5_ops_are_their_kernels(lenet5_eager):
    rec, b = lenet5_eager
    _assert_sound(rec, b)
    assert b.per_step["convolution"] > 0 and b.per_step["matmul"] > 0 and b.per_step["optimizer"] > 0
    convs = [e for e in rec.events if e.name in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")]
    assert convs and all(e.lane.endswith("/python") and not e.scopes for e in convs)
    # The kernel ranges became the ops: nothing on their lane starts inside one.
    lane = [e for e in rec.events if e.lane == convs[0].lane]
    assert not any(c.start_us < e.start_us < c.end_us for c in convs for e in lane)


def test_record_calls_run_once_and_stops_the_profiler(pt):
    import tensorflow as tf

    calls = []

    def run():
        calls.append(1)
        return float(tf.reduce_sum(tf.ones((64, 64))))

    rec = pt.record(run)
    assert calls == [1] and rec.wall_s > 0
    assert any(e.name == "Sum" for e in rec.events) and not any(e.name == pt._WINDOW for e in rec.events)

    def fails():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        pt.record(fails)
    assert pt.record(lambda: None).wall_s >= 0  # the profiler was stopped: it starts again


# -- a hand-made trace ----------------------------------------------------------


def _space(lines: dict[str, list[tuple[str, int, int]]], display: dict[str, str] | None = None):
    """An XSpace with one host plane: line name -> [(event name, start us, duration us)]."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    ids: dict[str, int] = {}
    for i, (line_name, events) in enumerate(lines.items()):
        line = plane.lines.add(id=i, name=line_name, timestamp_ns=1_800_000_000_000_000_000)
        for name, start, dur in events:
            if name not in ids:
                ids[name] = len(ids) + 1
                meta = plane.event_metadata[ids[name]]
                meta.id, meta.name = ids[name], name
                meta.display_name = (display or {}).get(name, "")
            line.events.add(metadata_id=ids[name], offset_ps=start * 1_000_000, duration_ps=dur * 1_000_000)
    return space


def test_eager_ops_compile_ranges_and_marks_read_from_a_hand_made_trace(pt):
    space = _space(
        {
            "python": [
                ("EagerExecute", 0, 100),
                ("EagerLocalExecute: Conv2D", 1, 98),
                ("EagerCopyToDevice", 2, 3),
                ("EagerKernelExecute", 10, 80),
                ("KernelAndDeviceFunc::Run", 11, 78),
                ("ParallelFor", 20, 50),
                # A tf.function called eagerly stays runtime: its ops run on the executor.
                ("EagerLocalExecute: __inference_step_12", 200, 50),
                ("EagerKernelExecute", 201, 48),
                ("tf.function-graph_building", 300, 40),
                ("EagerLocalExecute: _EagerConst", 310, 5),
                ("ThreadpoolListener::StartRegion", 400, 0),
            ],
            "tf_Compute/1": [
                ("ExecutorState::Process", 200, 40),
                ("model/dense/MatMul:_MklMatMul", 205, 20),
                ("end: wrapped_iota", 230, 1),
                ("HLO passes after layout assignment", 500, 30),
                ("fusion", 505, 10),
                ("copy-insertion", 520, 5),
            ],
        },
        display={"model/dense/MatMul:_MklMatMul": "_MklMatMul"},
    )
    events = list(pt._events_of(space))
    got = {(e.name, e.lane.rpartition("/host:CPU/")[2], e.start_us, e.dur_us, e.scopes) for e in events}
    assert got == {
        ("EagerExecute", "python", 0.0, 100.0, ()),
        ("EagerLocalExecute: Conv2D", "python", 1.0, 98.0, ()),
        ("EagerCopyToDevice", "python", 2.0, 3.0, ()),
        ("Conv2D", "python", 10.0, 80.0, ()),  # the kernel's range, what it encloses dropped
        ("EagerLocalExecute: __inference_step_12", "python", 200.0, 50.0, ()),
        ("EagerKernelExecute", "python", 201.0, 48.0, ()),
        ("tf.function-graph_building", "python", 300.0, 40.0, ()),  # tracing, whole
        ("ExecutorState::Process", "tf_Compute/1", 200.0, 40.0, ()),
        ("_MklMatMul", "tf_Compute/1", 205.0, 20.0, ("model/dense/MatMul:_MklMatMul",)),
        ("HLO passes after layout assignment", "tf_Compute/1", 500.0, 30.0, ()),  # its passes are no ops
    }
    cats = {e.name: categorize(e, pt.RULES) for e in events}
    assert cats["Conv2D"] == "convolution" and cats["_MklMatMul"] == "matmul"
    assert cats["HLO passes after layout assignment"] == cats["tf.function-graph_building"] == "compile"
    assert {cats[n] for n in ("EagerExecute", "EagerLocalExecute: Conv2D", "EagerKernelExecute")} == {"overhead"}
    b = attribute(events, pt.RULES, wall_s=600e-6, steps=1)
    assert b.per_step["convolution"] == pytest.approx(80e-6) and b.per_step["compile"] == pytest.approx(70e-6)


# -- the rules, one family at a time ----------------------------------------------

CASES = [
    # (name, scope, category)
    ("Conv2D", "StatefulPartitionedCall/sequential/conv2d/convolution:Conv2D", "convolution"),
    ("_MklNativeConv2DBackpropFilterWithBias", "", "convolution"),
    ("Conv2DBackpropInput", "", "convolution"),
    ("_FusedConv2D", "", "convolution"),
    ("DepthwiseConv2dNative", "", "convolution"),
    ("bitcast_copy_fusion", "gradient_tape/m/conv2/convolution/Conv2DBackpropInput:Conv2DBackpropInput", "convolution"),
    ("convolution.4", "", "convolution"),
    ("MatMul", "", "matmul"),
    ("BatchMatMulV2", "", "matmul"),
    ("_MklNativeFusedMatMul", "", "matmul"),
    ("MatMul_1.6", "gradient_tape/m/fc1/MatMul/MatMul_1:MatMul", "matmul"),
    ("dot.3", "", "matmul"),
    ("volta_sgemm_128x64_nn", "", "matmul"),
    ("FusedBatchNormV3", "", "normalization"),
    ("FusedBatchNormGradV3", "", "normalization"),
    ("_FusedBatchNormEx", "", "normalization"),
    ("add_rsqrt_fusion", "m/norm/FusedBatchNormV3:FusedBatchNormV3", "normalization"),
    ("Mean", "StatefulPartitionedCall/resnet18/bn1/moments/mean:Mean", "normalization"),
    ("Rsqrt", "StatefulPartitionedCall/resnet18/layer1_0_bn1/batchnorm/Rsqrt:Rsqrt", "normalization"),
    ("multiply_reduce_fusion.1", "gradient_tape/r/bn1_1/batchnorm/mul_1/Sum:Sum", "normalization"),
    ("MaxPool", "", "reduction"),
    ("MaxPoolGrad", "", "reduction"),
    ("_MklNativeMaxPool", "", "reduction"),
    ("Softmax", "", "reduction"),
    ("SparseSoftmaxCrossEntropyWithLogits", "", "reduction"),
    ("Sum", "", "reduction"),
    ("Mean", "", "reduction"),
    ("BiasAddGrad", "", "reduction"),
    ("Cast", "StatefulPartitionedCall/compile_loss/sparse_categorical_crossentropy/Cast:Cast", "reduction"),
    ("wrapped_reduce-window.2", "", "reduction"),
    ("wrapped_scatter.1", "gradient_tape/m/pool1/MaxPool2d/MaxPoolGrad:MaxPoolGrad", "reduction"),
    ("input_reduce_fusion.2", "", "reduction"),
    ("ResourceApplyGradientDescent", "", "optimizer"),
    ("ResourceApplyAdam", "", "optimizer"),
    ("AssignSubVariableOp", "StatefulPartitionedCall/sgd/AssignSubVariableOp_3:AssignSubVariableOp", "optimizer"),
    ("AssignAddVariableOp", "", "optimizer"),
    ("fusion.3", "training/ResourceApplyGradientDescent:ResourceApplyGradientDescent", "optimizer"),
    ("Sqrt", "StatefulPartitionedCall/adam/Sqrt_4:Sqrt", "optimizer"),
    ("ReadVariableOp", "StatefulPartitionedCall/adam/Sub/ReadVariableOp:ReadVariableOp", "optimizer"),
    ("Mul", "SGD/mul:Mul", "optimizer"),  # tf.keras 2 named the scope after the class
    ("multiply_subtract_fusion.6", "sgd/AssignSubVariableOp_3:AssignSubVariableOp", "optimizer"),
    ("Relu", "", "elementwise"),
    ("BiasAdd", "", "elementwise"),
    ("AddV2", "StatefulPartitionedCall/Add_2:AddV2", "elementwise"),
    ("Mul", "", "elementwise"),
    ("AddN", "", "elementwise"),
    # Seen in the dai study's Transformer (GELU) and DeepSpeech2 (a while-loop RNN) traces.
    ("Erfc", "", "elementwise"),
    ("_UnaryOpsComposition", "", "elementwise"),
    ("TensorListFromTensor", "", "data_movement"),
    ("broadcast_maximum_fusion.3", "", "elementwise"),
    ("fusion.12", "", "elementwise"),
    ("compare_select_fusion", "gradient_tape/m/conv1/ReluGrad:ReluGrad", "elementwise"),
    ("ReadVariableOp", "StatefulPartitionedCall/m/conv1/convolution/ReadVariableOp:ReadVariableOp", "data_movement"),
    ("Identity", "", "data_movement"),
    ("Reshape", "", "data_movement"),
    ("GatherV2", "", "data_movement"),
    ("Transpose", "", "data_movement"),
    ("IteratorGetNext", "", "data_movement"),
    ("AssignVariableOp", "", "data_movement"),
    ("Iterator::Prefetch", "", "data_movement"),
    ("copy_reverse_fusion.4", "", "data_movement"),
    ("copy.24", "", "data_movement"),
    ("bitcast_copy_fusion.1", "gradient_tape/m/flatten/Reshape:Reshape", "data_movement"),
    ("MemcpyH2D", "", "data_movement"),
    ("all-reduce-start.1", "", "data_movement"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "", "data_movement"),
    ("CollectiveReduceV2", "", "data_movement"),
    ("CpuCompiler::RunBackend", "", "compile"),
    ("tf.function-graph_building", "", "compile"),
    ("TaskDispatcher::dispatch", "", "compile"),
    ("ExecutorState::Process", "", "overhead"),
    ("EagerLocalExecute: BiasAddGrad", "", "overhead"),
    ("TFE_Py_ExecuteCancelable", "", "overhead"),
    ("BlockUntilReady", "", "overhead"),
    ("StatefulPartitionedCall", "", "overhead"),
    ("NoOp", "", "overhead"),
    ("PartitionedCall", "StatefulPartitionedCall/m/lstm/PartitionedCall:PartitionedCall", "overhead"),
    ("SomethingNew", "", "other"),
]


@pytest.mark.parametrize(("name", "scope", "category"), CASES)
def test_rules(pt, name, scope, category):
    event = OpEvent(name, "lane", 0.0, 1.0, (scope,) if scope else ())
    assert categorize(event, pt.RULES) == category


def test_every_rule_is_reached(pt):
    """No rule is dead: each one decides at least one case above."""
    used = set()
    for name, scope, _ in CASES:
        event = OpEvent(name, "lane", 0.0, 1.0, (scope,) if scope else ())
        # The first rule that matches (no rule's category is "other").
        used.add(next((i for i, rule in enumerate(pt.RULES) if categorize(event, [rule]) == rule.category), -1))
    used.discard(-1)  # SomethingNew
    assert used == set(range(len(pt.RULES))), [pt.RULES[i].pattern[:40] for i in set(range(len(pt.RULES))) - used]
