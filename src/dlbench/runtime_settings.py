"""The runtime settings dlbench can impose on a framework, each by name, none by default.

A case's `runtime` says which of them its worker ran with: "defaults" (none: each
framework as a plain script runs it) or names joined by "+". Each one is a setting a
hand-written script lacks, so it is a variant a user asks for and an `explain`
toggle, never a silent default (measured: with glibc's thresholds fixed, a plain
torch LeNet-5 script ran 7.86 s against 7.47 s without, slower in 4 of 4 rounds;
benchmarks/harness_vs_standalone.py holds the default against the plain scripts).

- malloc-fixed: glibc malloc's mmap and trim thresholds at the top of their dynamic
  range (dlbench.allocator), so a process's allocation speed does not depend on what
  it freed before (torch ResNet-18 at batch 16: 29 ms/step in its first repeat, 40-45
  in the next ones with glibc's own; 27 from the first with them fixed). Every
  framework runs on glibc's malloc, so it applies to all.
- interop-fixed: the inter-op pool at a fixed size where the framework's default is
  one thread per core: torch's at 1 (torch.set_num_interop_threads; eager training
  does not use it), TensorFlow's at 2 (its executor runs independent ops of a step
  there; see dlbench.frameworks.tensorflow). torch and TensorFlow only: JAX and the
  numpy and scikit-learn models have no inter-op pool of their own.
- autotune-off: tf.data's autotuning off in TensorFlow's preloaded input pipeline,
  with a fixed prefetch of 2 batches instead of prefetch(AUTOTUNE) (autotune's
  background thread stalled Keras' fit() by ~310 ms after the last step in 2 of 8
  calls on this project's VM). TensorFlow only.

Which framework has which setting is its declaration (FrameworkInfo.runtime_settings,
read through dlbench.registry when asked); nothing else here imports the rest of dlbench.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEFAULTS = "defaults"  # nothing imposed
ALL = "all"  # every setting that applies to the case's framework
# In the order a canonical value lists them.
NAMES = ("malloc-fixed", "interop-fixed", "autotune-off")
# The settings every framework has (the worker's environment); the others concern the
# frameworks that declare them (FrameworkInfo.runtime_settings).
EVERY_FRAMEWORK = frozenset({"malloc-fixed"})
# What every worker ran with before `runtime` was a setting of its own: each of these
# that applied to its framework, i.e. "all". A case stored without the field ran so,
# and its key, computed without the field, stays (dlbench.plan.Case.as_dict).
LEGACY = ALL


class RuntimeSettingError(ValueError):
    """A runtime value that names no known setting (the message says what is allowed)."""


def allowed() -> str:
    return f"{DEFAULTS}, {ALL}, or one or more of {', '.join(NAMES)} joined by '+'"


def parse(text: Any) -> tuple[str, ...]:
    """'interop-fixed+malloc-fixed' -> its names in canonical order; 'defaults' -> ();
    'all' -> every name. Raises RuntimeSettingError for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise RuntimeSettingError(f"runtime {text!r}: allowed: {allowed()}")
    value = text.strip()
    if value == DEFAULTS:
        return ()
    if value == ALL:
        return NAMES
    names = [n.strip() for n in value.split("+")]
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise RuntimeSettingError(f"runtime {value!r}: unknown setting {unknown[0]!r}; allowed: {allowed()}")
    return tuple(n for n in NAMES if n in names)


def canonical(text: Any) -> str:
    """The one spelling of a value: 'defaults', 'all', or names in NAMES' order."""
    names = parse(text)
    if not names:
        return DEFAULTS
    return ALL if names == NAMES and text.strip() == ALL else "+".join(names)


def applies(name: str, framework: str) -> bool:
    from dlbench import registry

    return name in EVERY_FRAMEWORK or name in registry.framework(framework).runtime_settings


def declaring(name: str) -> list[str]:
    """The frameworks a setting concerns, by name (every one for EVERY_FRAMEWORK's)."""
    from dlbench import registry

    known = registry.frameworks()
    return sorted(f for f, info in known.items() if name in EVERY_FRAMEWORK or name in info.runtime_settings)


def applied(framework: str, value: str) -> tuple[str, ...]:
    """The settings a case's worker runs with: for 'all', those that apply to its
    framework; otherwise the names given (plan.runtime_reason refused the rest)."""
    if value.strip() == ALL:
        return tuple(n for n in NAMES if applies(n, framework))
    return parse(value)


def reason(framework: str, value: str) -> str | None:
    """Why a case of `framework` cannot have `value` (a named setting that does not
    concern it would be recorded and not run), or None."""
    if value.strip() == ALL:
        return None
    foreign = [n for n in parse(value) if not applies(n, framework)]
    if not foreign:
        return None
    whose = ", ".join(f"{n} applies to {', '.join(declaring(n))}" for n in foreign)
    return (
        f"runtime {value}: {whose}, not to {framework}; use all (every setting that applies) or leave {foreign[0]} out"
    )


def complete(case: Mapping[str, Any]) -> dict[str, Any]:
    """A stored case with its runtime: a case stored before the setting existed ran
    with the legacy settings, and its JSON lacks the field."""
    out = dict(case)
    out.setdefault("runtime", LEGACY)
    return out
