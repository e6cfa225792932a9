"""Assumed-modes beams in a floating frame of reference, inside an engine tree.

Formulation
-----------
A beam's rigid motion is that of its *floating frame* B (an ordinary body
with an ordinary joint). Its deformation is a sum of mode shapes
(``u = Phi_a q_a + Phi_b q_b + e Phi_phi q_phi``): axial ``u(x)``, transverse
``v(x)`` (along y), ``w(x)`` (along z) and twist ``theta(x)``. The distributed
mass is represented by cross-sections at Gauss-Legendre stations ``x_k``
(mass ``rho A w_k``, rotary inertia ``rho w_k diag(Iy + Iz, Iy, Iz)``); with
enough stations the quadrature of the mode-shape products is exact to
rounding, so the kinetic energy is the Euler-Bernoulli one.

Each section, and the deformed tip frame that carries child bodies, is
placed on B by a chain of *virtual* one-degree-of-freedom joints of the
engine (prismatic along x, y, z; revolute about z, y, x at the tip, about x
for the twist) whose coordinates ``c`` are known functions of the modal
coordinates:

* ``c = phi(x_k) . q`` (linear) for transverse, axial and twist motion, and
  for the tip rotations ``v'(L)``, ``-w'(L)``, ``theta(L)``;
* with geometric stiffening the axial coordinate also carries the
  foreshortening of the bent beam,
  ``- 1/2 q^T H(x_k) q``, ``H_ij(x) = integral_0^x phi_i' phi_j' ds``
  (the nonlinear kinematics of Kane, Ryan & Banerjee 1987).

The virtual tree is an ordinary rigid multibody tree, so its equations come
from the engine's kernels: with ``c_dot = G(q) v`` and
``c_ddot = G v_dot + gamma``, the generalized equations are the projection

    (G^T M_v G) v_dot = tau + G^T (tau_passive - rnea_v(c, c_dot, gamma))
                        - K q_f - D q_f_dot

with ``M_v`` from ``crba`` and the velocity-product and gravity terms from
``rnea`` of the virtual tree. This is ``M = sum J^T M_body J`` over the
bodies and sections, with the full inertia coupling between rigid motion and
deformation and the deformation-induced Coriolis terms exact, and the
kinetic energy ``1/2 v^T M v`` conserved in the absence of damping and input.
It costs a dense ``nv x nv`` solve per evaluation.

Fast path: the flexible articulated-body algorithm
---------------------------------------------------
:meth:`FlexibleSystem.accelerations` and :meth:`FlexibleSystem.rhs` run, by
default, the same equations in O(N) in C (``csrc/flexible.c``): the
articulated-body recursion of the rigid kernels with each beam reduced
locally. For a beam with frame B and modal coordinates ``eta``, every member
k (section or tip-chain body) moves as
``A_k = X_k A_B + J_k eta_ddot + zeta_k``; ``X_k``, ``J_k``, ``zeta_k``
come from a forward pass over the member's virtual chain with
``c_dot = (g - H eta) . eta_dot`` and
``c_ddot = (g - H eta) . eta_ddot - eta_dot^T H eta_dot``. With the member's
articulated inertia ``I_k`` and bias ``p_k`` (the tip's include the bodies
it carries, reduced earlier in the backward pass)

    M_ee = sum J^T I J,  M_Re = sum X^T I J,  b_e = sum J^T (I zeta + p)
    IA_B += sum X^T I X - M_Re M_ee^-1 M_eR
    pA_B += sum X^T (I zeta + p) + M_Re M_ee^-1 (Q - K eta - D eta_dot - b_e)
    eta_ddot = M_ee^-1 (Q - K eta - D eta_dot - b_e - M_eR A_B)

after which B's joint is an ordinary articulated-body step. Joint springs,
point springs (also between tip frames), sphere-plane contacts and cables
(on any body of the virtual tree), body wrenches ``f_ext`` and
prescribed joint accelerations (hybrid ABA: a driven joint hands its
articulated inertia up unreduced) are supported; a prescribed modal
coordinate or part of a multi-DOF joint falls back to the projection
(:meth:`FlexibleSystem.fast_path_reason` says why). ``method="projection"``
keeps the dense solve as the independent cross-check. The mass matrix is
the projection's; energies and kinematics come from the virtual tree (O(N)).
:meth:`FlexibleSystem.step_rk4` runs fixed RK4 steps on ``[q; v]`` with this
right-hand side entirely in C (the rigid kernels' loop, ``mb_rk4_steps``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ...errors import InputError, ModelError, SimulationError
from .. import _kernels
from .. import symbolic
from ..algorithms import forward_kinematics, point_jacobian, potential_energy
from ..algorithms import kinetic_energy as tree_kinetic_energy
from ..joints import Joint, Prismatic, Revolute
from ..model import JointForce, Model, ModelBuilder, check_vector
from .beam import BeamProperties
from .modes import ModeSet, SineModes, bending_modes, gauss_legendre
from .subbeams import SubbeamChain, add_subbeam_chain

_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
# body roles of the compiled flexible ABA (csrc/flexible.h)
_FX_RIGID, _FX_FRAME, _FX_DEFORM = 1, 2, 3


@dataclass
class ModalBeam:
    """One assumed-modes beam of a :class:`FlexibleSystem` (read-only after build).

    Attributes
    ----------
    name : str
    body : int
        Index of the floating frame body in ``FlexibleSystem.model``.
    beam : BeamProperties
    modes : ModeSet
    stiffening : bool
    offset : int
        Index of the beam's first modal coordinate in the generalized
        coordinates.
    shapes : dict
        ``"y"``, ``"z"``: BendingModes; ``"axial"``, ``"torsion"``: SineModes.
    slices : dict
        Slices of the beam's own modal vector for each shape family.
    K, D : ndarray (n, n)
        Modal stiffness and damping.
    modal_mass : ndarray (n, n)
        ``integral rho A phi_i phi_j dx`` (axial/bending), ``rho Ip`` (twist).
    """

    name: str
    body: int
    beam: BeamProperties
    modes: ModeSet
    stiffening: bool
    offset: int = 0
    shapes: dict = field(default_factory=dict)
    slices: dict = field(default_factory=dict)
    K: np.ndarray | None = None
    D: np.ndarray | None = None
    modal_mass: np.ndarray | None = None
    _tables: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return self.modes.size

    def _table(self, key: str, s: np.ndarray, what: int):
        """Shape values (``what`` = derivative order 0-2) or slope products
        (``what`` = -1) of family ``key`` at stations ``s``, remembered for
        the few station sets outputs ask for again at every step."""
        tag = (key, what, s.tobytes())
        out = self._tables.get(tag)
        if out is None:
            shp = self.shapes[key]
            out = shp.slope_products(s) if what < 0 else shp.values(s, what)
            if len(self._tables) < 64:
                self._tables[tag] = out
        return out

    def coordinates(self, q: np.ndarray) -> np.ndarray:
        """This beam's modal coordinates from the generalized coordinates."""
        return np.asarray(q)[self.offset:self.offset + self.n]

    def deflection(self, qf: np.ndarray, s) -> np.ndarray:
        """Displacement of the centroid line at stations ``s`` (m) in the
        floating frame, relative to the undeformed position ``(s, 0, 0)``;
        shape (len(s), 3), m. Includes the foreshortening when stiffening."""
        s = np.atleast_1d(np.asarray(s, float))
        if np.any(s < -1e-12) or np.any(s > self.beam.length * (1 + 1e-12)):
            raise InputError(f"beam {self.name!r}: stations must lie in [0, {self.beam.length}] m")
        out = np.zeros((s.size, 3))
        for key, col in (("axial", 0), ("y", 1), ("z", 2)):
            if key in self.shapes:
                out[:, col] += self._table(key, s, 0) @ qf[self.slices[key]]
        if self.stiffening:
            for key in ("y", "z"):
                if key in self.shapes:
                    H = self._table(key, s, -1)
                    qb = qf[self.slices[key]]
                    out[:, 0] -= 0.5 * np.einsum("kij,i,j->k", H, qb, qb)
        return out

    def twist(self, qf: np.ndarray, s) -> np.ndarray:
        """Twist angle at stations ``s`` (rad)."""
        s = np.atleast_1d(np.asarray(s, float))
        if "torsion" not in self.shapes:
            return np.zeros(s.size)
        return self._table("torsion", s, 0) @ qf[self.slices["torsion"]]

    def curvature(self, qf: np.ndarray, s, direction: str = "y") -> np.ndarray:
        """Bending curvature ``v''`` (direction y) or ``w''`` (z) at ``s``, 1/m."""
        s = np.atleast_1d(np.asarray(s, float))
        if direction not in self.shapes:
            return np.zeros(s.size)
        return self._table(direction, s, 2) @ qf[self.slices[direction]]

    def root_strain(self, qf: np.ndarray, direction: str = "y") -> float:
        """Axial bending strain at the root on the outer fibre at +y (or +z), 1:
        ``-c v''(0)`` (tension positive)."""
        c = self.beam.c_y if direction == "y" else self.beam.c_z
        return float(-c * self.curvature(qf, [0.0], direction)[0])


class FlexibleSystemBuilder:
    """Build a tree of rigid bodies and assumed-modes beams.

    Same calls as :class:`~mbfmu.dynamics.ModelBuilder` (``add_body``,
    ``add_joint_force``, ``add_spring``, ``add_contact_sphere_plane``,
    ``add_cable``) plus :meth:`add_beam`. A beam's
    deformed tip frame is the parent ``"<beam name>.tip"``.

    Parameters
    ----------
    gravity : sequence of float
        Gravity in the world frame, m/s^2.
    name : str
        Name of the system.

    Examples
    --------
    >>> from mbfmu.dynamics import Fixed, Revolute
    >>> from mbfmu.dynamics.flexible import BeamProperties, FlexibleSystemBuilder, ModeSet
    >>> beam = BeamProperties.rectangular(1.0, 0.01, 0.05, E=70e9, density=2700)
    >>> b = FlexibleSystemBuilder(gravity=(0, 0, 0))
    >>> link = b.add_beam("link", "world", Revolute(axis=(0, 0, 1)), beam, ModeSet(bending_y=3),
    ...                   mass=0.5, inertia=(1e-3, 1e-3, 2e-3))
    >>> tip_mass = b.add_body("payload", "link.tip", Fixed(), mass=0.2)
    >>> system = b.build()
    >>> system.nv
    4
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, -9.81), name: str = "flexible"):
        self._vb = ModelBuilder(gravity, name)
        self._beams: list[ModalBeam] = []
        self._beam_index: dict[str, int] = {}
        self._tip_body: dict[str, int] = {}
        self._chains: dict[str, SubbeamChain] = {}
        # virtual deformation joints: (virtual body, beam index, kind, station)
        self._virtual: list[tuple[int, int, str, float]] = []
        self._real: list[int] = []

    # ---- rigid bodies -------------------------------------------------------
    def _parent(self, parent: int | str) -> int:
        if isinstance(parent, str) and parent.endswith(".tip") and parent[:-4] in self._chains:
            parent = self._chains[parent[:-4]].parts[-1] + ".tip"
        if isinstance(parent, str) and parent.endswith(".tip") and parent[:-4] in self._beam_index:
            name = parent[:-4]
            if name not in self._tip_body:
                self._tip_body[name] = self._add_tip_chain(self._beams[self._beam_index[name]])
            return self._tip_body[name]
        return self._vb.body_index(parent)

    def add_body(self, name: str, parent: int | str, joint: Joint, mass: float = 0.0,
                 com: Sequence[float] = (0.0, 0.0, 0.0), inertia=np.zeros((3, 3)),
                 R_PJ: np.ndarray | None = None, p_PJ: Sequence[float] = (0.0, 0.0, 0.0),
                 joint_name: str | None = None) -> int:
        """Add a rigid body (arguments as :meth:`ModelBuilder.add_body`);
        ``parent`` may be ``"<beam>.tip"``. Returns its index in the model."""
        i = self._vb.add_body(name, self._parent(parent), joint, mass, com, inertia, R_PJ, p_PJ,
                              joint_name)
        self._real.append(i)
        return i

    def add_joint_force(self, body: int | str, force: JointForce) -> None:
        """Spring/damper/limit on the joint of a rigid body or a beam's frame."""
        i = self._vb.body_index(body)
        if i not in self._real:
            raise ModelError(f"joint force on {body!r}: only rigid bodies and beam frames have joints")
        self._vb.add_joint_force(i, force)

    def add_spring(self, body_a, point_a, body_b, point_b, stiffness, damping=0.0,
                   rest_length=0.0, name="") -> None:
        """Point-to-point spring-damper between two bodies (see ModelBuilder)."""
        self._vb.add_spring(self._parent(body_a), point_a, self._parent(body_b), point_b, stiffness,
                            damping, rest_length, name)

    def add_contact_sphere_plane(self, body, center_B, radius, normal_W, offset, stiffness, damping=0.0,
                                 friction=0.0, slip_speed=1e-2, ramp=1e-3, name=""):
        """Sphere-plane contact on a rigid body, beam frame or ``"<beam>.tip"``
        (arguments and law as :meth:`ModelBuilder.add_contact_sphere_plane`)."""
        return self._vb.add_contact_sphere_plane(self._parent(body), center_B, radius, normal_W, offset,
                                                 stiffness, damping, friction, slip_speed, ramp, name)

    def add_cable(self, anchor_W, body, point_B, rest_length, stiffness, damping=0.0, ramp=1e-3, name=""):
        """Tension-only cable from a world anchor to a rigid body, beam frame
        or ``"<beam>.tip"`` (arguments and law as :meth:`ModelBuilder.add_cable`)."""
        return self._vb.add_cable(anchor_W, self._parent(body), point_B, rest_length, stiffness, damping,
                                  ramp, name)

    # ---- beams ----------------------------------------------------------------
    def add_beam(self, name: str, parent: int | str, joint: Joint, beam: BeamProperties,
                 modes: ModeSet = ModeSet(), stiffening: bool = True, mass: float = 0.0,
                 com: Sequence[float] = (0.0, 0.0, 0.0), inertia=np.zeros((3, 3)),
                 R_PJ: np.ndarray | None = None, p_PJ: Sequence[float] = (0.0, 0.0, 0.0),
                 n_sections: int | None = None, subbeams: int = 1) -> int:
        """Add an assumed-modes beam whose floating frame moves with ``joint``.

        Parameters
        ----------
        name : str
            Beam name; the floating frame body gets this name and the tip
            frame is the parent ``"<name>.tip"``.
        parent, joint, R_PJ, p_PJ
            As for a rigid body: the floating frame is the joint's child frame
            (beam root at its origin, beam along its x axis).
        beam : BeamProperties
        modes : ModeSet
        stiffening : bool
            Include the foreshortening (geometric/centrifugal stiffening).
        mass, com, inertia
            Rigid mass carried by the floating frame itself (a hub, a motor
            rotor), kg, m, kg m^2.
        n_sections : int, optional
            Number of Gauss-Legendre mass stations (default ``3 n + 6`` with
            n the largest mode count of one family; per sub-beam with
            ``subbeams > 1``: ``max(4, 2 n)``).
        subbeams : int
            Cut the beam into this many equal sub-beams, each carrying
            ``modes`` in its own floating frame and clamped to the deformed
            tip frame of the one before
            (:mod:`~mbfmu.dynamics.flexible.subbeams`): geometrically exact
            as ``subbeams`` grows (large deflections, the elastica); use
            ``ModeSet(bending_y=2, tip_shapes=True)`` per sub-beam. The
            sub-beams are the beams ``"<name>.sub0"`` (root frame, on
            ``joint``) ... ``"<name>.sub<n-1>"``; ``"<name>.tip"`` is the tip
            of the last; :meth:`FlexibleSystem.chain` describes them.
            Default 1: one beam called ``name``.

        Returns
        -------
        int
            Index of the floating frame body (of the root sub-beam).
        """
        if subbeams != 1 or isinstance(subbeams, bool):
            if name in self._chains or name in self._beam_index:
                raise ModelError(f"beam {name!r} is defined twice")
            if not isinstance(modes, ModeSet):
                raise ModelError(f"beam {name!r}: modes must be a ModeSet")
            chain = add_subbeam_chain(self, name, parent, joint, beam, modes, subbeams, stiffening, mass,
                                      com, inertia, R_PJ, p_PJ, n_sections)
            self._chains[name] = chain
            return self._beams[self._beam_index[chain.parts[0]]].body
        if name in self._chains:
            raise ModelError(f"beam {name!r} is defined twice")
        if not isinstance(beam, BeamProperties):
            raise ModelError(f"beam {name!r}: beam must be BeamProperties")
        if not isinstance(modes, ModeSet):
            raise ModelError(f"beam {name!r}: modes must be a ModeSet")
        if name in self._beam_index:
            raise ModelError(f"beam {name!r} is defined twice")
        nmax = max(modes.bending_y, modes.bending_z, modes.axial, modes.torsion)
        ns = 3 * nmax + 6 if n_sections is None else n_sections
        if not isinstance(ns, (int, np.integer)) or ns < 2:
            raise ModelError(f"beam {name!r}: n_sections = {n_sections!r} must be an integer >= 2")
        B = self.add_body(name, parent, joint, mass, com, inertia, R_PJ, p_PJ)
        L = beam.length
        rec = ModalBeam(name, B, beam, modes, bool(stiffening))
        k = 0
        blocks_K, blocks_M = [], []
        bend = lambda n: bending_modes(n, L, modes.boundary, modes.tip_shapes)  # noqa: E731
        for key, n, make, stiff in (
                ("y", modes.bending_y, bend, beam.EIz),
                ("z", modes.bending_z, bend, beam.EIy),
                ("axial", modes.axial, lambda n: SineModes(n, L), beam.EA),
                ("torsion", modes.torsion, lambda n: SineModes(n, L), beam.GJ)):
            if n == 0:
                continue
            shp = make(n)
            rec.shapes[key] = shp
            rec.slices[key] = slice(k, k + n)
            k += n
            blocks_K.append(shp.stiffness(stiff))
            xg, wg = gauss_legendre(200)
            xs = 0.5 * L * (xg + 1)
            P = shp.values(xs)
            mu = beam.polar_inertia_per_length if key == "torsion" else beam.mass_per_length
            blocks_M.append(0.5 * L * mu * (P.T * wg) @ P)
        rec.K = _block_diag(blocks_K)
        rec.modal_mass = _block_diag(blocks_M)
        dirs = tuple(d for d in ("y", "z") if d in rec.shapes) or ("y", "z")
        rec.D = beam.stiffness_damping_factor(dirs) * rec.K
        bi = len(self._beams)
        self._beams.append(rec)
        self._beam_index[name] = bi

        xg, wg = gauss_legendre(ns)
        xs, ws = 0.5 * L * (xg + 1), 0.5 * L * wg
        rho = beam.density
        for j, (x, w) in enumerate(zip(xs, ws)):
            chain = self._translation_kinds(rec)
            if "torsion" in rec.shapes:
                chain.append(("rx", Revolute(axis=_X)))
            body = B
            place = (x, 0.0, 0.0)
            for c, (kind, jt) in enumerate(chain):
                last = c == len(chain) - 1
                m = beam.mass_per_length * w if last else 0.0
                I = rho * w * np.diag([beam.Iy + beam.Iz, beam.Iy, beam.Iz]) if last else np.zeros((3, 3))
                body = self._vb.add_body(f"{name}.s{j}.{kind}", body, jt, mass=m, inertia=I, p_PJ=place)
                self._virtual.append((body, bi, kind, x))
                place = (0.0, 0.0, 0.0)
        return B

    def modal_beam(self, name: str) -> ModalBeam:
        """The record of the beam (or sub-beam) called ``name`` added so far."""
        if name not in self._beam_index:
            raise ModelError(f"no beam {name!r} has been added")
        return self._beams[self._beam_index[name]]

    def _translation_kinds(self, rec: ModalBeam) -> list:
        chain = []
        if "axial" in rec.shapes or (rec.stiffening and ("y" in rec.shapes or "z" in rec.shapes)):
            chain.append(("px", Prismatic(axis=_X)))
        if "y" in rec.shapes:
            chain.append(("py", Prismatic(axis=_Y)))
        if "z" in rec.shapes:
            chain.append(("pz", Prismatic(axis=_Z)))
        return chain

    def _add_tip_chain(self, rec: ModalBeam) -> int:
        bi = self._beam_index[rec.name]
        chain = self._translation_kinds(rec)
        if "y" in rec.shapes:
            chain.append(("rz", Revolute(axis=_Z)))
        if "z" in rec.shapes:
            chain.append(("ry", Revolute(axis=_Y)))
        if "torsion" in rec.shapes:
            chain.append(("rx", Revolute(axis=_X)))
        body = rec.body
        place = (rec.beam.length, 0.0, 0.0)
        for kind, jt in chain:
            body = self._vb.add_body(f"{rec.name}.tip.{kind}", body, jt, p_PJ=place)
            self._virtual.append((body, bi, kind, rec.beam.length))
            place = (0.0, 0.0, 0.0)
        return body

    def build(self) -> "FlexibleSystem":
        """Validate and pack."""
        return FlexibleSystem(self._vb.build(), self._beams, self._virtual, self._real, self._chains)


def _concat(parts) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def _block_diag(blocks):
    n = sum(b.shape[0] for b in blocks)
    out = symbolic.zeros((n, n))
    k = 0
    for b in blocks:
        m = b.shape[0]
        out[k:k + m, k:k + m] = b
        k += m
    return out


class FlexibleSystem:
    """Equations of motion of a tree with assumed-modes beams.

    Generalized coordinates ``q = [q_r; q_f]``: the coordinates of the rigid
    joints (in body order, as the engine stores them, quaternions included)
    then the modal coordinates of each beam in the order the beams were
    added; velocities ``v = [v_r; q_f_dot]``.

    Attributes
    ----------
    model : Model
        The virtual engine tree (rigid bodies, floating frames, sections, tip
        chains); body indices of poses and geometry refer to it.
    beams : tuple of ModalBeam
    nq, nv, nf : int
        Sizes of q, v and of the modal coordinates.
    flex_tables : dict
        The compiled flexible ABA's tables (``csrc/flexible.h``: body roles,
        index maps, station tables, modal stiffness and damping), as handed
        to the kernel; the native FMU runtime packs them.

    Parameters
    ----------
    model : Model
        The virtual engine tree.
    beams : sequence of ModalBeam
        The beams, in the order they were added.
    virtual : sequence of tuple
        The virtual deformation joints: ``(virtual body, beam index, kind,
        station along the beam in m)``.
    real : sequence of int
        Bodies of the virtual tree that are the user's own bodies.
    chains : dict, optional
        The beams built of sub-beams: name -> SubbeamChain.

    Notes
    -----
    Built by :meth:`FlexibleSystemBuilder.build`; not meant to be called by hand.
    """

    def __init__(self, model: Model, beams, virtual, real, chains=None):
        self.model = model
        self.beams = tuple(beams)
        self.chains = dict(chains or {})
        self._beam_by_name = {b.name: b for b in self.beams}
        h = model
        real = sorted(real)
        self.real_bodies = tuple(real)
        rq, rv = [], []
        for i in real:
            j = h.joints[i]
            rq += list(range(h.idx_q[i], h.idx_q[i] + j.nq))
            rv += list(range(h.idx_v[i], h.idx_v[i] + j.nv))
        self._vq_rigid = np.array(rq, dtype=int)
        self._vv_rigid = np.array(rv, dtype=int)
        self.nq_rigid, self.nv_rigid = len(rq), len(rv)
        off = 0
        for b in self.beams:
            b.offset = self.nq_rigid + off
            off += b.n
        self.nf = off
        self.nq = self.nq_rigid + self.nf
        self.nv = self.nv_rigid + self.nf
        # virtual deformation joints: linear rows over q_f and quadratic terms
        nd = len(virtual)
        self._vq_def = np.array([h.idx_q[v[0]] for v in virtual], dtype=int)
        self._vv_def = np.array([h.idx_v[v[0]] for v in virtual], dtype=int)
        Gf = symbolic.zeros((nd, self.nf))  # expressions kept in a recorded build (symbolic.py) for the tables
        quad_rows, quad_H = [], []
        for r, (body, bi, kind, x) in enumerate(virtual):
            b = self.beams[bi]
            o = b.offset - self.nq_rigid
            if kind == "px":
                if "axial" in b.shapes:
                    sl = b.slices["axial"]
                    Gf[r, o + sl.start:o + sl.stop] = b.shapes["axial"].values([x])[0]
                if b.stiffening:
                    H = symbolic.zeros((self.nf, self.nf))
                    for key in ("y", "z"):
                        if key in b.shapes:
                            sl = b.slices[key]
                            s = slice(o + sl.start, o + sl.stop)
                            H[s, s] = b.shapes[key].slope_products([x])[0]
                    quad_rows.append(r)
                    quad_H.append(H)
            elif kind in ("py", "pz"):
                key = kind[1]
                sl = b.slices[key]
                Gf[r, o + sl.start:o + sl.stop] = b.shapes[key].values([x])[0]
            elif kind == "rz":
                sl = b.slices["y"]
                Gf[r, o + sl.start:o + sl.stop] = b.shapes["y"].values([x], 1)[0]
            elif kind == "ry":
                sl = b.slices["z"]
                Gf[r, o + sl.start:o + sl.stop] = -b.shapes["z"].values([x], 1)[0]
            elif kind == "rx":
                sl = b.slices["torsion"]
                Gf[r, o + sl.start:o + sl.stop] = b.shapes["torsion"].values([x])[0]
        self._Gf = np.asarray(symbolic.value(Gf), float)
        self._quad_rows = np.array(quad_rows, dtype=int)
        # explicit leading sizes: -1 cannot be inferred from zero-size arrays (no beams)
        self._quad_H = np.array(quad_H, float).reshape(len(quad_H), self.nf, self.nf)
        self._quad_H2 = self._quad_H.reshape(len(quad_H) * self.nf, self.nf)
        self._vv_quad = self._vv_def[self._quad_rows]
        self.K = np.zeros((self.nf, self.nf))
        self.D = np.zeros((self.nf, self.nf))
        for b in self.beams:
            s = slice(b.offset - self.nq_rigid, b.offset - self.nq_rigid + b.n)
            self.K[s, s] = b.K
            self.D[s, s] = b.D
        self._G = np.zeros((model.nv, self.nv))
        self._G[self._vv_rigid, np.arange(self.nv_rigid)] = 1.0
        self._has_passive = bool(model.joint_forces or model.springs or model.contacts or model.cables
                                 or model.drives)
        self._minimal = not model.has_quaternions
        self._pack_flexible_aba(virtual, Gf, quad_rows, quad_H)

    # ---- packing for the compiled flexible ABA ------------------------------
    def _pack_flexible_aba(self, virtual, Gf, quad_rows, quad_H) -> None:
        """Hand the kernel the body roles, the public index maps, each
        deformation joint's ``g`` row and ``H`` block (in its beam's own
        modal coordinates) and the modal stiffness and damping."""
        h = self.model
        role, beam_of, pq, pv = self._rigid_roles()
        goff, hoff, gtab, htab = self._station_tables(virtual, Gf, quad_rows, quad_H, role, beam_of)
        kd, kdoff = [], []
        for b in self.beams:
            kdoff.append(sum(a.size for a in kd))
            kd += [symbolic.real_array(b.K).ravel(), symbolic.real_array(b.D).ravel()]
        q_names = tuple(h.q_names[k] for k in self._vq_rigid) + tuple(
            f"{b.name}.eta[{k + 1}]" for b in self.beams for k in range(b.n))
        v_names = tuple(h.v_names[k] for k in self._vv_rigid) + tuple(
            f"{b.name}.eta_dot[{k + 1}]" for b in self.beams for k in range(b.n))
        self.q_names, self.v_names = q_names, v_names  # the coordinates' names in messages, 1-based
        ib = lambda xs: np.array(xs, np.intc)  # noqa: E731
        # the kernel's tables, kept for the native FMU runtime (mbfmu.fmu.native.flexible)
        self.flex_tables = dict(
            role=role, beam=beam_of, pq=pq, pv=pv, goff=goff, hoff=hoff, gtab=gtab, htab=htab,
            bbody=ib([b.body for b in self.beams]), bq=ib([b.offset for b in self.beams]),
            bv=ib([b.offset - self.nq_rigid + self.nv_rigid for b in self.beams]),
            bnm=ib([b.n for b in self.beams]), kdoff=ib(kdoff), kd=_concat(kd))
        t = self.flex_tables
        num = lambda a: np.asarray(symbolic.value(a), float)  # noqa: E731  (the kernel's numbers)
        self._fh = _kernels.new_flex(
            h._h, self.nq, self.nv, role, beam_of, pq, pv, goff, hoff, num(gtab), num(htab),
            t["bbody"], t["bq"], t["bv"], t["bnm"], t["kdoff"], num(t["kd"]), q_names, v_names,
            tuple(b.name for b in self.beams))
        self._zero_tau = np.zeros(self.nv)
        self._aba_reasons: dict = {}

    def _rigid_roles(self):
        """Role, beam, and public first q / v index of every body; also the
        map from a public velocity index to its rigid joint (``_v_joint``)."""
        h = self.model
        nb = h.nbodies
        role = np.zeros(nb, np.intc)
        beam_of = np.full(nb, -1, np.intc)
        pq = np.zeros(nb, np.intc)
        pv = np.zeros(nb, np.intc)
        frames = {b.body: k for k, b in enumerate(self.beams)}
        kq = kv = 0
        self._v_joint = [None] * self.nv  # public v index -> (first, size) of its rigid joint
        for i in self.real_bodies:
            j = h.joints[i]
            role[i] = _FX_FRAME if i in frames else _FX_RIGID
            beam_of[i] = frames.get(i, -1)
            pq[i], pv[i] = kq, kv
            for k in range(j.nv):
                self._v_joint[kv + k] = (kv, j.nv)
            kq += j.nq
            kv += j.nv
        return role, beam_of, pq, pv

    def _station_tables(self, virtual, Gf, quad_rows, quad_H, role, beam_of):
        """Offsets and flat tables of the ``g`` rows and ``H`` blocks of the
        deformation joints (marks their roles)."""
        nb = self.model.nbodies
        goff = np.full(nb, -1, np.intc)
        hoff = np.full(nb, -1, np.intc)
        gtab, htab = [], []
        ng = nh = 0
        H_of_row = dict(zip(quad_rows, quad_H))
        for r, (body, bi, _kind, _x) in enumerate(virtual):
            b = self.beams[bi]
            o = b.offset - self.nq_rigid
            sl = slice(o, o + b.n)
            role[body], beam_of[body] = _FX_DEFORM, bi
            goff[body] = ng
            gtab.append(Gf[r, sl])
            ng += b.n
            if r in H_of_row:
                hoff[body] = nh
                htab.append(H_of_row[r][sl, sl].ravel())
                nh += b.n * b.n
        return goff, hoff, _concat(gtab), _concat(htab)

    # ---- sizes and state helpers ------------------------------------------
    def beam(self, name: str) -> ModalBeam:
        """The beam called ``name``."""
        try:
            return self._beam_by_name[name]
        except KeyError:
            if name in self.chains:
                raise InputError(f"beam {name!r} is made of sub-beams {', '.join(self.chains[name].parts)}; "
                                 "use chain(name) or one of them") from None
            raise InputError(f"no beam {name!r}; beams: {', '.join(self._beam_by_name)}") from None

    def chain(self, name: str) -> SubbeamChain:
        """The beam ``name`` added with ``subbeams > 1``: its sub-beams."""
        try:
            return self.chains[name]
        except KeyError:
            raise InputError(f"no beam made of sub-beams is called {name!r}; such beams: "
                             f"{', '.join(self.chains) or 'none'}") from None

    def neutral(self) -> np.ndarray:
        """Neutral generalized configuration (zero deformation)."""
        return np.concatenate([self.model.neutral()[self._vq_rigid], np.zeros(self.nf)])

    def virtual_state(self, q: np.ndarray, v: np.ndarray | None = None):
        """Virtual-tree configuration ``c`` (and ``c_dot``, ``G``, ``gamma``).

        Returns
        -------
        c : ndarray (model.nq,)
        c_dot : ndarray (model.nv,) or None
        G : ndarray (model.nv, nv)
            ``c_dot = G v``.
        gamma : ndarray (model.nv,) or None
            ``c_ddot = G v_dot + gamma``.
        """
        nvr = self.nv_rigid
        qf = q[self.nq_rigid:]
        c = np.zeros(self.model.nq)
        c[self._vq_rigid] = q[:self.nq_rigid]
        Gdef = self._Gf
        cdef = Gdef @ qf
        nquad = self._quad_rows.size
        if nquad:
            Hq = (self._quad_H2 @ qf).reshape(nquad, self.nf)
            cdef[self._quad_rows] -= 0.5 * (Hq @ qf)
            Gdef = Gdef.copy()
            Gdef[self._quad_rows] -= Hq
        c[self._vq_def] = cdef
        G = self._G.copy()
        G[self._vv_def, nvr:] = Gdef
        if v is None:
            return c, None, G, None
        vf = v[nvr:]
        cd = np.empty(self.model.nv)
        cd[self._vv_rigid] = v[:nvr]
        cd[self._vv_def] = Gdef @ vf
        gamma = np.zeros(self.model.nv)
        if nquad:
            gamma[self._vv_quad] = -((self._quad_H2 @ vf).reshape(nquad, self.nf) @ vf)
        return c, cd, G, gamma

    # ---- equations of motion ---------------------------------------------------
    def mass_matrix(self, q) -> np.ndarray:
        """Generalized mass matrix ``G^T M_v G`` (nv, nv)."""
        q = check_vector(q, self.nq, "q")
        c, _, G, _ = self.virtual_state(q)
        return G.T @ _kernels.crba(self.model._h, c) @ G

    def generalized_forces(self, q, v, tau=None, f_ext=None) -> np.ndarray:
        """``F`` with ``M(q) v_dot = F``: inputs ``tau`` (nv,), body wrenches
        ``f_ext`` (model.nbodies, 6, body frame), joint springs and point
        springs, gravity, velocity products, modal stiffness and damping."""
        q = check_vector(q, self.nq, "q")
        v = check_vector(v, self.nv, "v")
        c, cd, G, gamma = self.virtual_state(q, v)
        return self._forces(q, v, c, cd, G, gamma, tau, f_ext)

    def _forces(self, q, v, c, cd, G, gamma, tau, f_ext):
        h = self.model._h
        fe = None if f_ext is None else np.array(f_ext, float)
        if self._has_passive:
            tau_p, f_p = _kernels.passive_forces(h, c, cd)
            fe = f_p if fe is None else fe + f_p
            bias = _kernels.rnea(h, c, cd, gamma, fe) - tau_p
        else:
            bias = _kernels.rnea(h, c, cd, gamma, fe)
        F = -(G.T @ bias)
        if tau is not None:
            F += tau
        qf, vf = q[self.nq_rigid:], v[self.nv_rigid:]
        F[self.nv_rigid:] -= self.K @ qf + self.D @ vf
        return F

    def fast_path_reason(self, prescribed=None) -> str | None:
        """Why :meth:`accelerations` cannot use the compiled flexible ABA for
        these prescribed coordinates (``None`` when it can).

        The hybrid ABA drives whole rigid joints: a prescribed modal
        coordinate, or a prescribed subset of a multi-DOF joint's
        coordinates, needs the dense projection."""
        if prescribed is None:
            return None
        idx = tuple(int(i) for i in np.atleast_1d(np.asarray(prescribed[0], int)))
        reason = self._aba_reasons.get(idx, False)
        if reason is not False:
            return reason
        reason = None
        for i in idx:
            if not 0 <= i < self.nv:
                reason = f"prescribed index {i} is out of range [0, {self.nv})"
                break
            joint = self._v_joint[i]
            if joint is None:
                reason = f"prescribed coordinate {i} is a modal coordinate"
                break
            first, n = joint
            if any(k not in idx for k in range(first, first + n)):
                reason = (f"prescribed coordinate {i} is one of the {n} coordinates of a joint; "
                          "prescribe all of them for the fast path")
                break
        self._aba_reasons[idx] = reason
        return reason

    def accelerations(self, q, v, tau=None, f_ext=None, prescribed=None,
                      method: str = "auto") -> np.ndarray:
        """Generalized accelerations ``v_dot``, m/s^2 and rad/s^2 (modal: 1/s^2).

        Parameters
        ----------
        q, v : array_like (nq,), (nv,)
        tau : array_like (nv,), optional
            Generalized forces (joint forces and torques, modal forces).
        f_ext : array_like (model.nbodies, 6), optional
            Wrenches ``[n; f]`` on the bodies of :attr:`model`, body frame,
            N m and N.
        prescribed : (indices, accelerations), optional
            Imposed accelerations of some velocity coordinates (driven
            joints); the others follow.
        method : {"auto", "aba", "projection"}
            ``"aba"``: the compiled O(N) flexible articulated-body algorithm;
            ``"projection"``: the dense ``(G^T M_v G)`` solve (independent
            cross-check); ``"auto"``: ABA unless :meth:`fast_path_reason`
            gives a reason not to.
        """
        if self._use_aba(prescribed, method):  # the binding checks sizes and finiteness
            return self._aba(q, v, tau, f_ext, prescribed)[1]
        q = check_vector(q, self.nq, "q")
        v = check_vector(v, self.nv, "v")
        c, cd, G, gamma = self.virtual_state(q, v)
        return self._accelerations(q, v, c, cd, G, gamma, tau, f_ext, prescribed)

    def _use_aba(self, prescribed, method) -> bool:
        if method == "projection":
            return False
        if method not in ("auto", "aba"):
            raise InputError(f"method {method!r} must be 'auto', 'aba' or 'projection'")
        reason = self.fast_path_reason(prescribed)
        if reason is not None and method == "aba":
            raise InputError(f"flexible ABA: {reason}")
        return reason is None

    def _aba(self, q, v, tau, f_ext, prescribed):
        """``(dq/dt, dv/dt)`` from the compiled flexible ABA."""
        t = self._zero_tau if tau is None else tau
        if prescribed is None:
            return _kernels.flex_rhs(self._fh, q, v, t, f_ext)
        idx, acc = prescribed
        return _kernels.flex_rhs(self._fh, q, v, t, f_ext, np.atleast_1d(np.asarray(idx, np.intp)),
                                 np.atleast_1d(np.asarray(acc, float)))

    def _accelerations(self, q, v, c, cd, G, gamma, tau, f_ext, prescribed):
        M = G.T @ _kernels.crba(self.model._h, c) @ G
        F = self._forces(q, v, c, cd, G, gamma, tau, f_ext)
        return solve_prescribed(M, F, prescribed)

    def qdot(self, q, v) -> np.ndarray:
        """Configuration rate (quaternion rates for ball and free joints)."""
        if self._minimal:
            return np.array(v, float)
        c, cd, _, _ = self.virtual_state(q, v)
        return self._qdot(q, v, c, cd)

    def _qdot(self, q, v, c, cd):
        if self._minimal:
            return np.array(v, float)
        out = np.empty(self.nq)
        out[:self.nq_rigid] = _kernels.qdot(self.model._h, c, cd)[self._vq_rigid]
        out[self.nq_rigid:] = v[self.nv_rigid:]
        return out

    def rhs(self, t: float, x: np.ndarray, tau=None, f_ext=None, prescribed=None,
            method: str = "auto") -> np.ndarray:
        """``d/dt [q; v]`` for the state ``x = [q; v]`` (the integrators' fast
        path; ``method`` as in :meth:`accelerations`)."""
        q, v = x[:self.nq], x[self.nq:]
        if self._use_aba(prescribed, method):
            qd, vd = self._aba(q, v, tau, f_ext, prescribed)
            return np.concatenate([qd, vd])
        c, cd, G, gamma = self.virtual_state(q, v)
        return np.concatenate([self._qdot(q, v, c, cd),
                               self._accelerations(q, v, c, cd, G, gamma, tau, f_ext, prescribed)])

    def step_rk4(self, q, v, tau, h: float, n: int = 1, f_ext=None,
                 prescribed=None) -> tuple[np.ndarray, np.ndarray]:
        """State after ``n`` classical RK4 steps of ``h`` s, in compiled code.

        The same steps as a Python RK4 around :meth:`rhs` (the compiled
        flexible ABA, inputs held over the ``n`` steps), with the quaternions
        of ball and free joints renormalized after each step, and no Python
        call per stage.

        Parameters
        ----------
        q, v : array_like (nq,), (nv,)
            Start state (m, rad, modal coordinates; m/s, rad/s, modal rates).
        tau : array_like (nv,) or None
            Generalized forces held over the steps (N, N m, modal forces).
        h : float
            Step, s (> 0).
        n : int
            Number of steps (>= 0).
        f_ext : array_like (model.nbodies, 6), optional
            Body wrenches ``[n; f]`` held over the steps, body frame, N m and N.
        prescribed : None
            Prescribed accelerations are refused (the compiled loop has no
            driven joints): integrate those with :func:`simulate`.

        Returns
        -------
        q, v : ndarray (nq,), (nv,)

        Raises
        ------
        InputError
            Wrong sizes, non-finite inputs (naming the coordinate), a bad
            step or count, or ``prescribed`` given.
        SimulationError
            A singular joint or modal mass, or a state that became
            non-finite (step beyond the stability limit).
        """
        if prescribed is not None:
            raise InputError("step_rk4: the compiled loop takes no prescribed accelerations; "
                             "integrate driven joints with simulate(..., prescribed=...) or "
                             "around rhs(..., prescribed=...)")
        t = self._zero_tau if tau is None else tau
        return _kernels.flex_rk4(self._fh, q, v, t, h, n, f_ext)

    # ---- kinematics and energy ---------------------------------------------------
    def poses(self, q) -> tuple[np.ndarray, np.ndarray]:
        """World rotation and origin of every body of :attr:`model`."""
        c, _, _, _ = self.virtual_state(np.asarray(q, float))
        kin = forward_kinematics(self.model, c)
        return kin.R_WB, kin.p_WB

    def point_position(self, q, body: int | str, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
        """World position of a point fixed on ``body`` (m)."""
        R, p = self.poses(q)
        i = self.model.body_index(body)
        return p[i] + R[i] @ np.asarray(p_BP, float)

    def point_jacobian(self, q, body: int | str, p_BP=(0.0, 0.0, 0.0)) -> np.ndarray:
        """(3, nv) world velocity Jacobian of a point fixed on ``body``."""
        c, _, G, _ = self.virtual_state(np.asarray(q, float))
        return point_jacobian(self.model, c, body, p_BP) @ G

    def kinetic_energy(self, q, v) -> float:
        """``1/2 v^T M v``, J, summed body by body over the virtual tree
        (its velocities are ``c_dot = G v``), O(N) without the mass matrix."""
        c, cd, _, _ = self.virtual_state(np.asarray(q, float), np.asarray(v, float))
        return tree_kinetic_energy(self.model, c, cd)

    def potential_energy(self, q) -> float:
        """Gravity, the force elements (joint and point springs, contacts,
        cables) and strain energy ``1/2 q_f^T K q_f``, J."""
        q = np.asarray(q, float)
        c, _, _, _ = self.virtual_state(q)
        qf = q[self.nq_rigid:]
        return potential_energy(self.model, c) + 0.5 * float(qf @ self.K @ qf)

    def tip_frame(self, q, beam: str) -> tuple[np.ndarray, np.ndarray]:
        """World rotation and position of the deformed tip frame of ``beam``
        (computed from the mode shapes; does not need a tip chain). For a
        beam made of sub-beams, the tip of its last sub-beam."""
        if beam in self.chains:
            beam = self.chains[beam].parts[-1]
        b = self.beam(beam)
        R, p = self.poses(q)
        qf = b.coordinates(q)
        L = b.beam.length
        d = b.deflection(qf, [L])[0]
        from ..spatial import rot_x, rot_y, rot_z
        Rt = np.eye(3)
        if "y" in b.shapes:
            Rt = Rt @ rot_z(float(b.shapes["y"].values([L], 1)[0] @ qf[b.slices["y"]]))
        if "z" in b.shapes:
            Rt = Rt @ rot_y(-float(b.shapes["z"].values([L], 1)[0] @ qf[b.slices["z"]]))
        if "torsion" in b.shapes:
            Rt = Rt @ rot_x(float(b.twist(qf, [L])[0]))
        return R[b.body] @ Rt, p[b.body] + R[b.body] @ (np.array([L, 0, 0]) + d)


def solve_prescribed(M: np.ndarray, F: np.ndarray, prescribed=None) -> np.ndarray:
    """Solve ``M a = F`` with some accelerations imposed.

    Parameters
    ----------
    M : ndarray, shape (n, n)
        Mass matrix.
    F : ndarray, shape (n,)
        Generalized forces.
    prescribed : tuple, optional
        ``(indices, values)``: the accelerations imposed (rad/s^2 or m/s^2).

    Returns
    -------
    ndarray, shape (n,)
        The accelerations.
    """
    try:
        if prescribed is None:
            return np.linalg.solve(M, F)
        idx, acc = prescribed
        idx = np.atleast_1d(np.asarray(idx, int))
        acc = np.atleast_1d(np.asarray(acc, float))
        free = np.ones(M.shape[0], bool)
        free[idx] = False
        a = np.empty(M.shape[0])
        a[idx] = acc
        Mf = M[free]
        a[free] = np.linalg.solve(Mf[:, free], F[free] - Mf[:, idx] @ acc)
        return a
    except np.linalg.LinAlgError:
        raise SimulationError("mass matrix is singular") from None
