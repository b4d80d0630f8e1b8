"""Is `dlbench check`'s "loss falls" rule calibrated? Its false-failure rate on networks that
learn and its miss rate on networks broken so that they cannot.

The rule (dlbench.conformance, the comment above LEARN_STEPS): Adam steps on one fixed
batch, then a held-out batch of the same task; a classifier must rise HELD_OUT_Z standard
deviations of chance above chance and its start, a regressor's held-out error must fall
below REGRESSION_SHARE of predicting the batch mean, a sequence model's fixed-batch loss
below SEQUENCE_DESCENT of its first; judged after 20, 50, 100 and 200 steps.

Networks that learn: every zoo model at its check size and every example under examples/,
in every framework with conformance hooks (one `check` per network: its probes run the
frameworks side by side, as a user's `dlbench check` does). A failure there is a false
failure.

Networks broken on purpose (PyTorch, written here): four faults that stop learning,
  detached   the output detached from the graph: no gradient reaches a weight
  frozen     every parameter requires_grad=False
  ignored    the output multiplies the input's path by zero: a learnable constant
  rolled     each output belongs to the previous sample (a reshape that mixes samples)
each in four bodies: an MLP classifier over features, a CNN classifier over images, an
MLP regressor trained on MSE and one on MAE. A pass there is a miss.

Faults the rule cannot see by design are left out and named: a missing activation (a
linear network still learns the check's class means) is what the cross-framework output
comparison of `check` catches, not "loss falls".

    .venv/bin/python benchmarks/learn_rule.py [--zoo mlp,cnn,...] [--no-examples] [--no-broken] [--bodies ...]

Prints one line per network and framework (pass or fail, the rule's numbers), and for each
network that learns the whole check's verdict with any failed or warned finding; then both
rates with Clopper-Pearson 95% intervals and how many networks passed the whole check. Exit 1
when a correct network fails the rule or the check, or a broken one passes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from scipy.stats import binomtest  # noqa: E402

from dlbench import conformance, registry  # noqa: E402

BROKEN = """
import math

import dlbench


def _body(kind, shape, out):
    import torch.nn as nn

    if kind == "cnn":
        c = shape[-1]
        return nn.Sequential(
            nn.Conv2d(c, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, out),
        )
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(shape), 32), nn.ReLU(), nn.Linear(32, out))


def _broken(kind, fault):
    def build(shape, out):
        import torch

        class Broken(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = _body(kind, shape, out)
                self.bias = torch.nn.Parameter(torch.zeros(out))
                if fault == "frozen":
                    for p in self.parameters():
                        p.requires_grad_(False)

            def forward(self, x):
                y = self.inner(x)  # images arrive NCHW: the torch adapter transposes them
                if fault == "detached":
                    return y.detach().requires_grad_()
                if fault == "ignored":
                    return y * 0 + self.bias
                if fault == "rolled":
                    return y.roll(1, dims=0)
                return y + self.bias

        return Broken()

    return build


BODIES = {
    "mlp_classify": ("mlp", "features", "classify", "cross_entropy"),
    "cnn_classify": ("cnn", "image", "classify", "cross_entropy"),
    "mlp_regress_mse": ("mlp", "features", "regress", "mse"),
    "mlp_regress_mae": ("mlp", "features", "regress", "mae"),
}
FAULTS = ("detached", "frozen", "ignored", "rolled")
for _body_name, (_kind, _input, _task, _loss) in BODIES.items():
    for _fault in FAULTS:
        _name = f"{_fault}_{_body_name}"
        globals()[_name.upper()] = dlbench.Model(
            _name, {"torch": _broken(_kind, _fault)}, input_kind=_input, task=_task,
            **({} if _task == "classify" else {"loss": _loss}),
        )
"""
BROKEN_SHAPES = {"mlp": (6,), "cnn": (12, 12, 1)}


def _loss_findings(report: conformance.CheckReport) -> dict[str, tuple[bool, str]]:
    """framework -> (passed "loss falls", its numbers) from a check's findings."""
    out: dict[str, tuple[bool, str]] = {}
    for f in report.findings:
        if f.check == "loss falls":
            fw, _, detail = f.detail.partition(": ")
            out[fw] = (f.ok, detail)
    return out


def _rate(k: int, n: int) -> str:
    if n == 0:
        return "n/a (none run)"
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return f"{k}/{n} = {k / n:.0%} [95% CI {ci.low:.0%}, {ci.high:.0%}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", help="zoo models, comma-separated (default: every zoo model; none: no zoo model)")
    ap.add_argument("--no-examples", action="store_true")
    ap.add_argument("--no-broken", action="store_true")
    ap.add_argument(
        "--bodies",
        default="mlp_classify,cnn_classify,mlp_regress_mse,mlp_regress_mae",
        help="the broken networks' bodies, comma-separated",
    )
    args = ap.parse_args()

    correct: list[Result] = []
    broken: list[Result] = []
    t0 = time.perf_counter()
    zoo = [] if args.zoo == "none" else args.zoo.split(",") if args.zoo else [spec.name for spec in registry.models()]
    for name in zoo:
        started = time.perf_counter()
        try:
            report = conformance.check(name)
        except Exception as exc:  # noqa: BLE001 - a model this machine cannot check is said, not hidden
            print(f"{name}: check raised {type(exc).__name__}: {exc}", flush=True)
            continue
        correct += _results(report, f"zoo {name}", _task(name, {}), broken=False)
        for fw, why in report.skipped.items():
            print(f"skip  zoo {name} {fw}: {why}", flush=True)
        print(f"      ({time.perf_counter() - started:.0f} s)", flush=True)
    if not args.no_examples:
        for folder in sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir()):
            main_file = folder / f"{folder.name}.py"
            if not main_file.is_file():
                continue
            source = {f"model:{folder.name}": f"{main_file}:MODEL"}
            try:
                report = conformance.check(folder.name, source)
            except Exception as exc:  # noqa: BLE001
                print(f"example {folder.name}: check raised {type(exc).__name__}: {exc}", flush=True)
                continue
            correct += _results(report, f"example {folder.name}", _task(folder.name, source), broken=False)
    if not args.no_broken:
        with tempfile.TemporaryDirectory(prefix="dlbench-learn-rule-") as tmp:
            module = Path(tmp) / "broken_nets.py"
            module.write_text(BROKEN)
            for body in args.bodies.split(","):
                for fault in ("detached", "frozen", "ignored", "rolled"):
                    name = f"{fault}_{body}"
                    source = {f"model:{name}": f"{module}:{name.upper()}"}
                    shape = BROKEN_SHAPES[body.split("_")[0]]
                    report = conformance.check(name, source, frameworks=("torch",), shape=shape)
                    broken += _results(report, f"broken {name}", _task(name, source), broken=True)
    print()
    _summary("networks that learn, failed (false failures)", correct, wrong=lambda r: not r.ok)
    _summary("broken networks, passed (misses)", broken, wrong=lambda r: r.ok)
    failed = [network for network, ok in checks if not ok]
    print(
        f"whole check, networks that learn: {len(checks) - len(failed)} of {len(checks)} passed"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    print(f"{(time.perf_counter() - t0) / 60:.1f} min")
    return 1 if any(not r.ok for r in correct) or any(r.ok for r in broken) or failed else 0


@dataclass(frozen=True)
class Result:
    network: str  # "zoo NAME", "example NAME" or "broken NAME"
    framework: str
    task: str  # the rule that judged it: classify, regress (and its loss), next-token, ctc, several outputs
    ok: bool
    detail: str


def _task(name: str, sources: dict[str, str]) -> str:
    spec = registry.model(name, sources)
    if spec.heads:
        return "several outputs"
    return f"regress ({spec.loss})" if spec.task == "regress" else str(spec.task)


def _results(report: conformance.CheckReport, network: str, task: str, *, broken: bool) -> list[Result]:
    found = []
    for fw, (ok, detail) in _loss_findings(report).items():
        found.append(Result(network, fw, task, ok, detail))
        word = ("MISS" if ok else "fail") if broken else ("pass" if ok else "FAIL")
        print(f"{word}  {network} {fw} [{task}]: {detail}", flush=True)
    if not broken and not report.probes:
        # Nothing could be checked (knn: no framework with conformance hooks implements it).
        print(f"skip  {network}: {report.verdict()}", flush=True)
    elif not broken:
        # The whole check, not only its "loss falls": a network that learns must also pass
        # the counts, the outputs after the weight copy and the training comparison.
        print(f"check {network}: {report.verdict()}", flush=True)
        for f in report.findings:
            if not f.ok or f.warning:
                print(f"      {'warning' if f.ok else 'FAILED'} {f.check}: {f.detail}", flush=True)
        checks.append((network, report.ok))
    return found


# (network, whole check passed) for every network that learns; printed at the end.
checks: list[tuple[str, bool]] = []


def _summary(title: str, results: list[Result], wrong: Any) -> None:
    print(f"{title}: {_rate(sum(map(wrong, results)), len(results))}")
    for task in sorted({r.task for r in results}):
        these = [r for r in results if r.task == task]
        print(f"  {task}: {_rate(sum(map(wrong, these)), len(these))}")
    for r in results:
        if wrong(r):
            print(f"  - {r.network} {r.framework}: {r.detail}")


if __name__ == "__main__":
    raise SystemExit(main())
