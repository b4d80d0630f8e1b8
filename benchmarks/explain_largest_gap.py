"""`dlbench explain` of the largest framework gap that benchmarks/gpu_steps.py measured.

Reads gpu_steps.py's JSON (each case's dlbench step times and the run each came
from), finds the model whose torch:eager step time differs most from TensorFlow's
(graph), or from JAX's where TensorFlow was not measured (it says which), and runs
`dlbench explain` on that pair: the faster case is A, the slower B, B taken from its
own run (--vs-run). Where B is torch or TensorFlow only its variant is toggled
(eager -> compile, graph -> xla): the other settings are the same on both sides
already, and time on a lent GPU is short. With fewer than 6 blocks the report says the gap and
closures are not measurable; they are shown as measured, never as verdicts.

    python benchmarks/explain_largest_gap.py --steps-json steps.json --db campaign.db --device cuda
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps-json", type=Path, required=True)
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    if not args.steps_json.exists():
        print(f"no gap to explain: {args.steps_json} does not exist (the steps check did not run)")
        return 1
    data = json.loads(args.steps_json.read_text())
    runs: dict[tuple[str, str], tuple[float, int]] = {}
    for key, rounds in data["results"].items():
        model, variant = key.split(" ")
        times = [t for r in rounds for t in r["dlbench"]["step_times"]]
        runs[(model, variant)] = (statistics.median(times), rounds[-1]["dlbench"]["run_id"])
    other = "tensorflow:graph" if any(v == "tensorflow:graph" for _, v in runs) else "jax:jit"
    if other != "tensorflow:graph":
        print("TensorFlow was not measured (not installed here): explaining the largest torch/JAX gap instead")
    gaps = [
        (abs(math.log(runs[(m, "torch:eager")][0] / runs[(m, other)][0])), m)
        for m, v in runs
        if v == "torch:eager" and (m, other) in runs
    ]
    if not gaps:
        print(f"no gap to explain: no model has both torch:eager and {other} measured")
        return 1
    _, model = max(gaps)
    (t_torch, run_torch), (t_other, run_other) = runs[(model, "torch:eager")], runs[(model, other)]
    fast, slow = (
        (("torch", run_torch), (other, run_other)) if t_torch < t_other else ((other, run_other), ("torch", run_torch))
    )
    print(
        f"largest gap: {model}, torch:eager {1e3 * t_torch:.3f} ms/step vs {other} {1e3 * t_other:.3f} ms/step "
        f"(ratio {max(t_torch, t_other) / min(t_torch, t_other):.2f}); A = {fast[0]}, B = {slow[0]}"
    )
    # The slower side's faster variant where it has one; JAX has one variant, so
    # explain then toggles every recorded setting.
    toggle = {"torch": ["--only", "variant=compile"], "tensorflow": ["--only", "variant=xla"]}
    cmd = [
        args.python,
        "-m",
        "dlbench",
        "explain",
        str(fast[1]),
        "--case",
        fast[0].split(":")[0],
        "--vs",
        slow[0].split(":")[0],
        "--vs-run",
        str(slow[1]),
        *toggle.get(slow[0].split(":")[0], []),
        "--blocks",
        str(args.blocks),
        "--repeats",
        "2",
        "--warmup",
        "1",
        "--profile-steps",
        "5",
        "--profile-calls",
        "1",
        "--db",
        str(args.db),
    ]
    print("$ dlbench " + " ".join(cmd[3:]), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
