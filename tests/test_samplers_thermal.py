"""ThermalSampler against hwmon and thermal-zone trees written by the test: labelled and
unlabelled sensors, several chips, zones, a sensor failing mid-run, and this machine."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dlbench.samplers import thermal
from dlbench.samplers.base import Sampler
from dlbench.samplers.thermal import ThermalSampler


def chip(root: Path, dirname: str, name: str, temps: dict[int, tuple[int, str | None]]) -> Path:
    """temps: index -> (millidegrees, label or None)."""
    d = root / dirname
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    for i, (milli, label) in temps.items():
        (d / f"temp{i}_input").write_text(f"{milli}\n")
        if label is not None:
            (d / f"temp{i}_label").write_text(label + "\n")
    return d


def thermal_zone(root: Path, index: int, zone_type: str, milli: int) -> Path:
    d = root / f"thermal_zone{index}"
    d.mkdir(parents=True)
    (d / "type").write_text(zone_type + "\n")
    (d / "temp").write_text(f"{milli}\n")
    return d


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    hwmon, therm = tmp_path / "hwmon", tmp_path / "thermal"
    chip(hwmon, "hwmon0", "acpitz", {1: (27_800, None)})
    chip(hwmon, "hwmon2", "coretemp", {1: (45_000, "Package id 0"), 2: (43_000, "Core 0"), 3: (44_500, "Core 1")})
    chip(hwmon, "hwmon1", "nvme", {1: (38_850, "Composite"), 2: (41_850, None)})
    fan = hwmon / "hwmon3"
    fan.mkdir()
    (fan / "name").write_text("thinkpad\n")
    (fan / "fan1_input").write_text("2000\n")  # no temperature: not a sensor here
    thermal_zone(therm, 0, "acpitz", 27_800)
    thermal_zone(therm, 1, "x86_pkg_temp", 45_000)
    (therm / "cooling_device0").mkdir()
    return hwmon, therm


def by_name(series) -> dict[str, list[tuple[int, float]]]:
    return {s.name: s.points for s in series}


def test_is_a_sampler():
    s = ThermalSampler()
    assert isinstance(s, Sampler)
    assert s.name == "thermal" and s.default_interval_s == 0.5


def test_labelled_unlabelled_chips_and_zones(trees):
    s = ThermalSampler(*trees)
    assert s.unavailable() is None
    s.start(pid=os.getpid())
    s.poll(100)
    series = s.stop()
    names = [x.name for x in series]
    assert names == [
        "temp.acpitz.temp1",
        "temp.nvme.Composite",
        "temp.nvme.temp2",
        "temp.coretemp.Package id 0",
        "temp.coretemp.Core 0",
        "temp.coretemp.Core 1",
        "temp.zone.acpitz",
        "temp.zone.x86_pkg_temp",
    ]
    assert all((x.unit, x.kind, x.method) == ("C", "gauge", "polled") for x in series)
    points = by_name(series)
    assert points["temp.coretemp.Package id 0"][1] == (100, 45.0)
    assert points["temp.nvme.Composite"][1] == (100, 38.85)
    assert points["temp.zone.x86_pkg_temp"][1] == (100, 45.0)
    assert all(len(p) == 3 for p in points.values())  # start, poll, stop
    assert s.notes() == []


def test_values_follow_the_files(trees):
    hwmon, therm = trees
    s = ThermalSampler(hwmon, therm)
    s.start(pid=1)
    (hwmon / "hwmon2" / "temp2_input").write_text("71250\n")
    (therm / "thermal_zone0" / "temp").write_text("-5000\n")
    s.poll(7)
    points = by_name(s.stop())
    assert points["temp.coretemp.Core 0"][1] == (7, 71.25)
    assert points["temp.zone.acpitz"][1] == (7, -5.0)


def test_duplicate_chip_and_zone_names_get_their_index(tmp_path):
    hwmon, therm = tmp_path / "hwmon", tmp_path / "thermal"
    chip(hwmon, "hwmon1", "coretemp", {1: (40_000, "Core 0")})  # socket 0
    chip(hwmon, "hwmon4", "coretemp", {1: (50_000, "Core 0")})  # socket 1
    thermal_zone(therm, 0, "acpitz", 30_000)
    thermal_zone(therm, 3, "acpitz", 31_000)
    s = ThermalSampler(hwmon, therm)
    s.start(pid=1)
    points = by_name(s.stop())
    assert list(points) == [
        "temp.coretemp-1.Core 0",
        "temp.coretemp-4.Core 0",
        "temp.zone.acpitz-0",
        "temp.zone.acpitz-3",
    ]
    assert points["temp.coretemp-4.Core 0"][0][1] == 50.0
    assert points["temp.zone.acpitz-3"][0][1] == 31.0


def test_old_kernel_layout_under_device(tmp_path):
    hwmon = tmp_path / "hwmon"
    chip(hwmon / "hwmon0", "device", "k10temp", {1: (55_125, "Tctl")})
    s = ThermalSampler(hwmon, tmp_path / "thermal")
    s.start(pid=1)
    assert by_name(s.stop())["temp.k10temp.Tctl"][0][1] == 55.125


def test_sensor_failing_mid_run_is_noted_and_not_given_a_value(trees, monkeypatch):
    hwmon, therm = trees
    failing = hwmon / "hwmon1" / "temp1_input"
    s = ThermalSampler(hwmon, therm)
    s.start(pid=1)
    original = thermal.read_sysfs

    def reader(path: Path) -> str:
        if path == failing:
            raise OSError(errno.ENODATA, os.strerror(errno.ENODATA), str(path))
        return original(path)

    with monkeypatch.context() as m:
        m.setattr(thermal, "read_sysfs", reader)
        s.poll(1)  # must not raise
        s.poll(2)
    s.poll(3)
    points = by_name(s.stop())
    composite = [t for t, _ in points["temp.nvme.Composite"]]
    assert len(composite) == 3 and composite[1] == 3  # start, poll 3, stop: no 1, no 2
    assert [t for t, _ in points["temp.nvme.temp2"]][1:4] == [1, 2, 3]
    [note] = s.notes()
    assert note.startswith(
        f"temp.nvme.Composite: 2 read(s) of {failing} failed, no value recorded for them (first error: [Errno 61]"
    )


def test_sensor_never_readable_is_left_out(trees):
    hwmon, therm = trees
    (therm / "thermal_zone1" / "temp").write_text("not a number\n")
    s = ThermalSampler(hwmon, therm)
    s.start(pid=1)
    names = [x.name for x in s.stop()]
    assert "temp.zone.x86_pkg_temp" not in names and "temp.zone.acpitz" in names
    [note] = s.notes()
    assert note.startswith(
        f"temp.zone.x86_pkg_temp left out: {therm}/thermal_zone1/temp could not be read (invalid literal"
    )


def test_no_sensors_anywhere(tmp_path):
    hwmon, therm = tmp_path / "hwmon", tmp_path / "thermal"
    chip(hwmon, "hwmon0", "BAT0", {})  # a chip without temperatures
    (therm / "cooling_device0").mkdir(parents=True)
    s = ThermalSampler(hwmon, therm)
    assert s.unavailable() == (f"no temperature sensors: {hwmon} has no temp*_input and {therm} has no thermal_zone*")
    assert "coretemp" in s.enable_hint() and "k10temp" in s.enable_hint()


def test_sensors_present_but_none_readable(tmp_path):
    therm = tmp_path / "thermal"
    thermal_zone(therm, 0, "acpitz", 0)
    (therm / "thermal_zone0" / "temp").unlink()
    assert ThermalSampler(tmp_path / "hwmon", therm).unavailable() == (
        f"no temperature sensor could be read (1 tried; first: {therm}/thermal_zone0/temp: "
        f"[Errno 2] No such file or directory: '{therm}/thermal_zone0/temp')"
    )


def test_this_machine():
    s = ThermalSampler()
    hwmon, therm = Path("/sys/class/hwmon"), Path("/sys/class/thermal")
    has_zone = therm.is_dir() and any(p.name.startswith("thermal_zone") for p in therm.iterdir())
    has_hwmon = any(hwmon.glob("hwmon*/temp*_input")) or any(hwmon.glob("hwmon*/device/temp*_input"))
    if not has_zone and not has_hwmon:
        assert s.unavailable() == (
            "no temperature sensors: /sys/class/hwmon has no temp*_input and /sys/class/thermal has no thermal_zone*"
        )
    else:
        reason = s.unavailable()
        assert reason is None or reason.startswith("no temperature sensor could be read"), reason
