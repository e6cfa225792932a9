"""Exact first derivatives of a packed plant: the native runtime's tangents.

One implementation of the exact derivatives serves both the native FMU
(``fmi2GetDirectionalDerivative``) and Python (``mbfmu.linearize``): the
forward-mode tangents of the recursive algorithms in C
(``mbfmu/fmu/native/csrc/dirder.c``, with ``contact_dirder.c``,
``ballspring_dirder.c`` and ``flex_dirder.c``), compiled into the kernels
extension and called here on the same numeric description the native FMU
compiles (``mbfmu.fmu.native.pack.describe``: an integer structure, one
vector ``d`` of doubles and the offsets of its blocks).

:func:`packed_jacobian` returns ``[A B; C D] = d[dx/dt; y] / d[x; u]`` in
the plant's own state ``x`` (quaternion seeds projected onto the unit
sphere's tangent, as the runtime reads them), or why the plant has no
exact tangents. Discrete states (plug-in elements' discrete states such as a
satellite's hinge latch flags and the HIC recorder's history and running maximum) are neither knowns nor unknowns of the
derivatives: their columns and rows are zero.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import InputError, SimulationError
from . import _kernels

#: The integer header of ``native_tangents`` (``csrc/tangent_binding.c``), in its order.
HEADER = ("nb", "nq", "nv", "nu", "ny", "nx", "ns", "nct", "ncb", "ndr", "canonical",
          "o_axis1", "o_axis2", "o_Rtree", "o_ptree", "o_Ibody", "o_g", "o_dof", "o_springs", "o_contacts",
          "o_cables", "o_drives", "o_mass", "o_com", "o_Ic", "o_q0", "o_v0", "o_B",
          "o_step", "o_adapt",
          "flex", "nbeam", "ng", "nh_flex", "nkd", "o_gtab", "o_htab", "o_kd")
#: The integer arrays, in their order (the flexible tables empty for a rigid plant).
ARRAYS = ("parent", "jtype", "nqi", "nvi", "sens",
          "role", "beam", "pq", "pv", "goff", "hoff", "bbody", "bq", "bv", "bnm", "kdoff")
_FLEX_ARRAYS = ARRAYS[5:]


def _ints(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).reshape(-1), dtype=np.intc)


def _header(structure: Mapping, offsets: Mapping) -> tuple[np.ndarray, tuple]:
    flex = dict(structure.get("flex", ()))
    fields = {**structure, **offsets, "flex": int(bool(flex)), "nbeam": flex.get("nbeam", 0),
              "ng": flex.get("ng", 0), "nh_flex": flex.get("nh", 0), "nkd": flex.get("nkd", 0),
              "o_gtab": flex.get("o_gtab", 0), "o_htab": flex.get("o_htab", 0), "o_kd": flex.get("o_kd", 0)}
    header = _ints([int(fields[k]) for k in HEADER])
    arrays = tuple(_ints(flex.get(k, ()) if k in _FLEX_ARRAYS else structure[k]) for k in ARRAYS)
    return header, arrays


def packed_jacobian(structure: Mapping, d: np.ndarray, offsets: Mapping, x, u, t: float = 0.0,
                    elements: tuple | None = None) -> tuple[np.ndarray | None, str | None]:
    """The exact Jacobian of a packed plant's dynamics and outputs.

    Parameters
    ----------
    structure : mapping
        The plant's integer structure (``Description.structure`` of
        ``mbfmu.fmu.native.pack.describe``).
    d : ndarray
        Its numeric description (``Description.d``).
    offsets : mapping
        The offsets of the blocks of ``d`` (``Description.offsets``).
    x : array_like
        The plant state (``nx`` values, the plant's own units).
    u : array_like
        The inputs (``nu`` values, SI units).
    t : float
        Time, s (a frame element's acceleration may depend on it).
    elements : tuple, optional
        The plant's plug-in elements (``csrc/element.h``): ``(class addresses, rows)``,
        rows ``(nel, 5)`` of body, offset of ``[point; parameters]`` in ``d``, number of
        parameters, of continuous and of discrete states
        (:func:`mbfmu.plant.elements.tangent_registry`).

    Returns
    -------
    J : ndarray or None
        ``(nx + ny, nx + nu)``: ``[A B; C D]``, rows ``[dx/dt; y]``,
        columns ``[x; u]``; ``None`` when not exact.
    why : str or None
        ``None``, or why the plant has no exact tangents (the piece named).

    Raises
    ------
    InputError
        When ``x`` or ``u`` has the wrong size or is not finite.
    SimulationError
        When the dynamics cannot be evaluated at ``x`` (a singular
        articulated inertia).
    """
    nx, nu, ny = int(structure["nx"]), int(structure["nu"]), int(structure["ny"])
    x = np.ascontiguousarray(x, dtype=float).reshape(-1)
    u = np.ascontiguousarray(u, dtype=float).reshape(-1)
    if x.size != nx or u.size != nu:
        raise InputError(f"packed_jacobian: state of {x.size} values and input of {u.size} for a plant with "
                         f"{nx} states and {nu} inputs")
    for name, arr in (("state", x), ("input", u)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise InputError(f"packed_jacobian: {name}[{bad[0] + 1}] is not finite ({arr[bad[0]]})")
    if not np.isfinite(t):
        raise InputError(f"packed_jacobian: time {t} is not finite")
    header, arrays = _header(structure, offsets)
    out = np.zeros((nx + ny, nx + nu))
    status = _kernels.native_tangents(header, arrays, np.ascontiguousarray(d, dtype=float), x, u, float(t), out,
                                      elements)
    if isinstance(status, str):
        return None, status
    if status:
        raise SimulationError(f"exact derivatives: the articulated inertia of body {status} is singular "
                              "at this state")
    return out, None
