"""PyTorch adapter: the Framework and Trainer protocols written the way PyTorch experts write them.

Variants: "eager" (plain nn.Module) and "compile" (torch.compile, default mode,
inductor backend). Idiom and fairness choices, all recorded in the manifest:

- Data is converted once in `prepare()` to device tensors: images NCHW and
  volumes NCDHW float32, token ids int64 (nn.Embedding's and cross_entropy's index
  type), spectrograms (N, T, F) float32 as they come; a series model's (N, L, C)
  frames are handed over channels-first, (N, C, L), as Conv1d takes them (one
  copy per dataset, in `build`);
  training slices those preloaded tensors with a per-epoch `torch.randperm`
  drawn from a `torch.Generator` seeded with `settings.seed`.
- float32 everywhere: TF32 is switched off for cuBLAS and cuDNN so that float32
  means float32 on Ampere and newer GPUs, like the other frameworks; precision
  tf32 switches it on (and bf16-mixed autocasts the forward).
- Intra-op threads as requested, one inter-op thread (recorded as in force).
- Every timed method synchronizes the GPU before it returns when the device is
  cuda; on the CPU torch is synchronous already.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from dlbench.datasets import inputs as xs
from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.builders import BuilderError, call_builder, model_spec
from dlbench.frameworks.protocol import TrainSettings
from dlbench.frameworks.torch_init import glorot_uniform_
from dlbench.models.deepspeech2.ctc import ctc_accuracy

COMPILE_MODE = "default"
COMPILE_BACKEND = "inductor"


@dataclass(frozen=True)
class TorchData:
    """The dataset as device tensors: images NCHW float32 (tokens int64, spectrograms
    (N, T, F) float32), labels int64."""

    x_train: Any  # a tensor, or name -> tensor for named inputs (dlbench.datasets.inputs)
    y_train: Any  # a tensor, or head -> tensor for several named outputs (dlbench.heads)
    x_test: Any
    y_test: Any
    input_shape: Any  # (H, W, C), (T,) or (T, F) (name -> shape): what the model builders take
    num_classes: Any  # head -> classes or K for several named outputs
    device: torch.device


def _to_nchw(x_nhwc: Any, device: torch.device) -> torch.Tensor:
    # One conversion, before any timing: NHWC (every loader's layout) -> NCHW,
    # PyTorch's native layout for Conv2d, stored contiguous so batches are views.
    return torch.from_numpy(x_nhwc).permute(0, 3, 1, 2).contiguous().to(device)


def _to_device(x: Any, device: torch.device) -> torch.Tensor:
    if x.ndim == 4:
        return _to_nchw(x, device)
    if x.ndim == 5:  # volumes: NDHWC -> NCDHW, Conv3d's layout
        return torch.from_numpy(x).permute(0, 4, 1, 2, 3).contiguous().to(device)
    tensor = torch.from_numpy(x)
    # Token ids as int64, torch's index type; spectrogram frames and feature vectors
    # (floats) need no conversion.
    return (tensor.long() if x.dtype.kind in "iu" else tensor).to(device)


def _ctc_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-utterance CTC loss divided by its label length, averaged over the batch
    (F.ctc_loss's reduction "mean"); targets (N, L) padded with -1, blank 0."""
    n, t, _ = logits.shape
    log_probs = logits.log_softmax(-1).transpose(0, 1)  # (T', N, C), torch's CTC layout
    target_lengths = (targets >= 0).sum(dim=1)
    input_lengths = torch.full((n,), t, dtype=torch.long, device=logits.device)
    return F.ctc_loss(log_probs, targets.clamp(min=0), input_lengths, target_lengths, blank=0, reduction="mean")


def _next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # Mean over every position of every sequence (word_language_model's view(-1, vocab)).
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _regression_loss(error: Callable[..., torch.Tensor]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    # The mean over every target of every sample; outputs (N, ...) are matched to
    # the (N, K) targets by flattening, so a model returning (N,) for K = 1 fits.
    return lambda out, y: error(out.reshape(y.shape), y)


LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "classify": F.cross_entropy,
    "next-token": _next_token_loss,
    "ctc": _ctc_loss,
    "regress/mse": _regression_loss(F.mse_loss),
    "regress/mae": _regression_loss(F.l1_loss),
}


def heads_loss(spec: Any) -> Callable[[Any, Any], torch.Tensor]:
    """A model of several outputs: the weighted sum of its heads' batch-mean losses
    (dlbench.heads), outputs and targets dicts head -> tensor."""
    parts = {
        head: LOSSES[f"regress/{spec.head_losses[head]}" if task == "regress" else task]
        for head, task in spec.heads.items()
    }
    weights = dict(spec.loss_weights)

    def loss(out: Any, y: Any) -> torch.Tensor:
        terms = [weights[head] * fn(out[head], y[head]) for head, fn in parts.items()]
        return torch.stack(terms).sum()

    return loss


def loss_for(spec: Any) -> Callable[[Any, Any], torch.Tensor]:
    """The training loss: the user's own for torch (loss(outputs, targets)), else the task's."""
    own = spec.loss_function("torch")
    if own is not None:
        return own
    if spec.heads:
        return heads_loss(spec)
    return LOSSES[f"regress/{spec.loss}" if spec.task == "regress" else spec.task]


def quality_loss_for(spec: Any) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The loss whose test-set mean is reported (a regression's error, an LM's perplexity):
    the task's own, whatever the training objective."""
    if spec.heads:
        return heads_loss(spec)
    return LOSSES[f"regress/{spec.loss}" if spec.task == "regress" else spec.task]


def _inductor_cache_dir() -> str:
    """Where inductor keeps compiled kernels (its warm cache between repeats)."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return os.environ["TORCHINDUCTOR_CACHE_DIR"]
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        return cache_dir()
    except ImportError:  # private helper moved: fall back to torch's documented default
        import getpass

        return os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")


def _tf32(on: bool) -> dict[str, Any]:
    """TensorFloat-32 for cuBLAS matmuls and cuDNN convolutions, on for precision tf32
    only (float32 means float32); the flags are the process's, and each trial is a
    process of its own. The flags in force, for the manifest (where tf32 is on)."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")
    if not on:
        return {}
    return {
        "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def _autocast(
    forward: Callable[[torch.Tensor], torch.Tensor], device_type: str
) -> Callable[[torch.Tensor], torch.Tensor]:
    """bf16-mixed: the forward under torch.autocast(bfloat16), PyTorch's mixed-precision
    idiom (float32 weights and optimizer; eligible ops run in bfloat16); logits come
    back as float32 so the loss is computed in float32 as in the other frameworks."""

    def run(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            out = forward(x)
        return xs.apply(lambda o: o.float(), out)  # a dict of heads, or one tensor

    return run


class TorchTrainer:
    """One freshly built model, its optimizer and its (possibly compiled) forward."""

    def __init__(
        self,
        data: TorchData,
        settings: TrainSettings,
        model: nn.Module,
        forward: Callable[[torch.Tensor], torch.Tensor],
    ) -> None:
        self.data = data
        self.settings = settings
        self.model = model
        # `forward` is the compiled module in the "compile" variant; it shares its
        # parameters with `model`, so state_dict save/restore on `model` covers both.
        self.forward = forward
        self.optimizer = self._make_optimizer()
        spec = model_spec(settings)
        self.task = spec.task
        self._loss = loss_for(spec)
        self._quality_loss = quality_loss_for(spec)
        # What the manifest must say about this network (a user's layers the init missed).
        self.facts: dict[str, Any] = {}
        # The shuffle order has its own generator (CPU, as torch.randperm wants),
        # so dropout draws cannot change which samples form a batch.
        self.generator = torch.Generator().manual_seed(settings.seed)
        self._infer_batches: dict[int, list[torch.Tensor]] = {}
        # epoch -> that epoch's (xb, yb) batches, when an augmentation pipeline runs.
        self.augment: Callable[[int], Any] | None = None
        self._epochs_done = 0
        # The first settings.loss_curve step losses of the current train() call, kept
        # on the device during the loop and read once after it (step_losses()).
        self._curve: list[torch.Tensor] = []
        self._curve_values: list[float] = []
        # FLOP counts by network and batch shape; the framework hands every trainer the same dict.
        self.flop_counts: dict[Any, dict[str, Any]] = {}

    def _make_optimizer(self) -> torch.optim.Optimizer:
        s = self.settings
        params = self.model.parameters()
        if s.optimizer == "sgd":
            return torch.optim.SGD(params, lr=s.lr, momentum=s.momentum)
        if s.optimizer == "adam":
            return torch.optim.Adam(params, lr=s.lr, betas=(0.9, 0.999), eps=s.adam_epsilon)
        raise ValueError(f"unknown optimizer {s.optimizer!r}")

    def _sync(self) -> None:
        if self.data.device.type == "cuda":
            torch.cuda.synchronize(self.data.device)

    def _step(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """One optimizer step; returns the (pre-update) loss, still on the device."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._loss(self.forward(xb), yb)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _recording_step(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """`_step`, keeping the device loss of each of the first `loss_curve` steps of
        this train() call: no host read, no sync; the values are read after the loop."""
        loss = self._step(xb, yb)
        if len(self._curve) < self.settings.loss_curve:
            self._curve.append(loss)
        return loss

    def step_losses(self) -> list[float]:
        """The training loss of each of the first `settings.loss_curve` steps of the
        last train() call ([] when loss_curve is 0)."""
        return list(self._curve_values)

    def manifest(self) -> dict[str, Any]:
        # Read after the repeat's timed phases: the FLOP count never lands in a timed one.
        return {**self.facts, **self._train_flops()}

    def _train_flops(self) -> dict[str, Any]:
        """FLOPs of one training step (dlbench.frameworks.torch_flops), counted once per
        network and batch shape in this process (`flop_counts` is the framework's, shared
        by every repeat's trainer): every repeat builds the same network."""
        from dlbench.frameworks.torch_flops import train_step_flops

        s, data = self.settings, self.data
        key = (s.model, repr(data.input_shape), s.batch_size, repr(sorted(s.model_options.items())))
        if key not in self.flop_counts:
            try:
                count: dict[str, Any] = {
                    "train_flops_per_step": train_step_flops(
                        self.model,
                        self._loss,
                        xs.take(data.x_train, slice(None, s.batch_size)),
                        xs.take(data.y_train, slice(None, s.batch_size)),
                    ),
                    "train_flops_counted_by": "torch.utils.flop_counter.FlopCounterMode on the meta device "
                    "(matmul, convolution and attention FLOPs of forward + backward; 2 per multiply-add)",
                }
            except Exception as exc:  # noqa: BLE001  # an op without a meta kernel: say so, count nothing
                note = f"not counted: {type(exc).__name__}: {exc}"[:300]
                count = {"train_flops_per_step": None, "train_flops_note": note}
            self.flop_counts[key] = count
        return self.flop_counts[key]

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def first_step(self) -> None:
        model_state = copy.deepcopy(self.model.state_dict())
        optim_state = copy.deepcopy(self.optimizer.state_dict())
        # Dropout draws from the global RNG: restore it too, so that train()
        # sees the same dropout masks as it would without this call.
        cpu_rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state(self.data.device) if self.data.device.type == "cuda" else None
        b = self.settings.batch_size
        self.model.train()
        self._step(xs.take(self.data.x_train, slice(None, b)), xs.take(self.data.y_train, slice(None, b)))
        self._sync()
        self.model.load_state_dict(model_state)  # in-place copy: parameters keep their identity
        self.optimizer.load_state_dict(optim_state)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, self.data.device)

    def train(self) -> list[float]:
        # No DataLoader: the whole split already sits on the device as one tensor,
        # so a batch is an index gather; DataLoader would add per-sample Python
        # collation (and worker processes) that the other frameworks do not pay.
        s = self.settings
        x, y = self.data.x_train, self.data.y_train
        n = xs.rows(x)
        per_epoch = s.steps_per_epoch(n)
        if per_epoch < 1:
            raise ValueError(f"batch size {s.batch_size} exceeds the {n} training samples")
        remaining = s.total_steps(n)
        self.model.train()
        self._curve = []
        # Chosen once, outside the loop: with loss_curve 0 the loop runs the plain step.
        step = self._recording_step if s.loss_curve else self._step
        means: list[float] = []
        total = torch.zeros((), device=self.data.device)
        run_steps = 0
        while remaining > 0:
            epoch_steps = min(per_epoch, remaining)
            if s.epochs is not None:
                total = torch.zeros((), device=self.data.device)
            if self.augment is not None:
                # The augmentation pipeline shuffles, crops, flips and normalizes
                # (seeded per epoch); its time is part of training, as in a real job.
                for _, (xb, yb) in zip(range(epoch_steps), self.augment(self._epochs_done)):
                    total += step(xb, yb)
            else:
                if s.shuffle:
                    order = torch.randperm(n, generator=self.generator).to(self.data.device)
                else:
                    order = torch.arange(n, device=self.data.device)
                for i in range(epoch_steps):
                    idx = order[i * s.batch_size : (i + 1) * s.batch_size]
                    # Accumulated on the device: one host read per epoch, not per step.
                    total += step(xs.take(x, idx), xs.take(y, idx))
            remaining -= epoch_steps
            run_steps += epoch_steps
            self._epochs_done += 1
            if s.epochs is not None:
                means.append(total.item() / epoch_steps)
        if s.steps is not None:
            means.append(total.item() / run_steps)
        self._curve_values = torch.stack(self._curve).tolist() if self._curve else []
        self._sync()
        return means

    def evaluate(self) -> Any:
        """Top-1 accuracy (classify), token top-1 accuracy over every position
        (next-token), 1 - CER of greedy decoding (ctc, computed on the host), the
        test error under the model's loss (regress), or head -> each head's quality
        (several named outputs: dlbench.heads)."""
        x, y = self.data.x_test, self.data.y_test
        b = self.settings.batch_size
        if self.task == "regress":
            return self.test_loss()
        if self.task == "multi-output":
            return self._evaluate_heads()
        self.model.eval()
        correct = torch.zeros((), dtype=torch.int64, device=self.data.device)
        paths = []
        with torch.inference_mode():
            for start in range(0, xs.rows(x), b):  # partial last batch included
                logits = self.forward(xs.take(x, slice(start, start + b)))
                if self.task == "ctc":
                    paths.append(logits.argmax(dim=-1).cpu())
                else:
                    correct += (logits.argmax(dim=-1) == y[start : start + b]).sum()
        if self.task == "ctc":
            return ctc_accuracy(torch.cat(paths).numpy(), y.cpu().numpy())
        return correct.item() / y.numel()

    def _evaluate_heads(self) -> dict[str, float]:
        """head -> its quality (dlbench.heads.scores) over the whole test split, the
        partial last batch included: the outputs go to the host, batch by batch."""
        from dlbench import heads

        x, b = self.data.x_test, self.settings.batch_size
        self.model.eval()
        outs = []
        with torch.inference_mode():
            for start in range(0, xs.rows(x), b):
                out = self.forward(xs.take(x, slice(start, start + b)))
                outs.append({head: out[head].float().cpu().numpy() for head in out})
        targets = {head: y.cpu().numpy() for head, y in self.data.y_test.items()}
        return heads.scores(model_spec(self.settings), heads.concat(outs), targets)

    def test_loss(self) -> float:
        """The task's loss over the whole test split (partial last batch included), each
        sample weighted equally: the mean error (regress), the mean cross-entropy per
        token (next-token, the log of the perplexity); not a user's training loss."""
        x, y = self.data.x_test, self.data.y_test
        b = self.settings.batch_size
        self.model.eval()
        total = torch.zeros((), dtype=torch.float64, device=self.data.device)
        with torch.inference_mode():
            for start in range(0, xs.rows(x), b):
                yb = xs.take(y, slice(start, start + b))
                xb = xs.take(x, slice(start, start + b))
                total += self._quality_loss(self.forward(xb), yb).double() * xs.rows(yb)
        return total.item() / xs.rows(y)

    def prepare_infer(self, batch_size: int) -> int:
        x = self.data.x_test
        count = xs.rows(x) // batch_size
        # Slices along dim 0 of a contiguous tensor are contiguous views: no copies.
        self._infer_batches[batch_size] = [
            xs.take(x, slice(i * batch_size, (i + 1) * batch_size)) for i in range(count)
        ]
        if count:
            # One untimed forward, so that compilation for this batch shape (the
            # compile variant) and oneDNN primitive creation happen here, not in
            # the timed pass.
            self.model.eval()
            with torch.inference_mode():
                self.forward(self._infer_batches[batch_size][0])
            self._sync()
        return count

    def _batches(self, batch_size: int) -> list[torch.Tensor]:
        if batch_size not in self._infer_batches:
            raise KeyError(f"call prepare_infer({batch_size}) before inference at batch size {batch_size}")
        return self._infer_batches[batch_size]

    def infer(self, batch_size: int) -> int:
        batches = self._batches(batch_size)
        self.model.eval()
        with torch.inference_mode():
            for xb in batches:
                self.forward(xb)
        self._sync()
        return len(batches) * batch_size

    def predict_batch(self, batch_size: int, index: int) -> None:
        xb = self._batches(batch_size)[index]
        self.model.eval()
        with torch.inference_mode():
            self.forward(xb)
        self._sync()

    def train_fixed_batch(self, steps: int) -> list[float]:
        b = self.settings.batch_size
        xb, yb = xs.take(self.data.x_train, slice(None, b)), xs.take(self.data.y_train, slice(None, b))
        self.model.train()
        losses = [self._step(xb, yb) for _ in range(steps)]
        return torch.stack(losses).tolist() if losses else []


class TorchFramework:
    """Framework adapter for PyTorch (see the module docstring for the idiom)."""

    name = "torch"
    variants = ("eager", "compile")
    default_variant = "eager"

    def __init__(self) -> None:
        self.variant = self.default_variant
        self.device = torch.device("cpu")

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        if variant not in self.variants:
            raise ValueError(f"torch variant {variant!r} is not one of {', '.join(self.variants)}")
        if device not in ("cpu", "cuda"):
            raise ValueError(f"torch device {device!r} is not one of cpu, cuda")
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(
                "device cuda requested but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})"
            )
        self.variant = variant
        self.device = torch.device(device)

        torch.set_num_threads(threads)
        # torch's own inter-op pool (one thread per core) unless the case asks for one
        # thread (runtime setting interop-fixed): a plain script leaves it alone.
        interop_note = "torch's default"
        if "interop-fixed" in runtime:
            interop_note = "set to 1 (runtime interop-fixed)"
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError as exc:
                # Raised once any inter-op work has started (e.g. a second setup()
                # in one process); what is in force is recorded below instead.
                interop_note = f"not changed: {exc}"
        torch.manual_seed(seed)
        torch.set_default_dtype(torch.float32)
        # float32 means float32: no TF32 on Ampere+ (the other frameworks get the same).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        # Fixed input shapes: let cuDNN pick the fastest algorithm, as TF and XLA
        # autotune by default. The autotuning lands in first_step (timed apart).
        torch.backends.cudnn.benchmark = self.device.type == "cuda"

        manifest: dict[str, Any] = {
            "framework": self.name,
            "variant": variant,
            "versions": {"torch": torch.__version__},
            "cuda_version": torch.version.cuda,
            "seed": seed,
            "device": str(self.device),
            "device_name": (
                torch.cuda.get_device_name(self.device)
                if self.device.type == "cuda"
                else f"cpu ({torch.backends.cpu.get_cpu_capability()})"
            ),
            "threads_requested": threads,
            "intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": torch.get_num_interop_threads(),
            "inter_op_threads_note": interop_note,
            "default_dtype": str(torch.get_default_dtype()),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "mkldnn_available": torch.backends.mkldnn.is_available(),
            "mkl_available": torch.backends.mkl.is_available(),
            "openmp_available": torch.backends.openmp.is_available(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "memory_format": "NCHW contiguous (layout native); torch.channels_last for layout channels-last",
            "mixed_precision": "bf16-mixed: forward under torch.autocast(bfloat16), float32 weights, "
            "optimizer and loss",
            "data_pipeline": "preloaded device tensors, randperm index slicing (no DataLoader)",
            "last_batch": "drop (train, infer); included in evaluate",
            "first_step": "one step on the first batch; weights, optimizer state and RNG restored",
            "infer_warmup": "one untimed forward per batch size in prepare_infer",
        }
        if variant == "compile":
            manifest["variant_settings"] = {
                "torch.compile": True,
                "mode": COMPILE_MODE,
                "backend": COMPILE_BACKEND,
                "inductor_cache_dir": _inductor_cache_dir(),
                # Each build() resets dynamo, so every repeat traces and compiles
                # (against inductor's warm on-disk cache) in its first_step.
                "dynamo_reset_per_build": True,
            }
        else:
            manifest["variant_settings"] = {"torch.compile": False}
        return manifest

    def reset_memory_peak(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    def memory_peak(self) -> tuple[int | None, str]:
        """Peak device memory since the last reset: (bytes, source) or (None, reason)."""
        if self.device.type == "cuda":
            return int(torch.cuda.max_memory_allocated(self.device)), "torch.cuda.max_memory_allocated"
        return None, "torch keeps no CPU allocator peak (see peak RSS)"

    def prepare(self, arrays: Arrays) -> TorchData:
        return TorchData(
            x_train=xs.apply(lambda x: _to_device(x, self.device), arrays.train.x),
            y_train=xs.apply(lambda y: torch.from_numpy(y).to(self.device), arrays.train.y),
            x_test=xs.apply(lambda x: _to_device(x, self.device), arrays.test.x),
            y_test=xs.apply(lambda y: torch.from_numpy(y).to(self.device), arrays.test.y),
            input_shape=arrays.input_shape,
            num_classes=arrays.num_classes,
            device=self.device,
        )

    def build(self, native: TorchData, settings: TrainSettings) -> TorchTrainer:
        spec = model_spec(settings)
        # Seeded before construction so torch's own (framework-default) init is
        # reproducible; built and initialized on the CPU, then moved, so a GPU run
        # starts from the very same weights.
        torch.manual_seed(settings.seed)
        model, _ = call_builder(spec, "torch", native.input_shape, native.num_classes, settings.model_options, {})
        if not isinstance(model, nn.Module):
            raise BuilderError(
                f"model {spec.name}: the torch builder returned a {type(model).__name__}, not an nn.Module"
            )
        facts: dict[str, Any] = {}
        if settings.init == "glorot-uniform":
            coverage = glorot_uniform_(model)
            # A user's layers the scheme did not reach, by path, kind and count (the zoo's are
            # all reached); the report reads init_kept_parameters (dlbench.report.coverage).
            if not spec.builtin:
                facts.update(coverage.as_facts())
        facts.update(_tf32(settings.precision == "tf32"))
        model = model.to(native.device)
        series = {n for n, kind in spec.inputs.items() if kind == "series"} or {""}
        if spec.input_kind == "series" or (spec.input_kind == "named" and series != {""}):
            native = self._channels_first(native, series)
        if settings.layout == "channels-last":
            # The documented channels-last recipe: weights and inputs in NHWC memory
            # order (the logical shape stays NCHW); the inputs are converted once per
            # dataset, cached, so no repeat pays for it in a timed phase twice.
            model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch's stub lacks it
            native = self._channels_last(native)
        forward: Callable[[torch.Tensor], torch.Tensor] = model
        if self.variant == "compile":
            # A fresh dynamo state per repeat: each repeat pays the same trace +
            # warm-cache compile in first_step, and per-instance guards cannot pile
            # up to dynamo's recompile limit (past it, dynamo would silently run eager).
            torch._dynamo.reset()
            forward = torch.compile(model, mode=COMPILE_MODE, backend=COMPILE_BACKEND)
        if settings.precision == "bf16-mixed":
            forward = _autocast(forward, native.device.type)
        augment = None
        if settings.pipeline != "preloaded":
            native, augment = self._pipeline(native, settings)
        trainer = TorchTrainer(native, settings, model, forward)
        trainer.augment = augment
        trainer.facts = facts
        trainer.flop_counts = self.__dict__.setdefault("_flop_counts", {})
        return trainer

    def _pipeline(self, native: TorchData, settings: TrainSettings) -> tuple[TorchData, Callable[[int], Any]]:
        """Normalized test data and an epoch -> batches function for the chosen pipeline
        ("native": dlbench.pipelines.torch on the device; "numpy": the shared host
        pipeline, each batch copied to the device as a DataLoader would)."""
        from dlbench.pipelines import numpy as np_pipeline
        from dlbench.pipelines import torch as torch_pipeline
        from dlbench.pipelines.cache import prepared
        from dlbench.pipelines.params import epoch_params

        if xs.is_named(native.x_train) or native.x_train.dim() != 4:
            raise ValueError(f"pipeline {settings.pipeline}: augmentation needs image input")

        def build(stats):
            on_device = torch_pipeline.Augmenter(stats.mean, stats.std, device=native.device)
            return on_device, replace(native, x_test=on_device.normalize(native.x_test))

        def to_host():
            return native.x_train.permute(0, 2, 3, 1).cpu().numpy()  # NHWC, as the stats want

        aug = self._aug = prepared(getattr(self, "_aug", None), native, to_host, build)
        stats, host, on_device, normalized = aug.stats, aug.host, aug.augmenter, aug.normalized
        b, seed, n = settings.batch_size, settings.seed, int(native.x_train.shape[0])
        if settings.pipeline == "native":

            def batches(epoch: int):
                return on_device.epoch_batches(native.x_train, native.y_train, epoch_params(seed, epoch, n), b)
        else:
            on_host = np_pipeline.Augmenter(stats.mean, stats.std)
            y_host = native.y_train.cpu().numpy()
            device = native.device

            def batches(epoch: int):
                for xb, yb in on_host.epoch_batches(host, y_host, epoch_params(seed, epoch, n), b):
                    yield (
                        torch.from_numpy(xb).permute(0, 3, 1, 2).contiguous().to(device),
                        torch.from_numpy(yb).to(device),
                    )

        return normalized, batches

    def _channels_first(self, native: TorchData, names: set[str]) -> TorchData:
        """A series model's data as (N, C, L), Conv1d's layout (of a named model, its
        series inputs: `names`); converted once per dataset and cached, never inside a
        timed phase twice."""

        def moved(x: Any) -> Any:
            if not xs.is_named(x):
                return x.transpose(1, 2).contiguous()
            return {n: v.transpose(1, 2).contiguous() if n in names else v for n, v in x.items()}

        cached = getattr(self, "_cf", None)
        if cached is None or cached[0] is not native:
            self._cf = (native, replace(native, x_train=moved(native.x_train), x_test=moved(native.x_test)))
        return self._cf[1]

    def _channels_last(self, native: TorchData) -> TorchData:
        if xs.is_named(native.x_train) or native.x_train.dim() != 4:
            raise ValueError("layout channels-last needs image input (N, C, H, W)")
        cached = getattr(self, "_cl", None)
        if cached is None or cached[0] is not native:
            self._cl = (
                native,
                replace(
                    native,
                    x_train=native.x_train.contiguous(memory_format=torch.channels_last),
                    x_test=native.x_test.contiguous(memory_format=torch.channels_last),
                ),
            )
        return self._cl[1]
