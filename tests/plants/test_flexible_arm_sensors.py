"""flexible_arm's outputs come from the kernels' flexible sensors
(csrc/flexsensors.c, shared with the native FMU): they equal the outputs
computed independently in Python from the flexible system (virtual-tree
kinematics and energies, the beams' mode shapes; for segment links the
segment tree's poses)."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.dynamics import sensors as S
from mbfmu.dynamics.flexible import sensors as FS
from mbfmu.errors import ModelError
from mbfmu.plant.library import load_plant
from mbfmu.models.flexible_arm import FlexibleArm


def _reference_outputs(plant, x: np.ndarray) -> np.ndarray:
    """The outputs by the system's Python methods (the plant's former formulas):
    mode shapes for modal links, segment poses for segment links."""
    system, arm = plant.system, plant.arm
    q, v = x[:plant.nq], x[plant.nq:]
    jq = arm.joint_v
    y = [q[jq[0]], q[jq[1]], v[jq[0]], v[jq[1]], *system.point_position(q, arm.payload)]
    y += [arm.deflection(q, k, [beam.length])[0, 1] for k, beam in enumerate(plant.beams)]
    if plant.method == "modes":
        y += [rec.root_strain(rec.coordinates(q), "y") for rec in arm.links]
    else:  # curvature of the first elastic joint: its angle over the segment length
        y += [-beam.c_y * q[arm.model.idx_q[arm.segments[k][0]]] / (beam.length / arm.n)
              for k, beam in enumerate(plant.beams)]
    return np.array(y + [system.kinetic_energy(q, v), system.potential_energy(q)])


@pytest.mark.parametrize("options", [dict(tip_shapes=1, n_modes=4), dict(tip_shapes=0, n_modes=4),
                                     dict(method="segments", n_segments=6)])
def test_the_c_sensors_equal_the_python_formulas_at_random_states(options):
    plant = FlexibleArm(**options)
    rng = np.random.default_rng(7)
    nq = plant.nq
    for _ in range(20):
        x = rng.normal(scale=0.02, size=2 * nq)  # deformations: modal mm, segment angles of 1/50 rad
        x[plant.arm.joint_v] = rng.uniform(-np.pi, np.pi, 2)
        x[nq + np.asarray(plant.arm.joint_v)] = rng.normal(scale=2.0, size=2)
        got, ref = plant.outputs_at(0.0, x, np.zeros(2)), _reference_outputs(plant, x)
        # relative to each output's magnitude, or to its physical scale (the tip's world z is 0)
        scale = np.maximum(np.abs(ref), [1.0] * 4 + [1.4] * 3 + [1e-3] * 2 + [1e-4] * 2 + [1.0, 1.0])
        assert np.all(np.abs(got - ref) <= 1e-12 * scale), np.abs(got - ref) / scale


def test_the_energies_include_the_strain_energy_and_the_kinetic_energy_is_half_v_m_v():
    plant = load_plant("flexible_arm")
    rng = np.random.default_rng(3)
    x = rng.normal(scale=1e-2, size=plant.nq + plant.nv)
    q, v = x[:plant.nq], x[plant.nq:]
    y = plant.outputs_at(0.0, x, np.zeros(2))
    names = [s.name for s in plant.outputs]
    M = plant.system.mass_matrix(q)
    assert y[names.index("kinetic_energy")] == pytest.approx(0.5 * v @ M @ v, rel=1e-12)
    eta = q[plant.system.nq_rigid:]
    # gravity along -z does no work in the horizontal plane: the potential energy is the strain energy
    assert y[names.index("potential_energy")] == pytest.approx(0.5 * eta @ plant.system.K @ eta, rel=1e-12)


def test_a_sensor_that_does_not_fit_the_flexible_system_is_refused_by_name():
    system = load_plant("flexible_arm").system
    for bad in (S.StateValue(system.nq + system.nv), FS.StateCombination((1.0, 2.0)),
                S.PointPosition(system.model.nbodies, (0.0, 0.0, 0.0), 0), S.Momentum(0)):
        with pytest.raises(ModelError, match=r"the sensor of output 1 \("):  # outputs count from 1
            FS.FlexibleSensors(system, [bad])
