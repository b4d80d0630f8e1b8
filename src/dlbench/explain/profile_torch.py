"""torch.profiler -> OpEvents, and the table that puts PyTorch's op names in categories.

On the CPU every aten op is an event on the thread that ran it, nested under the
op that called it (aten::conv2d > aten::convolution > aten::mkldnn_convolution),
and the optimizer's work under the range torch.optim opens around each call
("Optimizer.step#SGD.step"), so the optimizer is recognised by scope. The
autograd engine's own wrappers ("autograd::engine::evaluate_function: ...", the
backward nodes) are framework overhead: their self time is bookkeeping, the
kernels they call are events of their own.

On CUDA the categories come from the device's kernels and copies; the host's
ops are then runtime activity (launches), counted only where no kernel runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dlbench.explain.categories import Rule
from dlbench.explain.events import OpEvent, Recording

HOST_SCOPE = "host"  # the scope given to host-side events of a recording that has device kernels

_DATA = (
    "randperm|index|index_select|index_put_|slice|select|copy_|_to_copy|to|contiguous|clone|cat|stack|permute|"
    "transpose|t|view|reshape|_reshape_alias|_unsafe_view|as_strided|as_strided_|flatten|unsqueeze|squeeze|"
    "expand|empty|empty_strided|empty_like|zeros|zeros_like|ones|ones_like|zero_|fill_|resize_|detach|detach_|"
    "alias|lift_fresh|split|split_with_sizes|chunk|narrow|unbind|pad|constant_pad_nd|flip|embedding|"
    "embedding_dense_backward|gather|scatter|scatter_add_|repeat|roll|new_zeros|new_empty|full|_unsafe_index|"
    "unsafe_split|unsafe_chunk|unsafe_split_with_sizes"
)
_ELEMENTWISE = (
    "relu|relu_|threshold|threshold_backward|clamp|clamp_min|clamp_min_|hardtanh|hardtanh_|hardtanh_backward|"
    "hardswish|hardswish_|hardswish_backward|hardsigmoid|hardsigmoid_backward|add|add_|sub|sub_|rsub|mul|mul_|"
    "div|div_|neg|tanh|tanh_backward|sigmoid|sigmoid_backward|silu|silu_|silu_backward|gelu|gelu_backward|exp|"
    "log|sqrt|rsqrt|pow|where|masked_fill|masked_fill_|dropout|native_dropout|native_dropout_backward|"
    "bernoulli_|addcmul_|addcdiv_|lerp_|abs|sign|maximum|minimum|erf|reciprocal|square|_foreach_\\w+|tanh_|"
    "sigmoid_|exp_|log_|sqrt_|pow_|neg_|gelu_|isnan|isinf|isneginf|isposinf|eq|ne|lt|gt|le|ge|logical_\\w+"
)
_REDUCTION = (
    "max_pool2d|max_pool2d_with_indices|max_pool2d_with_indices_backward|avg_pool2d|avg_pool2d_backward|"
    "adaptive_avg_pool2d|_adaptive_avg_pool2d|_adaptive_avg_pool2d_backward|adaptive_max_pool2d|mean|sum|amax|"
    "max|min|argmax|softmax|_softmax|_softmax_backward_data|log_softmax|_log_softmax|_log_softmax_backward_data|"
    "cross_entropy_loss|nll_loss|nll_loss_nd|nll_loss_forward|nll_loss_backward|nll_loss2d_forward|"
    "nll_loss2d_backward|mse_loss|mse_loss_backward|ctc_loss|_ctc_loss|_ctc_loss_backward|norm|linalg_vector_norm|all|any|"
    "scatter_reduce_|scatter_reduce"
)

RULES: tuple[Rule, ...] = (
    Rule(
        f"^{HOST_SCOPE}$",
        "overhead",
        on="scope",
        why="on CUDA the device's kernels carry the work; host ops launch them",
    ),
    Rule(r"^Optimizer\.(step|zero_grad)#", "optimizer", on="scope", why="torch.optim's range around every call"),
    Rule(r"^Optimizer\.(step|zero_grad)#", "optimizer"),
    Rule(r"multi_tensor_apply|fused_adam|fused_sgd", "optimizer", why="CUDA kernels of the foreach/fused optimizers"),
    Rule(
        r"^(Torch-Compiled Region|TorchDynamo Cache Lookup|CompiledFunction)",
        "overhead",
        why="torch.compile's guards and dispatch; its kernels are events of their own",
    ),
    Rule(
        r"^## Call CompiledFxGraph",
        "elementwise",
        why="the self time of inductor's generated code is its fused C++/Triton kernels; the extern kernels it "
        "calls (oneDNN convolutions, GEMMs) are events of their own inside it",
    ),
    Rule(r"^(AOTDispatcher|Pregraph bytecode|## Call)", "overhead", why="torch.compile's runtime wrappers"),
    Rule(r"(?i)dynamo|inductor|compile_fx|aot_autograd", "compile"),
    Rule(r"^autograd::engine::evaluate_function", "overhead", why="the autograd engine's wrapper around a node"),
    Rule(r"^torch::autograd::AccumulateGrad$", "overhead", why="adds a gradient to .grad; the add is an op of its own"),
    Rule(r"^\w+Backward\d*$", "overhead", why="an autograd node's own code, around the ops it calls"),
    Rule(r"(?i)memcpy|memset|Memcpy|Memset", "data_movement"),
    Rule(
        r"^aten::(mkldnn_rnn_layer|mkldnn_rnn_layer_backward|_cudnn_rnn|_cudnn_rnn_backward)$",
        "matmul",
        why="a whole recurrent layer in one oneDNN (cuDNN) kernel: its gate GEMMs, with the gate math fused in",
    ),
    Rule(r"(?i)conv|implicit_gemm|winograd|fprop|dgrad|wgrad", "convolution"),
    Rule(
        r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|einsum|mv|dot|addmv|_scaled_dot_product\w*|lstm|_thnn_fused_lstm_cell|gru|rnn_tanh)$",
        "matmul",
    ),
    Rule(r"(?i)gemm|gemv|matmul|cublas|cutlass|xmma", "matmul"),
    Rule(r"(?i)batch_norm|layer_norm|group_norm|instance_norm|BatchNorm|LayerNorm|welford", "normalization"),
    Rule(rf"^aten::({_REDUCTION})$", "reduction"),
    Rule(r"(?i)reduce_kernel|softmax|pool|nll_loss|cross_entropy", "reduction"),
    Rule(rf"^aten::({_DATA})$", "data_movement"),
    Rule(rf"^aten::({_ELEMENTWISE})$", "elementwise"),
    Rule(
        r"(?i)elementwise|vectorized|cpp_fused|triton_|fused",
        "elementwise",
        why="pointwise kernels, inductor's fused ones included",
    ),
)


def record(run: Callable[[], object]) -> Recording:
    """Run `run()` once under torch.profiler and return its events (CUDA kernels
    included when a GPU is present)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        run()
        wall = time.perf_counter() - t0
    events: list[OpEvent] = []
    has_device = False
    for e in prof.events():
        on_device = "cuda" in str(getattr(e, "device_type", "")).lower()
        has_device = has_device or on_device
        scopes: list[str] = []
        parent = e.cpu_parent
        while parent is not None:
            scopes.append(parent.name)
            parent = parent.cpu_parent
        lane = f"cuda {e.device_index} stream" if on_device else f"thread {e.thread}"
        events.append(
            OpEvent(e.name, lane, float(e.time_range.start), float(e.time_range.elapsed_us()), tuple(reversed(scopes)))
        )
    if has_device:  # host ops launch the kernels: count them only where the device is idle
        events = [
            e if e.lane.startswith("cuda") else OpEvent(e.name, e.lane, e.start_us, e.dur_us, (HOST_SCOPE, *e.scopes))
            for e in events
        ]
    note = (
        "time in Python or numpy code between ops (the numpy data pipeline, the training loop) has no event: "
        "it shows as framework overhead & idle"
    )
    return Recording(tuple(events), wall, f"torch.profiler (torch {torch.__version__})", note)
