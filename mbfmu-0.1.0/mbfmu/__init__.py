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

from ._lazy import lazy_getattr

__version__ = "0.1.0"

_LAZY = {
    "load_urdf": "mbfmu.dynamics.urdf",
    "load_plant": "mbfmu.plant.library",
    "plant_from_urdf": "mbfmu.plant.urdf",
    "Servo": "mbfmu.plant.urdf",
    "list_plants": "mbfmu.plant.library",
    "linearize": "mbfmu.control.linearization",
    "Plant": "mbfmu.plant",
    "Signal": "mbfmu.plant.signals",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
