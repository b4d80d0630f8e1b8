"""A fake pynvml module for testing the NVML sampler without a GPU.

It implements exactly the pynvml calls dlbench uses, with pynvml's names, constants and
error classes: NVMLError maps an error code to a generated subclass
(NVML_ERROR_NOT_SUPPORTED -> NVMLError_NotSupported), as in nvidia-ml-py's pynvml.py.
Each device is configured with which calls are unsupported, scripted values over time
(a value per call number), and transient errors at given call numbers; every call is
counted, so a test can compute exactly what the sampler should have recorded.

Call keys: "power" (mW), "energy" (mJ), "utilization" ((gpu %, memory %)),
"memory" (used bytes), "processes" ([(pid, usedGpuMemory or None)]), "temperature" (C),
"sm_clock" (MHz), "event_reasons", "throttle_reasons" (bitmask). A list script gives
the value per call (the last repeats), except for "processes", whose list is the answer
itself (script it over time with a callable).
"""

from __future__ import annotations

import string
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Same values as pynvml.
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1

_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """pynvml's base error: NVMLError(code) builds the code's own subclass."""

    _valClassMapping: dict[int, type] = {}

    def __new__(cls, value: int):
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


def _error_classes() -> dict[str, type]:
    # pynvml's naming rule: NVML_ERROR_NOT_SUPPORTED -> NVMLError_NotSupported.
    classes = {}
    for const, code in list(globals().items()):
        if not const.startswith("NVML_ERROR_"):
            continue
        name = "NVMLError_" + string.capwords(const.replace("NVML_ERROR_", ""), "_").replace("_", "")

        def new(cls, *args, _code=code):
            return NVMLError.__new__(cls, _code)

        cls = type(name, (NVMLError,), {"__new__": new, "__module__": __name__})
        NVMLError._valClassMapping[code] = cls
        classes[name] = cls
    return classes


ERROR_CLASSES = _error_classes()
globals().update(ERROR_CLASSES)

Script = Any  # a constant, a list (value per call; the last repeats) or a callable(call number)


@dataclass
class FakeDevice:
    """One GPU: what it supports, what it returns at each call, where it fails."""

    name: str = "NVIDIA Fake V100-SXM2-16GB"
    memory_total: int = 16 * 2**30
    unsupported: set[str] = field(default_factory=set)
    errors: dict[str, dict[int, int]] = field(default_factory=dict)  # key -> {call number: code}
    values: dict[str, Script] = field(default_factory=dict)
    calls: Counter = field(default_factory=Counter)
    returned: dict[str, list] = field(default_factory=dict)  # every value handed out

    DEFAULTS = {
        "power": 150_000,
        "energy": lambda n: 5_000_000 + 20_000 * n,
        "utilization": (50, 30),
        "memory": 2 * 2**30,
        "processes": [],
        "temperature": 61,
        "sm_clock": 1380,
        "event_reasons": 0x4,
        "throttle_reasons": 0x4,
    }

    def answer(self, key: str) -> Any:
        """The value for this call, or the scripted error raised as pynvml would."""
        n = self.calls[key]
        self.calls[key] += 1
        if key in self.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        code = self.errors.get(key, {}).get(n)
        if code is not None:
            raise NVMLError(code)
        script = self.values.get(key, self.DEFAULTS.get(key))
        if callable(script):
            value = script(n)
        elif isinstance(script, list) and key != "processes":
            value = script[min(n, len(script) - 1)]
        else:
            value = script
        self.returned.setdefault(key, []).append(value)
        return value


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index


def make_nvml(
    devices: list[FakeDevice], *, init_error: int | None = None, driver: str = "550.54.15", event_reasons: bool = True
) -> types.ModuleType:
    """A module object with pynvml's API over `devices`.

    init_error: nvmlInit raises NVMLError(init_error) (e.g. NVML_ERROR_LIBRARY_NOT_FOUND).
    event_reasons=False: the bindings predate nvmlDeviceGetCurrentClocksEventReasons.
    """
    mod = types.ModuleType("fake_pynvml")
    state = {"init": 0, "shutdown": 0, "refcount": 0}
    mod.state, mod.devices = state, devices
    for const, value in globals().items():
        if const.startswith("NVML_"):
            setattr(mod, const, value)
    mod.NVMLError = NVMLError
    for name, cls in ERROR_CLASSES.items():
        setattr(mod, name, cls)

    def live() -> None:
        if state["refcount"] <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def device(handle: _Handle) -> FakeDevice:
        live()
        return devices[handle.index]

    def nvmlInit() -> None:
        state["init"] += 1
        if init_error is not None:
            raise NVMLError(init_error)
        state["refcount"] += 1

    def nvmlShutdown() -> None:
        live()
        state["shutdown"] += 1
        state["refcount"] -= 1

    def nvmlDeviceGetCount() -> int:
        live()
        return len(devices)

    def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
        live()
        if not 0 <= index < len(devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(index)

    def nvmlSystemGetDriverVersion() -> str:
        live()
        return driver

    def nvmlDeviceGetName(h: _Handle) -> str:
        dev = device(h)
        if "name" in dev.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return dev.name

    def nvmlDeviceGetMemoryInfo(h: _Handle) -> types.SimpleNamespace:
        dev = device(h)
        used = dev.answer("memory")
        return types.SimpleNamespace(total=dev.memory_total, free=dev.memory_total - used, used=used)

    def nvmlDeviceGetUtilizationRates(h: _Handle) -> types.SimpleNamespace:
        gpu, memory = device(h).answer("utilization")
        return types.SimpleNamespace(gpu=gpu, memory=memory)

    def nvmlDeviceGetComputeRunningProcesses(h: _Handle) -> list[types.SimpleNamespace]:
        return [
            types.SimpleNamespace(pid=pid, usedGpuMemory=used, gpuInstanceId=None, computeInstanceId=None)
            for pid, used in device(h).answer("processes")
        ]

    def nvmlDeviceGetTemperature(h: _Handle, sensor: int) -> int:
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return device(h).answer("temperature")

    def nvmlDeviceGetClockInfo(h: _Handle, clock: int) -> int:
        if clock != NVML_CLOCK_SM:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return device(h).answer("sm_clock")

    def nvmlDeviceGetCurrentClocksEventReasons(h: _Handle) -> int:
        return device(h).answer("event_reasons")

    def nvmlDeviceGetCurrentClocksThrottleReasons(h: _Handle) -> int:
        return device(h).answer("throttle_reasons")

    simple: dict[str, Callable[[_Handle], Any]] = {
        "nvmlDeviceGetPowerUsage": lambda h: device(h).answer("power"),
        "nvmlDeviceGetTotalEnergyConsumption": lambda h: device(h).answer("energy"),
    }
    for name, fn in list(locals().items()):
        if name.startswith("nvml") and callable(fn):
            setattr(mod, name, fn)
    for name, fn in simple.items():
        setattr(mod, name, fn)
    if not event_reasons:
        del mod.nvmlDeviceGetCurrentClocksEventReasons
    return mod
