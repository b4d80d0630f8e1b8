"""CPU energy from RAPL through the Linux powercap files.

The kernel's powercap class lists one directory per RAPL zone:

    /sys/class/powercap/intel-rapl:0        name = package-0  (one per socket)
    /sys/class/powercap/intel-rapl:0:0      name = core       (subzones of a package)
    /sys/class/powercap/intel-rapl:0:1      name = uncore | dram
    /sys/class/powercap/intel-rapl:1        name = psys       (client parts: whole platform)

each with `energy_uj` (a cumulative counter in microjoules) and
`max_energy_range_uj` (where that counter wraps to zero). AMD Zen CPUs are served by
the same `intel_rapl_msr` driver and appear under the same `intel-rapl:*` names
(package-0 and core). Intel client parts can also expose the package counter a second
time through the processor-thermal MMIO driver, as `intel-rapl-mmio:0`; it reads the
same package energy, so it is used only when no `intel-rapl:*` zone exists (series
"rapl.mmio:0.package-0"), and otherwise skipped with a note so nobody counts the
package twice. Domains overlap (core is inside package; psys contains package): the
series are never meant to be summed.

Since the 2020 PLATYPUS fix (CVE-2020-8694) `energy_uj` is readable by root only, so
the reason a machine cannot measure energy is reported exactly, never guessed at.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from dlbench.samplers.base import Series

DEFAULT_ROOT = "/sys/class/powercap"
# The RAPL hardware refreshes its energy status registers about every millisecond.
UPDATE_PERIOD_S = 0.001
PLATYPUS = "restricted since the 2020 PLATYPUS fix, CVE-2020-8694"

# intel-rapl:N, intel-rapl:N:M (the kernel names a subzone "<parent>:<index>") and the
# MMIO mirror intel-rapl-mmio:N. The bare "intel-rapl" entry is the control type, not a zone.
_ZONE_RE = re.compile(r"^intel-rapl(?P<mmio>-mmio)?:(?P<id>\d+(?::\d+)*)$")


def read_sysfs(path: Path) -> str:
    """Read one sysfs attribute. The only function here that opens a file, so a test
    can replace it to simulate what a root-only file does to an ordinary user (root
    itself reads a mode-0000 file, so chmod cannot reproduce it under root)."""
    with open(path, encoding="ascii") as f:
        return f.read().strip()


@dataclass(frozen=True)
class Domain:
    zone: str  # "0", "0:1", or "mmio:0" for the MMIO mirror
    name: str  # package-0, core, uncore, dram, psys
    path: Path  # the zone directory
    max_energy_range_uj: int | None  # None when absent or unreadable
    problem: str | None  # why energy cannot be read from it; None when it can

    @property
    def series_name(self) -> str:
        return f"rapl.{self.zone}.{self.name}"

    @property
    def energy_path(self) -> Path:
        return self.path / "energy_uj"


def _zone_key(zone: str) -> tuple[int, tuple[int, ...]]:
    mmio = zone.startswith("mmio:")
    ids = zone.removeprefix("mmio:").split(":")
    return (int(mmio), tuple(int(i) for i in ids))


def _zone_dirs(root: Path) -> dict[str, Path]:
    """Zone id -> directory. /sys/class/powercap lists subzones at the top level too,
    but a copy of the devices tree nests them inside their package: accept both."""
    found: dict[str, Path] = {}
    pending = [root]
    while pending:
        parent = pending.pop()
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            m = _ZONE_RE.match(entry.name)
            if not m or not entry.is_dir():
                continue
            zone = ("mmio:" if m["mmio"] else "") + m["id"]
            if zone not in found:
                found[zone] = entry
                pending.append(entry)
    return found


def _read_energy(path: Path) -> int:
    return int(read_sysfs(path))


def _energy_problem(energy: Path) -> str | None:
    """None when energy_uj reads as an integer, else the exact reason."""
    if not energy.exists():
        return f"{energy} does not exist"
    try:
        _read_energy(energy)
    except PermissionError:
        return f"{energy} is readable by root only ({PLATYPUS})"
    except (OSError, ValueError) as e:
        return f"reading {energy} failed: {e}"
    return None


def read_domains(root: str | Path = DEFAULT_ROOT) -> list[Domain]:
    """Every RAPL zone under `root` (MMIO mirrors included, zone "mmio:N"), in zone
    order, each with the reason its energy cannot be read (or None). For `dlbench env`
    and for the sampler; raises nothing for a missing or empty root (returns [])."""
    root = Path(root)
    domains = []
    for zone, path in sorted(_zone_dirs(root).items(), key=lambda kv: _zone_key(kv[0])):
        try:
            name = read_sysfs(path / "name")
        except OSError:
            name = "unnamed"  # the kernel always writes a name; keep the zone visible anyway
        try:
            max_range: int | None = int(read_sysfs(path / "max_energy_range_uj"))
        except (OSError, ValueError):
            max_range = None
        problem = _energy_problem(path / "energy_uj")
        if problem is None and max_range is None:
            problem = (
                f"{path / 'max_energy_range_uj'} is missing or unreadable: counter wrap-around could not be undone"
            )
        domains.append(Domain(zone, name, path, max_range, problem))
    return domains


class RaplSampler:
    """Cumulative joules per RAPL domain since start(), wrap-around undone.

    Polled every 0.1 s: the counter wraps after max_energy_range_uj (about 262 kJ on
    Intel, tens of kJ on AMD), i.e. after minutes even at 1 kW, so it cannot wrap twice
    between two polls at any realistic power, and 0.1 s is fine enough to place phase
    edges between readings (a window shorter than the 1 ms hardware update is
    meaningless anyway).
    """

    name = "rapl"
    default_interval_s = 0.1

    def __init__(self, root: str | Path = DEFAULT_ROOT) -> None:
        self.root = Path(root)
        self._active: list[Domain] = []
        self._series: dict[str, Series] = {}
        self._prev_raw: dict[str, int] = {}
        self._total_uj: dict[str, int] = {}
        self._notes: list[str] = []
        # Per-series read failures during a trial: (count, first error), so a sensor
        # failing at 10 Hz yields one note, not thousands.
        self._failures: dict[str, tuple[int, str]] = {}

    # -- availability -------------------------------------------------------------

    def _selected(self) -> tuple[list[Domain], list[str]]:
        """Domains this sampler would measure, and notes on those it leaves out."""
        domains = read_domains(self.root)
        msr = [d for d in domains if not d.zone.startswith("mmio:")]
        notes = []
        if msr:
            for d in domains:
                if d.zone.startswith("mmio:"):
                    notes.append(
                        f"{d.path.name} ({d.name}) skipped: the MMIO interface mirrors the intel-rapl package counter"
                    )
            domains = msr
        usable = []
        for d in domains:
            if d.problem is None:
                usable.append(d)
            else:
                notes.append(f"{d.series_name} skipped: {d.problem}")
        return usable, notes

    def unavailable(self) -> str | None:
        if not self.root.is_dir():
            return f"no {self.root}: the kernel exposes no powercap interface (not Linux, or a VM)"
        domains = read_domains(self.root)
        if not domains:
            return f"no RAPL domains under {self.root}: this CPU or VM does not expose RAPL"
        usable, _ = self._selected()
        if usable:
            return None
        # Nothing readable: the first domain's problem is the reason (under PLATYPUS
        # every energy_uj is root-only alike, so the first speaks for all).
        problems = [d.problem for d in domains if d.problem]
        return problems[0] if problems else f"no readable RAPL domain under {self.root}"

    def enable_hint(self) -> str:
        reason = self.unavailable() or ""
        if "readable by root only" in reason:
            return (
                f"run dlbench as root, or make the counters readable until reboot with "
                f"`sudo chmod o+r {self.root}/intel-rapl:*/energy_uj`"
            )
        return (
            "run on a bare-metal Linux machine with an Intel (Sandy Bridge or later) or "
            "AMD Zen CPU and the intel_rapl_msr module loaded (`sudo modprobe intel_rapl_msr`); "
            "virtual machines rarely pass RAPL through"
        )

    # -- a trial ------------------------------------------------------------------

    def start(self, pid: int) -> None:
        """`pid` is unused: RAPL measures whole packages, not one process."""
        self._active, self._notes = self._selected()
        self._series, self._prev_raw, self._total_uj, self._failures = {}, {}, {}, {}
        now = time.monotonic_ns()
        for d in list(self._active):
            try:
                raw = _read_energy(d.energy_path)
            except (OSError, ValueError) as e:
                # Readable a moment ago in _selected(); leave it out rather than start
                # a counter without a baseline.
                self._notes.append(f"{d.series_name} skipped: reading {d.energy_path} failed: {e}")
                self._active.remove(d)
                continue
            self._prev_raw[d.zone] = raw
            self._total_uj[d.zone] = 0
            s = Series(d.series_name, "J", "counter", "counter", update_period_s=UPDATE_PERIOD_S)
            s.add(now, 0.0)
            self._series[d.zone] = s

    def poll(self, now_ns: int) -> None:
        for d in self._active:
            try:
                raw = _read_energy(d.energy_path)
            except (OSError, ValueError) as e:
                count, first = self._failures.get(d.zone, (0, str(e)))
                self._failures[d.zone] = (count + 1, first)
                continue  # no value for this poll: the next good read spans the gap
            prev = self._prev_raw[d.zone]
            delta = raw - prev
            if delta < 0:
                # Wrapped past max_energy_range_uj (at most once: see the class docstring).
                assert d.max_energy_range_uj is not None  # guaranteed by read_domains()
                delta += d.max_energy_range_uj
            self._prev_raw[d.zone] = raw
            self._total_uj[d.zone] += delta
            # Integer microjoules are summed exactly; converted to J only when stored.
            self._series[d.zone].add(now_ns, self._total_uj[d.zone] / 1e6)

    def stop(self) -> list[Series]:
        self.poll(time.monotonic_ns())
        by_zone = {d.zone: d for d in self._active}
        for zone, (count, first) in self._failures.items():
            d = by_zone[zone]
            self._notes.append(
                f"{d.series_name}: {count} read(s) of {d.energy_path} failed during "
                f"the trial, no value recorded for them (first error: {first})"
            )
        self._failures = {}
        return list(self._series.values())

    def notes(self) -> list[str]:
        return list(self._notes)
