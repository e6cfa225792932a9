"""mbfmu: multibody plants as FMI co-simulation units, with control design.

The package is layered (see ``docs``/README): ``mbfmu.dynamics`` (the engine),
``mbfmu.plant`` (the plant contract), ``mbfmu.models`` (the plant library),
``mbfmu.fmu`` (FMU export), ``mbfmu.cosim`` (co-simulation master),
``mbfmu.control`` (controllers, linearization) and ``mbfmu.viewer``.

Conventions, stated once for the whole package: SI units everywhere, angles
in rad, time in s; spatial vectors are ordered [angular; linear]; quaternions
(Euler parameters) are scalar first, (w, x, y, z).

Top-level names are imported lazily so that ``import mbfmu`` stays fast.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "load_urdf": ("mbfmu.dynamics.urdf", "load_urdf"),
    "load_plant": ("mbfmu.library", "load_plant"),
    "list_plants": ("mbfmu.library", "list_plants"),
    "linearize": ("mbfmu.control.linearization", "linearize"),
    "Plant": ("mbfmu.plant", "Plant"),
    "Signal": ("mbfmu.signals", "Signal"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mbfmu' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
