"""Two-link planar manipulator with flexible links.

The flexible-arm test case of the master's thesis "Visual simulation of
mechanical multibody systems with flexible bodies" (mechatronic engineering,
in Chinese; software MDAS II), modelled as in a review of the dynamics
modelling of flexible manipulators (floating frame, assumed modes, finite
segments; in Chinese).

The arm moves in the horizontal x-y plane: joint 1 at the world origin, both
joint axes along z, each link a uniform aluminium strip (thin in the plane of
motion, so it bends in that plane) clamped to the rotor of its joint motor.
The elbow motor's stator sits on the tip of link 1; a payload sits on the tip
of link 2. Gravity acts along -z and does no work in the plane of motion.

Two link models, chosen by ``method``:

* ``"modes"`` (default): assumed modes in a floating frame (as in the review), the
  frame of each link being its motor rotor, ``n_modes`` shapes per link,
  geometric stiffening included. With ``tip_shapes=1`` (default) the shapes
  span the static deflections under a tip force and a tip moment plus the
  first ``n_modes - 2`` clamped-free Euler-Bernoulli modes
  (:class:`~mbfmu.dynamics.flexible.TipLoadedModes`); with ``tip_shapes=0``
  the first ``n_modes`` clamped-free modes. The links carry heavy tip
  bodies (link 1: elbow motor and link 2), which the clamped-free modes,
  all free of tip moment and shear, converge to slowly: against
  a Richardson-extrapolated 40/80-segment chain, 3 shapes per link give the
  second flexible frequency with both joints held at +0.003 % (tip shapes)
  against +13.5 % (clamped-free; +3.9 % at 10 modes); with the joints free
  the largest error of the first four flexible frequencies is 0.63 % against
  1.43 % (but 0.32 % against 0.10 % on the second), and 0.06 % against
  0.92 % at 4 shapes. In a 0.4 s torque step (3 shapes, 40 segments as
  reference) the joint angles agree 2-8x better, the link-1 tip deflection
  2x better and the link-2 tip deflection (light payload) 2.4x worse
  (2.2 % against 0.9 % of its peak); at 4 shapes all within 0.06 %. Same
  state size and, at 3 shapes, the same 1 ms RK4 step;
* ``"segments"``: the finite-segment method (as in the thesis), ``n_segments``
  rigid segments per link joined by elastic joints.

Default parameters (SI): links 0.8 m and 0.6 m of 5 mm x 50 mm aluminium
(E = 70 GPa, rho = 2700 kg/m^3, EI = 36.5 N m^2, 0.675 kg/m): first clamped
bending frequencies 6.4 Hz and 11.4 Hz; rotor inertias 0.01 and
0.004 kg m^2 (0.2 kg rotors), elbow motor 1.0 kg, payload 0.1 kg; 1 %
structural damping.

Outputs ``tip_deflection[k]``: transverse tip displacement of link k in its
root (motor rotor) frame; ``root_strain[k]``: bending strain of the +y outer
fibre, ``-c v''`` at the root for modes, and at the first elastic station
``x = h/2`` (curvature = joint angle / h) for segments. All outputs are
sensors of the flexible system (:mod:`mbfmu.dynamics.flexible.sensors`)
evaluated in C, the code the native FMU runtime runs
(``mbfmu build flexible_arm --runtime native``).
"""
from __future__ import annotations

import math

import numpy as np

from mbfmu.dynamics import Fixed, ModelBuilder, Revolute
from mbfmu.dynamics import symbolic
from mbfmu.dynamics import sensors as S
from mbfmu.dynamics.flexible import sensors as FS
from mbfmu.dynamics.flexible import (BeamProperties, FlexibleSystemBuilder, ModeSet, RigidSystem,
                                     add_segmented_beam, simulate)
from mbfmu.dynamics.integrators import ErrorControl, advance_flexible, advance_rigid
from mbfmu.dynamics.spatial import inertia_cylinder, inertia_sphere
from mbfmu.errors import InputError
from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant import Plant, Shape
from mbfmu.plant.signals import Signal, vector

_Z = (0.0, 0.0, 1.0)


def _spectral_radius(system) -> float:
    """Largest |eigenvalue| of the first-order system linearized at rest, 1/s
    (stiffness-proportional damping makes the highest modes overdamped, with
    large real eigenvalues)."""
    from mbfmu.dynamics.flexible import StructuralJacobian
    J = StructuralJacobian(system)(0.0, np.concatenate([system.neutral(), np.zeros(system.nv)]))
    return float(np.abs(np.linalg.eigvals(J)).max())


class _ModalArm:
    """The arm with assumed-modes links."""

    def __init__(self, beams, rotors, elbow_mass, payload_mass, n_modes, tip_shapes):
        b = FlexibleSystemBuilder(gravity=(0.0, 0.0, -9.81), name="flexible_arm")
        modes = ModeSet(bending_y=n_modes, tip_shapes=tip_shapes)
        (m1, J1), (m2, J2) = rotors
        self.roots = [b.add_beam("link1", "world", Revolute(axis=_Z), beams[0], modes, mass=m1,
                                 inertia=inertia_cylinder(m1, symbolic.sqrt(2 * J1 / m1), 0.02)),
                      None]
        self.elbow = b.add_body("elbow", "link1.tip", Fixed(), mass=elbow_mass,
                                inertia=inertia_cylinder(elbow_mass, 0.04, 0.08))
        self.roots[1] = b.add_beam("link2", "elbow", Revolute(axis=_Z), beams[1], modes, mass=m2,
                                   inertia=inertia_cylinder(m2, symbolic.sqrt(2 * J2 / m2), 0.02))
        self.payload = b.add_body("payload", "link2.tip", Fixed(), mass=payload_mass,
                                  inertia=inertia_sphere(payload_mass, 0.03))
        self.system = b.build()
        self.joint_v = [0, 1]
        self.links = [self.system.beam("link1"), self.system.beam("link2")]

    def deflection(self, q, k, s):
        rec = self.links[k]
        return rec.deflection(rec.coordinates(q), s)

    def probes(self, nq: int, nv: int) -> dict:
        """The sensors of the flexible system behind the outputs of
        :class:`FlexibleArm`, by output vector: ``probes[name](k)`` computes
        element ``k`` (0-based), evaluated by the kernels
        (``csrc/flexsensors.c``): joint angles and rates, the payload's world
        position, and, linear in the modal coordinates, each link's transverse
        tip deflection ``phi_y(L) . eta`` (m) and root strain ``-c_y phi_y''(0) . eta``."""
        def combination(rec, values):
            w = symbolic.zeros(nq + nv)  # expressions kept in a recorded build (symbolic.py)
            w[rec.offset + rec.slices["y"].start:rec.offset + rec.slices["y"].stop] = values
            return FS.StateCombination(tuple(symbolic.number(c) for c in w))
        jq, links = self.joint_v, self.links
        return dict(
            q=lambda k: S.StateValue(jq[k]), v=lambda k: S.StateValue(nq + jq[k]),
            tip_position=lambda a: S.PointPosition(self.payload, (0.0, 0.0, 0.0), a),
            tip_deflection=lambda k: combination(links[k], links[k].shapes["y"].values([links[k].beam.length])[0]),
            root_strain=lambda k: combination(links[k], -links[k].beam.c_y * links[k].shapes["y"].values([0.0], 2)[0]))


class _SegmentArm:
    """The arm with finite-segment links."""

    def __init__(self, beams, rotors, elbow_mass, payload_mass, n_segments):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name="flexible_arm")
        (m1, J1), (m2, J2) = rotors
        self.n = n_segments
        self.beams = beams
        hub1 = b.add_body("link1", "world", Revolute(axis=_Z), mass=m1,
                          inertia=inertia_cylinder(m1, math.sqrt(2 * J1 / m1), 0.02))
        tip1 = add_segmented_beam(b, "link1", hub1, beams[0], n_segments)
        h1 = beams[0].length / n_segments
        self.elbow = b.add_body("elbow", tip1, Fixed(), mass=elbow_mass, p_PJ=(h1 / 2, 0, 0),
                                inertia=inertia_cylinder(elbow_mass, 0.04, 0.08))
        hub2 = b.add_body("link2", self.elbow, Revolute(axis=_Z), mass=m2,
                          inertia=inertia_cylinder(m2, math.sqrt(2 * J2 / m2), 0.02))
        tip2 = add_segmented_beam(b, "link2", hub2, beams[1], n_segments)
        h2 = beams[1].length / n_segments
        self.payload = b.add_body("payload", tip2, Fixed(), mass=payload_mass, p_PJ=(h2 / 2, 0, 0),
                                  inertia=inertia_sphere(payload_mass, 0.03))
        self.model = b.build()
        self.system = RigidSystem(self.model)
        self.roots = [hub1, hub2]
        self.joint_v = [int(self.model.idx_v[hub1]), int(self.model.idx_v[hub2])]
        # segment bodies of each link: frames at stations (i - 1/2) h
        self.segments = [[self.model.body_index(f"link{k + 1}.{i}") for i in range(1, n_segments + 1)]
                         for k in range(2)]

    def deflection(self, q, k, s):
        s = np.atleast_1d(np.asarray(s, float))
        L = self.beams[k].length
        if np.any(s < -1e-12) or np.any(s > L * (1 + 1e-12)):
            raise InputError(f"link {k + 1}: stations must lie in [0, {L}] m")
        h = L / self.n
        R, p = self.system.poses(q)
        root = self.roots[k]
        out = np.zeros((s.size, 3))
        for j, sj in enumerate(s):
            i = int(np.clip(np.floor(sj / h + 0.5), 0, self.n))  # 0: root piece
            if i == 0:
                local = np.array([sj, 0.0, 0.0])
                body = root
            else:
                body = self.segments[k][i - 1]
                local = np.array([sj - (i - 0.5) * h, 0.0, 0.0])
            world = p[body] + R[body] @ local
            out[j] = R[root].T @ (world - p[root]) - np.array([sj, 0.0, 0.0])
        return out

    def probes(self, nq: int, nv: int) -> dict:
        """The sensors of the segment tree behind the outputs of
        :class:`FlexibleArm`, by output vector (as :meth:`_ModalArm.probes`),
        evaluated by the kernels (``csrc/flexsensors.c``): joint angles and
        rates, the payload's world position, each link's tip (the last
        segment's end, ``h/2`` beyond its frame) in its root frame, y (m), and
        the root strain ``-c_y theta_1 / h`` of the first elastic joint."""
        def strain(k):
            beam = self.beams[k]
            w = np.zeros(nq + nv)
            w[self.model.idx_q[self.segments[k][0]]] = -beam.c_y / (beam.length / self.n)
            return FS.StateCombination(tuple(float(c) for c in w))
        jq = self.joint_v
        return dict(
            q=lambda k: S.StateValue(jq[k]), v=lambda k: S.StateValue(nq + jq[k]),
            tip_position=lambda a: S.PointPosition(self.payload, (0.0, 0.0, 0.0), a),
            tip_deflection=lambda k: FS.RelativePosition(
                self.segments[k][-1], (self.beams[k].length / self.n / 2, 0.0, 0.0), self.roots[k], 1),
            root_strain=strain)


_STRUCTURE = "a count: it changes the model's structure (rebuild the FMU to change it)"

PARAMETERS = Declaration(
    "flexible_arm",
    Parameter("length_1", "m", 0.8, "length of link 1", "(0, inf)"),
    Parameter("length_2", "m", 0.6, "length of link 2", "(0, inf)"),
    Parameter("thickness", "m", 0.005, "link section side in the plane of motion", "(0, inf)"),
    Parameter("height", "m", 0.05, "link section side along the joint axes", "(0, inf)"),
    Parameter("youngs_modulus", "Pa", 70e9, "Young's modulus of the links", "(0, inf)"),
    Parameter("density", "kg/m3", 2700.0, "density of the links", "(0, inf)"),
    Parameter("damping_ratio", "1", 0.01, "structural damping ratio (first bending mode)", "[0, inf)"),
    Parameter("rotor_mass", "kg", 0.2, "mass of each motor rotor", "(0, inf)"),
    Parameter("motor_inertia_1", "kg.m2", 0.01, "rotor inertia of joint 1", "(0, inf)"),
    Parameter("motor_inertia_2", "kg.m2", 0.004, "rotor inertia of joint 2", "(0, inf)"),
    Parameter("elbow_motor_mass", "kg", 1.0, "elbow motor mass on link 1's tip", "(0, inf)"),
    Parameter("payload_mass", "kg", 0.1, "payload at link 2's tip", "(0, inf)"),
    Parameter("n_modes", "1", 3, "bending modes per link (method 'modes')", "[1, inf)", integer=True,
              rebuild=_STRUCTURE),
    Parameter("n_segments", "1", 10, "segments per link (method 'segments')", "[2, inf)", integer=True,
              rebuild=_STRUCTURE),
    Parameter("tip_shapes", "1", 1, "1: link shapes enriched with tip-load shapes, 0: clamped-free modes "
              "(method 'modes')", "[0, 1]", integer=True, rebuild="a choice of the link's shape functions: "
              "it changes the model's structure (rebuild the FMU to change it)"),
)


class FlexibleArm(Plant):
    """Two-link planar arm with flexible links; see the module docstring.

    Its parameters (keywords, SI units, defaults, bounds) are :data:`PARAMETERS`
    (``tip_shapes`` 1: link shapes enriched with the static tip-force and
    tip-moment deflections, ``ModeSet(tip_shapes=True)``, faster convergence
    with the heavy tip bodies). Options:

    Parameters
    ----------
    method : {"modes", "segments"}
        Link model (a constructor option, not an FMU parameter).
    integrator : {"adaptive", "Radau", "BDF"}, optional
        Integrator of :meth:`advance`; default ``"adaptive"``: the compiled
        error-controlled embedded pair (``error_control``, see
        ``Plant.set_tolerance``) around the flexible ABA for modes, the rigid
        kernels for segments; ``"Radau"``/``"BDF"``: SciPy's implicit
        methods at rtol 1e-7, atol 1e-9.
    """

    name = "flexible_arm"
    parameter_declaration = PARAMETERS
    description = ("Two-link planar manipulator with flexible aluminium links (assumed modes or "
                   "finite segments), motor inertia at each joint, payload at the tip.")
    default_step = 0.01
    default_stop_time = 2.0

    @PARAMETERS.constructor
    def __init__(self, p, method: str = "modes", integrator: str | None = None):
        length_1, length_2, thickness, height = p.length_1, p.length_2, p.thickness, p.height
        youngs_modulus, density, zeta, rotor_mass = p.youngs_modulus, p.density, p.damping_ratio, p.rotor_mass
        motor_inertia_1, motor_inertia_2 = p.motor_inertia_1, p.motor_inertia_2
        elbow_motor_mass, payload_mass = p.elbow_motor_mass, p.payload_mass
        nm, nseg, tips = p.n_modes, p.n_segments, p.tip_shapes
        if method not in ("modes", "segments"):
            raise InputError(f"plant 'flexible_arm': method {method!r} must be 'modes' or 'segments'")
        if integrator not in (None, "adaptive", "Radau", "BDF"):
            raise InputError(f"plant 'flexible_arm': integrator {integrator!r} must be 'adaptive', 'Radau' "
                             "or 'BDF'")
        self.method = method
        self.integrator = integrator or "adaptive"
        beams = [BeamProperties.rectangular(L, symbolic.number(thickness), symbolic.number(height), symbolic.number(youngs_modulus),
                                            symbolic.number(density), damping_ratio=zeta)
                 for L in (symbolic.number(length_1), symbolic.number(length_2))]
        self.beams = beams
        rotors = [(symbolic.number(rotor_mass), symbolic.number(motor_inertia_1)),
                  (symbolic.number(rotor_mass), symbolic.number(motor_inertia_2))]
        if method == "modes":
            self.arm = _ModalArm(beams, rotors, symbolic.number(elbow_motor_mass), symbolic.number(payload_mass), nm,
                                 bool(tips))
        else:
            self.arm = _SegmentArm(beams, rotors, symbolic.number(elbow_motor_mass), symbolic.number(payload_mass), nseg)
        sysm = self.arm.system
        self.system = sysm
        self.nq, self.nv = sysm.nq, sysm.nv
        self.input_matrix = np.zeros((self.nv, 2))
        self.input_matrix[self.arm.joint_v, [0, 1]] = 1.0
        self.spectral_radius = _spectral_radius(sysm)
        # steps inside the explicit pair's stability limit (|h lambda| <~ 3): the
        # error control alone would hover at that limit, with rejected steps
        # and tolerance-level noise in the stiff modes (measured: slower, and
        # 2e4 x less accurate at the default tolerance)
        # internal_step = min(step_rule[0], step_rule[1] / spectral_radius); the native FMU
        # takes the parameters that keep it at step_rule[0] (mbfmu.fmu.native.pack.step_rule)
        self.step_rule = (1e-3, 2.0)
        self.internal_step = min(self.step_rule[0], self.step_rule[1] / self.spectral_radius)
        self.error_control = ErrorControl(max_step=self.internal_step)
        self.parameters = PARAMETERS.signals(p)
        self.inputs = vector("tau", 2, "input", "N.m", "motor torque of joint {i}")
        # each output with the kernels' sensor that computes it (shared with the native FMU), and
        # the native runtime integrates flexible_system as _compiled_adaptive does
        probe = self.arm.probes(self.nq, self.nv)
        self.outputs, self.sensors = declare_outputs(
            measured_vector("q", 2, "rad", "angle of joint {i}", probe["q"]),
            measured_vector("v", 2, "rad/s", "rate of joint {i}", probe["v"]),
            measured_vector("tip_position", 3, "m", "payload position, world axis {i}", probe["tip_position"]),
            measured_vector("tip_deflection", 2, "m", "transverse tip deflection of link {i} in its root frame",
                            probe["tip_deflection"]),
            measured_vector("root_strain", 2, "1", "bending strain at the root of link {i}, outer fibre on +y",
                            probe["root_strain"]),
            measured("kinetic_energy", "J", "kinetic energy", S.KineticEnergy()),
            measured("potential_energy", "J", "strain and gravity energy", S.PotentialEnergy()))
        self.flexible_system = sysm if self.integrator == "adaptive" else None
        self._sensor_outputs = FS.FlexibleSensors(sysm, self.sensors)
        x0 = np.zeros(self.nq + self.nv)
        x0[:self.nq] = sysm.neutral()
        # modal coordinates are lengths (shapes are dimensionless); everything else is an angle
        modal = np.zeros(self.nq, bool)
        if method == "modes":
            modal[sysm.nq_rigid:] = True
        what = _coordinate_descriptions(sysm, self.nq, method == "modes")
        self.states = (tuple(Signal(f"q[{k + 1}]", "m" if modal[k] else "rad", what[k][0], float(x0[k]),
                                    kind="state") for k in range(self.nq))
                       + tuple(Signal(f"v[{k + 1}]", "m/s" if modal[k] else "rad/s", what[k][1], 0.0,
                                      kind="state") for k in range(self.nv)))
        self.geometry = (
            Shape(self.arm.roots[0], "beam", (beams[0].radius, beams[0].length), color="#8c8c8c", name="link 1"),
            Shape(self.arm.roots[1], "beam", (beams[1].radius, beams[1].length), color="#8c8c8c", name="link 2"),
            Shape(self.arm.roots[0], "cylinder", (0.04, 0.06), color="#404040", name="motor 1"),
            Shape(self.arm.elbow, "cylinder", (0.04, 0.08), color="#404040", name="motor 2"),
            Shape(self.arm.payload, "sphere", (0.03,), color="#c44e52", name="payload"),
        )

    # ---- dynamics ------------------------------------------------------------
    def derivatives(self, t, x, u):
        tau = self.input_matrix @ np.asarray(u, float)
        return self.system.rhs(t, np.asarray(x, float), tau)

    def advance(self, t, x, u, dt):
        x = np.asarray(x, float)
        tau = self.input_matrix @ np.asarray(u, float)
        if self.integrator == "adaptive":
            return self._compiled_adaptive(t, x, tau, dt)
        traj = simulate(self.system, x, dt, tau=tau, method=self.integrator, rtol=1e-7, atol=1e-9,
                        t_eval=[dt])
        return traj.x[-1]

    def _compiled_adaptive(self, t: float, x: np.ndarray, tau: np.ndarray, dt: float) -> np.ndarray:
        """State at ``t + dt`` (s) by the compiled error-controlled integrator,
        joint torques ``tau`` (N m) held: the rigid kernels for segments, the
        flexible ABA for modes (the same steps as :meth:`Plant.advance`
        around :meth:`derivatives`)."""
        q, v = x[:self.nq], x[self.nq:]
        what = "plant 'flexible_arm'"
        if self.method == "segments":
            q, v = advance_rigid(self.system.model, q, v, tau, t, dt, self.error_control,
                                 self.internal_step, what=what)
        else:
            q, v = advance_flexible(self.system._fh, q, v, tau, t, dt, self.error_control,
                                    self.internal_step, what=what)
        return np.concatenate([q, v])

    def outputs_at(self, t, x, u):
        return self._sensor_outputs(np.asarray(x, float), u)

    # ---- helpers ---------------------------------------------------------------
    def tip_deflection(self, x, link: int) -> float:
        """Transverse deflection (m) of the tip of ``link`` (0 or 1) in its root frame."""
        L = self.beams[link].length
        return float(self.arm.deflection(np.asarray(x, float)[:self.nq], link, [L])[0, 1])

    def state_from(self, q_joints=(0.0, 0.0), qd_joints=(0.0, 0.0)) -> np.ndarray:
        """State with the given joint angles (rad) and rates (rad/s), links undeformed."""
        x = np.zeros(self.nq + self.nv)
        x[:self.nq] = self.system.neutral()
        for k, i in enumerate(self.arm.joint_v):
            x[i] = q_joints[k]
            x[self.nq + i] = qd_joints[k]
        return x

    def poses(self, x):
        return self.system.poses(np.asarray(x, float)[:self.nq])

    def beam_deflection(self, x, shape_index: int, s) -> np.ndarray:
        """Offsets (len(s), 3) of the centre line from the straight beam, in
        the shape frame (= the link's root frame), m, at stations ``s`` (m)."""
        if shape_index not in (0, 1):
            raise InputError(f"shape {shape_index} is not a beam (beams are shapes 0 and 1)")
        return self.arm.deflection(np.asarray(x, float)[:self.nq], shape_index, s)

    def energies(self, x):
        x = np.asarray(x, float)
        q, v = x[:self.nq], x[self.nq:]
        return self.system.kinetic_energy(q, v), self.system.potential_energy(q)


PLANT = FlexibleArm


_MODE_KIND = {"y": "bending in y", "z": "bending in z", "axial": "axial", "torsion": "torsion"}


def _coordinate_descriptions(system, nq: int, modal: bool) -> list[tuple[str, str]]:
    """What each generalized coordinate and its rate are: a joint's angle, or
    (assumed modes) which link's which mode, e.g. "link 2, bending in y mode 1"."""
    out = [(f"angle of joint {k + 1}", f"rate of joint {k + 1}") for k in range(nq)]
    if modal:
        for b, beam in enumerate(system.beams):
            for direction, sl in beam.slices.items():
                for j in range(sl.stop - sl.start):
                    mode = f"link {b + 1}, {_MODE_KIND.get(direction, direction)} mode {j + 1}"
                    out[beam.offset + sl.start + j] = (f"{mode} (modal coordinate)", f"{mode} (modal rate)")
    return out
