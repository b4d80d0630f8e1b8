"""One registry for models, datasets and frameworks.

Names come from three places, in this order of precedence:

1. the built-ins, as lazy "module:attr" strings (nothing is imported until a
   name is looked up);
2. installed packages, through the entry-point groups `dlbench.models`,
   `dlbench.datasets` and `dlbench.frameworks` (a plugin cannot replace a
   built-in name);
3. the user's own code or data, named by reference in this invocation:
   `path/to/file.py:NAME` or `package.module:NAME` for a model (or a dataset
   spec), a `.npz` file or a directory of IDX files for data.

References are turned into *sources*: {"model:<name>": canonical reference}
(an absolute path, or the module path). Sources travel with an experiment and
with each trial to its worker, which imports them again. They are never read
back from a database: a stored run that is resumed or extended imports a
user's file only if the user names it again (a database someone sent must not
make dlbench run code).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlbench.datasets.spec import DatasetSpec
    from dlbench.frameworks import FrameworkInfo
    from dlbench.models.spec import ModelSpec

KINDS = ("model", "dataset", "framework")
GROUPS = {kind: f"dlbench.{kind}s" for kind in KINDS}


def builtin(kind: str) -> dict[str, str]:
    """Built-in name -> "module:attr" of its spec, from the zoo's and the datasets' own
    lists (imported here, not at import: the datasets package loads numpy)."""
    if kind == "model":
        from dlbench.models import NAMES

        return {name: f"dlbench.models.{name}:SPEC" for name in NAMES}
    from dlbench.datasets.builtin import ATTRS

    return {name: f"dlbench.datasets.builtin:{attr}" for name, attr in ATTRS.items()}


MODULE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
Sources = Mapping[str, str]
# Sources the worker was handed with its trial (see adopt); the parent passes its
# experiment's sources explicitly instead.
_ADOPTED: dict[str, str] = {}
# Canonical reference -> the object it names, so that a file is executed once per process.
_LOADED: dict[str, Any] = {}


class RegistryError(ValueError):
    """A name or reference that does not resolve; the message is one line that says
    what was given and what is allowed."""


class UnknownName(RegistryError, KeyError):
    """A plain name that is neither built in, nor installed, nor named by reference.
    (A KeyError too, for callers that look names up like a dict.)"""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _attr(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _plugins(kind: str) -> dict[str, importlib.metadata.EntryPoint]:
    """Entry points of a group. Scanning every installed distribution takes ~20 ms, and a
    config names models many times: the scan is kept per search path (nothing is scanned
    at import; a distribution added to sys.path is seen at the next lookup)."""
    return dict(_scan(GROUPS[kind], tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _scan(group: str, path: tuple[str, ...]) -> tuple[tuple[str, importlib.metadata.EntryPoint], ...]:
    return tuple((ep.name, ep) for ep in importlib.metadata.entry_points(group=group))


def _plugin(kind: str, ep: importlib.metadata.EntryPoint, expected: type) -> Any:
    dist = getattr(ep.dist, "name", None) or "an installed package"
    try:
        obj = ep.load()
    except Exception as exc:  # a plugin's import error is the plugin's, said in one line
        raise RegistryError(
            f"{kind} {ep.name}: the entry point {ep.value} of {dist} failed to load: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(obj, expected) or getattr(obj, "name", None) != ep.name:
        raise RegistryError(
            f"{kind} {ep.name}: the entry point {ep.value} of {dist} must name a {expected.__name__} called {ep.name!r}"
        )
    return _from(obj, f"plugin {dist}")


def _from(obj: Any, origin: str) -> Any:
    """The spec with `origin` saying where it came from (shown by `dlbench list`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and hasattr(obj, "origin"):
        return dataclasses.replace(obj, origin=origin)
    return obj


# -- references to the user's own code and data -----------------------------------


def _parse(kind: str, text: str) -> tuple[str, str, str]:
    """(form, target, attr): form "name" (a registered name), "file" (path.py[:ATTR]),
    "module" (package.module:ATTR) or, for datasets, "data" (a .npz file or a directory)."""
    code_file, colon, attr = text.rpartition(":")
    if colon and code_file.endswith(".py"):
        return "file", code_file, attr
    if text.endswith(".py"):
        return "file", text, ""
    if colon and "/" not in text and MODULE.fullmatch(code_file) and attr.isidentifier():
        return "module", code_file, attr
    if kind == "dataset" and (
        text.endswith(".npz") or "/" in text or (text not in builtin("dataset") and Path(text).is_dir())
    ):
        return "data", text, ""
    if kind == "model" and "/" in text:
        return "file", text, ""  # a path that is not a .py file: load_reference says so
    return "name", text, ""


def is_reference(kind: str, text: str) -> bool:
    """True when `text` names code or data by path or module rather than by name."""
    return _parse(kind, text)[0] != "name"


def _show(text: str) -> str:
    return text if text.isprintable() and len(text) <= 200 else repr(text[:200])


def _load_file(path: Path, shown: str) -> Any:
    """Execute a user's Python file (they named it) as a module of its own. Its directory
    is appended to sys.path, as for a script, so it can import the files beside it
    (its builders); appended, not prepended, so it cannot shadow installed packages."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"dlbench_user_{path.stem.replace('-', '_')}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"{shown}: cannot be imported as Python (a .py file is expected)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        # SystemExit too: a file that calls sys.exit() at import would otherwise end
        # dlbench with that status and no word (seen: exit 7, nothing printed).
        del sys.modules[module_name]
        raise RegistryError(f"{shown}: importing it raised {_raised(exc)}") from None
    return module


def _raised(exc: BaseException) -> str:
    """'ValueError: first line' / 'SystemExit(7) (it called sys.exit at import)'."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) (it called sys.exit or exit at import)"
    line = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {line}"


def _load_module(name: str, shown: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise RegistryError(
                f"{shown}: no module {exc.name!r} is installed (a file is named by path: path/to/file.py:NAME)"
            ) from None
        raise RegistryError(f"{shown}: importing {name} raised ModuleNotFoundError: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise RegistryError(f"{shown}: importing {name} raised {_raised(exc)}") from None


def _pick(module: Any, attr: str, expected: type, kind: str, shown: str, where: str) -> Any:
    """`module.attr` checked to be a spec; without attr, the module's one spec."""
    found = {k: v for k, v in vars(module).items() if isinstance(v, expected) and not k.startswith("_")}
    if not attr:
        if len(found) == 1:
            return next(iter(found.values()))
        listed = ", ".join(sorted(found)) or "none"
        raise RegistryError(f"{shown}: name the {kind} as {where}:NAME ({expected.__name__} objects in it: {listed})")
    if not hasattr(module, attr):
        listed = ", ".join(sorted(found)) or "none"
        raise RegistryError(f"{shown}: {where} has no attribute {attr!r} ({expected.__name__} objects in it: {listed})")
    obj = getattr(module, attr)
    if not isinstance(obj, expected):
        hint = " (make it with dlbench.Model(...))" if kind == "model" else ""
        raise RegistryError(f"{shown}: {attr} is a {type(obj).__name__}, not a {expected.__name__}{hint}")
    return obj


def _expected(kind: str) -> type:
    if kind == "model":
        from dlbench.models.spec import ModelSpec

        return ModelSpec
    from dlbench.datasets.spec import DatasetSpec

    return DatasetSpec


def _canonical(kind: str, text: str, base: Path | None) -> str:
    """The reference with its path made absolute (relative to `base`, else the working
    directory), so that the worker, started elsewhere, finds the same file."""
    form, target, attr = _parse(kind, text)
    if form in ("file", "data"):
        path = Path(target).expanduser()
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        try:
            resolved = path.resolve()
        except (RuntimeError, OSError) as exc:  # a symbolic link loop (RuntimeError before Python 3.13)
            raise RegistryError(f"{_show(text)}: {path} cannot be followed ({exc})") from None
        return f"{resolved}{':' + attr if attr else ''}"
    return text


def load_reference(kind: str, ref: str) -> Any:
    """The spec a canonical reference names (executing the user's file once per process)."""
    if ref in _LOADED:
        return _LOADED[ref]
    shown = _show(ref)
    expected = _expected(kind)
    form, target, attr = _parse(kind, ref)
    if form == "data":
        from dlbench.datasets import files

        try:
            obj: Any = files.dataset(Path(target))
        except files.UserDataError as exc:
            raise RegistryError(str(exc)) from None
    elif form == "file":
        path = Path(target)
        if not path.is_file():
            what = (
                "is a directory"
                if path.is_dir()
                else "is a special file (a FIFO or a device)"
                if path.exists()
                else "does not exist"
            )
            raise RegistryError(f"{shown}: {path} {what}; expected a Python file that defines the {kind}")
        if path.suffix != ".py":
            raise RegistryError(f"{shown}: {path} is not a .py file; a {kind} is defined in Python")
        obj = _pick(_load_file(path, shown), attr, expected, kind, shown, path.name)
    elif form == "module":
        obj = _pick(_load_module(target, shown), attr, expected, kind, shown, target)
    else:
        raise RegistryError(f"{shown}: not a reference (PATH.py:NAME or package.module:NAME)")
    obj = _from(obj, ref)
    _LOADED[ref] = obj
    return obj


def resolve(kind: str, text: str, base: Path | None = None) -> tuple[str, str | None]:
    """A value the user wrote for a model or dataset -> (name, canonical reference, or
    None for a registered name). Loads a reference (the user named it); an unknown
    plain name is UnknownName, listing what is allowed."""
    if _parse(kind, text)[0] == "name":
        if text not in names(kind):
            raise UnknownName(_unknown(kind, text))
        return text, None
    ref = _canonical(kind, text, base)
    obj = load_reference(kind, ref)
    builtins = builtin(kind)
    if obj.name in builtins or obj.name in _plugins(kind):
        raise RegistryError(f"{_show(text)}: it is called {obj.name!r}, the name of an existing {kind}; rename it")
    return obj.name, ref


# -- lookups -----------------------------------------------------------------------


def adopt(sources: Sources) -> None:
    """The worker's sources (from its trial spec): the user named them for this run."""
    _ADOPTED.clear()
    _ADOPTED.update(sources)


def _sources(given: Sources | None) -> Sources:
    return _ADOPTED if given is None else given


def names(kind: str, sources: Sources | None = None) -> list[str]:
    """Every name a lookup of `kind` accepts: built-ins, then plugins, then sources."""
    if kind == "framework":
        return list(frameworks())
    builtins = builtin(kind)
    out = list(builtins)
    out += [n for n in _plugins(kind) if n not in builtins]
    prefix = f"{kind}:"
    out += [k[len(prefix) :] for k in _sources(sources) if k.startswith(prefix) and k[len(prefix) :] not in out]
    return out


def _unknown(kind: str, name: str, sources: Sources | None = None) -> str:
    own = (
        "PATH.py:NAME or package.module:NAME for your own"
        if kind == "model"
        else "a .npz file or a directory of IDX files for your own"
    )
    return f"unknown {kind} {_show(name)!r}; allowed: {', '.join(names(kind, sources))}, or {own}"


def model(name: str, sources: Sources | None = None) -> ModelSpec:
    """The spec of model `name`."""
    return _lookup("model", name, sources)


def dataset(name: str, sources: Sources | None = None) -> DatasetSpec:
    """The spec of dataset `name`."""
    return _lookup("dataset", name, sources)


def _lookup(kind: str, name: str, sources: Sources | None) -> Any:
    builtins = builtin(kind)
    if name in builtins:
        return _attr(builtins[name])
    ref = _sources(sources).get(f"{kind}:{name}")
    if ref is not None:
        return load_reference(kind, ref)
    ep = _plugins(kind).get(name)
    if ep is not None:
        return _plugin(kind, ep, _expected(kind))
    raise UnknownName(_unknown(kind, name, sources))


def is_registered(kind: str, name: str) -> bool:
    """Built in or installed: resolvable without anything the user names."""
    builtins = builtin(kind)
    return name in builtins or name in _plugins(kind)


def models(sources: Sources | None = None) -> list[ModelSpec]:
    return [model(n, sources) for n in names("model", sources)]


def datasets(sources: Sources | None = None) -> list[DatasetSpec]:
    return [dataset(n, sources) for n in names("dataset", sources)]


def frameworks() -> dict[str, FrameworkInfo]:
    """Built-in frameworks plus plugins (entry points naming a FrameworkInfo)."""
    from dlbench.frameworks import FRAMEWORKS, FrameworkInfo

    out = dict(FRAMEWORKS)
    for name, ep in _plugins("framework").items():
        if name not in out:  # a plugin cannot replace a built-in framework
            out[name] = _plugin("framework", ep, FrameworkInfo)
    return out


def framework(name: str) -> FrameworkInfo:
    known = frameworks()
    if name not in known:
        raise UnknownName(f"unknown framework {_show(name)!r}; allowed: {', '.join(known)}")
    return known[name]


def needed(model_name: str, dataset_name: str, sources: Sources) -> dict[str, str]:
    """The sources one trial's worker needs (its model's and its dataset's, if the user's)."""
    keys = (f"model:{model_name}", f"dataset:{dataset_name}")
    return {k: sources[k] for k in keys if k in sources}


# -- strategies: what the frameworks declare (FrameworkInfo.strategies), asked by name ------


def strategies() -> dict[str, tuple[tuple[str, ...], bool]]:
    """Every strategy some framework declares, "single" first, in the frameworks' order
    -> (the frameworks that have it, () for every framework; one process per replica?)."""
    from dlbench.distributed import SINGLE

    out: dict[str, tuple[tuple[str, ...], bool]] = {SINGLE: ((), False)}
    for name, info in frameworks().items():
        for s in info.strategies:
            owners, multi = out.get(s.name, ((), s.multiprocess))
            out[s.name] = ((*owners, name), multi)
    return out


def strategy_module(framework_name: str, strategy: str) -> str:
    """The module that implements `framework_name`'s `strategy` (KeyError if it has none)."""
    declared = framework(framework_name).strategy(strategy)
    if declared is None:
        raise KeyError(f"{framework_name} has no data-parallel strategy {strategy!r}")
    return str(declared.module)


def has_strategy(framework_name: str, strategy: str) -> bool:
    return bool(framework(framework_name).has_strategy(strategy))


def multiprocess(strategy: str) -> bool:
    """True when the strategy runs one OS process per replica (KeyError: no framework has it)."""
    return strategies()[strategy][1]
