"""What the C runtime holds of a plant (``csrc/native.h``): the pieces shared
by the rigid packer (:mod:`.pack`) and the flexible one (:mod:`.flexible`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...dynamics import sensors as S
from ...dynamics.model import Model
from ...dynamics.symbolic import real_array
from ...errors import ModelError

# the columns of the force-element tables that hold body indices (structure, not numbers)
_BODY_COLUMNS = {"springs": (0, 4), "contacts": (0,), "cables": (3,)}
# the columns of the joint drives' table that are structure: coordinates and mode (csrc/drives.h)
_DRIVE_COLUMNS = (0, 1, 2)


class NativeUnsupported(ModelError):
    """The plant computes something in Python the native runtime cannot express."""


@dataclass
class Description:
    """What the C runtime holds of one plant (see ``csrc/native.h``).

    Attributes
    ----------
    structure : dict
        Integer sizes and arrays (``nb``, ``nq``, ``nv``, ``nu``, ``ny``,
        ``nx``, ``ns``, ``nct``, ``ncb``, ``canonical``, ``parent``,
        ``jtype``, ``nqi``, ``nvi``, ``sens`` rows, body columns of the
        force elements): equal for two plants of the same structure.
    d : ndarray
        The numeric vector.
    offsets : dict
        ``o_*`` offsets of the blocks of ``d``.
    """

    structure: dict
    d: np.ndarray
    offsets: dict = field(default_factory=dict)


def model_blocks(model: Model) -> list[tuple[str, np.ndarray]]:
    """The blocks of ``d`` that describe ``model`` (arrays of ``mb_model``,
    body masses, centres of mass and inertias), keyed by their offsets' names."""
    pk = model.packed
    mass, com, Ic = S.mass_properties(model)
    return [
        ("o_axis1", pk["axis1"]), ("o_axis2", pk["axis2"]), ("o_Rtree", pk["Rtree"]),
        ("o_ptree", pk["ptree"]), ("o_Ibody", pk["inertia"]), ("o_g", pk["gravity"]),
        ("o_dof", pk["dof_force"]), ("o_springs", pk["springs"]), ("o_contacts", pk["contacts"]),
        ("o_cables", pk["cables"]), ("o_drives", pk["drives"]),
        ("o_mass", mass), ("o_com", com), ("o_Ic", Ic),
    ]


def model_structure(model: Model) -> dict:
    """The integer structure of ``model`` (sizes, tree, joint types, the body
    columns of the force elements)."""
    pk = model.packed
    return dict(
        nb=model.nbodies, ns=len(model.springs), nct=len(model.contacts), ncb=len(model.cables),
        ndr=len(pk["drives"]),
        drives=tuple(tuple(int(v) for v in row) for row in pk["drives"][:, _DRIVE_COLUMNS]),
        parent=tuple(int(v) for v in pk["parent"]), jtype=tuple(int(v) for v in pk["jtype"]),
        nqi=tuple(int(v) for v in pk["nqi"]), nvi=tuple(int(v) for v in pk["nvi"]),
        bodies=tuple(tuple(pk[k][:, c].astype(int).tolist()) for k, cols in _BODY_COLUMNS.items()
                     for c in cols))


def layout(blocks: list[tuple[str, np.ndarray]]) -> tuple[dict, list[np.ndarray], int]:
    """Offsets of ``blocks`` laid end to end, their flat arrays, and the total size."""
    offsets, parts, at = {}, [], 0
    for key, arr in blocks:
        flat = real_array(arr).reshape(-1)  # expressions kept while recording (symbolic.py)
        offsets[key] = at
        parts.append(flat)
        at += flat.size
    return offsets, parts, at
