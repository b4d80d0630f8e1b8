"""How long `dlbench --help` and `dlbench list` take, and what they import.

Target (issue 2): `dlbench --help` returns in under 0.5 s. Run:
    .venv/bin/python benchmarks/cli_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

HEAVY = ("torch", "tensorflow", "jax", "keras", "flax", "sklearn")


def wall(args: list[str], n: int = 7) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dlbench", *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    for args, target in ((["--help"], 0.5), (["list"], None), (["plan"], None)):
        t = wall(args)
        med = statistics.median(t)
        verdict = "" if target is None else ("  PASS" if med < target else "  FAIL") + f" (target < {target} s)"
        print(f"dlbench {' '.join(args):8s} median {med:.3f} s  min {min(t):.3f}  max {max(t):.3f}{verdict}")
    code = (
        "import sys; from dlbench.cli import app\ntry: app(['list'])\nexcept SystemExit: pass\n"
        f"print('heavy modules imported by `dlbench list`:', [m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
