"""Temperatures from the kernel's hwmon chips and thermal zones.

Two sysfs trees carry temperatures, both in millidegrees Celsius:

    /sys/class/hwmon/hwmonN/name              chip driver: coretemp, k10temp, nvme, acpitz ...
    /sys/class/hwmon/hwmonN/temp<i>_input     one sensor
    /sys/class/hwmon/hwmonN/temp<i>_label     its label ("Package id 0", "Tctl"), optional
    /sys/class/thermal/thermal_zoneN/type     zone type: x86_pkg_temp, acpitz ...
    /sys/class/thermal/thermal_zoneN/temp     its temperature

psutil.sensors_temperatures() reads the same hwmon tree; this module owns its reader
so that the reader can be pointed at a tree a test writes (the roots are injectable)
and so that an unreadable file becomes a note rather than a silently missing key.
Older kernels put the hwmon files in hwmonN/device/; both places are searched.
The two trees can describe one sensor twice (the thermal core registers an hwmon chip
per zone type, e.g. "acpitz"); both are kept, under different names.

Series: "temp.<chip>.<label or temp<i>>" and "temp.zone.<type>", gauges in C. When two
chips (or zones) share a name, each gets its directory's index: "temp.coretemp-1.Core 0",
"temp.zone.acpitz-0".
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dlbench.samplers.base import Series

_TEMP_INPUT_RE = re.compile(r"^temp(\d+)_input$")
_INDEX_RE = re.compile(r"(\d+)$")


def read_sysfs(path: Path) -> str:
    """Read one sysfs attribute; the only function here that opens a file (tests
    replace it to make a sensor fail mid-run)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().strip()


@dataclass(frozen=True)
class Sensor:
    series_name: str
    path: Path  # the file holding millidegrees


def _index(path: Path) -> int:
    m = _INDEX_RE.search(path.name)
    return int(m.group(1)) if m else -1


def _sorted_dirs(root: Path, prefix: str) -> list[Path]:
    try:
        dirs = [p for p in root.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return []
    return sorted(dirs, key=_index)


def _read_label(path: Path, fallback: str) -> str:
    try:
        return read_sysfs(path) or fallback
    except OSError:
        return fallback


def _dedupe(prefix: str, groups: list[tuple[str, Path, list[tuple[str, Path]]]]) -> list[Sensor]:
    """groups: (chip or zone name, its directory, [(leaf or "", file)]). A name shared by
    several directories gets the directory's index appended so no series collides."""
    counts = Counter(name for name, _, _ in groups)
    sensors = []
    for name, directory, leaves in groups:
        unique = name if counts[name] == 1 else f"{name}-{_index(directory)}"
        for leaf, file in leaves:
            parts = [prefix, unique] + ([leaf] if leaf else [])
            sensors.append(Sensor(".".join(parts), file))
    return sensors


def hwmon_sensors(root: str | Path) -> list[Sensor]:
    groups = []
    for chip in _sorted_dirs(Path(root), "hwmon"):
        base = chip
        inputs = _temp_inputs(chip)
        if not inputs and (chip / "device").is_dir():
            base, inputs = chip / "device", _temp_inputs(chip / "device")
        if not inputs:
            continue  # fans, voltages or power only
        name = _read_label(base / "name", "") or _read_label(chip / "name", chip.name)
        leaves = [(_read_label(base / f"temp{i}_label", f"temp{i}"), f) for i, f in inputs]
        groups.append((name, chip, leaves))
    return _dedupe("temp", groups)


def _temp_inputs(directory: Path) -> list[tuple[int, Path]]:
    try:
        found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _TEMP_INPUT_RE.match(p.name))]
    except OSError:
        return []
    return sorted(found)


def zone_sensors(root: str | Path) -> list[Sensor]:
    groups = []
    for zone in _sorted_dirs(Path(root), "thermal_zone"):
        zone_type = _read_label(zone / "type", zone.name)
        groups.append((zone_type, zone, [("", zone / "temp")]))
    return _dedupe("temp.zone", groups)


def _read_celsius(path: Path) -> float:
    return int(read_sysfs(path)) / 1000.0


class ThermalSampler:
    """One gauge per temperature sensor, polled every 0.5 s: die temperatures move on a
    scale of seconds, and hwmon drivers cache readings for about that long anyway."""

    name = "thermal"
    default_interval_s = 0.5

    def __init__(
        self, hwmon_root: str | Path = "/sys/class/hwmon", thermal_root: str | Path = "/sys/class/thermal"
    ) -> None:
        self.hwmon_root = Path(hwmon_root)
        self.thermal_root = Path(thermal_root)
        self._sensors: list[Sensor] = []
        self._series: dict[str, Series] = {}
        self._failures: dict[str, tuple[int, str]] = {}
        self._notes: list[str] = []

    def _discover(self) -> list[Sensor]:
        return hwmon_sensors(self.hwmon_root) + zone_sensors(self.thermal_root)

    def unavailable(self) -> str | None:
        sensors = self._discover()
        if not sensors:
            return (
                f"no temperature sensors: {self.hwmon_root} has no temp*_input and "
                f"{self.thermal_root} has no thermal_zone*"
            )
        errors = []
        for s in sensors:
            try:
                _read_celsius(s.path)
                return None
            except (OSError, ValueError) as e:
                errors.append(f"{s.path}: {e}")
        return f"no temperature sensor could be read ({len(errors)} tried; first: {errors[0]})"

    def enable_hint(self) -> str:
        return (
            "run on bare metal (virtual machines rarely expose sensors), or load the CPU's "
            "sensor module: `sudo modprobe coretemp` (Intel) or `sudo modprobe k10temp` (AMD)"
        )

    def start(self, pid: int) -> None:
        """`pid` is unused: temperatures belong to the machine, not to one process."""
        self._sensors = self._discover()
        self._series = {s.series_name: Series(s.series_name, "C", "gauge", "polled") for s in self._sensors}
        self._failures, self._notes = {}, []
        self.poll(time.monotonic_ns())

    def poll(self, now_ns: int) -> None:
        for s in self._sensors:
            try:
                value = _read_celsius(s.path)
            except (OSError, ValueError) as e:
                count, first = self._failures.get(s.series_name, (0, str(e)))
                self._failures[s.series_name] = (count + 1, first)
                continue  # no value: a gap in the series, never a made-up one
            self._series[s.series_name].add(now_ns, value)

    def stop(self) -> list[Series]:
        self.poll(time.monotonic_ns())
        out = []
        for s in self._sensors:
            series = self._series[s.series_name]
            if s.series_name in self._failures:
                count, first = self._failures[s.series_name]
                if series.points:
                    self._notes.append(
                        f"{s.series_name}: {count} read(s) of {s.path} failed, "
                        f"no value recorded for them (first error: {first})"
                    )
                else:
                    self._notes.append(f"{s.series_name} left out: {s.path} could not be read ({first})")
            if series.points:
                out.append(series)
        self._failures = {}
        return out

    def notes(self) -> list[str]:
        return list(self._notes)
