"""RaplSampler against powercap trees written by the test: reads, wrap-around, the
root-only energy_uj of PLATYPUS, missing domains, and this machine's real answer."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dlbench.samplers import rapl
from dlbench.samplers.base import Sampler
from dlbench.samplers.rapl import RaplSampler, read_domains

INTEL_MAX = 262_143_328_850  # max_energy_range_uj of a typical Intel package
PLATYPUS = "(restricted since the 2020 PLATYPUS fix, CVE-2020-8694)"


def zone(parent: Path, dirname: str, name: str, energy: int | None = 0, max_range: int | None = INTEL_MAX) -> Path:
    d = parent / dirname
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    if energy is not None:
        (d / "energy_uj").write_text(f"{energy}\n")
    if max_range is not None:
        (d / "max_energy_range_uj").write_text(f"{max_range}\n")
    return d


def set_energy(d: Path, value: int) -> None:
    (d / "energy_uj").write_text(f"{value}\n")


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    """A one-socket Intel client: package with core/uncore/dram subzones, plus psys,
    plus the control-type directory "intel-rapl" that is not a zone."""
    root = tmp_path / "powercap"
    (root / "intel-rapl").mkdir(parents=True)
    (root / "intel-rapl" / "enabled").write_text("1\n")
    zone(root, "intel-rapl:0", "package-0", 1_000_000)
    zone(root, "intel-rapl:0:0", "core", 400_000)
    zone(root, "intel-rapl:0:1", "uncore", 10)
    zone(root, "intel-rapl:0:2", "dram", 7)
    zone(root, "intel-rapl:1", "psys", 5_000_000)
    return root


def deny(monkeypatch: pytest.MonkeyPatch, *paths: Path, code: int = errno.EACCES) -> None:
    """Make rapl's file reader fail for `paths` as the kernel would for a non-root
    user. Needed because these tests run as root here, and root reads mode-0000 files."""
    original = rapl.read_sysfs
    denied = {str(p) for p in paths}

    def reader(path: Path) -> str:
        if str(path) in denied:
            # OSError(EACCES, ...) is a PermissionError, exactly what open() raises.
            raise OSError(code, os.strerror(code), str(path))
        return original(path)

    monkeypatch.setattr(rapl, "read_sysfs", reader)


def test_is_a_sampler():
    s = RaplSampler()
    assert isinstance(s, Sampler)
    assert s.name == "rapl" and s.default_interval_s == 0.1


def test_read_domains_finds_zones_and_subzones_in_order(powercap):
    domains = read_domains(powercap)
    assert [(d.zone, d.name) for d in domains] == [
        ("0", "package-0"),
        ("0:0", "core"),
        ("0:1", "uncore"),
        ("0:2", "dram"),
        ("1", "psys"),
    ]
    assert [d.series_name for d in domains][:2] == ["rapl.0.package-0", "rapl.0:0.core"]
    assert all(d.problem is None and d.max_energy_range_uj == INTEL_MAX for d in domains)


def test_subzones_nested_inside_their_package_are_found(tmp_path):
    # A copy of /sys/devices/virtual/powercap nests subzones instead of listing them flat.
    pkg = zone(tmp_path, "intel-rapl:0", "package-0")
    zone(pkg, "intel-rapl:0:0", "core")
    assert [d.zone for d in read_domains(tmp_path)] == ["0", "0:0"]


def test_energy_deltas_are_exact_joules(powercap):
    s = RaplSampler(powercap)
    assert s.unavailable() is None
    s.start(pid=os.getpid())
    set_energy(powercap / "intel-rapl:0", 3_500_000)
    set_energy(powercap / "intel-rapl:0:0", 1_400_000)
    s.poll(10)
    set_energy(powercap / "intel-rapl:0", 4_000_000)
    s.poll(20)
    series = {x.name: x for x in s.stop()}
    pkg = series["rapl.0.package-0"]
    assert (pkg.unit, pkg.kind, pkg.method, pkg.update_period_s) == ("J", "counter", "counter", 0.001)
    assert pkg.points[0][1] == 0.0
    assert pkg.points[1:3] == [(10, 2.5), (20, 3.0)]
    assert pkg.points[-1][1] == 3.0  # stop()'s last reading: unchanged counter
    assert series["rapl.0:0.core"].points[1] == (10, 1.0)
    assert series["rapl.1.psys"].points[1] == (10, 0.0)
    assert set(series) == {"rapl.0.package-0", "rapl.0:0.core", "rapl.0:1.uncore", "rapl.0:2.dram", "rapl.1.psys"}
    assert s.notes() == []


def test_wrap_around_is_undone(powercap):
    pkg = powercap / "intel-rapl:0"
    set_energy(pkg, INTEL_MAX - 1000)
    s = RaplSampler(powercap)
    s.start(pid=1)
    set_energy(pkg, 500)  # wrapped: 1000 uJ to the top, then 500 more
    s.poll(1)
    set_energy(pkg, 2500)
    s.poll(2)
    points = {x.name: x for x in s.stop()}["rapl.0.package-0"].points
    assert points[1] == (1, 1500 / 1e6)
    assert points[2] == (2, 3500 / 1e6)


def test_amd_tree_has_package_and_core(tmp_path):
    # AMD Zen through intel_rapl_msr: the same names, a smaller range.
    zone(tmp_path, "intel-rapl:0", "package-0", 65_000_000_000, max_range=65_532_610_987)
    zone(tmp_path, "intel-rapl:0:0", "core", 1, max_range=65_532_610_987)
    s = RaplSampler(tmp_path)
    s.start(pid=1)
    set_energy(tmp_path / "intel-rapl:0", 1_000_000)
    s.poll(5)
    pkg = {x.name: x for x in s.stop()}["rapl.0.package-0"]
    assert pkg.points[1] == (5, (65_532_610_987 - 65_000_000_000 + 1_000_000) / 1e6)


def test_mmio_mirror_is_skipped_when_msr_zones_exist(powercap):
    zone(powercap, "intel-rapl-mmio:0", "package-0")
    s = RaplSampler(powercap)
    s.start(pid=1)
    names = {x.name for x in s.stop()}
    assert not any("mmio" in n for n in names)
    assert s.notes() == [
        "intel-rapl-mmio:0 (package-0) skipped: the MMIO interface mirrors the intel-rapl package counter"
    ]


def test_mmio_alone_is_used_under_a_distinct_name(tmp_path):
    zone(tmp_path, "intel-rapl-mmio:0", "package-0", 100)
    s = RaplSampler(tmp_path)
    assert s.unavailable() is None
    s.start(pid=1)
    set_energy(tmp_path / "intel-rapl-mmio:0", 2_000_100)
    s.poll(3)
    assert [(x.name, x.points[1]) for x in s.stop()] == [("rapl.mmio:0.package-0", (3, 2.0))]


def test_no_powercap_root(tmp_path):
    s = RaplSampler(tmp_path / "powercap")
    assert s.unavailable() == (
        f"no {tmp_path / 'powercap'}: the kernel exposes no powercap interface (not Linux, or a VM)"
    )
    assert "bare-metal" in s.enable_hint()


def test_root_without_rapl_zones(tmp_path):
    (tmp_path / "intel-rapl").mkdir()  # control type registered, no zone
    zone(tmp_path, "dtpm:0", "dtpm")  # another powercap driver: not RAPL
    s = RaplSampler(tmp_path)
    assert s.unavailable() == (f"no RAPL domains under {tmp_path}: this CPU or VM does not expose RAPL")
    assert read_domains(tmp_path) == []


def test_permission_denied_names_the_file_and_platypus(powercap, monkeypatch):
    deny(monkeypatch, *powercap.glob("intel-rapl:*/energy_uj"))
    s = RaplSampler(powercap)
    assert s.unavailable() == (f"{powercap}/intel-rapl:0/energy_uj is readable by root only {PLATYPUS}")
    hint = s.enable_hint()
    assert "root" in hint and f"sudo chmod o+r {powercap}/intel-rapl:*/energy_uj" in hint
    s.start(pid=1)
    assert s.stop() == []
    assert len(s.notes()) == 5 and all("readable by root only" in n for n in s.notes())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-0000 file: chmod cannot deny it")
def test_permission_denied_by_the_real_file_mode(powercap):
    for f in powercap.glob("intel-rapl:*/energy_uj"):
        f.chmod(0)
    assert RaplSampler(powercap).unavailable() == (
        f"{powercap}/intel-rapl:0/energy_uj is readable by root only {PLATYPUS}"
    )


def test_one_denied_domain_is_noted_and_the_others_measured(powercap, monkeypatch):
    deny(monkeypatch, powercap / "intel-rapl:0:2" / "energy_uj")
    s = RaplSampler(powercap)
    assert s.unavailable() is None
    s.start(pid=1)
    assert "rapl.0:2.dram" not in {x.name for x in s.stop()}
    assert s.notes() == [
        f"rapl.0:2.dram skipped: {powercap}/intel-rapl:0:2/energy_uj is readable by root only {PLATYPUS}"
    ]


def test_zone_without_energy_file_is_skipped_with_a_note(powercap):
    (powercap / "intel-rapl:0:1" / "energy_uj").unlink()
    s = RaplSampler(powercap)
    s.start(pid=1)
    assert "rapl.0:1.uncore" not in {x.name for x in s.stop()}
    assert s.notes() == [f"rapl.0:1.uncore skipped: {powercap}/intel-rapl:0:1/energy_uj does not exist"]


def test_every_zone_without_energy_file_is_unavailable(tmp_path):
    zone(tmp_path, "intel-rapl:0", "package-0", energy=None)
    assert RaplSampler(tmp_path).unavailable() == f"{tmp_path}/intel-rapl:0/energy_uj does not exist"


def test_zone_without_range_cannot_be_unwrapped_and_is_skipped(powercap):
    (powercap / "intel-rapl:1" / "max_energy_range_uj").unlink()
    s = RaplSampler(powercap)
    s.start(pid=1)
    assert "rapl.1.psys" not in {x.name for x in s.stop()}
    assert s.notes() == [
        f"rapl.1.psys skipped: {powercap}/intel-rapl:1/max_energy_range_uj is "
        "missing or unreadable: counter wrap-around could not be undone"
    ]


def test_read_error_during_poll_is_noted_and_gives_no_value(powercap, monkeypatch):
    pkg = powercap / "intel-rapl:0"
    s = RaplSampler(powercap)
    s.start(pid=1)
    set_energy(pkg, 2_000_000)
    s.poll(1)
    with monkeypatch.context() as m:
        deny(m, pkg / "energy_uj", code=errno.EIO)
        set_energy(pkg, 3_000_000)
        s.poll(2)  # must not raise
        s.poll(3)
    set_energy(pkg, 4_000_000)
    s.poll(4)  # the good read spans the gap
    points = {x.name: x for x in s.stop()}["rapl.0.package-0"].points
    assert [t for t, _ in points][1:3] == [1, 4]
    assert points[1:3] == [(1, 1.0), (4, 3.0)]
    [note] = s.notes()
    assert note.startswith(
        f"rapl.0.package-0: 2 read(s) of {pkg}/energy_uj failed during the trial, "
        "no value recorded for them (first error: [Errno 5]"
    )


def test_this_machine():
    s = RaplSampler()
    reason = s.unavailable()
    if not Path("/sys/class/powercap").exists():
        assert reason == ("no /sys/class/powercap: the kernel exposes no powercap interface (not Linux, or a VM)")
    elif reason is not None:
        assert reason.startswith(("no RAPL domains under /sys/class/powercap", "/sys/class/powercap/")), reason
