"""Physics tests of the free-floating satellite with deploying solar wings
(models/satellite.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mbfmu
from mbfmu.dynamics import forward_kinematics
from mbfmu.errors import InputError

NAME = "satellite"
SPIN = dict(initial_rate=[0.01, 0.02, -0.01], initial_wheel_speed=[10.0, -5.0, 20.0])


def _columns(plant, Y, base, n):
    names = [s.name for s in plant.outputs]
    i = names.index(f"{base}[1]")
    return Y[:, i:i + n]


@pytest.fixture(scope="module")
def deployment():
    """Stowed -> latched with no input, the hub tumbling slowly and the
    wheels spinning (so the conserved momentum is not zero)."""
    plant = mbfmu.load_plant(NAME, **SPIN)
    plant.set_tolerance(1e-10)  # integration error far below the conservation bounds tested
    time, X, Y = plant.simulate(stop_time=plant.default_stop_time, step=0.1)
    return plant, time, X, Y


def test_deployment_latches_every_hinge_within_a_minute(deployment):
    """Every hinge goes from its stowed angle (90 or 180 deg) to the deployed
    stop and latches, 10-60 s after release (spring-driven rigid wings)."""
    plant, time, X, Y = deployment
    theta = _columns(plant, Y, "hinge_angle", plant.n_hinges)
    np.testing.assert_allclose(np.abs(theta[0]), [math.pi / 2, math.pi, math.pi] * 2)
    latched = X[:, -plant.n_hinges:]
    assert np.all(latched[0] == 0) and np.all(latched[-1] == 1)
    t_all = time[np.argmax(latched.min(axis=1) > 0.5)]
    assert 10.0 <= t_all <= 60.0


def test_angular_momentum_conserved_through_deployment(deployment):
    """No external force or torque: the total angular momentum (hub, panels
    and wheels, inertial frame) and linear momentum stay constant to 1e-9
    relative through spring deployment, latch impacts and settling, while
    the hub attitude and rates change substantially."""
    plant, time, X, Y = deployment
    H = _columns(plant, Y, "angular_momentum", 3)
    L = _columns(plant, Y, "linear_momentum", 3)
    H0 = np.linalg.norm(H[0])
    assert H0 > 1.0
    assert np.max(np.linalg.norm(H - H[0], axis=1)) / H0 < 1e-9
    p_scale = plant.model.mass * 0.01  # kg m/s at 1 cm/s
    assert np.max(np.linalg.norm(L, axis=1)) < 1e-9 * p_scale
    rate = _columns(plant, Y, "rate", 3)
    assert np.max(np.linalg.norm(rate - rate[0], axis=1)) > 0.2 * np.linalg.norm(rate[0])


def test_momentum_independent_of_the_plant_formula(deployment):
    """Angular momentum recomputed here body by body (I_c w + m c x v_c from
    the engine's kinematics) equals the plant's output."""
    plant, time, X, Y = deployment
    model = plant.model
    k = len(time) // 2
    q, v = plant.split(X[k])
    kin = forward_kinematics(model, q, v)
    H = np.zeros(3)
    for i, b in enumerate(model.bodies, start=1):
        R = kin.R_WB[i]
        w = R @ kin.v_B[i, :3]
        c = kin.p_WB[i] + R @ b.com
        vc = R @ (kin.v_B[i, 3:] + np.cross(kin.v_B[i, :3], b.com))
        H += R @ b.inertia @ R.T @ w + b.mass * np.cross(c, vc)
    np.testing.assert_allclose(_columns(plant, Y, "angular_momentum", 3)[k], H, rtol=1e-12, atol=1e-12)


def test_latched_hinges_stay_at_their_stop(deployment):
    """Once a latch engages, its hinge stays within 0.5 deg of the deployed
    angle for the rest of the run; at the end the wings are straight (the
    static offset is preload torque / latch stiffness = 7.5e-5 rad)."""
    plant, time, X, Y = deployment
    theta = _columns(plant, Y, "hinge_angle", plant.n_hinges)
    latched = X[:, -plant.n_hinges:] > 0.5
    assert np.all(np.abs(theta[latched]) < math.radians(0.5))
    expected = 0.3 * 0.5 / 2000.0
    np.testing.assert_allclose(np.abs(theta[-1]), expected, atol=5e-5)
    assert np.all(np.diff(latched.astype(int), axis=0) >= 0)  # never unlatches


def test_attitude_quaternion_stays_unit(deployment):
    plant, time, X, Y = deployment
    quat = X[:, 3:7]
    assert np.max(np.abs(np.linalg.norm(quat, axis=1) - 1.0)) < 1e-12
    att = _columns(plant, Y, "attitude", 4)
    np.testing.assert_allclose(att, quat / np.linalg.norm(quat, axis=1)[:, None])


def test_wheel_torque_turns_the_hub_the_other_way():
    """A torque on the x wheel spins it up and the hub the opposite way; the
    total angular momentum stays zero, so the hub rate is
    -J_w w_w / I_c, with I_c the system's inertia about its centre of mass
    (summed here body by body from the engine's kinematics)."""
    plant = mbfmu.load_plant(NAME, hinge_stiffness=1e-9, hinge_preload=0.0)  # wings stay stowed
    x = plant.initial_state()
    torque = np.array([0.05, 0.0, 0.0])
    for k in range(20):
        x = plant.advance(0.1 * k, x, torque, 0.1)
    y = plant.outputs_at(2.0, x, torque)
    names = [s.name for s in plant.outputs]
    w_wheel = y[names.index("wheel_speed[1]")]
    w_hub = y[names.index("rate[1]"):names.index("rate[1]") + 3]
    H = y[names.index("angular_momentum[1]"):names.index("angular_momentum[1]") + 3]
    J = plant.parameter_values()["wheel_inertia"]
    assert w_wheel > 0 and w_hub[0] < 0
    assert np.linalg.norm(H) < 1e-9 * J * w_wheel
    # independent prediction from the composite inertia about the centre of mass
    model = plant.model
    q, v = plant.split(x)
    kin = forward_kinematics(model, q)
    m = np.array([b.mass for b in model.bodies])
    c = np.array([kin.p_WB[i] + kin.R_WB[i] @ b.com for i, b in enumerate(model.bodies, start=1)])
    com = m @ c / m.sum()
    I_c = np.zeros((3, 3))
    for i, b in enumerate(model.bodies, start=1):
        r = c[i - 1] - com
        I_c += kin.R_WB[i] @ b.inertia @ kin.R_WB[i].T + b.mass * (r @ r * np.eye(3) - np.outer(r, r))
    R_hub = kin.R_WB[1]
    # wheel rotor turns at w_hub + w_wheel about hub x: its spin part adds J w_wheel
    h_wheel = R_hub @ np.array([J * w_wheel, 0.0, 0.0])
    predicted = np.linalg.solve(I_c, -h_wheel)
    np.testing.assert_allclose(R_hub @ w_hub, predicted, rtol=0, atol=1e-4 * np.linalg.norm(predicted))


def test_split_runs_match_one_run():
    """advance is deterministic over a restart: the latch states travel in
    the state vector (as FMU state save/restore needs)."""
    plant = mbfmu.load_plant(NAME)
    plant.set_tolerance(1e-10)  # a restart changes the steps: results agree to the tolerance
    x0 = plant.initial_state()
    u = np.zeros(3)
    a = plant.advance(0.0, x0, u, 12.0)
    b = plant.advance(10.0, plant.advance(0.0, x0, u, 10.0), u, 2.0)
    assert a[-plant.n_hinges:].sum() >= 1
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)


def test_outputs_have_units_and_sizes():
    plant = mbfmu.load_plant(NAME)
    units = {s.name: s.unit for s in plant.outputs}
    n = plant.n_hinges
    assert n == 6
    expect = {"attitude": (4, "1"), "rate": (3, "rad/s"), "hinge_angle": (n, "rad"),
              "wheel_speed": (3, "rad/s"), "angular_momentum": (3, "N.m.s"), "linear_momentum": (3, "N.s")}
    for base, (size, unit) in expect.items():
        names = [k for k in units if k.startswith(base + "[")]
        assert len(names) == size and all(units[k] == unit for k in names)
    assert units["kinetic_energy"] == "J" and units["potential_energy"] == "J"
    assert [s.name for s in plant.inputs] == ["wheel_torque[1]", "wheel_torque[2]", "wheel_torque[3]"]
    assert all(s.unit == "N.m" for s in plant.inputs)
    x = plant.initial_state()
    assert x.size == len(plant.states)
    y = plant.outputs_at(0.0, x, np.zeros(3))
    assert y.shape == (len(plant.outputs),) and np.all(np.isfinite(y))
    assert np.allclose(plant.model.gravity, 0.0)
    assert plant.geometry and plant.default_stop_time >= 10.0


def test_segmented_panels_build_and_bend():
    """Flexible panels by finite segments: more bodies, a smaller internal
    step, and the strips bend during deployment."""
    rigid = mbfmu.load_plant(NAME)
    flex = mbfmu.load_plant(NAME, panel_model="segments", panel_segments=3)
    assert flex.model.nbodies == rigid.model.nbodies + 2 * 3 * 2
    assert flex.internal_step < rigid.internal_step
    x = flex.advance(0.0, flex.initial_state(), np.zeros(3), 1.0)
    strips = [i for i, nm in enumerate(flex.model.body_names) if nm.endswith("_seg2")]
    bend = [x[flex.model.idx_q[i]] for i in strips]
    assert np.max(np.abs(bend)) > 1e-6


@pytest.mark.slow
def test_segmented_panels_conserve_momentum():
    plant = mbfmu.load_plant(NAME, panel_model="segments", panel_segments=3, **SPIN)
    time, X, Y = plant.simulate(stop_time=20.0, step=0.5)
    H = _columns(plant, Y, "angular_momentum", 3)
    assert np.max(np.linalg.norm(H - H[0], axis=1)) / np.linalg.norm(H[0]) < 1e-9


@pytest.mark.parametrize("bad", [dict(hub_mass=-500.0), dict(panel_length=0.0), dict(panel_mass=math.nan),
                                 dict(panels_per_wing=2.5), dict(hinge_damping=-1.0),
                                 dict(panel_model="flexible"), dict(initial_rate=[0.0, math.nan, 0.0])])
def test_bad_parameters_refused(bad):
    with pytest.raises(InputError, match=next(iter(bad))):
        mbfmu.load_plant(NAME, **bad)


def test_rigid_model_with_segments_refused():
    with pytest.raises(InputError, match="panel_model"):
        mbfmu.load_plant(NAME, panel_model="rigid", panel_segments=3)


def test_vector_parameters_by_element_as_results_and_fmus_record_them():
    """A replay rebuilds the plant from the FMU-style names it recorded (``initial_rate[2]``)."""
    by_element = mbfmu.load_plant("satellite", **{"initial_rate[2]": 0.01, "initial_rate[3]": -0.02})
    as_vector = mbfmu.load_plant("satellite", initial_rate=(0.0, 0.01, -0.02))
    assert [s.start for s in by_element.parameters] == [s.start for s in as_vector.parameters]
    _, X1, _ = by_element.simulate(stop_time=0.5, step=0.01)
    _, X2, _ = as_vector.simulate(stop_time=0.5, step=0.01)
    np.testing.assert_array_equal(X1, X2)
    with pytest.raises(InputError, match=r"'initial_rate\[4\]' is outside 'initial_rate', which has 3 elements"):
        mbfmu.load_plant("satellite", **{"initial_rate[4]": 0.01})
