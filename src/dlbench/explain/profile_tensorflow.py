"""The TensorFlow profiler's trace of one call, as `OpEvent`s, and TensorFlow's op rules.

`record(run)` calls `run()` once under `tf.profiler.experimental` and reads the XPlane
files it wrote. What is an op there depends on how the step runs:

- graph (tf.function): each executed TF op is an event on the executor thread that ran
  it (`tf_Compute/...`), named `full/op/name:OpType` (the display name is the type; a
  oneDNN build runs `_MklNativeConv2D` where the graph says Conv2D). Name = the type,
  scopes = (`full/op/name:OpType`,), so rules can match the name scopes (`adam/`,
  `.../moments/`) as well as the type.
- xla (jit_compile): the compiled program's HLO instructions are events on the
  Eigen threads (`tf_numa_-1_Eigen/...`) or the executor thread, carrying `hlo_op`
  and `hlo_module` stats. Name = the HLO instruction (`convolution.4`,
  `multiply_subtract_fusion.6`); scopes = the TF op XLA lowered it from, read from
  the HLO proto that the trace carries (`/host:metadata`), in the same `name:Type`
  form, so the same scope rules apply to both variants.
- eager: ops are only visible on the Python thread, as `EagerLocalExecute: OpType`
  around the kernel's `EagerKernelExecute`; the op is the kernel's interval (the
  executor's own work around it stays runtime activity), with no name scopes.
- on a GPU (not run here: the project's TensorFlow is CPU-only) kernels are events on
  the device plane's stream lines, scoped by the TF op that launched them (`tf_op`
  stat or kernel annotation); the lines the profiler derives from them ("XLA Ops",
  "TensorFlow Ops", "Steps") repeat the same kernels and are left out.

tf.data's threads are input-pipeline work ("data_movement"). Everything else on
those threads is runtime activity (executor dispatch, the eager C API, waiting for a
compiled program) and stays in the trace as such: the rules map it to "overhead",
counted only where no op runs. Compilation (XLA's compiler, the tracing of a
tf.function) is kept as its outermost range only: the passes inside it would
otherwise be read as ops ("fusion", "copy-insertion"). The trace is cut to a TraceMe
range around the call, so that threads that go on after it (tf.data prefetching) add
no work that the wall time lacks.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from dlbench.explain.categories import Rule
from dlbench.explain.events import OpEvent, Recording

# -- rules --------------------------------------------------------------------------

# Kernel variants around a TF op type: oneDNN's `_Mkl`/`_MklNative` rewrites and
# Grappler's `_Fused` ones (`_MklNativeFusedConv2D`, `_FusedBatchNormEx`).
_VARIANT = r"(?:_Mkl(?:Native)?|_)?(?:Fused)?"

# TF op types by category: (regular expression of the type, category, why).
_OP_TYPES: tuple[tuple[str, str, str], ...] = (
    (r"(?:Conv[23]D|DepthwiseConv2dNative|XlaConv)\w*", "convolution", ""),
    (r"(?:Batch)?MatMul\w*|Einsum|XlaDot\w*", "matmul", ""),
    (r"(?:BatchNorm|LayerNorm)\w*", "normalization", ""),
    (
        r"(?:Max|Avg)Pool\w*|(?:Log)?Softmax|(?:Sparse)?SoftmaxCrossEntropyWithLogits|Sum|Mean|Max|Min|Prod|All|Any"
        r"|ArgM(?:ax|in)|EuclideanNorm|BiasAddGrad|L2Loss|CTCLoss\w*|Cum(?:sum|prod)|TopKV2|(?:Unsorted)?Segment\w+",
        "reduction",
        "BiasAddGrad sums the gradient over the batch and spatial axes",
    ),
    (
        r"(?:Resource)?(?:Sparse)?Apply\w+|Assign(?:Sub|Add)VariableOp",
        "optimizer",
        "Keras' optimizers update variables in place (assign_sub / assign_add, or a ResourceApply kernel); "
        "its metrics and batch norm's moving averages use AssignVariableOp",
    ),
    (
        r"(?:Relu6?|Elu|Selu|Gelu|LeakyRelu|Sigmoid|Tanh|Softplus|Softsign|Swish|Mish)(?:Grad)?|BiasAdd(?:V1)?"
        r"|AddV2|AddN|Add|Sub|Mul|MulNoNan|Div|DivNoNan|RealDiv|FloorDiv|FloorMod|TruncateDiv|Maximum|Minimum|Neg"
        r"|Abs|Sign|Square|SquaredDifference|Sqrt|Rsqrt|SqrtGrad|RsqrtGrad|Reciprocal|ReciprocalGrad|Inv|Pow|Exp"
        r"|Expm1|Log|Log1p|Erfc?|_UnaryOpsComposition|Round|Floor|Ceil|ClipByValue|Equal|NotEqual|Less|LessEqual|Greater|GreaterEqual"
        r"|Logical(?:And|Or|Not)|Select(?:V2)?|IsFinite|(?:Stateless|Stateful)?(?:Random|TruncatedNormal)\w*",
        "elementwise",
        "random draws (dropout's masks) are element-wise too; _UnaryOpsComposition is grappler's fusion of "
        "element-wise ops",
    ),
    (
        r"ReadVariableOp|AssignVariableOp|VarHandleOp|Identity(?:N)?|Snapshot|StopGradient|PreventGradient|Cast"
        r"|Reshape|Squeeze|ExpandDims|(?:Conjugate)?Transpose|Gather\w*|ResourceGather|Scatter\w*|TensorScatter\w*"
        r"|Concat(?:V2|Offset)?|Pack|Unpack|Split(?:V)?|Slice|StridedSlice(?:Grad)?|Pad(?:V2)?|MirrorPad\w*|Tile"
        r"|BroadcastTo|BroadcastGradientArgs|Fill|ZerosLike|OnesLike|Const|_EagerConst|Shape(?:N)?|Size|Rank|Range"
        r"|Reverse(?:V2)?|OneHot|Where|DynamicStitch|_Send|_Recv|_HostSend|_HostRecv|_MklToTf|_Arg|_Retval"
        r"|IteratorGetNext\w*|Optional(?:FromValue|GetValue|HasValue|None)|MakeIterator|AnonymousIterator\w*"
        r"|\w*Dataset(?:V\d)?|DatasetCardinality|Collective\w*|Nccl\w*|TensorList\w+|TensorArray\w*",
        "data_movement",
        "variable reads, casts, reshapes, the input iterator, a recurrent loop's tensor lists; collectives (no "
        "category of their own) move data too",
    ),
    (
        r"NoOp|StatefulPartitionedCall|PartitionedCall|While|StatelessWhile|If|StatelessIf|Case|Switch|Merge|Enter"
        r"|Exit|NextIteration|LoopCond|XlaLaunch\w*|_XlaRun|ControlTrigger",
        "overhead",
        "control flow and function calls: their work is the ops they run, which are events of their own",
    ),
)

_OPTIMIZERS = r"sgd|adam|adamw|adamax|nadam|rmsprop|adagrad|adadelta|ftrl|lion|lamb|optimizer"

# Compilation: the outermost ranges of XLA's compiler and of a tf.function's tracing
# (record() drops what they enclose). Some of XLA's HLO pass pipelines show under their
# own names only: the last line lists XLA:CPU's (TF 2.21) outside "HLO passes ...".
_COMPILE = (
    r"^tf\.function-graph_building$|^(?:Cpu|Gpu|NVPTX|AMDGPU|Jit|Fusion)Compiler::|^HLO passes|^XlaCompil"
    r"|^_XlaCompile$|^TaskDispatcher::dispatch$|^RunInvariantCheckers$"
    r"|^(?:sharding-removal|hlo normalization|dot-library-passes|SubbytePacker pipeline)$"
)

# HLO instructions that XLA made up itself (no TF op in their metadata), by name.
_HLO_MOVES = r"copy|transpose|bitcast|concatenate|slice|dynamic-slice|dynamic-update-slice|pad|broadcast|iota"
_HLO_MOVES += r"|reshape|gather|scatter|reverse|tuple|get-tuple-element|constant|copy-start|copy-done"

RULES: tuple[Rule, ...] = (
    Rule(_COMPILE, "compile", why="XLA's compiler (its HLO passes and codegen) and tf.function tracing"),
    Rule(
        rf"(?i)(?:^|/)(?:{_OPTIMIZERS})(?:_\d+)?/",
        "optimizer",
        on="scope",
        why="every op under the Keras optimizer's name scope (adam/Sqrt, sgd/Mul) is the update",
    ),
    Rule(
        r"/(?:moments|batchnorm)/|(?:^|/)(?:[^/]*_)?(?:bn\d*|batch_normalization|layer_normalization)(?:_\d+)?/",
        "normalization",
        on="scope",
        why="Keras 3 batch norm is plain math (Mean, SquaredDifference, Rsqrt) under tf.nn.moments / "
        "batch_normalization's scopes, and its moving averages sit under the layer's scope",
    ),
    Rule(
        r"(?:^|/)compile_loss/",
        "reduction",
        on="scope",
        why="the loss Keras compiled in (softmax cross-entropy, its casts and means) and its gradient",
    ),
    # The TF op an event is (graph) or was lowered from (XLA): `full/name:Type` scopes.
    *(Rule(rf":{_VARIANT}(?:{types})$", category, on="scope", why=why) for types, category, why in _OP_TYPES),
    # Eager ops have no scopes: their name is the type.
    *(Rule(rf"^{_VARIANT}(?:{types})$", category, why=why) for types, category, why in _OP_TYPES),
    # The eager C API's ranges (an eager op is the kernel inside them).
    Rule(r"^(?:Eager|TFE_)", "overhead", why="the eager runtime around each op's kernel: dispatch, checks, copies"),
    Rule(
        r"^(?:Iterator::|IteratorGetNextOp::|Prefetch(?:Produce|Consume)$|MakeIterator::)",
        "data_movement",
        why="tf.data's input pipeline producing and handing over batches (a step waiting for one included)",
    ),
    # XLA's own instructions (no TF op recorded) and GPU kernels without one.
    Rule(
        r"^(?:all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)|^nccl",
        "data_movement",
        why="collectives between devices: communication has no category of its own",
    ),
    Rule(r"^(?:wrapped_)?convolution|cudnn\w*[Cc]onv|convolve|fprop|dgrad|wgrad", "convolution"),
    Rule(r"^(?:wrapped_)?dot\b|^(?:Batch)?MatMul(?:_\d+)?\.\d+$|gemm|cublas", "matmul"),
    Rule(r"reduce-window|select-and-scatter", "reduction", why="pooling and its gradient, as XLA writes them"),
    Rule(
        rf"^(?:wrapped_)?(?:{_HLO_MOVES})(?:\.\d+)?$|^(?:(?:{_HLO_MOVES})_)+fusion(?:\.\d+)?$|^Memcpy|^Memset",
        "data_movement",
        why="an XLA instruction or fusion of nothing but layout changes, copies and index generation",
    ),
    Rule(r"reduce(?!-precision)", "reduction"),
    Rule(r"fusion|^wrapped_", "elementwise", why="an XLA fusion of element-wise math (kLoop)"),
    Rule(
        r"::|^(?:cu|cuda|hip)[A-Z]\w*$|^(?:BlockUntilReady|FunctionRun|ParallelFor|convert_to_tensor|tf\.constant"
        r"|ValidateInputTypeAndPlacement|ExecutorDoneCallback)$",
        "overhead",
        why="TensorFlow's runtime: executor dispatch, the eager C API, waiting for a compiled program",
    ),
)

# -- reading the trace ----------------------------------------------------------------

_COMPILE_RE = re.compile(_COMPILE)
# Lines of the compiler's own worker threads: all of their work is compilation.
_COMPILER_LINE = re.compile(r"xla.*(?:codegen|compil)", re.IGNORECASE)
# Lines that the profiler derives from others on a device plane (they repeat its
# stream's kernels), and planes that are no timeline.
_DERIVED_LINES = re.compile(
    r"^(?:XLA (?:Ops|Modules|TraceMe)|Async XLA Ops|TensorFlow (?:Ops|Name Scope)|Steps"
    r"|Framework (?:Ops|Name Scope)|Source code|Launch Stats|SparseCore\b)"
)
_NO_TIMELINE_PLANES = ("/host:metadata", "Task Environment")
# Marks without work: thread-pool region markers, allocator records (zero length), the
# completion marks of XLA's asynchronous thunks, and the Python tracer's functions
# (off here; with it on, every Python frame would enclose the ops it calls).
_SKIP = re.compile(r"^(?:ThreadpoolListener::|Memory(?:De)?[Aa]llocation$|end: |\$)")
_WINDOW = "dlbench.explain.record"
_OP_TYPE = re.compile(r"^_?[A-Z][A-Za-z0-9_]*$")
_EAGER_OP = "EagerLocalExecute: "
_EAGER_KERNEL = "EagerKernelExecute"
# A tf.function called eagerly runs as one "op" named after its function definition.
_FUNCTION = re.compile(r"^__(?:inference|forward|backward)_|^__wrapped__")

_NOTE = (
    "a kernel's intra-op worker threads are not traced: each kernel is one event on the thread that ran it; "
    "Python between ops (Keras' fit loop, callbacks) is invisible and counts as overhead & idle; eager ops carry "
    "no name scopes, so there only an optimizer's update kernels (AssignSub/AssignAdd, ResourceApply*) count as "
    "optimizer and its other math as element-wise; under XLA the lowering from TF to HLO is not traced, and "
    "instructions XLA made itself count by their HLO name"
)


def record(run: Callable[[], object]) -> Recording:
    """Call `run()` once under the TensorFlow profiler; its events and wall time.

    `run` must return once its work has finished (a host read of its result), as
    dlbench's trainers do: the wall time is that of the call."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    # The defaults, spelled out: host TraceMe at level 2 (ops and runtime), no Python
    # tracer (every Python frame would be an event enclosing the ops it calls).
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=2, python_tracer_level=0, device_tracer_level=1
    )
    spaces = []
    with tempfile.TemporaryDirectory(prefix="dlbench-tf-explain-") as folder:
        tf.profiler.experimental.start(folder, options=options)
        try:
            # The call's own range on the profiler's clock, to cut the trace to it.
            with tf.profiler.experimental.Trace(_WINDOW):
                t0 = time.perf_counter()
                run()
                wall = time.perf_counter() - t0
        finally:
            tf.profiler.experimental.stop()
        for path in sorted(glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)):
            space = xplane_pb2.XSpace()
            with open(path, "rb") as f:
                space.ParseFromString(f.read())
            spaces.append(space)
    # One origin for all files (one per host; one here): their lanes share the clock.
    origin = min((_first_stamp(space) for space in spaces), default=0)
    events = _within_window([e for space in spaces for e in _events_of(space, origin)])
    return Recording(
        events=events, wall_s=wall, source=f"tensorflow profiler (tensorflow {tf.__version__})", note=_NOTE
    )


def _within_window(events: list[OpEvent]) -> tuple[OpEvent, ...]:
    """The events inside the `_WINDOW` range, cut at its ends, the range itself left out:
    threads that go on after the call (tf.data prefetching the next batch) or the
    profiler's own start and stop would otherwise add work that the wall time lacks.
    All events, as they are, where the range is missing."""
    window = next((e for e in events if e.name == _WINDOW), None)
    if window is None:
        return tuple(events)
    out = []
    for e in events:
        if e is window:
            continue
        start, end = max(e.start_us, window.start_us), min(e.end_us, window.end_us)
        if end > start:
            out.append(e if (start, end) == (e.start_us, e.end_us) else replace(e, start_us=start, dur_us=end - start))
    return tuple(out)


def _first_stamp(space: Any) -> int:
    """The earliest line timestamp (ns) of a trace's timelines; 0 for an empty one."""
    stamps = [line.timestamp_ns for p in _timelines(space) for line in p.lines if line.events]
    return min(stamps, default=0)


def _timelines(space: Any) -> list[Any]:
    return [p for p in space.planes if p.name not in _NO_TIMELINE_PLANES]


def _events_of(space: Any, origin_ns: int | None = None) -> Iterator[OpEvent]:
    """The `OpEvent`s of one XSpace (one host's trace), in microseconds from `origin_ns`
    on the profiler's clock (default: the trace's first line). Microseconds from an
    origin, not from the epoch: profiler nanoseconds since the epoch (~1.8e18) have too
    many digits for a float64 to keep sub-microsecond offsets."""
    hlo = _hlo_tf_ops(space)
    if origin_ns is None:
        origin_ns = _first_stamp(space)
    for plane in _timelines(space):
        device = plane.name.startswith("/device:")
        seen: set[str] = set()
        for line in plane.lines:
            if device and _DERIVED_LINES.match(line.name):
                continue
            lane = f"{plane.name}/{line.name or line.id}"
            if lane in seen:
                lane = f"{lane}#{line.id}"
            seen.add(lane)
            base_ps = (line.timestamp_ns - origin_ns) * 1000
            yield from _line_events(plane, line, lane, base_ps, hlo, compiler=bool(_COMPILER_LINE.search(line.name)))


def _stats(plane: Any, holder: Any) -> dict[str, Any]:
    """An event's or metadata's stats by name; references resolved to their names."""
    out: dict[str, Any] = {}
    for s in holder.stats:
        kind = s.WhichOneof("value")
        if kind is None:
            continue
        value = getattr(s, kind)
        if kind == "ref_value":
            value = plane.stat_metadata[value].name
        out[plane.stat_metadata[s.metadata_id].name] = value
    return out


def _line_events(
    plane: Any, line: Any, lane: str, base_ps: int, hlo: dict[str, dict[str, str]], compiler: bool
) -> Iterator[OpEvent]:
    """One line's events, outermost first at equal starts. Dropped: marks without work,
    tf.function call ranges (the runtime events inside cover them), and everything
    inside a compilation range or an eager kernel (the range stands for it whole)."""
    raw = sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps))
    # Open ranges: (end_ps, what it is): "collapse" drops what it encloses, "eager:Type"
    # is an eager op ("eager:" a tf.function called eagerly), "" any other range.
    stack: list[tuple[int, str]] = []
    for e in raw:
        start, end = e.offset_ps, e.offset_ps + e.duration_ps
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack and stack[-1][1] == "collapse":
            continue
        meta = plane.event_metadata[e.metadata_id]
        full = meta.name
        name = meta.display_name or full
        if e.duration_ps <= 0 or _SKIP.match(name):
            continue
        stats = _stats(plane, e)
        if "tf_function_call" in stats:
            stack.append((end, ""))
            continue
        start_us = (base_ps + start) / 1e6
        dur_us = e.duration_ps / 1e6
        if (compiler and not stack) or _COMPILE_RE.search(name):
            # A compiler thread's task or a compile range: one event, the range whole.
            stack.append((end, "collapse"))
            yield OpEvent(name, lane, start_us, dur_us)
            continue
        if name == _EAGER_KERNEL:
            op = next((kind[6:] for _, kind in reversed(stack) if kind.startswith("eager:")), "")
            if op:
                # An eager op's kernel: the op itself (its type as name), all of it.
                stack.append((end, "collapse"))
                yield OpEvent(op, lane, start_us, dur_us)
                continue
        if name.startswith(_EAGER_OP):
            op = name[len(_EAGER_OP) :]
            stack.append((end, "eager:" + ("" if _FUNCTION.search(op) else op)))
            yield OpEvent(name, lane, start_us, dur_us)
            continue
        stack.append((end, ""))
        if "hlo_op" in stats:
            # An XLA instruction: scoped by the TF op it was lowered from, where known.
            program = hlo.get(str(stats.get("program_id", ""))) or hlo.get(str(stats.get("hlo_module", "")), {})
            tf_op = program.get(str(stats["hlo_op"]), "")
            yield OpEvent(full, lane, start_us, dur_us, (tf_op,) if tf_op else ())
        elif (op_type := _tf_op_type(full, meta.display_name)) is not None:
            # A TF op: "full/op/name:OpType", displayed as its type.
            yield OpEvent(op_type, lane, start_us, dur_us, (full,))
        else:
            # A device kernel is scoped by the TF op that launched it, where recorded.
            launcher = _launching_op(stats)
            yield OpEvent(name, lane, start_us, dur_us, (launcher,) if launcher else ())


def _launching_op(stats: dict[str, Any]) -> str:
    """The "tf/op/name:OpType" of a device kernel: its `tf_op` stat, else the innermost
    range of its annotation ("outer::inner", each "name:Type#key=value#"); "" if none."""
    if "tf_op" in stats:
        return str(stats["tf_op"])
    annotation = str(stats.get("kernel_annotation", ""))
    return annotation.rpartition("::")[2].partition("#")[0] if annotation else ""


def _tf_op_type(full: str, display: str) -> str | None:
    """The type of a TF op's event ("full/op/name:OpType"); None for other events."""
    if "::" in full or ":" not in full:
        return None
    op_type = full.rpartition(":")[2]
    if not _OP_TYPE.match(op_type) or (display and display != op_type):
        return None
    return op_type


def _hlo_tf_ops(space: Any) -> dict[str, dict[str, str]]:
    """Program (its id, and its module's name) -> HLO instruction name -> the
    "tf/op/name:OpType" it came from, from the HLO protos in the trace's metadata
    plane; {} where there are none (graph and eager runs) or no proto module."""
    try:
        from tensorflow.compiler.xla.service import hlo_pb2
    except ImportError:
        return {}
    out: dict[str, dict[str, str]] = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        for program_id, meta in plane.event_metadata.items():
            for stat in meta.stats:
                if stat.WhichOneof("value") != "bytes_value":
                    continue
                proto = hlo_pb2.HloProto()
                try:
                    proto.ParseFromString(stat.bytes_value)
                except Exception:  # another proto in bytes: not an HLO module
                    continue
                ops = _instruction_ops(proto.hlo_module.computations)
                out[str(program_id)] = out[proto.hlo_module.name] = ops
    return out


def _instruction_ops(computations: Iterable[Any]) -> dict[str, str]:
    """Each instruction's TF op: its own metadata, else (a fusion XLA named itself) that
    of the fused instruction nearest to the fusion's output that has one."""
    by_id = {c.id: c for c in computations}

    def tf_op(instruction: Any, depth: int = 0) -> str:
        m = instruction.metadata
        if m.op_name:
            return f"{m.op_name}:{m.op_type}" if m.op_type else m.op_name
        if depth < 4:
            for cid in instruction.called_computation_ids:
                if cid in by_id:
                    for inner in reversed(by_id[cid].instructions):
                        found = tf_op(inner, depth + 1)
                        if found:
                            return found
        return ""

    return {ins.name: op for c in by_id.values() for ins in c.instructions if (op := tf_op(ins))}
