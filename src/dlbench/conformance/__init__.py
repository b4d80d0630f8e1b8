"""`dlbench check MODEL`: the conformance suite, run on any model, the user's included.

A comparison of two frameworks is a framework comparison only if both run the
same network. For each framework with a builder, a probe process
(`dlbench.conformance.probe`) builds the model through the adapter a benchmark
uses and reports its trainable-parameter count, output shape, the loss of Adam
steps on one fixed batch, and whether the same seed gives the same losses. Then
the weights of one framework's network (torch when it has a builder), with
batch-norm statistics moved off their trivial start so that they count, are
copied in order into every framework's network (the other probes, run in
parallel once the first has exported them) and the logits on one batch are
compared. The verdict says plainly when the implementations are not the same
network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

LOGIT_RTOL = 1e-4  # float32 reductions in different orders: ~1e-6 relative; 1e-4 leaves room
# The loss after the fixed-batch steps must be below 95% of the first. What this
# catches is a network whose gradients do not reach its weights (a detached output,
# frozen parameters): its loss stays within rounding of the first. A working small
# MLP on 11 features fell only to 92% in 20 Adam steps at lr 1e-3, so 90% would
# call a sound model broken.
DESCENT = 0.95
PROBE_TIMEOUT = 600.0


@dataclass(frozen=True)
class Finding:
    """One check: what was looked at, whether it passed, and the numbers behind it."""

    check: str
    ok: bool
    detail: str


@dataclass
class CheckReport:
    model: str
    shape: tuple[int, ...]
    classes: int
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def same_network(self) -> bool:
        return all(f.ok for f in self.findings if f.check in ("parameters", "outputs", "weight copy"))

    @property
    def ok(self) -> bool:
        return bool(self.findings) and all(f.ok for f in self.findings)

    def verdict(self) -> str:
        ran = ", ".join(self.probes) or "no framework"
        if not self.probes:
            return f"{self.model}: nothing could be checked ({'; '.join(self.skipped.values()) or 'no builder'})"
        if len(self.probes) == 1:
            return f"{self.model}: checked in {ran} only; with one framework there is nothing to compare"
        if not self.same_network:
            failed = [
                f.check for f in self.findings if not f.ok and f.check in ("parameters", "outputs", "weight copy")
            ]
            return (
                f"{self.model}: NOT the same network in {ran} ({', '.join(failed)} differ): a benchmark of these "
                "implementations compares different networks, not frameworks"
            )
        if not self.ok:
            return f"{self.model}: the same network in {ran}, but some checks failed (below)"
        return f"{self.model}: the same network in {ran}: equal parameter counts, equal outputs after a weight copy"


def _sample(kind: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(2)
    if kind == "tokens":
        return rng.integers(0, 100, size=(3, *shape)).astype(np.int64)
    return rng.random((3, *shape), dtype=np.float32)


def _run_probe(request: dict[str, Any], python: str) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [python, "-P", "-m", "dlbench.conformance.probe"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"the {request['framework']} probe took longer than {PROBE_TIMEOUT:g} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the {request['framework']} probe died (exit {proc.returncode}): {tail}"}
    return result


def check(
    model: str,
    sources: Mapping[str, str] | None = None,
    *,
    frameworks: tuple[str, ...] | None = None,
    shape: tuple[int, ...] | None = None,
    classes: int = 10,
    options: Mapping[str, Any] | None = None,
    python: str | None = None,
) -> CheckReport:
    """Run the conformance checks on `model` (a name; `sources` for the user's own).
    frameworks: None for every framework that declares conformance hooks."""
    from dlbench import registry

    if frameworks is None:
        frameworks = tuple(n for n, i in registry.frameworks().items() if i.conformance is not None)
    spec = registry.model(model, sources or {})
    if shape is None:
        shape = spec.tiny_shape or {"image": (28, 28, 1), "tokens": (32,), "features": (16,)}.get(spec.input_kind)
        if shape is None:
            shape = (28, 28, 1)
    report = CheckReport(spec.name, tuple(shape), classes)
    runnable = []
    for fw in frameworks:
        info = registry.framework(fw)
        reason = (
            info.unavailable_reason()
            or (None if info.conformance else f"{fw} declares no conformance hooks (FrameworkInfo.conformance)")
            or spec.unsupported_reason(fw, tuple(shape), info.models)
        )
        if reason:
            report.skipped[fw] = reason
        else:
            runnable.append(fw)
    x = _sample(spec.input_kind, tuple(shape))
    base = {
        "model": spec.name,
        "sources": dict(sources or {}),
        "shape": list(shape),
        "classes": classes,
        "options": dict(options or {}),
        "x": x.tolist(),
    }
    python = python or sys.executable
    with tempfile.TemporaryDirectory(prefix="dlbench-check-") as tmp:
        # The first framework exports its weights (and reports its logits on them); the
        # others, in parallel (nothing here is timed), import them and report theirs.
        exported = Path(tmp) / "reference.npz"
        if runnable:
            reference, *others = runnable
            report.probes[reference] = _run_probe({**base, "framework": reference, "export_to": str(exported)}, python)
            copy = {"import_from": str(exported)} if exported.exists() else {}
            with ThreadPoolExecutor(max_workers=max(1, len(others))) as pool:
                results = pool.map(lambda fw: _run_probe({**base, "framework": fw, **copy}, python), others)
                report.probes.update(zip(others, results))
    _judge(report, classes)
    return report


def _judge(report: CheckReport, classes: int) -> None:
    failed = {fw: p["error"] for fw, p in report.probes.items() if "error" in p}
    for fw, error in failed.items():
        report.findings.append(Finding("build", False, f"{fw}: {error}"))
    probes = {fw: p for fw, p in report.probes.items() if "error" not in p}
    if not probes:
        return
    counts = {fw: p["parameters"] for fw, p in probes.items()}
    listed = ", ".join(f"{fw} {n:,}" for fw, n in counts.items())
    report.findings.append(
        Finding(
            "parameters",
            len(set(counts.values())) == 1,
            f"trainable parameters: {listed}" + ("" if len(set(counts.values())) == 1 else " (not equal)"),
        )
    )
    for fw, p in probes.items():
        want = [3, classes]
        report.findings.append(
            Finding("output shape", p["output_shape"] == want, f"{fw}: logits {p['output_shape']} for {want}")
        )
        losses = p["losses"]
        falls = bool(losses) and losses[-1] < DESCENT * losses[0]
        report.findings.append(
            Finding(
                "loss falls",
                falls,
                f"{fw}: {losses[0]:.4g} -> {losses[-1]:.4g} in {len(losses)} Adam steps on one batch"
                + ("" if falls else f" (needs below {DESCENT:.0%} of the first: do gradients reach the weights?)"),
            )
        )
        same = np.allclose(p["repeat_losses"], losses[: len(p["repeat_losses"])], rtol=1e-5, atol=1e-7)
        report.findings.append(
            Finding(
                "same seed",
                bool(same),
                f"{fw}: a second build from seed 0 gives {'the same' if same else 'other'} losses",
            )
        )
    copies = probes
    if len(probes) < 2 or any("logits" not in c and "copy_error" not in c for c in copies.values()):
        return
    problems = {fw: c["copy_error"] for fw, c in copies.items() if "logits" not in c}
    if problems:
        report.findings.append(
            Finding(
                "weight copy",
                False,
                "; ".join(f"{fw}: {why}" for fw, why in problems.items())
                + " (copied in creation order: the layers differ in kind, order or shape)",
            )
        )
        return
    logits = {fw: np.asarray(c["logits"]) for fw, c in copies.items()}
    ref_fw = next(iter(logits))
    ref = logits[ref_fw]
    scale = max(1.0, float(np.abs(ref).max()))
    diffs = {fw: float(np.abs(v - ref).max()) for fw, v in logits.items() if fw != ref_fw}
    ok = all(d <= LOGIT_RTOL * scale for d in diffs.values())
    text = ", ".join(f"{fw} max |Δ| {d:.2g}" for fw, d in diffs.items())
    report.findings.append(
        Finding(
            "outputs",
            ok,
            f"logits after copying {ref_fw}'s weights: {text} (tolerance {LOGIT_RTOL * scale:.2g})"
            + (
                ""
                if ok
                else "; the networks compute different functions (or lay a layer's weights out differently: "
                "flatten order, recurrent gate order)"
            ),
        )
    )
