"""A framework plugin written as a real installed distribution (a package and a
dist-info folder with entry points) in a directory the tests put on sys.path and on
the workers' PYTHONPATH: how the runner's fault tests bring their misbehaving
frameworks in, exactly as a user's plugin would come."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path


def write_plugin(root: Path, package: str, info: str, adapter: str, entry_points: dict[str, str]) -> Path:
    """`package` with its __init__ (`info`) and adapter module, and a distribution
    dlbench-<name> whose [dlbench.frameworks] entry points are `entry_points`
    ({framework name: "module:attribute"}). Returns `root`."""
    pkg = root / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(info))
    (pkg / "adapter.py").write_text(textwrap.dedent(adapter))
    name = package.replace("_", "-")
    dist = root / f"{package}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (dist / "entry_points.txt").write_text("[dlbench.frameworks]\n" + lines)
    return root


@contextlib.contextmanager
def faulty_plugin_on_path(root: Path, train_seconds: float | None = None) -> Iterator[Path]:
    """The `faulty` test plugin written under root and put on sys.path and on the
    PYTHONPATH that processes started inside the block inherit (a Ray cluster's
    workers take the raylet's environment, fixed when it starts); all undone after.
    train_seconds: each train() sleeps this long first (a trial that lasts)."""
    from conftest import PLUGIN_ADAPTER, PLUGIN_INFO

    write_plugin(root, "dlbench_faulty", PLUGIN_INFO, PLUGIN_ADAPTER, {"faulty": "dlbench_faulty:INFO"})
    if train_seconds is not None:
        (root / "dlbench_faulty" / "train_seconds").write_text(str(train_seconds))
    src = str(Path(__file__).resolve().parents[1] / "src")
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{root}:{src}"
    sys.path.insert(0, str(root))
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for mod in [m for m in sys.modules if m.startswith("dlbench_faulty")]:
            del sys.modules[mod]
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
