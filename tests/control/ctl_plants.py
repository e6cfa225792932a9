"""Small multibody plants for the control tests (analytic facts known)."""
from __future__ import annotations

import numpy as np

from mbfmu.dynamics import JointForce, ModelBuilder, Revolute, Spherical, _kernels
from mbfmu.dynamics.algorithms import point_position
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant import Plant
from mbfmu.plant.signals import Signal, vector

G = 9.81


class Pendulum(MultibodyPlant):
    """Point mass ``m`` on a massless rod of length ``l`` about the y axis,
    joint damper ``c``; input: joint torque; outputs: angle and tip x.
    Small-angle frequency about the bottom: sqrt(g / l) (rad/s)."""

    name = "test_pendulum"

    def __init__(self, m=2.0, l=0.8, c=0.0, q0=0.0):
        b = ModelBuilder(gravity=(0, 0, -G))
        b.add_body("bob", "world", Revolute(axis=(0, 1, 0)), mass=m, com=(0, 0, -l), inertia=np.zeros(3))
        if c:
            b.add_joint_force(1, JointForce(damping=c))
        self.m, self.l = m, l
        super().__init__(b.build(), np.ones((1, 1)), q0=[q0])
        self.inputs = (Signal("tau", "N.m", "joint torque", kind="input"),)
        self.outputs = (Signal("angle", "rad", kind="output"), Signal("tip_x", "m", kind="output"))

    def outputs_at(self, t, x, u):
        return np.array([x[0], point_position(self.model, x[:1], 1, (0, 0, -self.l))[0]])


class DoublePendulum(MultibodyPlant):
    """Two links with joint springs and dampers; torques at both joints;
    outputs: the tip position (x, z) and the angles."""

    name = "test_double_pendulum"

    def __init__(self):
        b = ModelBuilder(gravity=(0, 0, -G))
        b.add_body("l1", "world", Revolute(axis=(0, 1, 0)), mass=1.5, com=(0, 0, -0.3),
                   inertia=np.diag([0.02, 0.03, 0.01]))
        b.add_body("l2", "l1", Revolute(axis=(0, 1, 0)), mass=1.0, com=(0, 0, -0.25),
                   inertia=np.diag([0.01, 0.02, 0.01]), p_PJ=(0, 0, -0.6))
        b.add_joint_force(1, JointForce(stiffness=5.0, damping=0.8))
        b.add_joint_force(2, JointForce(stiffness=3.0, damping=0.5))
        super().__init__(b.build(), np.eye(2), q0=[0.3, -0.2])
        self.inputs = vector("tau", 2, "input", "N.m", "torque at joint {i}")
        self.outputs = (Signal("tip_x", "m"), Signal("tip_z", "m")) + vector("angle", 2, "output", "rad")

    def outputs_at(self, t, x, u):
        p = point_position(self.model, x[:2], 2, (0, 0, -0.5))
        return np.array([p[0], p[2], x[0], x[1]])


class BallPendulum(MultibodyPlant):
    """A body on a ball joint, with a rotational spring-damper in the joint
    and a point spring to the ceiling; torques (body frame) as inputs;
    output: the world position of a point on the body."""

    name = "test_ball_pendulum"

    def __init__(self):
        b = ModelBuilder(gravity=(0, 0, -G))
        b.add_body("bob", "world", Spherical(), mass=2.0, com=(0.05, 0.0, -0.4),
                   inertia=np.diag([0.03, 0.04, 0.02]))
        b.add_joint_force(1, JointForce(stiffness=4.0, damping=0.6))
        b.add_spring(0, (0.3, 0.1, 0.2), 1, (0.0, 0.0, -0.4), stiffness=30.0, damping=1.0, rest_length=0.4)
        super().__init__(b.build(), np.eye(3))
        self.inputs = vector("tau", 3, "input", "N.m")
        self.outputs = vector("tip", 3, "output", "m")

    def outputs_at(self, t, x, u):
        return point_position(self.model, x[:4], 1, (0.0, 0.0, -0.5))


class FrictionPendulum(DoublePendulum):
    """The double pendulum plus a Python-level smooth Coulomb friction
    ``-mu tanh(v / v0)`` at both joints (forces the finite-difference path)."""

    name = "test_friction_pendulum"

    def applied_forces(self, t, q, v, u):
        return -0.3 * np.tanh(v / 0.2), None


class DoubleIntegrator(Plant):
    """Unit mass driven by force F: x'' = F; output x; exact ZOH advance."""

    name = "test_double_integrator"
    inputs = (Signal("F", "N", kind="input"),)
    outputs = (Signal("x", "m"),)
    states = (Signal("x", "m", kind="state"), Signal("v", "m/s", kind="state"))

    def derivatives(self, t, x, u):
        return np.array([x[1], u[0]])

    def outputs_at(self, t, x, u):
        return x[:1].copy()

    def advance(self, t, x, u, dt):
        return np.array([x[0] + x[1] * dt + 0.5 * u[0] * dt ** 2, x[1] + u[0] * dt])


class DoublePendulumQV(DoublePendulum):
    """The double pendulum measuring its joint angles and rates."""

    name = "test_double_pendulum_qv"

    def __init__(self):
        super().__init__()
        self.outputs = vector("q", 2, "output", "rad") + vector("v", 2, "output", "rad/s")

    def outputs_at(self, t, x, u):
        return np.array(x, float)


class LaggedBallPendulum(BallPendulum):
    """The ball pendulum with first-order actuator lags (time constant 0.05 s):
    states ``[q; v; tau_a]`` (extra states after the multibody ones)."""

    name = "test_lagged_ball_pendulum"
    lag = 0.05

    def __init__(self):
        super().__init__()
        self.states = self.states + vector("tau_a", 3, "state", "N.m")

    def derivatives(self, t, x, u):
        q, v, ta = x[:4], x[4:7], x[7:]
        qdot, vdot = _kernels.rhs(self.model._h, q, v, ta)
        return np.concatenate([qdot, vdot, (np.asarray(u, float) - ta) / self.lag])

    advance = Plant.advance
