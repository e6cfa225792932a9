"""The ``canonical_2body`` plant (the worked example of Shimanovsky and Ivanov (2013)) in canonical variables."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mbfmu
from mbfmu.cli import main as cli_main
from mbfmu.dynamics import crba, momentum, rnea
from mbfmu.errors import InputError
from mbfmu.viewer.plants import check_plant
from mbfmu.plant.multibody import MultibodyPlant

MOVING = dict(gamma1_dot_0=2.0, y2_0=0.7, beta2_0=0.4, alpha2_0=-0.6)


@pytest.fixture(scope="module")
def plant():
    return mbfmu.load_plant("canonical_2body")


def test_state_is_coordinates_and_momenta_equal_to_mass_matrix_times_rates():
    """p = dT/dq_dot = M(q) q_dot, with M from the composite-rigid-body algorithm."""
    p = mbfmu.load_plant("canonical_2body", **MOVING)
    assert p.canonical and [s.name for s in p.states] == [f"q[{i}]" for i in range(1, 5)] + \
        [f"p[{i}]" for i in range(1, 5)]
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = np.r_[rng.uniform(-3, 3), rng.uniform(0.3, 1.0), rng.uniform(-3, 3, 2)]
        v = rng.normal(size=4)
        x = p.state_from(q, v)
        np.testing.assert_allclose(x[4:], crba(p.model, q) @ v, atol=1e-12)
        np.testing.assert_allclose(p.split(x)[1], v, atol=1e-12)


def test_canonical_and_velocity_variables_give_the_same_trajectory():
    """The sweep in (q, p) of Shimanovsky and Ivanov (2013) versus articulated-body dynamics in (q, v), with the motor,
    an input torque, spring and hinge damping all active."""
    canon = mbfmu.load_plant("canonical_2body", spring_damping=5.0, gimbal_damping=0.05, **MOVING)
    x0 = canon.initial_state()
    q0, v0 = canon.split(x0)
    vel = MultibodyPlant(canon.model, canon.input_matrix, q0, v0, canonical=False)
    vel.inputs, vel.internal_step = canon.inputs, canon.internal_step
    canon.set_tolerance(1e-11)  # both integrated far below the difference the test allows
    vel.set_tolerance(1e-11)
    u = np.array([3.0, -1.2])
    _, Xc, _ = canon.simulate(2.0, 0.01, u=u)
    Xv = [vel.state_from(q0, v0)]
    for k in range(200):
        Xv.append(vel.advance(0.01 * k, Xv[-1], u, 0.01))
    Xv = np.array(Xv)
    Qc = Xc[:, :4]
    Vc = np.array([canon.split(x)[1] for x in Xc])
    assert np.ptp(Qc[:, 1]) > 0.01 and np.ptp(Qc[:, 3]) > 0.5  # it really moved
    np.testing.assert_allclose(Qc, Xv[:, :4], atol=1e-8)
    np.testing.assert_allclose(Vc, Xv[:, 4:], atol=1e-7)


def test_energy_is_conserved_without_motor_and_damping():
    p = mbfmu.load_plant("canonical_2body", k=0.0, **MOVING)
    p.set_tolerance(1e-11)
    _, X, Y = p.simulate(5.0, 0.01, u=[0.0, 0.0])
    ke, pe = Y[:, p.output_index("kinetic_energy")], Y[:, p.output_index("potential_energy")]
    E = ke + pe
    assert ke.max() - ke.min() > 1.0  # energy really moves between kinetic and potential
    assert np.abs(E - E[0]).max() < 1e-8 * (abs(E).max() + ke.max())


def test_momentum_about_the_vertical_axis_is_conserved_without_motor():
    """gamma_1 is cyclic when gravity is along Ox and the motor is off, so p[1] is the
    constant angular momentum about Ox (equal to the world angular momentum's x part)."""
    p = mbfmu.load_plant("canonical_2body", k=0.0, **MOVING)
    _, X, Y = p.simulate(3.0, 0.05, u=[5.0, 0.0])  # omega_0 does nothing with k = 0
    p1 = Y[:, p.output_index("p[1]")]
    assert np.abs(p1 - p1[0]).max() < 1e-9 * abs(p1[0])
    q, v = p.split(X[-1])
    assert momentum(p.model, q, v)[1][0] == pytest.approx(p1[-1], rel=1e-12)
    assert np.ptp(Y[:, p.output_index("v[1]")]) > 0.1  # while gamma_1_dot itself varies


def test_motor_brings_the_rate_to_the_set_point_in_steady_state():
    """Steady state with damping: body 1 turns at omega_0 + T_ext / k (the motor balances the
    external torque; gravity along the axis gives none), the spring balances the centrifugal
    force on body 2, c (y_2 - y_20) = m_2 w^2 (y_2 + x_c2 sin alpha_2), and the steady rotation
    satisfies Newton-Euler: rnea(q, (w, 0, 0, 0), 0) = (0, -c (y_2 - y_20), 0, 0)."""
    k, omega0, T_ext, c, y20, m2, xc2 = 10.0, 2.0, 1.5, 300.0, 0.6, 1.5, -0.3
    p = mbfmu.load_plant("canonical_2body", k=k, c=c, y20=y20, m2=m2, xc2=xc2, spring_damping=20.0,
                         gimbal_damping=0.3, alpha2_0=0.2)
    p.internal_step = 2e-3
    _, X, Y = p.simulate(16.0, 0.1, u=[omega0, T_ext])
    q, v = p.split(X[-1])
    w = omega0 + T_ext / k
    np.testing.assert_allclose(v, [w, 0, 0, 0], atol=1e-6)
    assert abs(q[3]) > 0.2  # body 2 swings out
    assert c * (q[1] - y20) == pytest.approx(m2 * w ** 2 * (q[1] + xc2 * math.sin(q[3])), rel=1e-5)
    np.testing.assert_allclose(rnea(p.model, q, [w, 0, 0, 0], np.zeros(4)),
                               [0, -c * (q[1] - y20), 0, 0], atol=1e-5)
    assert Y[-1, p.output_index("motor_torque")] == pytest.approx(-T_ext, abs=1e-5)


def test_outputs_have_declared_names_units_and_sizes(plant):
    units = {s.name: s.unit for s in plant.outputs}
    assert [units[f"q[{i}]"] for i in range(1, 5)] == ["rad", "m", "rad", "rad"]
    assert [units[f"v[{i}]"] for i in range(1, 5)] == ["rad/s", "m/s", "rad/s", "rad/s"]
    assert [units[f"p[{i}]"] for i in range(1, 5)] == ["N.m.s", "N.s", "N.m.s", "N.m.s"]
    assert units["kinetic_energy"] == units["potential_energy"] == "J"
    assert units["motor_torque"] == "N.m"
    assert [(s.name, s.unit) for s in plant.inputs] == [("omega_0", "rad/s"), ("external_torque", "N.m")]
    assert plant.feedthrough == {"motor_torque": ("omega_0",)}
    x = plant.initial_state()
    y = plant.outputs_at(0.0, x, [1.0, 0.0])
    assert y.shape == (len(plant.outputs),) and x.shape == (8,)
    assert y[plant.output_index("motor_torque")] == pytest.approx(plant.parameter_values()["k"])
    np.testing.assert_allclose([s.start for s in plant.outputs], plant.outputs_at(0.0, x, plant.default_inputs()))
    check_plant(plant)  # the viewer's own check of geometry and poses
    R, pos = plant.poses(x)
    assert R.shape == (4, 3, 3) and all(0 <= s.body < 4 for s in plant.geometry)


@pytest.mark.parametrize("params, name", [
    (dict(m1=-4.0), "m1"),
    (dict(m2=0.0), "m2"),
    (dict(y20=0.0), "y20"),
    (dict(c=float("nan")), "'c'"),
    (dict(k=-1.0), "'k'"),
    (dict(xc2=0.0), "xc2"),
    (dict(J2x=1.0), "J2x"),
    (dict(y2_0=-0.1), "y2_0"),
])
def test_bad_parameters_are_refused_naming_the_parameter(params, name):
    with pytest.raises(InputError, match=name):
        mbfmu.load_plant("canonical_2body", **params)


def test_library_lists_the_plant(capsys):
    assert "canonical_2body" in mbfmu.list_plants()
    assert cli_main(["list", "canonical_2body"]) == 0
    out = capsys.readouterr().out
    assert "canonical_2body:" in out and "omega_0" in out and "p[4]" in out and "y20" in out
