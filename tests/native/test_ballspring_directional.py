"""Exact directional derivatives of spherical joints' springs, dampers and
range limits (#24.2, ``csrc/ballspring_dirder.c``: the rotation-vector law,
as crash_occupant's ball joints use it), on a two-link chain of ball joints
under gravity with a torque input.

Range limits are piecewise smooth; the states are chosen with every
rotation-vector component away from its limits (by 0.05 rad at least,
against difference steps of 4e-4 at most), once with every component within
its range and once with some beyond a limit (the limit spring engaged). The
FMU's directional derivatives equal central differences of the FMU and of
the Python plant within their error, and Richardson-extrapolated central
differences of the Python plant (the oracle of test_contact_directional,
error estimated the same way) to 1e-10 of each block's largest entry.
"""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from mbfmu.dynamics import JointForce, ModelBuilder, sensors
from mbfmu.dynamics.joints import Spherical
from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.signals import Signal, vector

from .tangent_checks import check_exact_tangents

LOWER, UPPER = np.array([-0.4, -0.3, -0.5]), np.array([0.5, 0.6, 0.4])  # rad, rotation-vector components


class BallJointChain(MultibodyPlant):
    """Two links on ball joints with springs (preloaded rest), dampers and range limits."""

    name = "ball_joint_chain"
    default_step = 0.01
    default_stop_time = 1.0
    internal_step = 1e-3

    def __init__(self):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81), name=self.name)
        b.add_body("upper", "world", Spherical(), 1.5, (0.0, 0.0, -0.2), np.diag([0.02, 0.025, 0.008]))
        b.add_body("lower", "upper", Spherical(), 0.8, (0.05, 0.0, -0.15), np.diag([0.008, 0.01, 0.003]),
                   p_PJ=(0.0, 0.0, -0.4))
        b.add_joint_force("upper", JointForce(stiffness=(20.0, 25.0, 5.0), damping=(0.5, 0.4, 0.2),
                                              rest=(0.05, -0.1, 0.0), lower=LOWER, upper=UPPER,
                                              limit_stiffness=400.0, limit_damping=3.0))
        b.add_joint_force("lower", JointForce(stiffness=10.0, damping=0.3, lower=LOWER, upper=UPPER,
                                              limit_stiffness=200.0, limit_damping=2.0))
        model = b.build()
        B = np.zeros((model.nv, 2))
        B[0, 0] = B[4, 1] = 1.0
        super().__init__(model, B)
        self.inputs = (Signal("tau_x", "N.m", "upper torque x", 0.3, kind="input"),
                       Signal("tau_y", "N.m", "lower torque y", kind="input"))
        self.sensors = (tuple(sensors.PointPosition(2, (0.0, 0.0, -0.3), k) for k in range(3))
                        + tuple(sensors.Velocity(k) for k in range(model.nv))
                        + (sensors.KineticEnergy(), sensors.PotentialEnergy()))
        self.outputs = (vector("tip", 3, "output", "m") + vector("w", model.nv, "output", "rad/s")
                        + (Signal("ke", "J"), Signal("pe", "J")))


def _quat(phi):
    th = np.linalg.norm(phi)
    return np.r_[np.cos(th / 2), np.sin(th / 2) * np.asarray(phi) / th]


STATES = {
    "within_range": ((0.2, -0.1, 0.3), (-0.3, 0.4, -0.2)),
    "beyond_limits": ((0.6, -0.45, 0.1), (0.2, 0.75, -0.6)),
}


@pytest.fixture(scope="module")
def chain_fmu(tmp_path_factory):
    return build_fmu(BallJointChain, tmp_path_factory.mktemp("dd_balljoint"), runtime="native",
                     platforms=("linux64",))


@pytest.mark.parametrize("state", list(STATES))
def test_ball_joint_springs_directional_derivatives_are_exact(state, chain_fmu):
    plant = BallJointChain()
    phis = [np.asarray(p) for p in STATES[state]]
    for p in phis:  # the rotation vector of the quaternion is phi itself (|phi| < pi)
        margin = np.minimum(np.abs(p - LOWER), np.abs(p - UPPER)).min()
        assert margin > 0.05
    beyond = sum(int(np.any((p < LOWER) | (p > UPPER))) for p in phis)
    assert beyond == (0 if state == "within_range" else 2)
    vel = np.array([0.4, -0.3, 0.8, -0.5, 0.2, 0.1])
    x = np.r_[_quat(phis[0]), _quat(phis[1]), vel]
    u = np.array([0.3, -0.2])
    check_exact_tangents(chain_fmu, plant, x, u, state)


def test_ball_joint_chain_fmu_claims_derivatives_and_validates(chain_fmu):
    md = read_model_description(str(chain_fmu))
    assert md.coSimulation.providesDirectionalDerivative and md.modelExchange.providesDirectionalDerivative
    assert validate_fmu(str(chain_fmu)) == []
