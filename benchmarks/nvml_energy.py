"""Does dlbench's NVML energy agree with the power it polls? Counter vs integrated power.

dlbench measures GPU energy from NVML's total-energy counter (the difference of
nvmlDeviceGetTotalEnergyConsumption across a window). The independent check is the
power it polls in the same window (nvmlDeviceGetPowerUsage every 0.1 s), integrated
by the trapezoid rule. Both come from dlbench's own sampler (dlbench.samplers.nvml)
driven by its own poller, so this checks the code a run uses, on real hardware.

For each window length (1 s or more: NVML refreshes power and energy about every
0.1 s, and on recent GPUs the power reading is itself an average over about 1 s,
so shorter windows are not meaningful) and each load (idle; bf16 matrix products
on the GPU through torch), it prints both energies, their ratio and the mean power,
and a verdict against a tolerance (default ±5%). Without an NVIDIA GPU it prints why
and exits 0: there is nothing to check.

    python benchmarks/nvml_energy.py --windows 1,2,4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def integrate(points: list[tuple[int, float]]) -> float:
    """Trapezoid integral in joules of (monotonic ns, watts) points."""
    return sum((w0 + w1) / 2 * (t1 - t0) / 1e9 for (t0, w0), (t1, w1) in zip(points, points[1:]))


def compare(series: list[Any]) -> dict[str, Any]:
    """Counter energy and integrated power of one window, from the sampler's series."""
    energy = next((s for s in series if s.name.endswith(".energy")), None)
    power = next((s for s in series if s.name.endswith(".power")), None)
    if energy is None or power is None or len(power.points) < 2:
        return {"error": "no energy series or fewer than 2 power readings"}
    # Integrate over the same span as the counter: its first to its last reading.
    t_start, t_end = energy.points[0][0], energy.points[-1][0]
    inside = [(t, w) for t, w in power.points if t_start <= t <= t_end]
    counter_j = energy.points[-1][1] - energy.points[0][1]
    integrated_j = integrate(inside)
    # The sampler reads power and the counter in the same poll, so both spans match.
    span = (inside[-1][0] - inside[0][0]) / 1e9 if len(inside) > 1 else 0.0
    window = (t_end - t_start) / 1e9
    return {
        "method": energy.method,
        "window_s": window,
        "power_span_s": span,
        "power_points": len(inside),
        "counter_j": counter_j,
        "integrated_j": integrated_j,
        "mean_power_w": integrated_j / span if span > 0 else float("nan"),
    }


def load(kind: str, seconds: float) -> None:
    """Keep the GPU busy (bf16 matmuls) or idle for `seconds`."""
    if kind == "idle":
        time.sleep(seconds)
        return
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(4):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--windows", default="1,2,4", help="window lengths in seconds, comma list (each >= 1)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--loads", default="busy,idle", help="busy and/or idle")
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--json", type=Path, help="also write every window's numbers here")
    args = p.parse_args()
    windows = [float(w) for w in args.windows.split(",")]
    if any(w < 1 for w in windows):
        p.error("--windows: each window must be 1 s or longer (NVML power is averaged over about 1 s)")

    from dlbench.samplers.nvml import NvmlSampler
    from dlbench.samplers.poller import Poller

    why = NvmlSampler().unavailable()
    if why:
        print(f"NVML energy check: nothing to check here: {why}")
        return 0
    loads = [x.strip() for x in args.loads.split(",") if x.strip()]
    if "busy" in loads:
        load("busy", 1.0)  # clocks up and cuBLAS initialized before the first window
    rows: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        for kind in loads:
            for w in windows:
                sampler = NvmlSampler(devices=[int(os.environ.get("NVML_DEVICE", "0"))])
                poller = Poller([(sampler, 0.1)])
                poller.start(os.getpid())
                load(kind, w)
                series, notes = poller.stop()
                row = {"repeat": rep, "load": kind, "requested_s": w, **compare(series), "notes": notes}
                rows.append(row)
                if "error" in row:
                    print(f"{kind} {w:g} s: {row['error']}; notes {notes}")
                    continue
                print(
                    f"{kind:<5} window {row['window_s']:5.2f} s: counter {row['counter_j']:8.1f} J, "
                    f"integrated power {row['integrated_j']:8.1f} J ({row['power_points']} readings), "
                    f"ratio {row['counter_j'] / row['integrated_j']:.3f}, mean power {row['mean_power_w']:.0f} W",
                    flush=True,
                )
    good = [r for r in rows if "error" not in r and r["integrated_j"] > 0]
    print(f"\nNVML energy: total-energy counter / integrated polled power, tolerance ±{args.tolerance:.0%}")
    print(f"{'load':<5} {'window s':>8} {'n':>2} {'median ratio':>12} {'range':>15}  verdict")
    ok = True
    for kind in loads:
        for w in windows:
            ratios = sorted(
                r["counter_j"] / r["integrated_j"] for r in good if r["load"] == kind and r["requested_s"] == w
            )
            if not ratios:
                print(f"{kind:<5} {w:>8g}  0  no window measured")
                ok = False
                continue
            med = (
                ratios[len(ratios) // 2]
                if len(ratios) % 2
                else sum(ratios[len(ratios) // 2 - 1 : len(ratios) // 2 + 1]) / 2
            )
            within = abs(med - 1) <= args.tolerance
            ok &= within
            print(
                f"{kind:<5} {w:>8g} {len(ratios):>2} {med:>12.3f} {f'[{ratios[0]:.3f}, {ratios[-1]:.3f}]':>15}  "
                f"{'agree' if within else 'DIFFER'}"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
