"""User code that travels inside an FMU: :func:`user_code_files`, :func:`pickle_class`.

An FMU rebuilds its plant (or controller) where it runs. Code from mbfmu and
from installed distributions is found there by import (``requirements.txt``
names mbfmu); the user's own code is embedded in the FMU's ``resources``
folder, which pythonfmu puts on ``sys.path``:

* a user module or package (any importable ``.py`` file outside the
  installed-package and standard-library folders) is copied as source, with
  every user module it imports (found by reading its ``import`` statements)
  and the ``__init__.py`` files of their packages, at the same relative
  paths, so it imports under its own name inside the FMU;
* a class that has no importable module -- defined in a script run as
  ``__main__``, in a notebook or ``python -c``, or inside a function -- is
  pickled by value with cloudpickle. Code objects are specific to a Python
  minor version, so such an FMU runs only under the Python minor version that
  built it; it says so when loaded by another one.

What cannot be embedded (a compiled user extension, a class cloudpickle
cannot serialize) is refused at build time with the reason.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import json
import pickle
import site
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any, Iterable

from ..errors import ModelError

PICKLE_FORMAT = 1
MAX_EMBED_BYTES = 20 * 1024 * 1024  # user source above this is almost surely a mistake
_LOADED: dict[str, type] = {}       # pickled classes by content hash (one class per file per process)


def _installed_roots() -> list[Path]:
    """Folders whose modules are installed (stdlib, site-packages), not user code."""
    roots: set[str] = set()
    for base in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                      "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}):
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                roots.add(sysconfig.get_path(key, vars=base or None))
            except KeyError:
                pass
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # some virtualenv flavours
        pass
    roots.add(site.getusersitepackages())
    return [Path(r).resolve() for r in roots if r]


def _is_under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _origin(name: str) -> Path | None:
    """Source file of module ``name`` (None: builtin, frozen, namespace or unknown)."""
    mod = sys.modules.get(name)
    file = getattr(mod, "__file__", None) if mod is not None else None
    if file is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return None
        file = spec.origin if spec is not None and spec.has_location else None
    return Path(file).resolve() if file else None


def is_user_module(name: str, roots: list[Path] | None = None) -> bool:
    """True for a module of the user's own (not mbfmu, not installed, not stdlib)."""
    top = name.partition(".")[0]
    if top == "mbfmu" or top == "__main__" or top in sys.builtin_module_names:
        return False
    path = _origin(name)
    return path is not None and not _is_under(path, roots if roots is not None else _installed_roots())


def imports_of(path: Path, module: str = "__main__", is_package: bool = False) -> set[str]:
    """Absolute names of the modules ``path`` imports (any depth of the file)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        raise ModelError(f"cannot read user module {module!r} ({path}) to embed it: {exc}") from None
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                try:
                    base = importlib.util.resolve_name("." * node.level + base, package)
                except (ImportError, ValueError):
                    continue
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    return {n for n in names if n}


def user_code_files(modules: Iterable[str]) -> dict[str, Path]:
    """Source files to embed for ``modules`` and the user modules they import.

    Parameters
    ----------
    modules : iterable of str
        Module names to start from (non-user ones are ignored).

    Returns
    -------
    dict
        Path inside ``resources`` (POSIX) -> source file.

    Raises
    ------
    ModelError
        A user module is compiled or unreadable, or the code is too large.
    """
    roots = _installed_roots()
    todo = [m for m in modules if is_user_module(m, roots)]
    seen: set[str] = set()
    files: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _origin(name)
        if path is None:
            continue
        if path.suffix != ".py":
            raise ModelError(f"user module {name!r} is compiled ({path}): it cannot travel inside the FMU; "
                             "install it where the FMU runs and add it to build_fmu(requirements=...)")
        parts = name.split(".")
        is_package = path.name == "__init__.py"
        root = path.parents[len(parts) - (0 if is_package else 1)]
        files[path.relative_to(root).as_posix()] = path
        for i in range(1, len(parts)):  # the packages above it
            parent = ".".join(parts[:i])
            if parent not in seen:
                todo.append(parent)
        todo.extend(m for m in imports_of(path, name, is_package) if m not in seen and is_user_module(m, roots))
    size = sum(p.stat().st_size for p in files.values())
    if size > MAX_EMBED_BYTES:
        raise ModelError(f"the user code to embed is {size / 1e6:.0f} MB ({len(files)} files from "
                         f"{', '.join(sorted(files)[:5])} ...): install it where the FMU runs instead")
    return files


def needs_pickle(cls: type) -> bool:
    """True when ``cls`` cannot be imported by name (``__main__``, notebook, local class)."""
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return True
    mod = sys.modules.get(cls.__module__)
    return mod is None or getattr(mod, "__file__", None) is None


def referenced_modules(cls: type) -> set[str]:
    """Modules that a by-value class refers to by name: those of its bases and
    of the globals its methods use."""
    names: set[str] = set()

    def code_names(code: types.CodeType) -> set[str]:
        out = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                out |= code_names(const)
        return out

    for klass in cls.__mro__:
        names.add(klass.__module__)
        if klass.__module__ != cls.__module__:
            continue
        for member in vars(klass).values():
            fn = getattr(member, "__func__", member)
            fn = getattr(fn, "fget", fn)
            code = getattr(fn, "__code__", None)
            if code is None:
                continue
            glb = getattr(fn, "__globals__", {})
            for n in code_names(code):
                value = glb.get(n)
                if isinstance(value, types.ModuleType):
                    names.add(value.__name__)
                elif value is not None and isinstance(getattr(value, "__module__", None), str):
                    names.add(value.__module__)
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if cls.__module__ == "__main__" and main_file and Path(main_file).is_file():
        names |= imports_of(Path(main_file), "__main__", False)
    return {n for n in names if n and n != "__main__" and n != "builtins"}


def pickle_class(cls: type) -> bytes:
    """The file that carries ``cls`` by value: one JSON header line, then the
    cloudpickle of the class.

    Raises
    ------
    ModelError
        cloudpickle cannot serialize the class (the reason is given).
    """
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - a dependency of mbfmu
        raise ModelError(f"class {cls.__qualname__!r} has no importable module and cloudpickle is not "
                         "installed to embed it: pip install cloudpickle") from None


    class Pickler(cloudpickle.Pickler):
        """cloudpickle, keeping only the file name of the code's source file
        (the FMU holds no path of the build machine)."""

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.CodeType) and obj.co_filename != Path(obj.co_filename).name:
                return self.dispatch_table[types.CodeType](obj.replace(co_filename=Path(obj.co_filename).name))
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    # cloudpickle copies the module's __file__ into each function's globals:
    # show only the file name while pickling
    namespace = getattr(sys.modules.get(cls.__module__), "__dict__", {})
    file = namespace.get("__file__")
    try:
        if isinstance(file, str):
            namespace["__file__"] = Path(file).name
        Pickler(buffer, protocol=4).dump(cls)
        data = buffer.getvalue()
    except Exception as exc:
        raise ModelError(f"plant class {cls.__qualname__!r} (module {cls.__module__!r}) cannot be embedded in "
                         f"the FMU: cloudpickle cannot serialize it ({type(exc).__name__}: {exc}); define it "
                         "in a module file instead") from exc
    finally:
        if isinstance(file, str):
            namespace["__file__"] = file
    header = {"format": PICKLE_FORMAT, "python": "%d.%d" % sys.version_info[:2],
              "cloudpickle": cloudpickle.__version__, "class": cls.__qualname__}
    return json.dumps(header).encode() + b"\n" + data


def load_pickled_class(path: Path) -> type:
    """The class of a file written by :func:`pickle_class`.

    Raises
    ------
    ModelError
        Another Python minor version, or a damaged file.
    """
    raw = Path(path).read_bytes()
    key = hashlib.sha256(raw).hexdigest()
    if key in _LOADED:
        return _LOADED[key]
    head, _, data = raw.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise ModelError(f"{path}: not an embedded plant class (bad header)") from None
    here = "%d.%d" % sys.version_info[:2]
    if header.get("python") != here:
        raise ModelError(f"the plant class {header.get('class')!r} is embedded by value (it was defined in a "
                         f"script or notebook) and needs Python {header.get('python')}; this is Python {here} "
                         f"({sys.executable}). Run the FMU with Python {header.get('python')} (environment "
                         "variable MBFMU_PYTHON), or build it from a class in a module file")
    try:
        cls = pickle.loads(data)
    except Exception as exc:
        raise ModelError(f"cannot load the embedded plant class {header.get('class')!r}: "
                         f"{type(exc).__name__}: {exc}") from exc
    _LOADED[key] = cls
    return cls


def check_embedded_modules(names: Iterable[str], resources: Path) -> None:
    """Refuse when a module the FMU embeds was loaded in this process from
    elsewhere with other contents (the FMU would silently run that code).

    Call it after the plant is built. A module loaded from this FMU's
    ``resources`` is stamped with the hash of its source, so another FMU
    carrying the same module can still compare after the first one's folder
    is gone.

    Raises
    ------
    ModelError
        Naming the module and both files.
    """
    for name in names:
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None)
        if not file:
            continue
        loaded = Path(file)
        parts = name.split(".")
        rel = Path(*parts, "__init__.py") if loaded.name == "__init__.py" else Path(*parts[:-1], loaded.name)
        mine = resources / rel
        if not mine.is_file():
            continue
        digest = hashlib.sha256(mine.read_bytes()).hexdigest()
        if loaded.resolve() == mine.resolve():
            mod.__mbfmu_sha256__ = digest
            continue
        other = getattr(mod, "__mbfmu_sha256__", None)
        if other is None and loaded.is_file():
            other = hashlib.sha256(loaded.read_bytes()).hexdigest()
        if other != digest:
            raise ModelError(f"module {name!r} is already imported in this process from {loaded}, which differs "
                             f"from the copy this FMU carries ({mine}); rename one of them")


def module_names(files: Iterable[str]) -> list[str]:
    """Module names of embedded files (``pkg/mod.py`` -> ``pkg.mod``)."""
    out = []
    for rel in files:
        parts = rel[:-3].split("/")
        out.append(".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts))
    return sorted(out)

