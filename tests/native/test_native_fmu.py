"""The native-runtime FMU (``build_fmu(..., runtime="native")``): same numbers as
the Python plant, C only, FMI state, bad values and parameters."""
from __future__ import annotations

import subprocess
import sys
import zipfile

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException

from mbfmu.errors import ModelError
from mbfmu.fmu.builder import build_fmu
from mbfmu.fmu.native import NativeUnsupported, toolchain
from mbfmu.plant.library import load_plant

from tooling import need_tool

from .conftest import NATIVE_PLANTS, assert_same, plant_run
from .plants import ArmWithPythonOutputs, PushedArm
from .fmi_loop import Loaded
from .native_checks import HERE, RESTORE_CHILD, assert_same_description



@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_outputs_equal_the_python_plant(name, loaded):
    Y, outs, h = plant_run(name, NATIVE_PLANTS[name], 100)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name])
    assert_same(L.run(outs, h, 100), Y)


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_binary_is_c_only_and_carries_no_python(name, native_fmu, tmp_path):
    with zipfile.ZipFile(native_fmu(name)) as z:
        names = z.namelist()
        z.extractall(tmp_path)
    assert not [n for n in names if n.endswith((".py", ".pyc")) or n.startswith("resources/")]
    so = tmp_path / "binaries" / "linux64" / f"{name}.so"
    dyn = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    needed = {line.split("[")[1].rstrip("]") for line in dyn.splitlines() if "(NEEDED)" in line}
    assert needed <= {"libm.so.6", "libc.so.6"}, needed


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_win64_dll_imports_no_python(name, native_fmu, tmp_path):
    need_tool("x86_64-w64-mingw32-gcc")
    objdump = need_tool("x86_64-w64-mingw32-objdump")
    with zipfile.ZipFile(native_fmu(name)) as z:
        z.extractall(tmp_path)
    dll = tmp_path / "binaries" / "win64" / f"{name}.dll"
    dump = subprocess.run([objdump, "-p", str(dll)], capture_output=True, text=True, check=True).stdout
    dlls = {line.split(":")[1].strip().lower() for line in dump.splitlines() if "DLL Name:" in line}
    assert dlls and not [d for d in dlls if "python" in d], dlls


@pytest.mark.parametrize("name", ["canonical_2body", "flexible_arm"])
def test_model_description_is_that_of_the_pythonfmu_fmu(name, native_fmu, tmp_path):
    assert_same_description(native_fmu(name), build_fmu(name, tmp_path), name)


@pytest.mark.parametrize("plant, piece", [(PushedArm, "PushedArm.applied_forces"),
                                          (ArmWithPythonOutputs, "ArmWithPythonOutputs.outputs_at")])
def test_plants_with_python_pieces_are_refused_naming_the_piece(plant, piece, tmp_path):
    # every library plant exports natively now: these user plants keep a Python piece
    with pytest.raises(NativeUnsupported, match=piece.replace(".", r"\.")):
        build_fmu(plant, tmp_path, runtime="native", platforms=("linux64",))
    assert not list(tmp_path.iterdir())


def test_a_platform_without_toolchain_is_refused_by_name(monkeypatch, tmp_path):
    real = toolchain.shutil.which
    monkeypatch.setattr(toolchain.shutil, "which", lambda n: None if "mingw" in n else real(n))
    with pytest.raises(ModelError, match=r"win64 .*x86_64-w64-mingw32-gcc"):
        build_fmu("rigid_arm", tmp_path, runtime="native", platforms=("linux64", "win64"))
    with pytest.raises(ModelError, match="unknown FMU platform 'darwin64'"):
        build_fmu("rigid_arm", tmp_path, runtime="native", platforms=("darwin64",))


# ---------------------------------------------------------------- FMU state
def _outs(name):
    return plant_run(name, {}, 1)[1:]


@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_rollback_and_restep_are_bit_identical(name, loaded):
    outs, h = _outs(name)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name])
    L.run(outs, h, 20)
    state = L.slave.getFMUstate()
    first = L.run(outs, h, 30, t0=20 * h)
    L.set(L.md.modelVariables[0].name, 7.0)  # disturb an input, then roll back
    L.slave.doStep(currentCommunicationPoint=50 * h, communicationStepSize=h)
    L.slave.setFMUstate(state)
    again = L.run(outs, h, 30, t0=20 * h)
    L.slave.freeFMUstate(state)
    assert np.array_equal(first, again)


@pytest.mark.parametrize("name", ["rigid_arm", "flexible_arm"])
def test_a_serialized_state_restores_in_a_fresh_process(name, loaded, native_fmu, tmp_path):
    outs, h = _outs(name)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name])
    L.run(outs, h, 20)
    state = L.slave.getFMUstate()
    (tmp_path / "state.bin").write_bytes(bytes(L.slave.serializeFMUstate(state)))
    expected = L.run(outs, h, 30, t0=20 * h)
    subprocess.run([sys.executable, "-c", RESTORE_CHILD, str(HERE), str(native_fmu(name)),
                    str(tmp_path / "state.bin"), str(tmp_path / "out.npy"), ",".join(outs), repr(h)],
                   check=True, timeout=120)
    assert np.array_equal(np.load(tmp_path / "out.npy"), expected)


@pytest.mark.parametrize("name", ["rigid_arm", "flexible_arm"])
def test_corrupted_or_truncated_states_are_refused_and_the_instance_keeps_its_state(name, loaded):
    outs, h = _outs(name)
    ref = loaded(name)
    ref.setup(inputs=NATIVE_PLANTS[name])
    expected = ref.run(outs, h, 40)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name])
    L.run(outs, h, 20)
    state = L.slave.getFMUstate()
    good = bytes(L.slave.serializeFMUstate(state))
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x10
    for bad, why in ((bytes(flipped), "checksum"), (good[:-9], "length"), (b"", "length")):
        with pytest.raises(FMICallException):
            L.slave.deSerializeFMUstate(bad)
        assert why in L.log[-1], L.log[-1]
    assert np.array_equal(L.run(outs, h, 20, t0=20 * h), expected[20:])


# ---------------------------------------------------------------- bad values
@pytest.mark.parametrize("name", ["rigid_arm", "flexible_arm"])
def test_a_nan_input_is_refused_naming_the_input_and_time(name, loaded):
    outs, h = _outs(name)
    Y, _, _ = plant_run(name, NATIVE_PLANTS[name], 20)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name])
    L.run(outs, h, 10)
    with pytest.raises(FMICallException):
        L.set("tau[2]", float("nan"))
    assert "tau[2]" in L.log[-1] and "t = 0.1" in L.log[-1], L.log[-1]
    assert L.get(["tau[2]"])[0] == NATIVE_PLANTS[name]["tau[2]"]
    assert_same(L.run(outs, h, 10, t0=10 * h), Y[10:])


# the generalized force is named by its 1-based number, as the Python plant names it
@pytest.mark.parametrize("name, inp, force", [("rigid_arm", "tau[3]", "tau[3]"), ("flexible_arm", "tau[2]", "tau[2]")])
def test_a_runaway_input_is_refused_naming_it_and_the_state_is_kept(name, inp, force, loaded):
    outs, h = _outs(name)
    L = loaded(name)
    L.setup()
    L.run(outs, h, 1)
    L.set(inp, 1e150)
    before = L.get(outs)
    with pytest.raises(FMICallException):
        L.slave.doStep(currentCommunicationPoint=h, communicationStepSize=h)
    assert "blown up" in L.log[-1] and f"{force} = 1e+150" in L.log[-1] and "t = 0.01" in L.log[-1], L.log[-1]
    assert np.array_equal(L.get(outs), before)


# ---------------------------------------------------------------- tolerance
def _python_run(name: str, n: int, tolerance=None):
    plant = load_plant(name)
    if tolerance is not None:
        plant.set_tolerance(tolerance)
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = NATIVE_PLANTS[name].get(s.name, u[k])
    return plant.simulate(stop_time=n * plant.default_step, step=plant.default_step, u=u)[2]


@pytest.mark.parametrize("name", ["rigid_arm", "canonical_2body"])
def test_the_hosts_tolerance_drives_the_shared_integrator(name, loaded):
    """fmi2SetupExperiment's tolerance is the error control of the native step, as
    in the Python plant (set_tolerance): equal to the Python plant at that
    tolerance, and not to the plant at its default one."""
    outs, h = _outs(name)
    tight = _python_run(name, 50, tolerance=1e-12)
    L = loaded(name)
    L.setup(inputs=NATIVE_PLANTS[name], tolerance=1e-12)
    assert_same(L.run(outs, h, 50), tight)
    M = loaded(name)
    M.setup(inputs=NATIVE_PLANTS[name])
    default = M.run(outs, h, 50)
    assert_same(default, _python_run(name, 50))
    with pytest.raises(AssertionError):
        assert_same(default, tight, rtol=1e-11)


def test_a_tolerance_the_integrator_cannot_meet_is_refused_with_the_reason(loaded):
    outs, h = _outs("rigid_arm")
    L = loaded("rigid_arm")
    L.setup(inputs=NATIVE_PLANTS["rigid_arm"], tolerance=1e-300)
    before = L.get(outs)
    with pytest.raises(FMICallException):
        L.slave.doStep(currentCommunicationPoint=0.0, communicationStepSize=h)
    assert "the tolerance needs" in L.log[-1] and "t = 0 s to 0.01 s" in L.log[-1], L.log[-1]
    assert np.array_equal(L.get(outs), before)


def test_a_tolerance_that_is_not_positive_is_refused(loaded):
    L = loaded("rigid_arm")
    with pytest.raises(FMICallException):
        L.slave.setupExperiment(tolerance=-1.0, startTime=0.0)
    assert "tolerance -1" in L.log[-1], L.log[-1]


# ---------------------------------------------------------------- parameters
@pytest.mark.parametrize("name, parameters", [
    ("rigid_arm", {"arm_mass": 31.0, "base_mass": 12.5, "gravity": 3.7, "theta2_0": 0.3, "link_inertia": 1.4}),
    ("canonical_2body", {"m1": 5.5, "c": 250.0, "k": 4.0, "gamma1_dot_0": 1.5, "y2_0": 0.7, "J2y": 0.044}),
    ("flexible_arm", {"rotor_mass": 0.35, "motor_inertia_1": 0.02, "elbow_motor_mass": 1.6}),
])
def test_numeric_parameters_repack_the_model_in_c(name, parameters, loaded):
    Y, outs, h = plant_run(name, NATIVE_PLANTS[name], 100, parameters)
    L = loaded(name)
    L.setup(parameters=parameters, inputs=NATIVE_PLANTS[name])
    assert_same(L.run(outs, h, 100), Y)


@pytest.mark.parametrize("name, bad", [("crash_occupant", ("pulse_start", -0.01))])
def test_a_parameter_out_of_its_range_is_refused_with_a_message(name, bad, loaded):
    """The runtime refuses a value outside the parameter's range (naming it and saying so),
    keeps the start value and runs as the Python plant built with the defaults."""
    outs, h = _outs(name)
    Y, _, _ = plant_run(name, {}, 20)
    L = loaded(name)
    start = {s.name: s.start for s in load_plant(name).parameters}
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    with pytest.raises(FMICallException):
        L.set(*bad)
    assert bad[0] in L.log[-1] and "outside" in L.log[-1], L.log[-1]
    L.slave.exitInitializationMode()
    assert L.get([bad[0]]).tolist() == [start[bad[0]]]
    assert_same(L.run(outs, h, 20), Y)


def test_parameters_that_make_a_body_unphysical_are_refused(loaded):
    """canonical_2body refuses moments that break the triangle inequality (the Python
    plant does too, with the condition of its own check); the native FMU keeps its previous values."""
    outs, h = _outs("canonical_2body")
    Y, _, _ = plant_run("canonical_2body", {}, 20)
    L = loaded("canonical_2body")
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    with pytest.raises(FMICallException):
        L.set("J2y", 0.06)  # J2x + J2y < J2z would be fine, J2x + J2z = 0.047 < 0.06 is not
    assert "J2y = 0.06" in L.log[-1] and "(J2x + J2z) >= J2y" in L.log[-1], L.log[-1]
    L.slave.exitInitializationMode()
    assert L.get(["J2y"]).tolist() == [0.045]
    assert_same(L.run(outs, h, 20), Y)


# ------------------------------------------- plants from the engine's elements
ELEMENT_PLANTS = {"UrdfChain": {"g": 5.0, "spin": -0.3}, "Ball": {"mass": 1.1, "stiffness": 3e4, "friction": 0.6}}


@pytest.mark.parametrize("cls", sorted(ELEMENT_PLANTS))
def test_plants_of_engine_elements_export_natively(cls, tmp_path):
    """A URDF chain on a floating base (quaternions, joint dampers and limits) and a
    ball with contact, friction, cable and spring; default and re-packed parameters."""
    from mbfmu.fmu.plantref import build_plant, parse
    spec = f"{HERE / 'plants.py'}:{cls}"
    fmu = build_fmu(spec, tmp_path, runtime="native", platforms=("linux64",))
    for params in ({}, ELEMENT_PLANTS[cls]):
        plant = build_plant(parse(spec).with_parameters(params))
        _, _, Y = plant.simulate(stop_time=60 * plant.default_step)
        L = Loaded(fmu)
        try:
            L.setup(parameters=params)
            got = L.run([s.name for s in plant.outputs], plant.default_step, 60)
        finally:
            L.close()
        assert_same(got, Y)


SPIN = {"initial_rate[1]": 0.01, "initial_rate[2]": 0.02, "initial_rate[3]": -0.01,
        "initial_wheel_speed[1]": 10.0, "initial_wheel_speed[2]": -5.0, "initial_wheel_speed[3]": 20.0}


@pytest.mark.slow
def test_satellite_deployment_with_latch_events_equals_the_python_plant(tmp_path):
    """Stowed to latched (every latch engages, each event located inside a step),
    tumbling hub and spinning wheels, 40 s at 0.1 s: the latch is the satellite's plug-in
    element (models/hinge_latch.c), one C shared by Satellite.advance and the native FMU."""
    from mbfmu.fmu.plantref import build_plant, parse
    fmu = build_fmu("satellite", tmp_path, parameters=SPIN, runtime="native", platforms=("linux64",))
    plant = build_plant(parse("satellite").with_parameters(SPIN))
    _, X, Y = plant.simulate(stop_time=40.0, step=0.1)
    assert X[0, -6:].tolist() == [0.0] * 6 and X[-1, -6:].tolist() == [1.0] * 6
    L = Loaded(fmu)
    try:
        L.setup()
        got = L.run([s.name for s in plant.outputs], 0.1, 400)
        latched = L.get([f"states.latched[{k}]" for k in range(1, 7)])
    finally:
        L.close()
    assert latched.tolist() == [1.0] * 6
    assert_same(got, Y)
