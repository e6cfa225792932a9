"""FMU export: every plant as an FMI 2.0 co-simulation FMU (pythonfmu).

* :func:`build_fmu` (:mod:`mbfmu.fmu.builder`): plant -> ``fmus/<name>.fmu``;
* :func:`add_loader_shim`: the same loader shim for an FMU made by ``pythonfmu build``;
* :class:`PlantSlave` (:mod:`mbfmu.fmu.slave`): the generic slave inside;
* ``resources/shim.c``: the FMU's binary (linux64, and win64 cross-compiled
  with mingw-w64), finding a Python with mbfmu for hosts that are not Python
  and forwarding to pythonfmu's export library;
* :mod:`mbfmu.fmu.embed`: the user's code that travels inside the FMU;
* ``mbfmu build`` (:mod:`mbfmu.fmu.cli`).
"""
from __future__ import annotations

from .._lazy import lazy_getattr

_LAZY = {"build_fmu": "mbfmu.fmu.builder", "add_loader_shim": "mbfmu.fmu.builder", "PlantSlave": "mbfmu.fmu.slave", "PlantRef": "mbfmu.fmu.plantref"}
__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
