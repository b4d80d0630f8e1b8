"""Model FLOP utilization: achieved training FLOP/s over the device's dense peak.

MFU = (FLOPs of one training step x steps) / train time / peak, where the FLOPs are
counted for the real network and batch (dlbench.frameworks.torch_flops) and the
peak is the device's *dense* tensor throughput for the precision the case ran in:
float32 on CUDA cores (dlbench switches TF32 off for float32), TF32 tensor cores
for precision tf32, BF16 tensor cores for bf16-mixed. Peaks are the vendor's
datasheet figures; the datasheets quote TF32/BF16 "with sparsity", which is twice
the dense rate, so the table holds half of those. A device not in the table gets
no MFU and the reason, never a guessed peak.
"""

from __future__ import annotations

from dataclasses import dataclass

# Dense peak TFLOP/s by the name the CUDA runtime reports (torch.cuda.get_device_name).
# Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM: FP32 67, TF32 989*, BF16 1,979*;
# PCIe: FP32 51, TF32 756*, BF16 1,513*), H200 datasheet (SXM as H100 SXM; NVL: FP32 60,
# TF32 835*, BF16 1,671*), A100 datasheet (FP32 19.5, TF32 312*, BF16 624*);
# * = with sparsity, halved here.
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "NVIDIA H100 80GB HBM3": {"float32": 67.0, "tf32": 494.5, "bf16-mixed": 989.5},
    "NVIDIA H100 PCIe": {"float32": 51.0, "tf32": 378.0, "bf16-mixed": 756.5},
    "NVIDIA H200": {"float32": 67.0, "tf32": 494.5, "bf16-mixed": 989.5},
    "NVIDIA H200 NVL": {"float32": 60.0, "tf32": 417.5, "bf16-mixed": 835.5},
    "NVIDIA A100-SXM4-80GB": {"float32": 19.5, "tf32": 156.0, "bf16-mixed": 312.0},
    "NVIDIA A100-SXM4-40GB": {"float32": 19.5, "tf32": 156.0, "bf16-mixed": 312.0},
    "NVIDIA A100 80GB PCIe": {"float32": 19.5, "tf32": 156.0, "bf16-mixed": 312.0},
    "NVIDIA A100-PCIE-40GB": {"float32": 19.5, "tf32": 156.0, "bf16-mixed": 312.0},
}


@dataclass(frozen=True)
class Utilization:
    """Achieved training TFLOP/s and, where the peak is known, MFU (a fraction)."""

    achieved_tflops: float
    peak_tflops: float | None
    mfu: float | None
    note: str  # where the peak came from, or why there is no MFU


def peak_tflops(device_name: str, precision: str) -> float | None:
    """The dense peak for this device and precision, or None when not in the table."""
    return PEAK_TFLOPS.get(device_name.strip(), {}).get(precision)


def utilization(flops_per_step: float, steps: float, seconds: float, device_name: str, precision: str) -> Utilization:
    """Achieved FLOP/s of `steps` training steps that took `seconds`, against the peak."""
    if seconds <= 0 or steps <= 0 or flops_per_step <= 0:
        raise ValueError(f"need positive FLOPs, steps and seconds, got {flops_per_step}, {steps}, {seconds}")
    achieved = flops_per_step * steps / seconds / 1e12
    peak = peak_tflops(device_name, precision)
    if peak is None:
        known = ", ".join(sorted(PEAK_TFLOPS))
        return Utilization(
            achieved, None, None, f"no MFU: no dense {precision} peak known for {device_name!r} ({known})"
        )
    return Utilization(achieved, peak, achieved / peak, f"{device_name}, dense {precision} peak {peak:g} TFLOP/s")
