"""Trainable-parameter counts of every model as each framework builds it.

`dlbench list` shows, per model, the count each framework's implementation
really has (computed by building it, not typed in) beside the spec's formula
and the published figure. Building happens in one subprocess per framework
(`python -m dlbench.param_counts FRAMEWORK` prints JSON), so the parent never
imports a deep-learning framework, by the counter the framework declares
(FrameworkInfo.param_counter; the built-ins' are in dlbench.frameworks.counting),
without allocating weights where the framework allows it. Keras has no such mode
and builds for real (VGG16's 138 M parameters take a few seconds). Results are cached per framework
version and model source, so only the first `dlbench list` pays.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dlbench.models.spec import ModelSpec, Shape


def counted() -> tuple[str, ...]:
    """The frameworks that declare how their parameters are counted
    (FrameworkInfo.param_counter), an installed plugin's too."""
    from dlbench import registry

    return tuple(name for name, info in registry.frameworks().items() if info.param_counter)


def __getattr__(name: str) -> Any:
    # NN_FRAMEWORKS, kept for callers written before the frameworks declared it: the
    # frameworks whose counts `list` shows (counted()).
    if name == "NN_FRAMEWORKS":
        return counted()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def reference_point(spec: ModelSpec) -> tuple[Shape, int, int | None]:
    """(input shape, classes, published count or None) at which `list` shows the model."""
    if spec.reference_counts:
        (shape, classes), published = next(iter(spec.reference_counts.items()))
        return tuple(shape), classes, published
    if not spec.builtin and spec.tiny_shape is not None:  # a user's model that takes one input shape
        return tuple(spec.tiny_shape), 10, None
    if spec.synthetic_data is not None:
        shape, classes = spec.synthetic_data(spec.resolve_options())
        return tuple(shape), classes, None
    return (28, 28, 1), 10, None


def counts_in_process(framework: str) -> dict[str, Any]:
    """model -> count, or {"error": text}, for every model `framework` implements,
    counted by the framework's declared counter (FrameworkInfo.param_counter)."""
    from dlbench import registry
    from dlbench.frameworks import load

    target = registry.framework(framework).param_counter
    if target is None:
        return {"error": f"{framework} declares no parameter counter (FrameworkInfo.param_counter)"}
    count = load(target)
    out: dict[str, Any] = {}

    for spec in registry.models({}):
        if spec.kind != "nn" or framework not in spec.frameworks:
            continue
        shape, classes, _ = reference_point(spec)
        try:
            out[spec.name] = count(spec, shape, classes, spec.resolve_options())
        except Exception as exc:  # noqa: BLE001 - one broken model must not hide the others
            out[spec.name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def _cache_file(framework: str, version: str) -> Path:
    """Cache key: framework version + the source of every model (a changed model recounts)."""
    digest = hashlib.sha256(version.encode())
    models = Path(__file__).resolve().parent / "models"
    for path in sorted(models.rglob("*.py")):
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dlbench"
    return base / f"param-counts-{framework}-{digest.hexdigest()[:16]}.json"


def framework_counts(frameworks: dict[str, str], timeout: float = 600.0) -> dict[str, dict[str, Any]]:
    """{framework: {model: count | {"error": ...}}} for the installed frameworks given as
    {name: version}; cached results are reused, the rest computed in parallel subprocesses."""
    results: dict[str, dict[str, Any]] = {}
    running = {}
    for name, version in frameworks.items():
        cache = _cache_file(name, version)
        if cache.exists():
            try:
                results[name] = json.loads(cache.read_text())
                continue
            except (OSError, json.JSONDecodeError):
                pass  # unreadable cache: recount
        running[name] = (
            cache,
            subprocess.Popen(
                [sys.executable, "-m", "dlbench.param_counts", name],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    for name, (cache, proc) in running.items():
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            results[name] = {"error": f"counting took longer than {timeout:g} s"}
            continue
        if proc.returncode != 0:
            results[name] = {"error": (err.strip().splitlines() or ["no output"])[-1][:300]}
            continue
        results[name] = json.loads(out.strip().splitlines()[-1])
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(results[name]))
        except OSError:
            pass  # a read-only home only costs a recount next time
    return results


if __name__ == "__main__":
    # Frameworks print banners on stdout at import; the JSON is the last line.
    print(json.dumps(counts_in_process(sys.argv[1])))
