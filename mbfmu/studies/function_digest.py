"""What the result of a study's target function depends on, as a digest.

A sweep's cache takes a run from disk when its key matches, so the key of a
function target must change whenever the function would build another system.
:func:`function_digest` covers the function's source, its defaults, its
closure and every module global its code reads (recursively into the
functions and classes of the user's own modules); a user module the code
reaches as a module (``helpers.gain()``) counts by the hash of its source
file, and the user modules that one uses in turn; library functions and
modules count by name. A value whose content cannot be hashed (an object
built at import time, an open system) makes the target *uncacheable*: its
runs are never taken from the cache, since a hit could not be trusted.

The FMUs a run loads are not known before it runs; the study records them
with their SHA-256 while the function builds its system
(:func:`mbfmu.untrusted.archive.watch_inputs`) and the cache checks them
again before taking a run (:mod:`.cache`); so are the data files a run opens
for reading (:mod:`.run_inputs`).
"""
from __future__ import annotations

import builtins
import hashlib
import inspect
import sys
import types
from pathlib import PurePath
from typing import Any, Callable

_SIMPLE = (type(None), bool, int, float, complex, str, bytes)
_MAX_ITEMS = 10_000


class Uncacheable(Exception):
    """A value the digest cannot cover (the message says which)."""


def _is_library_module(module: types.ModuleType | None) -> bool:
    """An installed package, the standard library or mbfmu itself, not the user's code."""
    file = getattr(module, "__file__", None) or ""
    return module is not None and (not file or "site-packages" in file or "dist-packages" in file
                                   or module.__name__.split(".")[0] in ("mbfmu", *sys.stdlib_module_names))


def _is_library(obj: Any) -> bool:
    """Defined in an installed package (or mbfmu itself), not in the user's code."""
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    return module is not None and _is_library_module(module)


def _module_text(module: types.ModuleType, seen: set[int], depth: int) -> str:
    """A user module by the hash of its source file, and the user modules it uses in turn.

    A target that calls ``helpers.gain()`` reaches ``gain`` through the module,
    not through a global the digest could follow, so the whole module counts.
    """
    if id(module) in seen:
        return f"again module {module.__name__}"
    if depth > 20:
        raise Uncacheable(f"module {module.__name__!r} nests its imports too deeply")
    seen.add(id(module))
    try:
        with open(module.__file__, "rb") as f:
            source = f.read()
    except (OSError, TypeError):
        raise Uncacheable(f"the source of module {module.__name__!r} is not available") from None
    parts = [f"module {module.__name__} {hashlib.sha256(source).hexdigest()}"]
    for v in list(vars(module).values()):
        used = v if isinstance(v, types.ModuleType) else sys.modules.get(getattr(v, "__module__", None) or "") \
            if isinstance(v, (types.FunctionType, type)) else None
        if used is not None and used is not module and not _is_library_module(used):
            parts.append(_module_text(used, seen, depth + 1))
    return "\n".join(parts)


def _value(name: str, v: Any, seen: set[int], depth: int) -> str:
    if isinstance(v, _SIMPLE):
        return repr(v)
    if isinstance(v, PurePath):
        return f"path {v}"
    if isinstance(v, (tuple, list, set, frozenset)):
        if len(v) > _MAX_ITEMS:
            raise Uncacheable(f"{name!r} holds {len(v)} items")
        items = [_value(name, x, seen, depth) for x in v]
        return f"{type(v).__name__}({', '.join(sorted(items) if isinstance(v, (set, frozenset)) else items)})"
    if isinstance(v, dict):
        if len(v) > _MAX_ITEMS:
            raise Uncacheable(f"{name!r} holds {len(v)} items")
        return "{" + ", ".join(f"{_value(name, k, seen, depth)}: {_value(name, x, seen, depth)}"
                               for k, x in v.items()) + "}"
    if type(v).__module__ == "numpy" and hasattr(v, "tobytes"):
        return f"array {v.dtype} {getattr(v, 'shape', ())} {hashlib.sha256(v.tobytes()).hexdigest()}"
    if isinstance(v, types.ModuleType):
        return f"module {v.__name__}" if _is_library_module(v) else _module_text(v, seen, depth + 1)
    if isinstance(v, (types.FunctionType, type)):
        if _is_library(v):
            return f"library {v.__module__}.{v.__qualname__}"
        return _code_text(v, seen, depth + 1)
    if isinstance(v, (types.BuiltinFunctionType, types.MethodWrapperType)):
        return f"builtin {getattr(v, '__module__', '')}.{getattr(v, '__qualname__', '')}"
    raise Uncacheable(f"{name!r} is a {type(v).__name__}, whose content cannot be hashed")


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _code_text(obj: Any, seen: set[int], depth: int) -> str:
    """Source, defaults, closure and globals read by a user function or class."""
    if id(obj) in seen:
        return f"again {getattr(obj, '__qualname__', '')}"
    if depth > 20:
        raise Uncacheable(f"{getattr(obj, '__qualname__', obj)!r} nests its helpers too deeply")
    seen.add(id(obj))
    try:
        source = inspect.getsource(obj)
    except (OSError, TypeError):
        raise Uncacheable(f"the source of {getattr(obj, '__qualname__', obj)!r} is not available") from None
    parts = [f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}", source]
    fns = [obj] if isinstance(obj, types.FunctionType) else [
        f for f in vars(obj).values() if isinstance(f, types.FunctionType)]
    for fn in fns:
        parts.append(_value("defaults", fn.__defaults__, seen, depth))
        parts.append(_value("defaults", fn.__kwdefaults__, seen, depth))
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                parts.append(f"closure {name} = {_value(name, cell.cell_contents, seen, depth)}")
            except ValueError:  # an empty cell (a name bound later)
                parts.append(f"closure {name} unbound")
        for name in sorted(_names(fn.__code__)):
            if name in fn.__globals__:
                parts.append(f"global {name} = {_value(name, fn.__globals__[name], seen, depth)}")
            elif not hasattr(builtins, name):
                parts.append(f"global {name} unbound")
    return "\n".join(parts)


def function_digest(fn: Callable[..., Any]) -> tuple[str, str]:
    """``(text, why)``: the text to hash for ``fn``, and why it is uncacheable ("" if it is not)."""
    if not isinstance(fn, types.FunctionType):
        return f"{type(fn).__module__}.{type(fn).__qualname__}", f"{fn!r} is not a plain function"
    try:
        return _code_text(fn, set(), 0), ""
    except Uncacheable as exc:
        return f"{fn.__module__}.{fn.__qualname__}", str(exc)
