"""The compiled sensors (``PackedSensors``: ``mb_sensors_eval``, the code the
native FMU runs) against the Python description of the same sensors
(``sensors.evaluate``), for every kind, and their refusals.

``MultibodyPlant.outputs_at`` (and so the pythonfmu FMU, once per step) uses
the compiled ones; the Python evaluation is the independent reference.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbfmu
from mbfmu.dynamics import sensors as S
from mbfmu.errors import InputError


def _every_kind(plant) -> list:
    m, nu = plant.model, len(plant.inputs)
    nb = m.nbodies
    rng = np.random.default_rng(3)
    kinds = [S.StateValue(0), S.StateValue(m.nq + m.nv - 1), S.Velocity(m.nv - 1),
             S.PointPosition(nb - 1, tuple(rng.normal(size=3)), 2), S.PointPosition(1, (0.1, -0.2, 0.3), 0),
             S.KineticEnergy(), S.PotentialEnergy(), S.PotentialEnergy(elements=True),
             S.Linear(2.5, tuple(rng.normal(size=m.nv + nu))), S.Quaternion(3, 0), S.Quaternion(3, 2),
             *[S.Momentum(a) for a in range(6)], S.BodyQuaternion(nb - 1, 1), S.BodyQuaternion(1, 0),
             *[S.BodyTwist(nb - 1, a) for a in range(6)]]
    S.check(kinds, nb, len(plant.states), m.nv, nu)
    return kinds


@pytest.fixture(scope="module")
def satellite_states():
    """The satellite (free hub with a quaternion, wings that latch) along a
    deployment, with wheel speeds and inputs: states with latches engaged and not."""
    plant = mbfmu.load_plant("satellite", initial_rate=[0.01, 0.02, -0.01], initial_wheel_speed=[10.0, -5.0, 20.0])
    u = np.linspace(0.05, 0.2, len(plant.inputs))
    _, X, _ = plant.simulate(stop_time=plant.default_stop_time, step=plant.default_stop_time / 20, u=u)
    return plant, X, u


def test_every_kind_equals_the_python_description(satellite_states):
    plant, X, u = satellite_states
    sensors = _every_kind(plant)
    packed = S.PackedSensors(sensors, plant.model, len(plant.inputs))
    for x in X:
        q, v = plant.split(x)
        want = S.evaluate(sensors, plant.model, x, v, u)
        got = packed(x, v, u)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, np.max(np.abs(want))))


def test_satellite_energy_counts_its_engaged_latches(satellite_states):
    """The satellite's potential energy output adds its plug-in latches' elastic energy
    (hinge_latch.c) to the engine's: 1/2 k sum over engaged latches of the hinge angle squared,
    k the plant's latch stiffness, along a deployment (latches free and engaged)."""
    plant, X, u = satellite_states
    nqv = plant.model.nq + plant.model.nv
    k = float(plant.parameter_values()["latch_stiffness"])
    pe = [s.name for s in plant.outputs].index("potential_energy")
    engaged = set()
    for x in X:
        q, v = plant.split(x)
        z = x[nqv:]
        latches = 0.5 * k * float(np.sum((z > 0.5) * q[plant._hinge_iq] ** 2))
        want = S.evaluate([S.PotentialEnergy()], plant.model, x, v, u)[0] + latches
        np.testing.assert_allclose(plant.outputs_at(0.0, x, u)[pe], want, rtol=1e-12, atol=1e-12)
        engaged.add(bool(z.max() > 0.5) and latches > 0)
    assert engaged == {True, False}, "the states must include engaged and free latches"


@pytest.mark.parametrize("name", ["rigid_arm", "canonical_2body", "satellite"])
def test_plant_outputs_are_the_compiled_sensors(name):
    """outputs_at of a library plant (canonical variables included) is the
    compiled evaluation and equals the Python one."""
    plant = mbfmu.load_plant(name)
    u = np.full(len(plant.inputs), 0.1)
    x = plant.advance(0.0, plant.initial_state(), u, 0.05)
    y = plant.outputs_at(0.05, x, u)
    assert plant._packed_sensors
    q, v = plant.split(x)
    want = S.evaluate(plant.sensors, plant.model, x, v, u)  # no latch engaged yet: no latch energy
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-13)


def test_a_non_finite_state_gives_non_finite_outputs_not_an_error():
    plant = mbfmu.load_plant("rigid_arm")
    x = plant.initial_state()
    x[-1] = np.nan
    y = plant.outputs_at(0.0, x, np.zeros(len(plant.inputs)))
    assert np.isnan(y).any()


@pytest.mark.parametrize("bad, why", [
    (S.PointPosition(99, (0.0, 0.0, 0.0), 0), r"^sensors_pack: sensor 2 \(kind .*\) does not fit the model$"),
    (S.Velocity(99), r"^sensors_pack: sensor 2 \(kind .*\) does not fit the model$"),
    (S.Quaternion(99, 0), r"^sensors_pack: sensor 2 \(kind .*\) does not fit the model$"),
    (S.BodyTwist(1, 6), r"^sensors_pack: sensor 2 \(kind .*\) does not fit the model$"),
])
def test_packing_refuses_a_sensor_that_does_not_fit(bad, why):
    plant = mbfmu.load_plant("rigid_arm")
    with pytest.raises(InputError, match=why):
        S.PackedSensors([S.KineticEnergy(), bad], plant.model, len(plant.inputs))


def test_evaluation_refuses_a_state_of_the_wrong_size():
    plant = mbfmu.load_plant("rigid_arm")
    packed = S.PackedSensors(plant.sensors, plant.model, len(plant.inputs))
    x = plant.initial_state()
    with pytest.raises(InputError, match="has 2 values, expected 3"):
        packed(x, x[3:], np.zeros(2))
