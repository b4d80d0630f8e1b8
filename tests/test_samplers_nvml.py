"""The NVML sampler against a fake pynvml (tests/fake_nvml.py), and against this machine.

What matters most: energy is exact where the hardware counter exists, integrated from
power (and says so) where it does not, absent where neither exists; and no path ever
turns an NVML error into a number.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

import pytest

import fake_nvml as fake
from dlbench.samplers.base import Sampler
from dlbench.samplers.nvml import NvmlSampler, describe_devices

ALL_KEYS = (
    "power",
    "energy",
    "utilization",
    "memory",
    "processes",
    "temperature",
    "sm_clock",
    "event_reasons",
    "throttle_reasons",
)


def run(sampler: NvmlSampler, polls: int = 3, pid: int | None = None) -> dict[str, object]:
    """start, `polls` polls a few ms apart, stop: the series by name."""
    sampler.start(os.getpid() if pid is None else pid)
    for _ in range(polls):
        time.sleep(0.002)
        sampler.poll(time.monotonic_ns())
    return {s.name: s for s in sampler.stop()}


def values(series) -> list[float]:
    return [v for _, v in series.points]


def test_fake_matches_real_pynvml_names_and_codes():
    pynvml = pytest.importorskip("pynvml")
    for const in dir(fake):
        if const.startswith("NVML_"):
            assert getattr(pynvml, const) == getattr(fake, const), const
    for name in fake.ERROR_CLASSES:
        assert issubclass(getattr(pynvml, name), pynvml.NVMLError), name
    assert isinstance(fake.NVMLError(fake.NVML_ERROR_NOT_SUPPORTED), fake.NVMLError_NotSupported)
    assert str(fake.NVMLError_NotSupported()) == str(pynvml.NVMLError_NotSupported()) == "Not Supported"
    assert str(fake.NVMLError_LibraryNotFound()) == str(pynvml.NVMLError_LibraryNotFound())


def test_is_a_sampler_and_imports_no_pynvml():
    assert isinstance(NvmlSampler(nvml=fake.make_nvml([fake.FakeDevice()])), Sampler)
    code = "import sys, dlbench.samplers.nvml; assert 'pynvml' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_counter_energy_gives_exact_deltas_and_all_gauges():
    dev = fake.FakeDevice(values={"energy": lambda n: 7_000_000 + 12_345 * n, "power": [90_500, 120_250]})
    nvml = fake.make_nvml([dev])
    sampler = NvmlSampler(nvml=nvml)
    assert sampler.unavailable() is None
    series = run(sampler, polls=3)
    energy = series["gpu0.energy"]
    assert (energy.kind, energy.unit, energy.method, energy.update_period_s) == ("counter", "J", "counter", 0.1)
    # start + 3 polls + the reading in stop(): five counter reads, 12.345 J apart.
    assert values(energy) == pytest.approx([0.0, 12.345, 24.69, 37.035, 49.38], abs=1e-9)
    assert values(series["gpu0.power"]) == [90.5, 120.25, 120.25, 120.25, 120.25]
    assert series["gpu0.power"].unit == "W"
    assert values(series["gpu0.util"]) == [50.0] * 5 and values(series["gpu0.mem_util"]) == [30.0] * 5
    assert values(series["gpu0.memory_used"]) == [2.0 * 2**30] * 5
    assert values(series["gpu0.temperature"]) == [61.0] * 5
    assert values(series["gpu0.sm_clock"]) == [1380.0] * 5
    assert values(series["gpu0.throttle_reasons"]) == [4.0] * 5
    assert all(s.kind == "gauge" and s.method == "polled" for n, s in series.items() if n != "gpu0.energy")
    assert dev.calls["throttle_reasons"] == 0  # the current API is preferred
    notes = sampler.notes()
    assert not any(note.startswith("gpu0.energy") for note in notes)
    # The one caveat: polled power lags (measured on an H200: benchmarks/nvml_energy.py).
    assert any(n.startswith("gpu0.power: NVML's power reading is an average") and "counter instead" in n for n in notes)
    assert nvml.state["refcount"] == 0  # every nvmlInit was matched by nvmlShutdown


def test_power_only_device_integrates_power_and_says_so():
    trace = [100_000, 200_000, 50_000, 300_000, 300_000, 0]
    sampler = NvmlSampler(nvml=fake.make_nvml([fake.FakeDevice(unsupported={"energy"}, values={"power": trace})]))
    series = run(sampler, polls=4)
    power, energy = series["gpu0.power"], series["gpu0.energy"]
    assert values(power) == [100.0, 200.0, 50.0, 300.0, 300.0, 0.0]  # a real 0 W reading is kept
    assert (energy.kind, energy.unit, energy.method, energy.update_period_s) == (
        "counter",
        "J",
        "integrated-power",
        0.1,
    )
    expected, total = [0.0], 0.0
    for (t0, w0), (t1, w1) in zip(power.points, power.points[1:]):
        total += (w0 + w1) / 2 * (t1 - t0) / 1e9
        expected.append(total)
    assert values(energy) == pytest.approx(expected, rel=1e-12)
    assert [t for t, _ in energy.points] == [t for t, _ in power.points]
    notes = " | ".join(sampler.notes())
    assert "gpu0.energy: total-energy counter not supported" in notes and "Not Supported" in notes
    assert "integrated from power polled every" in notes and "5 intervals" in notes
    assert "a phase shorter than 2 s mixes in the one before" in notes


def test_device_with_neither_counter_nor_power_has_no_energy_series():
    sampler = NvmlSampler(nvml=fake.make_nvml([fake.FakeDevice(unsupported={"energy", "power"}), fake.FakeDevice()]))
    series = run(sampler)
    assert "gpu0.energy" not in series and "gpu0.power" not in series
    assert series["gpu1.energy"].method == "counter"  # the other device is unaffected
    assert any(
        n.startswith("gpu0.energy: not available") and "nvmlDeviceGetTotalEnergyConsumption" in n
        for n in sampler.notes()
    )


@pytest.mark.parametrize(
    "key, names, api",
    [
        ("temperature", ["gpu0.temperature"], "nvmlDeviceGetTemperature"),
        ("utilization", ["gpu0.util", "gpu0.mem_util"], "nvmlDeviceGetUtilizationRates"),
        ("memory", ["gpu0.memory_used"], "nvmlDeviceGetMemoryInfo"),
        ("sm_clock", ["gpu0.sm_clock"], "nvmlDeviceGetClockInfo"),
        ("processes", ["gpu0.process_memory"], "nvmlDeviceGetComputeRunningProcesses"),
    ],
)
def test_unsupported_metric_is_absent_and_noted(key, names, api):
    sampler = NvmlSampler(nvml=fake.make_nvml([fake.FakeDevice(unsupported={key})]))
    series = run(sampler)
    for name in names:
        assert name not in series
    assert "gpu0.power" in series and "gpu0.energy" in series
    assert any(names[0] in n and f"{api}: Not Supported" in n for n in sampler.notes()), sampler.notes()


def test_throttle_reasons_fall_back_to_the_older_call():
    old = fake.FakeDevice()
    series = run(NvmlSampler(nvml=fake.make_nvml([old], event_reasons=False)))
    assert values(series["gpu0.throttle_reasons"]) == [4.0] * 5 and old.calls["throttle_reasons"] == 5
    # New bindings on an old driver: the new call exists but the library lacks it.
    dev = fake.FakeDevice(
        errors={"event_reasons": {0: fake.NVML_ERROR_FUNCTION_NOT_FOUND}}, values={"throttle_reasons": 0x20}
    )
    series = run(NvmlSampler(nvml=fake.make_nvml([dev])))
    assert values(series["gpu0.throttle_reasons"]) == [32.0] * 5
    neither = fake.FakeDevice(unsupported={"event_reasons", "throttle_reasons"})
    sampler = NvmlSampler(nvml=fake.make_nvml([neither]))
    assert "gpu0.throttle_reasons" not in run(sampler)
    assert any("nvmlDeviceGetCurrentClocksThrottleReasons: Not Supported" in n for n in sampler.notes())


def test_transient_error_is_a_missing_point_not_a_zero():
    dev = fake.FakeDevice(
        errors={
            "power": {2: fake.NVML_ERROR_UNKNOWN},
            "energy": {1: fake.NVML_ERROR_GPU_IS_LOST, 3: fake.NVML_ERROR_TIMEOUT},
            "temperature": {4: fake.NVML_ERROR_TIMEOUT},
        }
    )
    sampler = NvmlSampler(nvml=fake.make_nvml([dev]))
    series = run(sampler, polls=3)
    stamps = [t for t, _ in series["gpu0.util"].points]  # one per reading, none failed
    assert len(stamps) == 5
    assert [t for t, _ in series["gpu0.power"].points] == stamps[:2] + stamps[3:]
    assert values(series["gpu0.power"]) == [150.0] * 4
    # Counter reads 0, 2 and 4 succeeded: exactly 40 J and 80 J since start, no zeros in between.
    assert series["gpu0.energy"].points == [(stamps[0], 0.0), (stamps[2], 40.0), (stamps[4], 80.0)]
    assert [t for t, _ in series["gpu0.temperature"].points] == stamps[:4]
    notes = sampler.notes()
    assert (
        "gpu0: nvmlDeviceGetPowerUsage failed 1 of 5 reads (Unknown Error); "
        "those points are missing, not filled in" in notes
    )
    assert any("nvmlDeviceGetTotalEnergyConsumption failed 2 of 5 reads (Timeout)" in n for n in notes)


def test_power_gap_widens_the_integration_interval():
    dev = fake.FakeDevice(
        unsupported={"energy"},
        values={"power": [100_000, 100_000, 999_000, 100_000]},
        errors={"power": {2: fake.NVML_ERROR_UNKNOWN}},
    )
    series = run(NvmlSampler(nvml=fake.make_nvml([dev])), polls=2)
    power, energy = series["gpu0.power"], series["gpu0.energy"]
    assert values(power) == [100.0, 100.0, 100.0]  # the failed read is not 999 W or 0 W
    (t0, _), _, (t2, _) = power.points
    assert energy.points[-1][1] == pytest.approx(100.0 * (t2 - t0) / 1e9, rel=1e-12)


def test_process_memory_counts_the_measured_process_tree_only():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me, stranger = os.getpid(), 1  # pid 1 is never a descendant of the test process
        dev = fake.FakeDevice(
            values={"processes": lambda n: [(me, 300 * 2**20), (child.pid, 100 * 2**20), (stranger, 9 * 2**30)]}
        )
        series = run(NvmlSampler(nvml=fake.make_nvml([dev])), pid=me)
        assert values(series["gpu0.process_memory"]) == [400.0 * 2**20] * 5
        # Measuring the child alone: the parent's memory is not its own.
        dev = fake.FakeDevice(values={"processes": [(me, 300 * 2**20), (child.pid, 100 * 2**20)]})
        series = run(NvmlSampler(nvml=fake.make_nvml([dev])), pid=child.pid)
        assert values(series["gpu0.process_memory"]) == [100.0 * 2**20] * 5
    finally:
        child.kill()
        child.wait()


def test_process_memory_not_available_or_not_listed_gives_no_point():
    me = os.getpid()
    dev = fake.FakeDevice(values={"processes": lambda n: [(me, None)] if n % 2 else [(me, 64 * 2**20)]})
    absent = fake.FakeDevice(values={"processes": [(1, 5 * 2**30)]})
    sampler = NvmlSampler(nvml=fake.make_nvml([dev, absent]))
    series = run(sampler, polls=3, pid=me)
    assert values(series["gpu0.process_memory"]) == [64.0 * 2**20] * 3  # calls 0, 2, 4
    assert series["gpu1.process_memory"].points == []
    notes = " | ".join(sampler.notes())
    assert "gpu0.process_memory: NVML reported usedGpuMemory as not available at 2 reading(s)" in notes
    assert f"gpu1.process_memory: pid {me} and its children were not in" in notes and "5 reading(s)" in notes


def test_device_selection():
    devs = [fake.FakeDevice(), fake.FakeDevice(), fake.FakeDevice()]
    series = run(NvmlSampler(nvml=fake.make_nvml(devs), devices=[2]))
    assert {n.split(".")[0] for n in series} == {"gpu2"} and devs[0].calls["power"] == 0
    reason = NvmlSampler(nvml=fake.make_nvml(devs), devices=[5]).unavailable()
    assert reason == "GPU index [5] requested but NVML sees 3 device(s)"


def test_unavailable_when_pynvml_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    sampler = NvmlSampler()
    assert sampler.unavailable().startswith("nvidia-ml-py is not installed")
    assert sampler.enable_hint() == "pip install nvidia-ml-py"
    assert describe_devices().startswith("nvidia-ml-py is not installed")
    with pytest.raises(RuntimeError, match="nvidia-ml-py is not installed"):
        sampler.start(os.getpid())


def test_unavailable_when_the_library_is_missing_or_there_is_no_gpu():
    nvml = fake.make_nvml([fake.FakeDevice()], init_error=fake.NVML_ERROR_LIBRARY_NOT_FOUND)
    sampler = NvmlSampler(nvml=nvml)
    reason = sampler.unavailable()
    assert reason.startswith("NVML Shared Library Not Found: no NVIDIA driver")
    assert "driver" in sampler.enable_hint()
    assert describe_devices(nvml) == reason
    with pytest.raises(RuntimeError, match="NVML Shared Library Not Found"):
        sampler.start(os.getpid())
    nvml = fake.make_nvml([fake.FakeDevice()], init_error=fake.NVML_ERROR_DRIVER_NOT_LOADED)
    assert NvmlSampler(nvml=nvml).unavailable() == "Driver Not Loaded: the NVIDIA kernel driver is not loaded"
    empty = fake.make_nvml([])
    assert NvmlSampler(nvml=empty).unavailable() == "NVML found no NVIDIA GPU (nvmlDeviceGetCount() = 0)"
    assert describe_devices(empty) == "NVML found no NVIDIA GPU (nvmlDeviceGetCount() = 0)"
    assert empty.state["refcount"] == 0


def test_unavailable_on_this_machine_names_the_nvml_error():
    pytest.importorskip("pynvml")
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        has_driver = False
    else:
        has_driver = True
    reason = NvmlSampler().unavailable()
    if has_driver:  # a GPU machine: either it works, or NVML itself says why not
        assert reason is None or "NVML" in reason or "GPU" in reason
        if reason is None:
            assert all("name" in d and d["memory_total_bytes"] > 0 for d in describe_devices())
    else:
        assert reason.startswith("NVML Shared Library Not Found: no NVIDIA driver")
        assert describe_devices() == reason


def test_describe_devices():
    devs = [
        fake.FakeDevice(name="NVIDIA A100-SXM4-40GB", memory_total=40 * 2**30),
        fake.FakeDevice(unsupported={"name"}),
    ]
    nvml = fake.make_nvml(devs, driver="535.104.05")
    assert describe_devices(nvml) == [
        {"index": 0, "driver": "535.104.05", "name": "NVIDIA A100-SXM4-40GB", "memory_total_bytes": 40 * 2**30},
        {"index": 1, "driver": "535.104.05", "name_unavailable": "Not Supported", "memory_total_bytes": 16 * 2**30},
    ]
    assert nvml.state["refcount"] == 0


def test_no_nvml_path_ever_fabricates_a_number():
    always = range(10_000)
    unsupported = fake.FakeDevice(unsupported=set(ALL_KEYS))
    lost = fake.FakeDevice(errors={k: {n: fake.NVML_ERROR_GPU_IS_LOST for n in always} for k in ALL_KEYS})
    flaky = fake.FakeDevice(
        errors={k: {n: (fake.NVML_ERROR_UNKNOWN, fake.NVML_ERROR_TIMEOUT)[n % 2] for n in always} for k in ALL_KEYS}
    )
    # Answers the probe in start(), then fails every read: only the probe's real values may appear.
    fading = fake.FakeDevice(
        values={"processes": [(os.getpid(), 5 * 2**20)]},
        errors={k: {n: fake.NVML_ERROR_UNKNOWN for n in range(1, 10_000)} for k in ALL_KEYS},
    )
    fading_power = fake.FakeDevice(
        unsupported={"energy"}, errors={"power": {n: fake.NVML_ERROR_UNKNOWN for n in range(1, 10_000)}}
    )
    sampler = NvmlSampler(nvml=fake.make_nvml([unsupported, lost, flaky, fading, fading_power]))
    series = run(sampler, polls=20)
    for name, s in series.items():
        if name.startswith(("gpu0.", "gpu1.", "gpu2.")):
            assert s.points == [], name
    start = series["gpu3.power"].points[0][0]
    assert {n: s.points for n, s in series.items() if n.startswith("gpu3.")} == {
        "gpu3.power": [(start, 150.0)],
        "gpu3.util": [(start, 50.0)],
        "gpu3.mem_util": [(start, 30.0)],
        "gpu3.memory_used": [(start, 2.0 * 2**30)],
        "gpu3.temperature": [(start, 61.0)],
        "gpu3.sm_clock": [(start, 1380.0)],
        "gpu3.throttle_reasons": [(start, 4.0)],
        "gpu3.energy": [(start, 0.0)],
        "gpu3.process_memory": [(start, 5.0 * 2**20)],
    }
    # The integrated energy has its baseline and nothing after: no power, no energy.
    assert series["gpu4.energy"].points == [(start, 0.0)] and len(series["gpu4.power"].points) == 1
    notes = " | ".join(sampler.notes())
    for i in (0, 1, 2):
        assert f"gpu{i}.energy: not available" in notes
        assert f"gpu{i}.power: not available" in notes and f"gpu{i}.temperature: not available" in notes
    assert "GPU is lost" in notes and "nvmlDeviceGetPowerUsage failed 21 of 22 reads" in notes
