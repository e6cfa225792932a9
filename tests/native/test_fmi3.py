"""The native FMU as FMI 3.0 (#24.3): ``build_fmu(..., runtime="native",
fmi_version=3)`` / ``mbfmu build PLANT --runtime native --fmi 3``. The same
binary core as FMI 2 behind FMI 3's entry points (csrc/fmi3.c): fmpy
validates it and simulates Co-Simulation and Model Exchange, our master runs
it, and every result equals the FMI 2 FMU's to 1e-12; arrays carry
``<Dimension>`` references to structural parameters the binary is built for;
the win64 DLL under wine computes what the linux one does."""
from __future__ import annotations

import ctypes
import os
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi3 import FMU3Slave
from fmpy.validation import validate_fmu

from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.plant.library import load_plant
from tooling import need_tool

from .conftest import COUNTS, NATIVE_PLANTS, STOPS, assert_same, input_table
from .fmi3_jacobian import value_count
from .fmi_instances import me3_model

HERE = Path(__file__).resolve().parent
PLANTS = [pytest.param(n, marks=pytest.mark.slow) if n == "crash_occupant" else n for n in sorted(NATIVE_PLANTS)]


def _column(result, name: str) -> np.ndarray:
    """The scalar ``name`` (``q[2]``) of an fmpy result, element of an array column in FMI 3."""
    if name in result.dtype.names:
        return result[name]
    base, k = name[:-1].split("[")
    return result[base][:, int(k) - 1]


@pytest.mark.parametrize("name", PLANTS)
def test_fmpy_validates_the_fmi3_fmu(name, native_fmu3):
    assert validate_fmu(str(native_fmu3(name))) == []


@pytest.mark.parametrize("name", PLANTS)
def test_fmi3_declares_the_parameters_as_fmi2_does(name, native_fmu, native_fmu3):
    """Each plant parameter: the same causality and variability in both descriptions (one
    declaration, mbfmu.fmu.native.declare); the counts are calculatedParameters, Integer in
    FMI 2 and UInt64 in FMI 3. fmpy validates both."""
    assert validate_fmu(str(native_fmu(name))) == [] and validate_fmu(str(native_fmu3(name))) == []
    two = {v.name: v for v in read_model_description(str(native_fmu(name))).modelVariables}
    three = {v.name: v for v in read_model_description(str(native_fmu3(name))).modelVariables}
    for sig in load_plant(name).parameters:
        a = two[sig.name]
        b = three.get(sig.name) or three[sig.name.split("[")[0]]  # an element of an FMI 3 array parameter
        if a.type == "Integer":
            assert (a.causality, a.variability) == ("calculatedParameter", "fixed"), sig.name
            assert (b.causality, b.variability, b.initial, b.type) == (
                "calculatedParameter", "fixed", "calculated", "UInt64"), sig.name
            continue
        assert (b.causality, b.variability, b.initial) == (a.causality, a.variability, a.initial), sig.name
        assert b.type == "Float64" and (b.start is None) == (a.start is None), sig.name
    assert any(v.causality == "parameter" for v in two.values())


def _logged_slave(path: Path):
    """(model description, instantiated FMI 3 co-simulation instance, its log messages) of ``path``."""
    md = read_model_description(str(path))
    log: list[str] = []
    fmu = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="s")
    fmu.instantiate(logMessage=lambda env, status, cat, msg: log.append(msg.decode()))
    return md, fmu, log


def test_fmi3_refuses_a_calculated_parameter_and_takes_a_tunable_one(native_fmu3):
    """What FMI 3 declares calculatedParameter the runtime refuses (naming it, 'rebuild it'; since
    the tape takes flexible_arm's beams, none is left there but its counts, structural in FMI 3);
    every tunable parameter is taken. (flexible_arm: the plant with the most non-count fixed parameters.)"""
    md, fmu, log = _logged_slave(native_fmu3("flexible_arm"))
    calculated = [v for v in md.modelVariables if v.causality == "calculatedParameter" and v.type == "Float64"]
    tunable = [v for v in md.modelVariables if v.causality == "parameter" and v.variability == "tunable"]
    try:
        fmu.enterInitializationMode()
        for v in calculated:
            before = fmu.getFloat64([v.valueReference])
            with pytest.raises(FMICallException):
                fmu.setFloat64([v.valueReference], [before[0] * 1.01])
            assert f"refused parameter {v.name}" in log[-1] and "rebuild it" in log[-1], log[-1]
            assert fmu.getFloat64([v.valueReference]) == before
        assert tunable
        for v in tunable:  # every one FMI 3 declares settable is taken
            value = float(v.start) * 1.01 if float(v.start) else 0.01
            fmu.setFloat64([v.valueReference], [value])
            assert fmu.getFloat64([v.valueReference]) == [value], v.name
    finally:
        fmu.freeInstance()


@pytest.mark.parametrize("kind", ["CoSimulation", "ModelExchange"])
@pytest.mark.parametrize("name", PLANTS)
def test_fmpy_runs_fmi3_as_the_fmi2_fmu(name, kind, native_fmu, native_fmu3):
    stop = STOPS[name]
    kw = dict(fmi_type=kind, stop_time=stop, relative_tolerance=1e-10, output_interval=stop / 50)
    two = simulate_fmu(str(native_fmu(name)), input=input_table(name, 2), **kw)
    three = simulate_fmu(str(native_fmu3(name)), input=input_table(name, 3), **kw)
    assert np.array_equal(two["time"], three["time"])
    for out in two.dtype.names[1:]:
        assert_same(_column(three, out), two[out], rtol=1e-12, floor=1e-12)


@pytest.mark.parametrize("name", PLANTS)
def test_our_master_runs_the_fmi3_fmu_as_the_fmi2_fmu(name, native_fmu, native_fmu3):
    plant = load_plant(name)
    runs = []
    for fmu in (native_fmu(name), native_fmu3(name)):
        unit = FmuUnit(fmu)
        for k, v in NATIVE_PLANTS[name].items():
            unit.set(k, v)
        runs.append((unit, simulate(System([unit]), STOPS[name], plant.default_step, progress=False).data))
    (u2, r2), (u3, r3) = runs
    assert u3.outputs == u2.outputs and u3.inputs == u2.inputs  # FMI 3 arrays split into the FMI 2 names
    assert len(r2) == len(r3) > 2
    for out in u2.outputs:
        a, b = r2[f"{u2.name}.{out}"], r3[f"{u3.name}.{out}"]
        assert_same(b[:, None], a[:, None], rtol=1e-12, floor=1e-12)


def test_arrays_have_dimensions_of_structural_parameters(native_fmu3):
    md = read_model_description(str(native_fmu3("rigid_arm")))
    by_name = {v.name: v for v in md.modelVariables}
    for name in ("q", "v", "tau", "tip_position", "states.q", "states.v", "der(states.q)"):
        v = by_name[name]
        (dim,) = v.dimensions
        size = next(s for s in md.modelVariables if s.valueReference == dim.valueReference)
        assert size.causality == "structuralParameter" and size.type == "UInt64" and int(size.start) == 3, name
    assert by_name["tau"].causality == "input" and by_name["tau"].unit == "N.m"
    assert by_name["der(states.q)"].derivative is by_name["states.q"]
    assert md.defaultExperiment.stepSize == "0.01" or float(md.defaultExperiment.stepSize) == 0.01
    assert {u.name for u in md.unitDefinitions} >= {"rad", "rad/s", "N.m", "m", "J"}
    platforms = {n.split("/")[1] for n in zipfile.ZipFile(native_fmu3("rigid_arm")).namelist()
                 if n.startswith("binaries/")}
    assert "x86_64-linux" in platforms


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_the_plants_counts_are_calculated_parameters_a_host_reads(name, native_fmu3):
    """The counts (panels, modes, segments) are fixed by the build: FMI 3 declares them
    calculatedParameter (a host reads them, never sets them), not structural parameters that a
    host may set in configuration mode and that the FMU then refuses; the array lengths stay
    structural parameters, fixed by the build, another value refused."""
    md, fmu, log = _logged_slave(native_fmu3(name))
    by_name = {v.name: v for v in md.modelVariables}
    starts = {p.name: p.start for p in load_plant(name).parameters}
    assert not {v.name for v in md.modelVariables if v.causality == "structuralParameter"} & COUNTS[name]
    initial = {u.variable.name for u in md.initialUnknowns}
    try:
        for count in COUNTS[name]:
            v = by_name[count]
            assert (v.type, v.causality, v.variability, v.initial, v.start) == (
                "UInt64", "calculatedParameter", "fixed", "calculated", None), count
            assert count in initial
            assert fmu.getUInt64([v.valueReference]) == [int(starts[count])], count
        size = next(v for v in md.modelVariables if v.causality == "structuralParameter")
        fmu.enterConfigurationMode()
        fmu.setUInt64([size.valueReference], [int(size.start)])  # the built value is accepted
        with pytest.raises(FMICallException):
            fmu.setUInt64([size.valueReference], [int(size.start) + 1])
        assert f"refused: structural parameter an array length = {int(size.start) + 1}: this FMU is built for " \
            f"{int(size.start)} (rebuild it" in log[-1], log
        fmu.exitConfigurationMode()
    finally:
        fmu.freeInstance()


def test_fmi3_log_categories_speak_of_fmi3(native_fmu3):
    """The categories come from the FMI 2 description; their descriptions name FMI 3's statuses."""
    root = ET.fromstring(zipfile.ZipFile(native_fmu3("rigid_arm")).read("modelDescription.xml"))
    descriptions = [c.get("description") for c in root.iterfind("LogCategories/Category")]
    assert "Log messages with fmi3Error status." in descriptions
    assert not [d for d in descriptions if "fmi2" in d]


def test_fmi3_state_get_set_and_serialize_restore_bit_identically(native_fmu3):
    fmu_path = native_fmu3("satellite")
    md = read_model_description(str(fmu_path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [vr[v.name] for v in md.modelVariables if v.causality == "output"]
    fmu = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(fmu_path)),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="s")
    fmu.instantiate()
    try:
        fmu.enterInitializationMode(startTime=0.0)
        fmu.setFloat64([vr["wheel_torque"]], [0.02, -0.01, 0.03])
        fmu.exitInitializationMode()
        nvals = len(fmu.getFloat64(outs, nValues=value_count(md, outs)))
        for k in range(5):
            fmu.doStep(k * 0.05, 0.05)
        state = fmu.getFMUState()
        blob = fmu.serializeFMUState(state)

        def five_steps():
            out = []
            for k in range(5, 10):
                fmu.doStep(k * 0.05, 0.05)
                out.append(fmu.getFloat64(outs, nValues=nvals))
            return out

        after = five_steps()
        fmu.setFMUState(state)
        assert five_steps() == after
        fmu.setFMUState(fmu.deserializeFMUState(blob))
        assert five_steps() == after
        fmu.freeFMUState(state)
        fmu.terminate()
    finally:
        fmu.freeInstance()


def test_fmi3_model_exchange_derivatives_are_the_python_plants(native_fmu3):
    plant = load_plant("canonical_2body")
    fmu_path = native_fmu3("canonical_2body")
    md = read_model_description(str(fmu_path))
    with me3_model(fmu_path, md) as model:
        nx = len(plant.states)
        x = np.random.default_rng(5).normal(size=nx) * 0.3
        model.setContinuousStates(x.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), nx)
        dx = np.zeros(nx)
        model.getContinuousStateDerivatives(dx.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), nx)
        expected = plant.derivatives(0.0, x, plant.default_inputs())
        np.testing.assert_allclose(dx, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
        model.terminate()


# ---------------------------------------------------------------- win64 under wine
@pytest.fixture(scope="module")
def hosts3(tmp_path_factory):
    need_tool("x86_64-w64-mingw32-gcc")
    wine = need_tool("wine64")
    d = tmp_path_factory.mktemp("c_hosts3")
    src = HERE / "c_host3.c"
    subprocess.run(["gcc", "-O1", "-o", str(d / "c_host3"), str(src), "-ldl"], check=True)
    subprocess.run(["x86_64-w64-mingw32-gcc", "-O1", "-o", str(d / "c_host3.exe"), str(src)], check=True)
    env = {**os.environ, "WINEPREFIX": str(d / "wineprefix"), "WINEDEBUG": "-all"}
    return d / "c_host3", d / "c_host3.exe", wine, env


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_the_fmi3_win64_dll_under_wine_equals_x86_64_linux(name, native_fmu3, hosts3, tmp_path):
    linux_host, win_host, wine, env = hosts3
    fmu = native_fmu3(name)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path)
    md = read_model_description(str(fmu))
    by_name = {v.name: v for v in md.modelVariables}
    groups: dict[str, list[float]] = {}
    for k, v in NATIVE_PLANTS[name].items():
        groups.setdefault(k.split("[")[0] if k.split("[")[0] in by_name else k, []).append(v)
    inputs = ",".join(f"{by_name[g].valueReference}=" + ":".join(map(repr, v)) for g, v in groups.items())
    outs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    spec = [f"{r}:{value_count(md, [r])}" for r in outs]
    h = load_plant(name).default_step
    args = [str(tmp_path), md.coSimulation.modelIdentifier, md.instantiationToken, repr(h), "50", inputs, *spec]
    lin = subprocess.run([str(linux_host), *args], capture_output=True, text=True, timeout=120)
    win = subprocess.run([wine, str(win_host), *args], capture_output=True, text=True, timeout=600, env=env)
    assert lin.returncode == 0, lin.stderr
    assert win.returncode == 0, win.stderr
    a, b = np.loadtxt(lin.stdout.splitlines()), np.loadtxt(win.stdout.splitlines())
    assert a.shape == b.shape == (50, value_count(md, outs) + 1)
    assert_same(b[:, 1:], a[:, 1:], floor=1.0)  # msvcrt's pow() vs glibc's: last-ulp differences


def test_mbfmu_build_fmi3_from_the_command_line(tmp_path, capsys):
    from mbfmu.cli import main
    assert main(["build", "rigid_arm", "--runtime", "native", "--fmi", "3", "--platform", "linux64",
                 "-o", str(tmp_path)]) == 0
    md = read_model_description(str(tmp_path / "rigid_arm.fmu"))
    assert md.fmiVersion == "3.0" and md.coSimulation is not None and md.modelExchange is not None
    assert main(["build", "rigid_arm", "--fmi", "3", "-o", str(tmp_path / "py")]) != 0
    assert "pythonfmu runtime writes FMI 2.0 co-simulation only" in capsys.readouterr().err
