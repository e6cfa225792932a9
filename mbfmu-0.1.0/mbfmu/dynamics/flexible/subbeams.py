"""Beams cut into floating-frame sub-beams: geometrically exact in the limit.

A beam of length L is split into ``n`` equal sub-beams of length
``h = L / n``. Each is an assumed-modes beam in its own floating frame
(:mod:`~mbfmu.dynamics.flexible.system`, with geometric stiffening), and
sub-beam ``k + 1`` is clamped (fixed joint) to the *deformed tip frame* of
sub-beam ``k``, so the chain runs through the same O(N) flexible
articulated-body recursion as any beam carrying a body on its tip. The
coupling is exact: the tip frame of a sub-beam is placed by the virtual
joints of its tip chain (foreshortening, tip deflection, tip slope), and
everything outboard is reduced onto it in the backward pass, so the chain's
mass matrix is ``sum J^T M J`` over all sections of all sub-beams with the
full coupling between the sub-beams' rigid motions and deformations
(checked against a direct quadrature of the kinetic energy in
``tests/flexible/test_subbeams.py``).

Why it converges to the exact (elastica) beam: a single assumed-modes beam
linearizes the rotation of its cross-sections (its kinematics is
second-order in the deflection), which makes it 10.5 % off the elastica at
``P L^2 / EI = 1``. In the chain, each sub-beam only has to carry the
rotation *relative to its own frame*, about ``1/n`` of the total, while the
large rotations are carried exactly by the rigid frames; the model-form
error falls like ``1/n^3`` (measured below). With
:class:`~mbfmu.dynamics.flexible.modes.TipLoadedModes` (``ModeSet(...,
tip_shapes=True)``, the recommended shapes) two modes per sub-beam span the
exact static response of a sub-beam to the force and moment its outboard
part applies at its tip, so the chain is a co-rotational cubic beam mesh.

Convergence (measured; ``tests/flexible/test_subbeams.py`` checks that the
errors fall), two tip-loaded modes per sub-beam:

Elastica, cantilever under a dead transverse tip load, relative error of the
tip displacement (transverse ``v``, axial ``u``) against the closed-form
elliptic-integral solution:

=========  ===================  ===================  ===================
sub-beams  P L^2/EI = 1 (v, u)  P L^2/EI = 5 (v, u)  P L^2/EI = 10 (v, u)
=========  ===================  ===================  ===================
1          10.5 %, 18 %         133 %, 330 %         311 %, 1100 %
2          1.4 %, 2.2 %         10 %, 16 %           19 %, 30 %
4          0.17 %, 0.27 %       1.1 %, 1.6 %         2.1 %, 2.8 %
8          0.020 %, 0.033 %     0.13 %, 0.19 %       0.23 %, 0.31 %
=========  ===================  ===================  ===================

KRB spin-up (Kane, Ryan & Banerjee 1987) at 10 rad/s, peak tip deflection
against the segment chain extrapolated from 20 and 40 segments (-1.08304 m;
ANCF, issue 19: -1.0831 m): 1 sub-beam x 4 modes +2.58 %, 2 x 2 +0.58 %,
3 x 2 +0.23 %, 4 x 2 +0.11 %, 4 x 3 +0.12 %, 6 x 2 +0.03 %, 8 x 2 +0.014 %
(4 rad/s: 3 x 2 +0.04 %, 4 x 2 +0.02 %; table in
:mod:`~mbfmu.dynamics.flexible.spinup`). More modes per sub-beam do not
help: the error is the sub-beams' model form, which only more sub-beams
reduce. One mode per sub-beam does *not* converge (-9 % at 4 x 1, -15 % at
8 x 1): a single shape ties the sub-beam's tip slope to its tip deflection,
so the chain cannot take a kink-free shape; use two or more.

Cost: a sub-beam with ``m`` modes and ``s`` mass stations adds ``2 s + 3``
bodies to the recursion (prismatic x and y per station, tip chain); its
highest frequency grows as ``1/h^2`` (KRB beam, 2 modes each: 437 rad/s at 3
sub-beams, 788 rad/s at 4), which bounds the step of an explicit
integrator, so use the fewest sub-beams that meet the accuracy wanted and
the Bogacki-Shampine pair (``BS32``: 3 evaluations per step against 6 for
DP54, at nearly the same stability-limited step), with its steps capped just
inside the stability limit (``max_step`` of
:func:`~mbfmu.dynamics.flexible.driven.simulate_driven`,
:func:`~mbfmu.dynamics.flexible.driven.stable_step`; :func:`~mbfmu.dynamics.flexible.spinup.run_spinup` does
it by default): left to the error control alone the pair hovers at the limit,
rejecting steps (1.5x the evaluations for the KRB spin-up). Measured next to
Exudyn's ANCF cable in ``benchmarks/flexible.py`` (section 4;
benchmarks/RESULTS.md).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, Sequence

import numpy as np

from ...errors import ModelError
from ..joints import Fixed, Joint
from .beam import BeamProperties

from .modes import ModeSet


class BeamBuilder(Protocol):
    """What a chain needs of :class:`~mbfmu.dynamics.flexible.system.FlexibleSystemBuilder`."""

    def add_beam(self, name, parent, joint, beam, modes, stiffening=True, mass=0.0, com=(0.0, 0.0, 0.0),
                 inertia=None, R_PJ=None, p_PJ=(0.0, 0.0, 0.0), n_sections=None, subbeams=1) -> int: ...

    def modal_beam(self, name): ...  # the ModalBeam added as ``name``


@dataclass(frozen=True)
class SubbeamChain:
    """A beam built as a chain of floating-frame sub-beams (read-only).

    Attributes
    ----------
    name : str
        Name of the whole beam; its tip frame is the parent ``"<name>.tip"``.
    beam : BeamProperties
        The whole beam (length L, m).
    parts : tuple of str
        Names of the sub-beams, root first (``"<name>.sub0"`` ...), each an
        ordinary :class:`~mbfmu.dynamics.flexible.system.ModalBeam` of the
        system (length ``L / n``).
    """

    name: str
    beam: BeamProperties
    parts: tuple

    @property
    def n(self) -> int:
        """Number of sub-beams."""
        return len(self.parts)


def subbeam_name(name: str, k: int) -> str:
    """Name of sub-beam ``k`` (0 = root) of the chained beam ``name``."""
    return f"{name}.sub{k}"


def default_sections(modes: ModeSet) -> int:
    """Mass stations per sub-beam: ``2 m`` (at least 4) for ``m`` modes of the
    largest family. Enough for the spin-up and elastica accuracies above
    (the section count changes the 10 rad/s peak by < 1e-5 m against
    ``3 m + 6``) at less than half the bodies."""
    return max(4, 2 * max(modes.bending_y, modes.bending_z, modes.axial, modes.torsion))


def add_subbeam_chain(builder: BeamBuilder, name: str, parent: int | str, joint: Joint,
                      beam: BeamProperties, modes: ModeSet, n: int, stiffening: bool, mass: float,
                      com: Sequence[float], inertia, R_PJ, p_PJ, n_sections: int | None) -> SubbeamChain:
    """Add ``beam`` to ``builder`` as ``n`` chained sub-beams (see the module
    docstring); arguments as :meth:`FlexibleSystemBuilder.add_beam`, whose
    ``subbeams=n`` calls this. The rigid ``mass`` sits on the root frame.

    Damping: every sub-beam gets ``D = beta K`` with the ``beta`` of the
    *whole* beam (first clamped-free frequency of length L), so the chain
    has the damping the whole beam's ``damping_ratio`` asks for.
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ModelError(f"beam {name!r}: subbeams = {n!r} must be an integer >= 1")
    if not isinstance(beam, BeamProperties):
        raise ModelError(f"beam {name!r}: beam must be BeamProperties")
    part = replace(beam, length=beam.length / int(n))
    dirs = tuple(d for d, k in (("y", modes.bending_y), ("z", modes.bending_z)) if k) or ("y", "z")
    beta = beam.stiffness_damping_factor(dirs)
    ns = default_sections(modes) if n_sections is None else n_sections
    names = []
    for k in range(int(n)):
        sub = subbeam_name(name, k)
        if k == 0:
            builder.add_beam(sub, parent, joint, part, modes, stiffening, mass, com, inertia, R_PJ, p_PJ,
                             n_sections=ns)
        else:
            builder.add_beam(sub, f"{names[-1]}.tip", Fixed(), part, modes, stiffening, n_sections=ns)
        builder.modal_beam(sub).D = beta * builder.modal_beam(sub).K
        names.append(sub)
    return SubbeamChain(name, beam, tuple(names))
