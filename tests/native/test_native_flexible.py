"""flexible_arm exported by the native runtime: the flexible kernels
(assumed-modes links) or the rigid ones (segment links) and the flexible
sensors in C, the same numbers as the Python plant under a torque profile
that rings the links' bending modes, parameters re-packed or refused."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException

from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native import NativeUnsupported, check_supported
from mbfmu.fmu.plantref import build_plant, parse
from mbfmu.plant.library import load_plant
from mbfmu.models.flexible_arm import FlexibleArm

from .conftest import assert_same
from .fmi_loop import Loaded


def _torques(t: float) -> tuple[float, float]:
    """Joint torques (N m): a bang-bang move with a chirp on top that crosses
    the first bending frequencies of the links (6.4 Hz and 11.4 Hz clamped)."""
    chirp = np.sin(2 * np.pi * (4.0 + 10.0 * t) * t)
    return (3.0 * (1.0 if t < 0.25 else -1.0) + 0.5 * chirp, -1.5 * (1.0 if t < 0.3 else -1.0) + 0.3 * chirp)


def _python_profile(plant, n: int, h: float) -> np.ndarray:
    """Outputs of the Python plant stepped by its own advance with the torques held per step."""
    x = plant.initial_state()
    out = [plant.outputs_at(0.0, x, np.zeros(2))]
    for k in range(n):
        u = np.array(_torques(k * h))
        x = plant.advance(k * h, x, u, h)
        out.append(plant.outputs_at((k + 1) * h, x, u))
    return np.array(out)


def test_a_torque_profile_that_rings_the_modes_gives_the_python_plants_outputs(native_fmu):
    plant = load_plant("flexible_arm")
    h, n = plant.default_step, 50
    outs = [s.name for s in plant.outputs]
    expected = _python_profile(plant, n, h)
    deflection = expected[:, [outs.index("tip_deflection[1]"), outs.index("tip_deflection[2]")]]
    assert np.abs(deflection).max() > 1e-3  # the links bend by millimetres: the modes are excited
    L = Loaded(native_fmu("flexible_arm"))
    try:
        L.setup()
        got = [L.get(outs)]
        for k in range(n):
            for name, value in zip(("tau[1]", "tau[2]"), _torques(k * h)):
                L.set(name, value)
            L.slave.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
            got.append(L.get(outs))
    finally:
        L.close()
    # outputs are compared after the step, with the torques of that step (no feedthrough)
    assert_same(np.array(got)[1:], expected[1:])


def test_parameters_the_runtime_cannot_repack_are_refused_and_the_instance_keeps_its_values(native_fmu):
    """The shape family (tip_shapes) and the number of modes are structural
    choices (counts), which the runtime cannot re-pack."""
    plant = load_plant("flexible_arm")
    outs = [s.name for s in plant.outputs]
    u = np.array([2.0, -1.0])
    _, _, Y = plant.simulate(stop_time=10 * plant.default_step, step=plant.default_step, u=u)
    L = Loaded(native_fmu("flexible_arm"))
    try:
        L.slave.setupExperiment(startTime=0.0)
        L.slave.enterInitializationMode()
        for name, value, why in (("n_modes", 4.0, "structure"), ("tip_shapes", 0.0, "structure")):
            with pytest.raises(FMICallException):
                L.set(name, value)
            assert name in L.log[-1] and why in L.log[-1], L.log[-1]
        L.set("tau[1]", 2.0)
        L.set("tau[2]", -1.0)
        L.slave.exitInitializationMode()
        assert L.get(["n_modes", "tip_shapes"]).tolist() == [3.0, 1.0]
        assert_same(L.run(outs, plant.default_step, 10), Y)
    finally:
        L.close()


def test_scipy_integrators_are_refused_naming_the_piece():
    """integrator="Radau" is SciPy's implicit method, Python code."""
    with pytest.raises(NativeUnsupported, match=r"FlexibleArm\.advance"):
        check_supported(FlexibleArm(integrator="Radau"))


def test_segment_links_export_as_a_rigid_tree_with_the_python_plants_outputs(tmp_path):
    """method="segments" (a rigid chain with elastic joints, here 6 segments per link):
    integrated by the rigid kernels as advance_rigid does, its tip deflections (a segment's
    end in the root frame) from the flexible sensors; its internal step follows the stiffest
    joint, so every parameter is fixed (refused with the reason)."""
    spec = f"{Path(__file__).parent / 'plants.py'}:SegmentArm"
    fmu = build_fmu(spec, tmp_path, runtime="native", platforms=("linux64",))
    plant = build_plant(parse(spec))
    outs = [s.name for s in plant.outputs]
    u = np.array([2.0, -1.0])
    _, _, Y = plant.simulate(stop_time=40 * plant.default_step, step=plant.default_step, u=u)
    assert np.abs(Y[:, outs.index("tip_deflection[2]")]).max() > 1e-3
    L = Loaded(fmu)
    try:
        L.slave.setupExperiment(startTime=0.0)
        L.slave.enterInitializationMode()
        with pytest.raises(FMICallException):
            L.set("payload_mass", 0.2)
        assert "payload_mass" in L.log[-1] and "non-linearly" in L.log[-1], L.log[-1]
        L.set("tau[1]", 2.0)
        L.set("tau[2]", -1.0)
        L.slave.exitInitializationMode()
        assert_same(L.run(outs, plant.default_step, 40), Y)
    finally:
        L.close()
