"""What an init scheme reached in a built network, in words and as manifest facts.

Each framework's init module (torch_init, keras_init, flax_init) re-initializes the
layers it knows and returns an `InitCoverage`: the layer kinds it re-initialized and
the layers that kept the builder's own init. The adapters put `as_facts()` in the
trial's manifest, where dlbench.report.coverage reads `init_kept_parameters` to name a
partial init on the case's row. Imports nothing heavy: the worker and the report can
read it without a framework installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

# A note names this many kept layers and counts the rest: it is one line in a table cell.
NOTE_LAYERS = 4


class KeptLayer(NamedTuple):
    """A layer (torch module, Keras layer, Flax parameter) whose trainable parameters the
    scheme did not touch: where it sits, what it is, how many parameters it holds."""

    path: str
    kind: str
    parameters: int


@dataclass(frozen=True)
class InitCoverage:
    """The layer kinds a scheme re-initialized and the layers that kept the builder's init."""

    scheme: str
    applied: tuple[str, ...]  # layer kinds re-initialized, sorted, each once
    kept: tuple[KeptLayer, ...] = ()

    @property
    def kept_parameters(self) -> int:
        return sum(layer.parameters for layer in self.kept)

    def note(self) -> str:
        """One line, e.g. "glorot-uniform on Conv1d, Linear; kept the builder's init:
        'head.scale' (Scale, 16 parameters)"; the first NOTE_LAYERS kept layers by name."""
        on = f"{self.scheme} on {', '.join(self.applied) if self.applied else 'no layer'}"
        if not self.kept:
            return on
        named = [f"'{k.path}' ({k.kind}, {_parameters(k.parameters)})" for k in self.kept[:NOTE_LAYERS]]
        rest = self.kept[NOTE_LAYERS:]
        if rest:
            named.append(f"{len(rest)} more layers ({_parameters(sum(k.parameters for k in rest))})")
        return f"{on}; kept the builder's init: {', '.join(named)}"

    def as_facts(self) -> dict[str, Any]:
        """The manifest's facts: empty when the scheme reached every layer (nothing to say),
        else `init_note`, `init_kept_parameters` (the number the report reads) and
        `init_kept_layers` ([{path, kind, parameters}], every kept layer)."""
        if not self.kept:
            return {}
        return {
            "init_note": self.note(),
            "init_kept_parameters": self.kept_parameters,
            "init_kept_layers": [layer._asdict() for layer in self.kept],
        }


def _parameters(n: int) -> str:
    return f"{n:,} parameter" + ("" if n == 1 else "s")


def coverage(scheme: str, applied: set[str], kept: list[KeptLayer]) -> InitCoverage:
    """The record the init modules build: kinds sorted and deduplicated, kept layers in walk order."""
    return InitCoverage(scheme=scheme, applied=tuple(sorted(applied)), kept=tuple(kept))
