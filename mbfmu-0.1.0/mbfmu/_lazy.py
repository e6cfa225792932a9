"""Lazy attribute loading for packages whose public names live in submodules
that are slow to import (python-control, matplotlib, fmpy)."""
from __future__ import annotations

import importlib
from typing import Callable, Mapping


def lazy_getattr(package: str, table: Mapping[str, str], namespace: dict) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``table`` maps each public
    name to the module defining it (absolute, or relative to ``package`` when
    it has no dot); the value is cached in ``namespace`` on first use."""

    def __getattr__(name: str):
        try:
            module = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        full = module if module.startswith("mbfmu") else f"{package}.{module}"
        value = getattr(importlib.import_module(full), name)
        namespace[name] = value
        return value

    return __getattr__
