"""JAX's profiler, reduced to `OpEvent`s: one per executed XLA instruction (a
thunk of XLA:CPU, a kernel elsewhere) and per runtime activity.

`record(run)` calls `run()` once under `jax.profiler.trace` and reads two files
the profiler writes:

- the Perfetto trace (`perfetto_trace.json.gz`): every traced event with its
  thread. An executed instruction carries `hlo_module` and `hlo_op` in its
  arguments and nothing more, so its name is the HLO instruction's
  ("convolution.2", "ynn_fusion.7", "multiply_add_fusion.3");
- the XSpace (`*.xplane.pb`): the optimized HLO of every module the process
  compiled, with each instruction's metadata: the JAX name stack
  ("jit(step)/transpose(jvp(ResNet))/layer1_0/bn1/reduce_sum") and the Python
  source frames that built it. These become the instruction's scopes, which is
  how the rules tell an optimizer update, a loss or a batch norm from other
  elementwise work, and what an opaque library fusion computes.

The XSpace is protobuf; the few fields read here are decoded by hand (stable field
numbers of xplane.proto and hlo.proto, listed below), since no public JAX API
exposes that metadata and the tensorflow package that ships those protos is no
dependency of the JAX adapter.

Which events are what (XLA:CPU, jax 0.10): the thunk executor runs each
instruction on an Eigen pool thread ("ThunkExecutor::Execute" encloses them: its
self time is the executor's own); "end: <op>" is an asynchronous thunk's
completion callback; the PjRt client thread waits for the whole executable
("ThunkExecutor::Execute (wait for completion)"); the Python thread dispatches
("PjitFunction(step)", "ParseArguments", "Wait for donation holds"). These are
runtime activity (category overhead, counted only where no instruction runs);
the events of XLA's compiler threads and of JAX's lowering are compile. With an
accelerator, the instructions are the events of its planes ("/device:GPU:0"), and
host events that name an instruction are its launches: runtime. Left out:
the Python tracer's function events (switched off: they slow every Python call)
and the thread pool's zero-length markers.

Scopes. An instruction's: its JAX name stack, then its source frames from the
jitted function inward ("optax/_src/update.py:42 apply_updates.<locals>.<lambda>";
installed packages from the package name on); a fusion adds, for each dot,
convolution, reduction or custom call fused into it, "fused:<opcode>" and that
instruction's scopes; a fusion without metadata takes its instructions'. A
runtime event's: "thread:<its thread>", then the runtime events that enclose it
on its lane. Only runtime events carry "thread:" scopes: the rules tell the two
apart by it.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dlbench.explain.categories import Rule
from dlbench.explain.events import OpEvent, Recording

# The event that brackets run() on the Python thread: everything is clipped to it.
_WINDOW = "dlbench.explain.record"

# XLA instruction names are opcodes with a suffix ("add", "dot.2", "wrapped_reduce-window.1",
# "broadcast_maximum_fusion.3"): an opcode token is delimited by "_", "." or the ends.
_ELEMENTWISE_OPS = (
    "add|subtract|multiply|divide|remainder|maximum|minimum|negate|abs|sign|exponential|"
    "exponential-minus-one|log|log-plus-one|logistic|rsqrt|sqrt|cbrt|power|tanh|tan|sine|cosine|"
    "atan2|erf|floor|ceil|round-nearest-even|round-nearest-afz|clamp|select|compare|convert|and|or|"
    "xor|not|shift-left|shift-right-logical|shift-right-arithmetic|is-finite|real|imag|map|"
    "popcnt|count-leading-zeros|stochastic-convert|reduce-precision|rng|rng-bit-generator|"
    "rng-get-and-update-state"
)
_DATA_MOVEMENT_OPS = (
    "copy|copy-start|copy-done|transpose|reverse|broadcast|bitcast|bitcast-convert|reshape|"
    "dynamic-reshape|gather|scatter|slice|dynamic-slice|dynamic-update-slice|concatenate|pad|iota|"
    "tuple|get-tuple-element|parameter|constant|sort|infeed|outfeed|send|recv|send-done|recv-done"
)
# JAX primitive names, the last component of an instruction's name stack.
_REDUCTION_PRIMS = (
    "reduce_sum|reduce_max|reduce_min|reduce_prod|reduce_and|reduce_or|reduce_xor|"
    "argmax|argmin|reduce_window|reduce_window_sum|reduce_window_max|reduce_window_min|"
    "select_and_scatter|select_and_scatter_add|select_and_gather_add|cumsum|cumprod|cummax|cummin|"
    "cumlogsumexp|reduce"
)
_DATA_MOVEMENT_PRIMS = (
    "transpose|reshape|broadcast_in_dim|squeeze|expand_dims|rev|slice|dynamic_slice|"
    "dynamic_update_slice|gather|scatter|scatter-add|scatter_add|concatenate|pad|copy|copy_p|iota|"
    "sort|device_put|split|random_wrap|random_unwrap"
)
_ELEMENTWISE_PRIMS = (
    "add|add_any|sub|mul|div|rem|max|min|neg|abs|sign|exp|exp2|expm1|log|log1p|logistic|tanh|"
    "rsqrt|sqrt|cbrt|pow|integer_pow|square|erf|erf_inv|erfc|floor|ceil|round|clamp|select_n|"
    "eq|ne|lt|le|gt|ge|and|or|not|xor|convert_element_type|is_finite|nextafter|sin|cos|tan|atan2|"
    "stop_gradient|shift_left|shift_right_logical|shift_right_arithmetic|population_count|"
    "custom_jvp_call|custom_vjp_call|pjit|reduce_precision|real|imag|conj|random_bits|threefry2x32"
)


def _token(alternatives: str) -> str:
    return rf"(?:^|_)(?:{alternatives})(?:[_.]|$)"


RULES: tuple[Rule, ...] = (
    # Runtime activity first: its names and scopes can hold op names ("end: convolution.2").
    Rule(
        r"^thread:.*(?:[Cc]ompil|codegen)",
        "compile",
        on="scope",
        why="XLA compiles on its own thread pools: HLO passes, MLIR/LLVM codegen",
    ),
    Rule(r"^(?:backend_compile\w*|\w*Compiler::\w+|\w*Client::Compile)$", "compile", on="scope"),
    Rule(r"compile|Compil|^lower_\w+$|^trace_to_jaxpr|^jaxpr_to_mlir|^TaskDispatcher::", "compile"),
    Rule(
        r"^thread:",
        "overhead",
        on="scope",
        why="runtime activity, not an XLA instruction: dispatch (PjitFunction, ParseArguments), "
        "buffer handling and donation waits, the thunk executor and its completion callbacks",
    ),
    Rule(r"^end: |::|^PjitFunction\(", "overhead", why="the same runtime events, where they carry no thread scope"),
    # Instructions. Convolution and matmul by name, or by the name stack of what a
    # library fusion (YNNPACK's "ynn_fusion", a oneDNN custom call) computes.
    Rule(r"^(?:wrapped_)?(?:convolution|conv_general_dilated|conv)(?:[.-]|$)", "convolution"),
    Rule(r"^(?:wrapped_)?(?:dot|matmul|gemm)(?:[._]|$)|onednn.*matmul|cublas|gemm_fusion", "matmul"),
    Rule(
        r"(?:^|/)optax/(?:losses/|_src/loss)",
        "reduction",
        on="scope",
        why="the loss (optax's softmax cross-entropy): softmax and loss, not the optimizer",
    ),
    Rule(
        r"(?:^|/)optax/",
        "optimizer",
        on="scope",
        why="built by optax (the update and apply_updates); XLA fuses the whole update of a parameter",
    ),
    Rule(
        r"(?:^|/)flax/.*normalization\.py:|/(?:BatchNorm|LayerNorm|GroupNorm|RMSNorm|InstanceNorm)(?:_\d+)?/",
        "normalization",
        on="scope",
        why="built in Flax's normalization layers (or a module named like one): batch statistics "
        "(reductions over the batch) and the normalizing elementwise ops, forward and backward",
    ),
    Rule(
        r"/select_and_scatter\w*$",
        "reduction",
        on="scope",
        why="max-pool's gradient: XLA:CPU rewrites select-and-scatter into a scatter",
    ),
    # Fusions by their opcodes: any reduce makes a reduction; any arithmetic, elementwise;
    # only data movement opcodes, data movement.
    Rule(
        r"all-reduce|reduce-scatter|all-gather|all-to-all|collective-permute|collective-broadcast",
        "data_movement",
        why="collectives: data moved between devices (their in-flight sums included)",
    ),
    Rule(r"reduce(?!-precision)|select-and-scatter|argmax|argmin|^input_fusion|reduction_fusion", "reduction"),
    Rule(
        r"^(?:loop_)?fusion(?:\.\d+)?$|^loop_\w*fusion",
        "elementwise",
        why="XLA's loop fusions: chains of elementwise ops",
    ),
    Rule(_token(_ELEMENTWISE_OPS), "elementwise"),
    Rule(
        _token(_DATA_MOVEMENT_OPS),
        "data_movement",
        why="copies, layout changes, kernel flips (reverse) for input gradients, fills (broadcast, "
        "iota), indexing, sorts (an epoch's shuffle)",
    ),
    # What remains (library fusions, custom calls): the JAX primitive their name stack ends with.
    Rule(
        r"^fused:convolution$|/conv_general_dilated$",
        "convolution",
        on="scope",
        why="a fusion or custom call that holds a convolution, or whose root is a JAX convolution",
    ),
    Rule(
        r"^fused:dot$|/(?:dot_general|dot|matmul|einsum)$",
        "matmul",
        on="scope",
        why="a fusion or custom call that holds a dot, or whose root is a JAX dot_general",
    ),
    Rule(r"^fused:(?:reduce|reduce-window|select-and-scatter)$", "reduction", on="scope"),
    Rule(rf"/(?:{_REDUCTION_PRIMS})$", "reduction", on="scope"),
    Rule(rf"/(?:{_DATA_MOVEMENT_PRIMS})$", "data_movement", on="scope"),
    Rule(rf"/(?:{_ELEMENTWISE_PRIMS})$", "elementwise", on="scope"),
)

_NOTE = (
    "jax.profiler sees each executed XLA instruction (on XLA:CPU a thunk: one HLO instruction or "
    "fusion) on the thread that launched it, not the intra-op threads it spreads over. A fusion is one "
    "event, categorised by its name, the dots, convolutions and reductions in it, and its root's JAX "
    "name stack and source lines: elementwise work XLA fused into a matmul, a batch norm, a loss or an "
    "optimizer update counts there, and gradient work fused into an optimizer update counts as "
    "optimizer. The thunk executor's gaps between instructions are overhead."
)


def record(run: Callable[[], object]) -> Recording:
    """Call `run()` once under jax.profiler and return what ran, one `OpEvent` per
    executed XLA instruction or runtime activity, on the profiler's clock
    (microseconds). `run` must wait for its results (jax.block_until_ready): work
    still in flight when it returns is cut at its return."""
    import jax

    options = jax.profiler.ProfileOptions()
    # The Python tracer adds an event per Python call (and its cost to every call);
    # the runtime's own events say all that is needed about dispatch.
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="dlbench-explain-jax-") as folder:
        with jax.profiler.trace(folder, create_perfetto_trace=True, profiler_options=options):
            with jax.profiler.TraceAnnotation(_WINDOW):
                t0 = time.perf_counter()
                run()
                wall = time.perf_counter() - t0
        events, modules_found = _read(folder)
    note = _NOTE
    if not modules_found:
        note += " The profile held no HLO metadata: no name stacks, so no optimizer or normalization."
    return Recording(events=events, wall_s=wall, source=f"jax.profiler (jax {jax.__version__})", note=note)


@dataclass
class _Raw:
    name: str
    lane: str
    thread: str
    start: float
    dur: float
    module: str | None  # the HLO module of an executed instruction; None for runtime events


def _files(folder: str, suffix: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f.endswith(suffix))


def _read(folder: str) -> tuple[tuple[OpEvent, ...], bool]:
    """The events of the profile under `folder`, and whether any HLO metadata was found."""
    raw: list[_Raw] = []
    window: tuple[float, float] | None = None
    for path in _files(folder, "perfetto_trace.json.gz"):
        with gzip.open(path, "rt") as f:
            data = json.load(f)
        trace = data["traceEvents"] if isinstance(data, dict) else data
        threads = {
            (e.get("pid"), e.get("tid")): str(e.get("args", {}).get("name", ""))
            for e in trace
            if e.get("ph") == "M" and e.get("name") == "thread_name"
        }
        # With an accelerator the instructions run on its planes ("/device:GPU:0"); events
        # of the host that name an instruction too are its launches: runtime activity.
        devices = {
            e.get("pid")
            for e in trace
            if e.get("ph") == "M"
            and e.get("name") == "process_name"
            and str(e.get("args", {}).get("name", "")).startswith("/device:")
        }
        devices &= {e.get("pid") for e in trace if e.get("ph") == "X" and "hlo_op" in (e.get("args") or {})}
        for e in trace:
            if e.get("ph") != "X":
                continue
            name, start, dur = str(e.get("name", "")), float(e.get("ts", 0.0)), float(e.get("dur", 0.0))
            if name == _WINDOW:
                window = (start, start + dur)
                continue
            # Python tracer events ("$file:line function") and the pool's instant markers.
            if name.startswith("$") or name.startswith("ThreadpoolListener::") or dur <= 0:
                continue
            args = e.get("args") or {}
            pid, tid = e.get("pid"), e.get("tid")
            thread = re.sub(r"/-?\d+$", "", threads.get((pid, tid), ""))  # drop the pool's numeric id
            if "hlo_op" in args and (not devices or pid in devices):
                raw.append(_Raw(str(args["hlo_op"]), f"{pid}:{tid}", thread, start, dur, str(args.get("hlo_module"))))
            else:
                raw.append(_Raw(name, f"{pid}:{tid}", thread, start, dur, None))
    if window is not None:
        lo, hi = window
        raw = [r for r in raw if r.start < hi and r.start + r.dur > lo]
        for r in raw:
            end = min(r.start + r.dur, hi)
            r.start = max(r.start, lo)
            r.dur = end - r.start
    wanted: dict[str, set[str]] = defaultdict(set)
    for r in raw:
        if r.module is not None:
            wanted[r.module].add(r.name)
    try:
        scopes_of = _hlo_scopes(folder, wanted)
    except (ValueError, IndexError):  # an XSpace this reader cannot decode: the names still categorise
        scopes_of = {}
    runtime_scopes = _enclosing([r for r in raw if r.module is None])
    events = []
    for r in raw:
        if r.module is None:
            scopes = runtime_scopes[id(r)]
        else:
            scopes = scopes_of.get(r.module, {}).get(r.name, ())
        events.append(OpEvent(name=r.name, lane=r.lane, start_us=r.start, dur_us=r.dur, scopes=scopes))
    events.sort(key=lambda e: (e.lane, e.start_us, -e.dur_us))
    return tuple(events), bool(scopes_of)


def _enclosing(runtime: list[_Raw]) -> dict[int, tuple[str, ...]]:
    """Each runtime event's scopes: "thread:<its thread>", then the runtime events that
    enclose it on its lane, outermost first."""
    out: dict[int, tuple[str, ...]] = {}
    lanes: dict[str, list[_Raw]] = defaultdict(list)
    for r in runtime:
        lanes[r.lane].append(r)
    for events in lanes.values():
        stack: list[_Raw] = []
        for r in sorted(events, key=lambda r: (r.start, -r.dur)):
            while stack and stack[-1].start + stack[-1].dur <= r.start:
                stack.pop()
            out[id(r)] = (f"thread:{r.thread}", *(s.name for s in stack))
            stack.append(r)
    return out


# --- The HLO metadata in the XSpace ------------------------------------------------------
# Field numbers: xplane.proto (XSpace.planes 1; XPlane.name 2, event_metadata 4,
# stat_metadata 5; XEventMetadata.stats 5; XStat.metadata_id 1, bytes_value 6;
# XStatMetadata.id 1, name 2), hlo.proto (HloProto.hlo_module 1; HloModuleProto.name 1,
# computations 3, stack_frame_index 17; HloComputationProto.instructions 2, id 5;
# HloInstructionProto.name 1, opcode 2, metadata 7, called_computation_ids 38;
# OpMetadata.op_name 2, source_file 3, source_line 4, stack_frame_id 15;
# StackFrameIndexProto.file_names 1, function_names 2, file_locations 3 (file 1,
# function 2, line 3), stack_frames 4 (location 1, parent 2); ids are 1-based).

_Value = int | bytes


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(buf: bytes) -> Iterator[tuple[int, _Value]]:
    """(field number, value) of each field of one protobuf message: an int for varints,
    the bytes for everything else."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        kind = key & 7
        value: _Value
        if kind == 0:
            value, i = _varint(buf, i)
        elif kind == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif kind == 1:
            value, i = buf[i : i + 8], i + 8
        elif kind == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {kind}")
        yield key >> 3, value


def _messages(buf: bytes, number: int) -> Iterator[bytes]:
    for f, v in _fields(buf):
        if f == number and isinstance(v, bytes):
            yield v


def _first(buf: bytes, number: int) -> _Value | None:
    for f, v in _fields(buf):
        if f == number:
            return v
    return None


def _text(buf: bytes, number: int) -> str:
    v = _first(buf, number)
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else ""


def _int(buf: bytes, number: int) -> int:
    v = _first(buf, number)
    return v if isinstance(v, int) else 0


def _ints(buf: bytes, number: int) -> list[int]:
    """A repeated integer field, packed or not."""
    out: list[int] = []
    for f, v in _fields(buf):
        if f != number:
            continue
        if isinstance(v, int):
            out.append(v)
        else:
            i = 0
            while i < len(v):
                x, i = _varint(v, i)
                out.append(x)
    return out


def _hlo_modules(folder: str) -> Iterator[bytes]:
    """Every HloModuleProto in the XSpace files under `folder`."""
    for path in _files(folder, ".xplane.pb"):
        with open(path, "rb") as f:
            space = f.read()
        for plane in _messages(space, 1):
            stat_names = {}
            for entry in _messages(plane, 5):
                meta = _first(entry, 2)
                if isinstance(meta, bytes):
                    stat_names[_int(meta, 1)] = _text(meta, 2)
            hlo_stats = {k for k, v in stat_names.items() if v.lower().replace(" ", "_") == "hlo_proto"}
            if not hlo_stats:
                continue
            for entry in _messages(plane, 4):
                meta = _first(entry, 2)
                if not isinstance(meta, bytes):
                    continue
                for stat in _messages(meta, 5):
                    proto = _first(stat, 6)
                    if _int(stat, 1) in hlo_stats and isinstance(proto, bytes):
                        module = _first(proto, 1)  # HloProto.hlo_module
                        if isinstance(module, bytes):
                            yield module


def _short(path: str) -> str:
    """A source path as a rule reads it: from the package on for installed packages."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path


def _inside(frames: list[str], op_name: str) -> list[str]:
    """The frames from the jitted function on ("jit(step)/..." -> the outermost frame of a
    function named step): those outside it are its caller's when it was traced (a test,
    the harness's first step), not what the instruction computes."""
    jitted = re.match(r"jit\(([^)]*)\)", op_name)
    if jitted:
        for i, frame in enumerate(frames):
            if frame.rsplit(" ", 1)[-1].rsplit(".", 1)[-1] == jitted[1]:
                return frames[i:]
    return frames


@dataclass
class _Instruction:
    opcode: str
    scopes: tuple[str, ...]  # its op_name, then its source frames outermost first
    called: list[int]


# Opcodes whose metadata a fusion's scopes take in as well: the work that decides what
# the fusion is, even where the root is an elementwise op (a dot with its bias add).
_HEAVY = frozenset({"dot", "convolution", "custom-call", "reduce", "reduce-window", "select-and-scatter"})


def _module_scopes(module: bytes) -> tuple[str, dict[str, tuple[str, ...]]]:
    """(module name, {instruction name: scopes}) of one HloModuleProto."""
    index = _first(module, 17)
    files: list[str] = []
    functions: list[str] = []
    locations: list[bytes] = []
    frames: list[bytes] = []
    if isinstance(index, bytes):
        files = [_short(v.decode("utf-8", "replace")) for v in _messages(index, 1)]
        functions = [v.decode("utf-8", "replace") for v in _messages(index, 2)]
        locations = list(_messages(index, 3))
        frames = list(_messages(index, 4))

    def stack(frame_id: int) -> list[str]:
        out: list[str] = []
        while 0 < frame_id <= len(frames) and len(out) < 64:
            frame = frames[frame_id - 1]
            location_id = _int(frame, 1)
            if 0 < location_id <= len(locations):
                loc = locations[location_id - 1]
                file_id, function_id = _int(loc, 1), _int(loc, 2)
                file = files[file_id - 1] if 0 < file_id <= len(files) else "?"
                function = functions[function_id - 1] if 0 < function_id <= len(functions) else "?"
                out.append(f"{file}:{_int(loc, 3)} {function}")
            frame_id = _int(frame, 2)
        return out[::-1]

    computations: dict[int, list[str]] = {}
    instructions: dict[str, _Instruction] = {}
    for computation in _messages(module, 3):
        names = []
        for raw in _messages(computation, 2):
            name = _text(raw, 1)
            meta = _first(raw, 7)
            scopes: list[str] = []
            if isinstance(meta, bytes):
                op_name = _text(meta, 2)
                if op_name:
                    scopes.append(op_name)
                frame_id = _int(meta, 15)
                if frame_id:
                    scopes.extend(_inside(stack(frame_id), op_name))
                elif _text(meta, 3):
                    scopes.append(f"{_short(_text(meta, 3))}:{_int(meta, 4)}")
            instructions[name] = _Instruction(_text(raw, 2), tuple(scopes), _ints(raw, 38))
            names.append(name)
        computations[_int(computation, 5)] = names

    def fused(ins: _Instruction, depth: int = 0) -> list[str]:
        """The scopes of the heavy instructions fused into `ins`, nested fusions included."""
        out: list[str] = []
        if ins.opcode != "fusion" or depth > 4:
            return out
        for computation_id in ins.called:
            for name in computations.get(computation_id, []):
                inner = instructions[name]
                if inner.opcode in _HEAVY:
                    out.extend((f"fused:{inner.opcode}", *inner.scopes))
                out.extend(fused(inner, depth + 1))
        return out

    scopes_of: dict[str, tuple[str, ...]] = {}
    for name, ins in instructions.items():
        own = list(ins.scopes)
        extra = fused(ins)
        if not own and not extra:
            # No metadata on the fusion: what the instructions in it carry.
            for computation_id in ins.called if ins.opcode == "fusion" else []:
                for inner in computations.get(computation_id, []):
                    extra.extend(instructions[inner].scopes)
        scopes_of[name] = tuple(dict.fromkeys([*own, *extra]))
    return _text(module, 1), scopes_of


def _hlo_scopes(folder: str, wanted: dict[str, set[str]]) -> dict[str, dict[str, tuple[str, ...]]]:
    """{module name: {instruction name: scopes}} for the modules that ran. Where the
    process compiled several modules of one name (two models' "jit_step"), the one
    holding the most of the instruction names that ran under that name wins."""
    best: dict[str, tuple[int, dict[str, tuple[str, ...]]]] = {}
    for module in _hlo_modules(folder):
        name = _text(module, 1)
        if name not in wanted:
            continue
        _, scopes = _module_scopes(module)
        hits = len(wanted[name] & scopes.keys())
        if name not in best or hits > best[name][0]:
            best[name] = (hits, scopes)
    return {name: scopes for name, (_, scopes) in best.items()}
