"""A framework plugin written as a real installed distribution (a package and a
dist-info folder with entry points) in a directory the tests put on sys.path and on
the workers' PYTHONPATH: how the runner's fault tests bring their misbehaving
frameworks in, exactly as a user's plugin would come."""

from __future__ import annotations

import textwrap
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
