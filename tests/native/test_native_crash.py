"""The crash-sled occupant as a native FMU: its sled frame and HIC15 bookkeeping are
plug-in elements of its own (models/sled_frame.c, a frame element, and
models/hic_recorder.c), its accelerometers and belt tensions sensors of the kernels,
run by the C runtime; HIC state through FMU state, the pulse parameters re-packed."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException

from mbfmu.fmu.builder import build_fmu
from mbfmu.plant.library import load_plant
from mbfmu.models.crash_occupant import HIC_SAMPLE, hic_from_integral

from .conftest import assert_same, plant_run
from .fmi_loop import Loaded
from .native_checks import HERE, RESTORE_CHILD, assert_same_description

NAME = "crash_occupant"


@pytest.fixture
def crash(native_fmu):
    opened = []

    def get():
        opened.append(Loaded(native_fmu(NAME)))
        return opened[-1]
    yield get
    for L in opened:
        L.close()


def _outputs_and_states(L):
    outs = [v.name for v in L.md.modelVariables if v.causality == "output"]
    states = [v.name for v in L.md.modelVariables if v.name.startswith("states.")]
    return outs, states


def test_hic15_of_the_c_bookkeeping_equals_hic_from_the_recorded_integral(crash):
    """On the HIC grid (0.5 ms steps) through the HIC15 peak: the FMU's running hic15
    equals HIC15 recomputed offline (hic_from_integral) from the integral state read
    at every step, and the outputs equal the Python plant's."""
    n = 300
    plant = load_plant(NAME)
    outs = [s.name for s in plant.outputs]
    _, _, Y = plant.simulate(stop_time=n * HIC_SAMPLE, step=HIC_SAMPLE)
    L = crash()
    L.setup()
    got = L.run(outs + ["states.hic_integral"], HIC_SAMPLE, n)
    time = HIC_SAMPLE * np.arange(n + 1)
    hic = got[:, outs.index("hic15")]
    assert hic[-1] > 100.0
    assert hic[-1] == pytest.approx(hic_from_integral(time, got[:, -1]), rel=1e-9)
    assert_same(got[:, :-1], Y)


def test_rollback_across_the_hic_peak_is_bit_identical_including_the_hic_state(crash):
    L = crash()
    L.setup(inputs={"sled_acceleration": -20.0})
    outs, states = _outputs_and_states(L)
    h = 1e-3
    L.run(outs, h, 70)
    state = L.slave.getFMUstate()
    first = L.run(outs + states, h, 40, t0=70 * h)
    L.set("sled_acceleration", 50.0)
    L.slave.doStep(currentCommunicationPoint=110 * h, communicationStepSize=h)
    L.slave.setFMUstate(state)
    again = L.run(outs + states, h, 40, t0=70 * h)
    L.slave.freeFMUstate(state)
    hic_max = first[:, (outs + states).index("states.hic15_max")]
    assert hic_max[-1] > hic_max[0] > 0.0  # the maximum grows inside the replayed interval
    assert np.array_equal(first, again)


def test_a_serialized_state_with_hic_history_restores_in_a_fresh_process(crash, native_fmu, tmp_path):
    L = crash()
    L.setup()
    outs, states = _outputs_and_states(L)
    h = 4e-3  # the state is saved at 0.08 s, mid-pulse
    L.run(outs, h, 20)
    state = L.slave.getFMUstate()
    assert L.get(["states.hic_history[1]"])[0] > 0.0
    (tmp_path / "state.bin").write_bytes(bytes(L.slave.serializeFMUstate(state)))
    expected = L.run(outs + states, h, 30, t0=20 * h)
    subprocess.run([sys.executable, "-c", RESTORE_CHILD, str(HERE), str(native_fmu(NAME)),
                    str(tmp_path / "state.bin"), str(tmp_path / "out.npy"), ",".join(outs + states), repr(h)],
                   check=True, timeout=120)
    assert np.array_equal(np.load(tmp_path / "out.npy"), expected)


def test_a_nan_sled_acceleration_is_refused_naming_it_and_the_time(crash):
    L = crash()
    L.setup()
    outs, _ = _outputs_and_states(L)
    L.run(outs, 1e-3, 5)
    with pytest.raises(FMICallException):
        L.set("sled_acceleration", float("nan"))
    assert "sled_acceleration" in L.log[-1] and "t = 0.005" in L.log[-1], L.log[-1]
    assert L.get(["sled_acceleration"])[0] == 0.0


PULSE = {"pulse_peak": 150.0, "pulse_duration": 0.09, "pulse_start": 0.01}


@pytest.mark.parametrize("parameters, rtol", [
    (PULSE, 1e-12),  # stored as they are in d
    # these enter d through the model's construction (masses, inertias, EA / (L0 + extra),
    # rest lengths, the segments' lengths and the springs' preload), which the expression
    # tape recomputes in C with the operations of the plant's build
    ({"belt_stiffness": 1.2e5, "belt_slack": 0.01, "body_mass": 70.0}, 1e-12),
    ({"stature": 1.55, "body_mass": 62.0}, 1e-12), ({"stature": 2.0}, 1e-12)])
def test_the_pulse_belt_mass_and_stature_parameters_repack_in_c(parameters, rtol, crash):
    """Pulse peak, duration and start, belt stiffness and slack, body mass, stature: numbers
    the runtime re-packs; the FMU then equals the Python plant built with them (100 steps,
    through the belt's loading)."""
    Y, outs, h = plant_run(NAME, {}, 100, parameters)
    L = crash()
    L.setup(parameters=parameters)
    assert_same(L.run(outs, h, 100), Y, rtol=rtol)
    default, _, _ = plant_run(NAME, {}, 100)
    with pytest.raises(AssertionError):
        assert_same(Y, default, rtol=1e-3)


def test_model_description_is_that_of_the_pythonfmu_fmu(native_fmu, tmp_path):
    assert_same_description(native_fmu(NAME), build_fmu(NAME, tmp_path), NAME)
