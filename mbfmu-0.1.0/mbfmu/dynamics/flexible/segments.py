"""Finite-segment beams: rigid segments joined by elastic joints.

A beam of length L cut into ``n`` segments is built as a chain of ordinary
engine bodies. The elastic joints sit at the stations ``x_i = (i - 1/2) h``
(``h = L / n``), each standing for the flexibility of the length ``h`` centred
on it, so a joint's rotational stiffness is ``EI / h`` (bending) or
``GJ / h`` (torsion) and its axial stiffness ``EA / h``. The rigid pieces
between joints carry the distributed mass: a root half-piece ``[0, h/2]``
welded to the parent, ``n - 1`` full pieces ``[x_i, x_i + h]`` and a tip
half-piece ``[L - h/2, L]``; segment i's frame sits at its joint ``x_i``.

This midpoint layout makes the static tip deflection under a tip load
``P L^3 / (3 EI) (1 - 1 / (4 n^2))`` (the midpoint rule applied to the
curvature integral) and is exact under a uniform moment. Large rotations and
the geometric (centrifugal) stiffening come for free: the chain kinematics
is exact. Damping: stiffness-proportional, ``D = beta K`` (see
:meth:`BeamProperties.stiffness_damping_factor`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import ModelError
from ..joints import Fixed, Prismatic, Revolute, Spherical, Universal
from ..model import JointForce, ModelBuilder
from .beam import BeamProperties

_AXIS = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def _piece_inertia(beam: BeamProperties, length: float) -> tuple[float, np.ndarray]:
    """Mass and rotational inertia about the centre of a beam piece."""
    m = beam.mass_per_length * length
    rho = beam.density
    Ixx = rho * (beam.Iy + beam.Iz) * length
    Iyy = rho * beam.Iy * length + m * length ** 2 / 12.0
    Izz = rho * beam.Iz * length + m * length ** 2 / 12.0
    return m, np.diag([Ixx, Iyy, Izz])


def segment_joint_layout(bending: Sequence[str], torsion: bool):
    """Joint type and the per-coordinate stiffness keys for one elastic station.

    Parameters
    ----------
    bending : sequence of {"y", "z"}
        Directions of the bending deflection the station allows.
    torsion : bool
        Whether it twists about the beam axis too.

    Returns ``(joint, keys)`` where keys name the stiffness of each velocity
    coordinate: ``"GJ"``, ``"EIz"`` (rotation about z, deflection along y),
    ``"EIy"`` (rotation about y, deflection along z).
    """
    bending = tuple(bending)
    for d in bending:
        if d not in ("y", "z"):
            raise ModelError(f"segmented beam: bending direction {d!r} must be 'y' or 'z'")
    if len(set(bending)) != len(bending):
        raise ModelError("segmented beam: a bending direction is listed twice")
    rot = []  # rotation axes: deflection along y <- rotation about z; along z <- about y
    if "y" in bending:
        rot.append(("z", "EIz"))
    if "z" in bending:
        rot.append(("y", "EIy"))
    if torsion:
        rot.append(("x", "GJ"))
    if not rot:
        raise ModelError("segmented beam: give at least one bending direction or torsion")
    if len(rot) == 1:
        return Revolute(axis=_AXIS[rot[0][0]]), [rot[0][1]]
    if len(rot) == 2:
        return Universal(axis1=_AXIS[rot[0][0]], axis2=_AXIS[rot[1][0]]), [r[1] for r in rot]
    # spherical: velocity (and the spring's rotation vector) in body x, y, z order
    return Spherical(), ["GJ", "EIy", "EIz"]


def add_segmented_beam(builder: ModelBuilder, name: str, parent: int | str, beam: BeamProperties,
                       n_segments: int, bending: Sequence[str] = ("y",), torsion: bool = False,
                       axial: bool = False, R_PJ: np.ndarray | None = None,
                       p_PJ: Sequence[float] = (0.0, 0.0, 0.0)) -> int:
    """Add a finite-segment beam clamped to ``parent``; returns the tip body.

    Parameters
    ----------
    builder : ModelBuilder
        The tree to extend.
    name : str
        Prefix of the body names (``name.root``, ``name.1`` .. ``name.n``).
    parent : int or str
        Body the beam root is clamped to.
    beam : BeamProperties
    n_segments : int
        Number of elastic stations (>= 1).
    bending : sequence of {"y", "z"}
        Deflection directions modelled (bending planes x-y and/or x-z).
    torsion : bool
        Model twist about the beam axis.
    axial : bool
        Model stretch (a prismatic joint with stiffness ``EA / h`` at each
        station).
    R_PJ, p_PJ
        Root frame of the beam in the parent frame (beam along its x axis).

    Returns
    -------
    int
        Index of the last segment; its frame sits at station
        ``L - h/2`` so the beam tip is at ``(h/2, 0, 0)`` in it (see
        :func:`segment_tip_offset`). Hang further bodies there.
    """
    if not isinstance(n_segments, (int, np.integer)) or n_segments < 1:
        raise ModelError(f"segmented beam {name!r}: n_segments = {n_segments!r} must be an integer >= 1")
    joint, keys = segment_joint_layout(bending, torsion)
    n = int(n_segments)
    h = beam.length / n
    stiff = {"EIz": beam.EIz / h, "EIy": beam.EIy / h, "GJ": beam.GJ / h}
    dirs = tuple(bending) if bending else ("y",)
    beta = beam.stiffness_damping_factor(dirs)
    m, I = _piece_inertia(beam, h / 2)
    body = builder.add_body(f"{name}.root", parent, Fixed(), mass=m, com=(h / 4, 0, 0), inertia=I,
                            R_PJ=R_PJ, p_PJ=p_PJ)
    for i in range(1, n + 1):
        piece = h if i < n else h / 2
        m, I = _piece_inertia(beam, piece)
        place = (h / 2, 0.0, 0.0) if i == 1 else (h, 0.0, 0.0)
        if axial:
            body = builder.add_body(f"{name}.{i}.axial", body, Prismatic(axis=(1.0, 0.0, 0.0)), p_PJ=place)
            k_ax = beam.EA / h
            builder.add_joint_force(body, JointForce(stiffness=k_ax, damping=beta * k_ax))
            place = (0.0, 0.0, 0.0)
        com = (0.5 * piece, 0.0, 0.0)
        body = builder.add_body(f"{name}.{i}", body, joint, mass=m, com=com, inertia=I, p_PJ=place)
        k = np.array([stiff[key] for key in keys])
        builder.add_joint_force(body, JointForce(stiffness=k, damping=beta * k))
    return body


def segment_tip_offset(beam: BeamProperties, n_segments: int) -> np.ndarray:
    """Position of the beam tip in the frame of the last segment, m.

    Parameters
    ----------
    beam : BeamProperties
        The beam.
    n_segments : int
        Number of rigid segments it is divided into.
    """
    return np.array([beam.length / n_segments / 2.0, 0.0, 0.0])
