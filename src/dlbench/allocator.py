"""glibc malloc's thresholds, fixed for every worker alike.

glibc serves a large allocation (above 128 KiB at start) with mmap and returns it
with munmap, and raises that threshold each time a mapped block is freed (up to
32 MiB on 64-bit), with the heap's trim threshold at twice it. How fast a framework
allocates its tensors thus depends on what the process allocated and freed before:
on this project's 2-core VM, torch's ResNet-18 (batch 16, 32x32) trained its first
repeat at 29 ms/step and the next ones at 40-45, while with the thresholds fixed at
their ceiling every repeat ran at 27 ms; LeNet-5 was unchanged (0.99x), TensorFlow
and JAX within the machine's noise (benchmarks/torch_step_settings.py, docs/measurement.md
"Why your own timing differs"). Fixing the mmap threshold alone is a trap: glibc
then keeps its 128 KiB trim threshold and gives the heap's top back to the kernel
at every free, which made the LeNet-5 step 2.1x slower.

So a worker whose case has runtime setting malloc-fixed (dlbench.runtime_settings)
starts with both thresholds at glibc's dynamic ceiling, whatever the user's
environment said. Otherwise glibc's own dynamic thresholds are left in force, as a
plain script has them (measured: a plain torch LeNet-5 script ran 7.86 s with the
fixed thresholds, 7.47 s without, slower in 4 of 4 rounds), or the user's, if they
set either; the manifest says whose they are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

MMAP_THRESHOLD = 32 * 2**20  # DEFAULT_MMAP_THRESHOLD_MAX of 64-bit glibc
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc sets when it raises the mmap threshold itself
VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
MARK = "DLBENCH_MALLOC_THRESHOLDS"  # set to "dlbench" where dlbench chose the values


def worker_environment(env: Mapping[str, str], fixed: bool) -> dict[str, str]:
    """`env` for a worker: with dlbench's thresholds where `fixed`, else as the user
    has it (thresholds dlbench set in a parent dlbench process are removed)."""
    out = dict(env)
    if out.pop(MARK, None) == "dlbench":
        for name in VARIABLES:
            out.pop(name, None)
    if fixed:
        out.update({VARIABLES[0]: str(MMAP_THRESHOLD), VARIABLES[1]: str(TRIM_THRESHOLD), MARK: "dlbench"})
    return out


def facts() -> dict[str, Any]:
    """The allocator this process runs with, for the fairness manifest."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        libc = None
    return {
        "libc": libc or "not glibc (the MALLOC_* thresholds do not apply)",
        "malloc_mmap_threshold": os.environ.get(VARIABLES[0]),
        "malloc_trim_threshold": os.environ.get(VARIABLES[1]),
        "malloc_thresholds_set_by": os.environ.get(MARK)
        or ("the user's environment" if any(v in os.environ for v in VARIABLES) else "nobody: glibc's dynamic ones"),
    }
