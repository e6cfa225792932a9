"""The 2-body, 4-DOF example of Shimanovsky and Ivanov (2013), in canonical variables.

Source: V. A. Shimanovsky and V. N. Ivanov, "Equations of motion of systems
of coupled rigid bodies in canonical variables", Bulletin of Perm University:
Mathematics, Mechanics, Informatics, issue 2(21), 2013 (in Russian).

The mechanism (the paper's section 5)
-------------------------------------
Fixed frame ``Oxyz``. Body 1 turns about the fixed axis ``Ox`` (angle
``gamma_1``). A point ``A`` slides along body 1's axis ``O eta_1``
(``y_2 = OA``); at ``A`` body 2 turns first about ``eta_1`` (``beta_2``), then
about its own ``zeta_2`` (``alpha_2``). Gravity acts; a spring of stiffness
``c`` and free length ``y_20`` joins ``O`` and ``A``; body 1 is driven by the
velocity-feedback motor torque ``k (omega_0 - gamma_1_dot)``.

State: ``q = (gamma_1, y_2, beta_2, alpha_2)`` and the generalized momenta
``p = dT/dq_dot = M(q) q_dot`` (N m s, N s, N m s, N m s), integrated with the
O(N) canonical sweep (``MultibodyPlant(..., canonical=True)``), RK4.

Readings of the paper (decisions)
---------------------------------
* **Gravity is along -Ox** (``Ox`` is the vertical, pointing up). The paper's
  generalized forces ``Q`` carry no gravity term for ``gamma_1`` or ``y_2``,
  which is only so when gravity is parallel to the turning axis; its gravity
  terms for body 2, ``g m2 x_c2 (...)``, have the sign of a potential
  ``+g m2 x_c2 cos beta_2 cos alpha_2``, i.e. gravity along ``-x``.
* **Body 2's centre of mass** is on its ``xi_2`` axis at ``x_c2`` (from the
  same gravity terms; the printed mass matrix, garbled in the extraction,
  shows a ``z_c2`` offset instead). ``x_c2 < 0`` (default) makes body 2 hang
  below ``A`` at ``beta_2 = alpha_2 = 0``.
* **Body 1's centre of mass** is on ``eta_1`` at ``y_c1`` (the paper's mass
  matrix ``M1``). Moments of inertia are about each body's centre of mass,
  in its own axes.
* **Numbers.** The paper gives none; the defaults are our choice: a 1 m arm of
  4 kg turning about the vertical; body 2 a 0.6 m, 1.5 kg rod hanging from
  ``A``; ``c = 300 N/m``, ``y_20 = 0.6 m``, ``k = 10 N m s/rad``.
* The paper has no damping; ``spring_damping`` and ``gimbal_damping`` (default
  0) let a run settle to its steady state.

Engine model: body 1 (revolute about ``x``), a massless slider (prismatic
along body 1's ``y``) and body 2 (universal joint: about ``y``, then about the
moved ``z``). The spring is a point-to-point spring between ``O`` and ``A``;
the motor's ``-k gamma_1_dot`` is a joint damper and ``k omega_0`` enters
through the input matrix, so the whole force model stays in compiled code.
"""
from __future__ import annotations

import math

import numpy as np

from mbfmu.dynamics import JointForce, ModelBuilder, Prismatic, Revolute, Universal, sensors, symbolic
from mbfmu.dynamics.spatial import rot_y
from mbfmu.errors import InputError
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.outputs import declare_outputs, measured, measured_vector
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant import Shape
from mbfmu.plant.signals import Signal

__all__ = ["Canonical2Body", "PLANT"]

_COORDS = (("gamma_1", "rad", "rad/s", "N.m.s", "rotation of body 1 about Ox"),
           ("y_2", "m", "m/s", "N.s", "slide of A along body 1's axis, OA"),
           ("beta_2", "rad", "rad/s", "N.m.s", "rotation of body 2 about eta_1"),
           ("alpha_2", "rad", "rad/s", "N.m.s", "rotation of body 2 about zeta_2"))


PARAMETERS = Declaration(
    "canonical_2body",
    Parameter("m1", "kg", 4.0, "mass of body 1", "(0, inf)"),
    Parameter("J1x", "kg.m2", 0.35, "moment of inertia of body 1 about xi_1 (centre of mass)", "(0, inf)"),
    Parameter("J1y", "kg.m2", 0.01, "moment of inertia of body 1 about eta_1 (centre of mass)", "(0, inf)"),
    Parameter("J1z", "kg.m2", 0.35, "moment of inertia of body 1 about zeta_1 (centre of mass)", "(0, inf)"),
    Parameter("yc1", "m", 0.5, "centre of mass of body 1 on eta_1"),
    Parameter("m2", "kg", 1.5, "mass of body 2", "(0, inf)"),
    Parameter("J2x", "kg.m2", 0.002, "moment of inertia of body 2 about xi_2 (centre of mass)", "(0, inf)"),
    Parameter("J2y", "kg.m2", 0.045, "moment of inertia of body 2 about eta_2 (centre of mass)", "(0, inf)"),
    Parameter("J2z", "kg.m2", 0.045, "moment of inertia of body 2 about zeta_2 (centre of mass)", "(0, inf)"),
    Parameter("xc2", "m", -0.3, "centre of mass of body 2 on xi_2 (non-zero)"),
    Parameter("c", "N/m", 300.0, "stiffness of the O-A spring", "[0, inf)"),
    Parameter("y20", "m", 0.6, "free length of the O-A spring", "(0, inf)"),
    Parameter("k", "N.m.s/rad", 10.0, "motor gain (0: motor off)", "[0, inf)"),
    Parameter("g", "m/s2", 9.81, "gravitational acceleration along -Ox", "[0, inf)"),
    Parameter("spring_damping", "N.s/m", 0.0, "damping of the O-A spring", "[0, inf)"),
    Parameter("gimbal_damping", "N.m.s/rad", 0.0, "viscous damping on beta_2 and alpha_2", "[0, inf)"),
    Parameter("gamma1_0", "rad", 0.0, "initial gamma_1"),
    Parameter("y2_0", "m", 0.6, "initial y_2 = OA", "(0, inf)"),
    Parameter("beta2_0", "rad", 0.0, "initial beta_2"),
    Parameter("alpha2_0", "rad", 0.0, "initial alpha_2"),
    Parameter("gamma1_dot_0", "rad/s", 0.0, "initial rate of body 1 (the other rates start at zero)"),
)


class Canonical2Body(MultibodyPlant):
    """Shimanovsky and Ivanov's two-body system with an O-A spring and a feedback motor.

    Its parameters (keywords, SI units, defaults, bounds) are :data:`PARAMETERS`.
    """

    name = "canonical_2body"
    parameter_declaration = PARAMETERS
    description = ("2-body, 4-DOF system of Shimanovsky and Ivanov, 'Equations of motion of systems of "
                   "coupled rigid bodies in canonical variables' (2013): turning arm, slider with O-A spring, "
                   "body 2 on a 2-axis hinge, gravity, feedback motor k (omega_0 - gamma_1_dot); integrated "
                   "in canonical variables (q, p).")
    default_step = 0.01
    default_stop_time = 10.0
    internal_step = 1e-3

    @PARAMETERS.constructor
    def __init__(self, p):
        m1, J1x, J1y, J1z, yc1 = p.m1, p.J1x, p.J1y, p.J1z, p.yc1
        m2, J2x, J2y, J2z, xc2 = p.m2, p.J2x, p.J2y, p.J2z, p.xc2
        c, y20, k, g, spring_damping, gimbal_damping = p.c, p.y20, p.k, p.g, p.spring_damping, p.gimbal_damping
        if xc2 == 0:
            raise InputError(f"plant {self.name!r}: parameter 'xc2' must be non-zero (body 2's centre "
                             "of mass on xi_2)")
        for body, J in (("1", (J1x, J1y, J1z)), ("2", (J2x, J2y, J2z))):
            # each moment at most the sum of the other two (sorting would make the order a condition)
            if any(J[i] + J[j] < J[k] for i, j, k in ((0, 1, 2), (0, 2, 1), (1, 2, 0))):
                raise InputError(f"plant {self.name!r}: moments J{body}x, J{body}y, J{body}z = {J} "
                                 "break the triangle inequality (no real body has them)")

        b = ModelBuilder(gravity=(-g, 0.0, 0.0), name=self.name)
        b.add_body("body1", "world", Revolute(axis=(1.0, 0.0, 0.0)), m1, (0.0, yc1, 0.0),
                   (J1x, J1y, J1z), joint_name="gamma_1")
        b.add_body("slider", "body1", Prismatic(axis=(0.0, 1.0, 0.0)), joint_name="y_2")
        b.add_body("body2", "slider", Universal(axis1=(0.0, 1.0, 0.0), axis2=(0.0, 0.0, 1.0)), m2,
                   (xc2, 0.0, 0.0), (J2x, J2y, J2z), joint_name="beta_2-alpha_2")
        b.add_joint_force("body1", JointForce(damping=k))
        b.add_joint_force("body2", JointForce(damping=gimbal_damping))
        b.add_spring("world", (0.0, 0.0, 0.0), "slider", (0.0, 0.0, 0.0), c, spring_damping, y20,
                     name="O-A spring")
        model = b.build()
        B = symbolic.zeros((4, 2))
        B[0] = (k, 1.0)
        super().__init__(model, B, q0=[p.gamma1_0, p.y2_0, p.beta2_0, p.alpha2_0],
                         v0=[p.gamma1_dot_0, 0.0, 0.0, 0.0], canonical=True)
        self.k = k

        self.parameters = PARAMETERS.signals(p)
        self.inputs = (Signal("omega_0", "rad/s", "motor speed set-point", 2.0, kind="input"),
                       Signal("external_torque", "N.m", "external torque on body 1 about Ox",
                              kind="input"))
        x0 = self.initial_state()
        q0, v0 = self.split(x0)
        ke0, pe0 = self.energies(x0)
        names, q_units, v_units, p_units, what = zip(*_COORDS)
        # each output with the engine sensor that computes it (in Python and in the native FMU)
        self.outputs, self.sensors = declare_outputs(
            measured_vector("q", 4, q_units, [f"{n}: {d}" for n, d in zip(names, what)], sensors.StateValue,
                            start=q0),
            measured_vector("v", 4, v_units, [f"rate of {n}" for n in names], sensors.Velocity, start=v0),
            measured_vector("p", 4, p_units, [f"generalized momentum conjugate to {n}" for n in names],
                            lambda k: sensors.StateValue(4 + k), start=x0[4:8]),
            measured("kinetic_energy", "J", "kinetic energy", sensors.KineticEnergy(), start=ke0),
            measured("potential_energy", "J", "gravity (zero at O) plus spring energy", sensors.PotentialEnergy(),
                     start=pe0),
            measured("motor_torque", "N.m", "motor torque k (omega_0 - gamma_1_dot)",
                     sensors.Linear(self.k, (-1.0, 0.0, 0.0, 0.0, 1.0, 0.0)),
                     start=self.k * (self.inputs[0].start - v0[0])))
        self.feedthrough = {"motor_torque": ("omega_0",)}
        arm_len = max(2.0 * symbolic.value(yc1), symbolic.value(y20) * 1.5)  # drawing only: numbers
        rod = abs(2 * symbolic.value(xc2))
        self.geometry = (
            Shape(0, "cylinder", (0.02, 1.0), R=rot_y(math.pi / 2), p=np.array([-0.25, 0.0, 0.0]),
                  color="#bbbbbb", name="axis Ox (vertical)"),
            Shape(1, "cylinder", (0.03, arm_len), R=np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]),
                  p=np.array([0.0, arm_len / 2, 0.0]), color="#8c8c8c", name="body 1"),
            Shape(2, "sphere", (0.06,), color="#444444", name="slider A"),
            Shape(3, "cylinder", (0.025, rod), R=rot_y(math.pi / 2),
                  p=np.array([math.copysign(rod / 2, symbolic.value(xc2)), 0.0, 0.0]), color="#dd8452",
                  name="body 2"),
        )



PLANT = Canonical2Body
