"""Native (C only) controller FMUs (#36.1): each controller kind exported with
``export_fmu(..., runtime="native")`` runs in the master through fmpy and
equals the Python unit it came from (ControlUnit) over a closed loop with the
native rigid_arm plant; it passes fmpy's validation and the FMU Compliance
Checker where no Python exists; its sources rebuild with cc."""
from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import control
import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave
from fmpy.validation import validate_fmu
from scipy.linalg import expm

from mbfmu.control import export_fmu
from mbfmu.control.discrete_pid import pid
from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate, sources
from mbfmu.errors import InputError
from native.python_free import fmu_check, without_python
from native.glibc_symbols import too_new
from tooling import need_tool, zip_folder

from controller_designs import DESIGNS, H, Q, STOP, TAU, V


def _connections(sys) -> list[tuple[str, str]]:
    ins, outs = list(sys.input_labels), list(sys.output_labels)
    cons = [(f"plant.{s[0]}[{s[1]}]", f"ctrl.{s}") for s in ins if s[0] in "qv" and s[1:].isdigit()]
    cons += [(f"ctrl.{o}", f"plant.tau[{o[3]}]") for o in outs]
    cons += [("ref.y", f"ctrl.{s}") for s in ins if s[0] == "r"]
    return cons


@pytest.fixture(scope="module")
def plant_fmu(native_fmus):
    return native_fmus("rigid_arm", platforms=("linux64",))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cache = {}

    def get(kind: str) -> Path:
        if kind not in cache:
            step = H if DESIGNS[kind]().isctime() else None
            cache[kind] = export_fmu(DESIGNS[kind](), tmp_path_factory.mktemp(kind), runtime="native", step=step,
                                     platforms=("linux64",))
        return cache[kind]
    return get


def closed_loop(plant_fmu: Path, kind: str, fmu: Path | None = None, step: float = H, stop: float = STOP):
    """The rigid arm under the controller ``DESIGNS[kind]``: its FMU ``fmu``, or the
    Python unit (ControlUnit) when None; the run's result."""
    sys = DESIGNS[kind]()
    ctrl = FmuUnit(fmu, "ctrl") if fmu is not None else ControlUnit("ctrl", sys)
    units = [FmuUnit(plant_fmu, "plant"), ctrl]
    if any(s[0] == "r" for s in sys.input_labels):
        units.append(sources.step("ref", 0.2, 1.0))
    return simulate(System(units, _connections(sys)), stop, step)


def assert_close(a, b, rtol: float) -> None:
    """Every recorded column equal to ``rtol`` of its largest magnitude."""
    assert a.names == b.names
    for n in a.names:
        scale = max(np.abs(b[n]).max(), 1e-300)
        err = np.abs(a[n] - b[n]).max() / scale
        assert err <= rtol, f"column {n}: relative deviation {err:.3g}"


@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_the_native_fmu_equals_the_python_unit_in_a_closed_loop(kind, plant_fmu, exported):
    native = closed_loop(plant_fmu, kind, exported(kind))
    python = closed_loop(plant_fmu, kind)
    assert_close(native, python, 1e-13)
    if kind == "discrete_pid":  # scalar arithmetic in the same order as the Python PID: bit for bit
        assert all(np.array_equal(native[n], python[n]) for n in native.names)
    # the loop does something: the arm moves and the controller acts
    assert np.abs(python["plant.q[2]"]).max() > 1e-4
    assert max(np.abs(python[n]).max() for n in python.names if n.startswith("ctrl.tau")) > 1e-2


def test_the_discrete_pid_saturates_and_its_anti_windup_matches(plant_fmu, exported):
    native = closed_loop(plant_fmu, "discrete_pid", exported("discrete_pid"))
    assert np.isclose(np.abs(native["ctrl.tau1"]).max(), 15.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_the_binary_is_c_only_and_validates(kind, exported, tmp_path):
    fmu = exported(kind)
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
        z.extractall(tmp_path)
    assert not [n for n in names if n.endswith((".py", ".pyc")) or n.startswith("resources/")]
    (so,) = (tmp_path / "binaries" / "linux64").glob("*.so")
    dyn = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    needed = {line.split("[")[1].rstrip("]") for line in dyn.splitlines() if "(NEEDED)" in line}
    assert needed <= {"libm.so.6", "libc.so.6"}, needed
    assert not too_new(so), too_new(so)  # loads on glibc 2.17 (RHEL 7) and later
    assert validate_fmu(str(fmu)) == []


def test_names_units_and_visible_states_come_from_the_design(tmp_path):
    sys = control.ss([[-1.0]], [[1.0, 0.0]], [[2.0]], [[0.0, 0.5]], inputs=["e", "u[0]"], outputs=["y"],
                     states=["z"], name="small")
    fmu = export_fmu(sys, tmp_path, runtime="native", step=0.1, units={"e": "rad", "y": "N.m"},
                     platforms=("linux64",))
    md = read_model_description(str(fmu))
    by = {v.name: v for v in md.modelVariables}
    assert list(by) == ["e", "u[1]", "y", "states.z", "gain"]
    assert (by["e"].unit, by["y"].unit, by["gain"].variability) == ("rad", "N.m", "tunable")
    assert [(u.variable.name, [d.name for d in u.dependencies]) for u in md.outputs] == [("y", ["u[1]"])]
    assert md.defaultExperiment.stepSize == "0.1"


@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_the_compliance_checker_runs_it_with_no_warning_where_no_python_exists(kind, exported,
                                                                             tmp_path):  # noqa: F811 (a fixture imported from another module)
    res = fmu_check(exported(kind), H, 100 * H, tmp_path / "out.csv")
    text = res.stdout + res.stderr
    assert res.returncode == 0 and "0 Warning(s)" in text and "0 Error(s)" in text, text
    assert "0 warning(s) and error(s)" in text, text


def _slave(fmu: Path, tmp_path: Path, parameters: dict[str, float] | None = None) -> tuple[FMU2Slave, dict]:
    """The FMU instantiated and initialized at t = 0 (``parameters`` set in initialization mode),
    with its value references by name."""
    md = read_model_description(str(fmu))
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    s = FMU2Slave(guid=md.guid, unzipDirectory=str(unzip), modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="c")
    s.instantiate()
    vr = {v.name: v.valueReference for v in md.modelVariables}
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    if parameters:
        s.setReal([vr[n] for n in parameters], list(parameters.values()))
    s.exitInitializationMode()
    return s, vr


def test_a_discrete_controller_takes_whole_numbers_of_samples_and_refuses_other_steps(exported, tmp_path):
    """A step of 3 dt is three samples with the inputs held (as the master substeps a
    ControlUnit of step dt); 1.5 dt is refused and the state kept."""
    with pytest.raises(InputError, match="dt = 0.01"):
        ControlUnit("ctrl", DESIGNS["discrete_ss"](), step=1.5 * H)
    s, vr = _slave(exported("discrete_ss"), tmp_path)
    unit = ControlUnit("ctrl", DESIGNS["discrete_ss"]())
    unit.setup(0.0, 1.0, H)
    s.setReal([vr["q1"], vr["v3"]], [1.0, -2.0])
    unit.u[:] = [1.0, 0, 0, 0, 0, -2.0]
    s.doStep(0.0, 3 * H)
    for k in range(3):
        unit.do_step(k * H, H)
    states = [vr[f"states.i{k}"] for k in (1, 2, 3)]
    np.testing.assert_allclose(s.getReal(states), unit.x, rtol=1e-14, atol=0)
    x = s.getReal(states)
    for bad in (1.5 * H, 0.5 * H):
        with pytest.raises(FMICallException):
            s.doStep(3 * H, bad)
        assert s.getReal(states) == x  # refused: the state is kept
    s.doStep(3 * H, H)
    s.terminate()
    s.freeInstance()


@pytest.mark.parametrize("step", [0.0025, 0.05])
def test_a_continuous_controller_at_another_step_is_held_exactly(step, plant_fmu, exported):
    """Away from the export's step the FMU's own matrix exponential (C) holds the input:
    equal to ControlUnit (scipy's expm) to rounding."""
    native = closed_loop(plant_fmu, "continuous_ss", exported("continuous_ss"), step=step, stop=0.5)
    python = closed_loop(plant_fmu, "continuous_ss", step=step, stop=0.5)
    assert_close(native, python, 1e-12)


def test_the_c_matrix_exponential_equals_scipys_with_scaling_and_squaring(tmp_path):
    """A stiff, non-normal system at a step 40x its fastest time constant (12 squarings)."""
    A = np.array([[-40.0, 300.0, 0.0], [0.0, -3.0, 25.0], [-1.0, 0.0, -0.2]])
    B = np.array([[1.0], [0.0], [2.0]])
    sys = control.ss(A, B, np.eye(3), np.zeros((3, 1)), inputs=["u"], outputs=["a", "b", "c"])
    fmu = export_fmu(sys, tmp_path, runtime="native", step=0.001, platforms=("linux64",))
    s, vr = _slave(fmu, tmp_path)
    h = 1.0
    E = expm(np.block([[A * h, B * h], [np.zeros((1, 4))]]))
    outs = [vr[n] for n in "abc"]
    s.setReal([vr["u"]], [1.0])
    s.doStep(0.0, h)
    np.testing.assert_allclose(s.getReal(outs), E[:3, 3], rtol=1e-12, atol=0)
    s.setReal([vr["u"]], [0.0])
    s.doStep(h, h)
    np.testing.assert_allclose(s.getReal(outs), E[:3, :3] @ E[:3, 3], rtol=1e-12, atol=0)
    s.terminate()
    s.freeInstance()


def test_a_saved_state_restores_and_restepping_is_bit_identical(exported, tmp_path):
    """Rollback: get the FMU state, step, restore, step again (also through serialized bytes)."""
    s, vr = _slave(exported("lqg"), tmp_path)
    names = [v for v in vr if v.startswith(("states.", "tau"))]
    refs = [vr[n] for n in names]
    s.setReal([vr["q1"], vr["r2"]], [0.2, 1.0])
    s.doStep(0.0, H)
    saved = s.getFMUstate()
    data = s.serializeFMUstate(saved)
    s.setReal([vr["q2"]], [-0.4])
    s.doStep(H, H)
    first = s.getReal(refs)
    s.doStep(2 * H, H)  # move on, then come back twice
    for state in (saved, s.deSerializeFMUstate(data)):
        s.setFMUstate(state)
        assert s.getReal([vr["q2"]]) == [0.0]  # the inputs are part of the state
        s.setReal([vr["q2"]], [-0.4])
        s.doStep(H, H)
        assert s.getReal(refs) == first
    with pytest.raises(FMICallException):
        s.deSerializeFMUstate(bytes(data[:-1]))
    with pytest.raises(FMICallException):
        s.deSerializeFMUstate(b"\0" * len(data))
    assert s.getReal(refs) == first  # refused: nothing changed
    s.freeFMUstate(saved)
    s.terminate()
    s.freeInstance()


def test_the_gain_of_a_linear_controller_is_tunable(exported, tmp_path):
    s, vr = _slave(exported("discrete_ss"), tmp_path)
    s.setReal([vr["q1"], vr["v2"]], [0.3, -0.7])
    s.doStep(0.0, H)
    y1 = np.array(s.getReal([vr[t] for t in TAU]))
    s.setReal([vr["gain"]], [2.5])
    assert np.array_equal(np.array(s.getReal([vr[t] for t in TAU])), 2.5 * y1)
    with pytest.raises(FMICallException):
        s.setReal([vr["gain"]], [float("nan")])
    s.terminate()
    s.freeInstance()


def test_the_pid_gains_are_tunable_and_equal_the_python_pid_with_them(exported, tmp_path):
    s, vr = _slave(exported("discrete_pid"), tmp_path, {"Kp": 30.0, "Kd": 1.5, "u_max": 2.0})
    Tt = DESIGNS["discrete_pid"]().gains["Tt"]  # set from the exported gains; kept when they are tuned
    unit = ControlUnit("p", pid(30.0, 20.0, 1.5, dt=H, u_min=-15.0, u_max=2.0, Tt=Tt, reference="r",
                                measurement="q1", output="tau1"))
    unit.setup(0.0, 1.0, H)
    rng = np.random.default_rng(3)
    for k in range(50):
        u = rng.normal(scale=0.2, size=2)
        s.setReal([vr["r"], vr["q1"]], list(u))
        unit.u[:] = u
        unit.pull()
        assert s.getReal([vr["tau1"]])[0] == unit.y[0]
        s.doStep(k * H, H)
        unit.do_step(k * H, H)
    with pytest.raises(FMICallException):
        s.setReal([vr["Tf"]], [-1.0])  # refused, naming it
    s.terminate()
    s.freeInstance()


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_static_gain_holds_at_any_step_as_the_python_unit_does(fmi, tmp_path):
    """python-control gives a static gain dt=None; ControlUnit runs it at any step, so does the FMU."""
    from fmpy import simulate_fmu
    g = control.ss([], [], [], [[2.0, -1.0]], inputs=["a", "b"], outputs=["y"], name="static")
    assert g.dt is None
    fmu = export_fmu(g, tmp_path, runtime="native", fmi=fmi, platforms=("linux64",))
    for step in (0.025, 0.01):
        res = simulate_fmu(str(fmu), stop_time=0.1, output_interval=step, start_values={"a": 1.0, "b": 3.0})
        assert np.all(res["y"] == -1.0)


def test_the_scheduled_fmu_computes_its_law_and_its_gain_scales_k(exported, plant_fmu, tmp_path):
    """The scheduled controller FMU at inputs whose elbow angle runs below, across and
    above the grid equals ScheduledLaw.output (the interpolation is the same arithmetic;
    the row sums may group differently); ``gain`` scales K: y = u_ref - gain K(s) dx.
    In the closed loop the elbow crosses the grid's inner points."""
    sys = DESIGNS["scheduled"]()
    law = sys.law
    s, vr = _slave(exported("scheduled"), tmp_path)
    ins, outs = [vr[n] for n in Q + V], [vr[t] for t in TAU]
    rng = np.random.default_rng(11)
    for q3 in np.linspace(-2.0, 2.0, 41):
        u = rng.normal(scale=0.3, size=6)
        u[2] = q3
        s.setReal(ins, list(u))
        expected = law.output(0.0, [], u)
        np.testing.assert_allclose(s.getReal(outs), expected, rtol=0, atol=1e-13 * np.abs(expected).max())
        s.setReal([vr["gain"]], [2.5])
        scaled = law.u_ref - 2.5 * (law.u_ref - expected)
        np.testing.assert_allclose(s.getReal(outs), scaled, rtol=0, atol=1e-12 * np.abs(scaled).max())
        s.setReal([vr["gain"]], [1.0])
    with pytest.raises(FMICallException):
        s.setReal([vr["gain"]], [float("inf")])
    s.terminate()
    s.freeInstance()
    q3 = closed_loop(plant_fmu, "scheduled", exported("scheduled"))["plant.q[3]"]
    assert q3.min() < -0.5 and q3.max() > 0.9  # from below 0 rad to near 1 rad: three grid intervals


@pytest.mark.parametrize("update, why", [
    (lambda t, x, u, p: np.tanh(x) + u, "numpy's tanh"),
    (lambda t, x, u, p: x * np.cos(t) + u, "depend on the time t"),
    (lambda t, x, u, p: np.array([float(x[0]) + float(u[0])]), "do not follow the traced expressions"),
])
def test_a_nonlinear_system_that_does_not_trace_is_refused_naming_what_broke_it(tmp_path, update, why):
    sys = control.nlsys(update, lambda t, x, u, p: x, inputs=1, outputs=1, states=1, dt=H, name="f")
    with pytest.raises(InputError, match=why) as exc:
        export_fmu(sys, tmp_path, runtime="native")
    assert "runtime='python'" in str(exc.value) and "\n" not in str(exc.value)
    continuous = control.nlsys(lambda t, x, u, p: -x + u, None, inputs=1, outputs=1, states=1, name="c")
    with pytest.raises(InputError, match="discrete"):
        export_fmu(continuous, tmp_path, runtime="native")
    with pytest.raises(InputError, match="runtime 'cuda'"):
        export_fmu(DESIGNS["discrete_ss"](), tmp_path, runtime="cuda")


def test_a_traced_comparison_is_a_guard_the_fmu_keeps_naming_it(tmp_path):
    """np.clip traces as two comparisons: the FMU computes the branch it was traced on
    (inside the limits, equal to the Python unit) and refuses inputs on the other,
    naming the condition in its log."""
    from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions,
                           fmi2CallbackLoggerTYPE, calloc, free)
    sys = control.nlsys(lambda t, x, u, p: 0.5 * x + u, lambda t, x, u, p: np.clip(2.0 * x + u, -1.0, 1.0),
                        inputs=["e"], outputs=["y"], states=["s"], dt=H, name="clipped")
    fmu = export_fmu(sys, tmp_path / "fmu", runtime="native", platforms=("linux64",))
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    log: list[str] = []
    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(lambda env, inst, status, cat, msg: log.append(msg.decode()))
    cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    s = FMU2Slave(guid=md.guid, unzipDirectory=str(unzip), modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="c")
    s.instantiate(callbacks=cb, loggingOn=True)
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    unit = ControlUnit("c", sys)
    unit.setup(0.0, 1.0, H)
    for k, e in enumerate([0.1, -0.2, 0.05, 0.3]):
        s.setReal([vr["e"]], [e])
        unit.u[:] = [e]
        unit.pull()
        assert s.getReal([vr["y"]]) == list(unit.y)
        s.doStep(k * H, H)
        unit.do_step(k * H, H)
    s.setReal([vr["e"]], [5.0])
    with pytest.raises(FMICallException):
        s.getReal([vr["y"]])
    assert any("leave the branch clipped was traced on" in m and "<=" in m for m in log), log
    s.terminate()
    s.freeInstance()


@pytest.mark.parametrize("kind", ["discrete_pid", "continuous_ss", "lqg", "scheduled", "traced"])
def test_the_fmi3_fmu_equals_the_python_unit_and_validates(kind, plant_fmu, tmp_path):
    sys = DESIGNS[kind]()
    fmu = export_fmu(sys, tmp_path, runtime="native", step=H if sys.isctime() else None, fmi=3,
                     platforms=("linux64",))
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.fmiVersion == "3.0" and md.coSimulation is not None
    assert "binaries/x86_64-linux/" + md.coSimulation.modelIdentifier + ".so" in zipfile.ZipFile(fmu).namelist()
    native = closed_loop(plant_fmu, kind, fmu)
    python = closed_loop(plant_fmu, kind)
    assert_close(native, python, 1e-13)


@pytest.mark.parametrize("kind", ["discrete_pid", "discrete_ss", "lqg", "scheduled", "traced"])
def test_a_scheduled_execution_controller_ticks_like_the_python_unit_steps(kind, tmp_path):
    """FMI 3 Scheduled Execution: each activation of the sample clock latches the outputs
    of the current state and inputs, then advances one sample (ControlUnit's pull, then
    do_step)."""
    from fmpy.fmi3 import FMU3ScheduledExecution
    sys = DESIGNS[kind]()
    fmu = export_fmu(sys, tmp_path, runtime="native", fmi=3, scheduled=True, platforms=("linux64",))
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    assert md.scheduledExecution is not None and md.coSimulation is None
    (clock,) = [v for v in md.modelVariables if v.type == "Clock"]
    import xml.etree.ElementTree as ET
    node = ET.fromstring(zipfile.ZipFile(fmu).read("modelDescription.xml")).find("ModelVariables/Clock")
    assert float(node.get("intervalDecimal")) == H and clock.intervalVariability == "constant"
    outputs = {v.name for v in md.modelVariables if v.causality == "output"}
    assert all(v.clocks == [clock] for v in md.modelVariables if v.name in outputs)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    fm = FMU3ScheduledExecution(guid=md.guid, unzipDirectory=str(unzip),
                                modelIdentifier=md.scheduledExecution.modelIdentifier, instanceName="se")
    fm.instantiate()
    fm.enterInitializationMode(startTime=0.0)
    fm.exitInitializationMode()
    unit = ControlUnit("c", sys)
    unit.setup(0.0, 1.0, H)
    ins, outs = [vr[n] for n in unit.inputs], [vr[n] for n in unit.outputs]
    rng = np.random.default_rng(7)
    for k in range(200):
        u = rng.normal(scale=0.3, size=len(ins))
        fm.setFloat64(ins, list(u))
        fm.activateModelPartition(clock.valueReference, k * H)
        unit.u[:] = u
        unit.pull()
        got = np.array(fm.getFloat64(outs))
        if kind == "discrete_pid":
            assert np.array_equal(got, unit.y)
        else:
            np.testing.assert_allclose(got, unit.y, rtol=1e-13, atol=1e-13 * np.abs(unit.y).max())
        unit.do_step(k * H, H)
        # the latched outputs do not follow the inputs between ticks
        fm.setFloat64(ins, list(u + 1.0))
        assert np.array_equal(np.array(fm.getFloat64(outs)), got)
    with pytest.raises(FMICallException):
        fm.activateModelPartition(clock.valueReference + 1, 200 * H)  # not its clock
    fm.terminate()
    fm.freeInstance()


def test_scheduled_execution_needs_a_discrete_controller_and_fmi3(tmp_path):
    with pytest.raises(InputError, match="discrete controller"):
        export_fmu(DESIGNS["continuous_ss"](), tmp_path, runtime="native", step=H, fmi=3, scheduled=True)
    with pytest.raises(InputError, match="FMI 3"):
        export_fmu(DESIGNS["discrete_pid"](), tmp_path, runtime="native", scheduled=True)


def test_the_fmi3_fmu_runs_in_a_c_host_where_no_python_exists(hidden_python_works, tmp_path):  # noqa: F811
    """The FMI 3 LQG in the native tests' C host (tests/native/c_host3.c), Python hidden:
    the outputs after each step equal ControlUnit's with the same held inputs."""
    sys = DESIGNS["lqg"]()
    fmu = export_fmu(sys, tmp_path / "fmu", runtime="native", fmi=3, platforms=("linux64",))
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    host = tmp_path / "c_host3"
    subprocess.run(["gcc", "-O1", "-o", str(host), str(Path(__file__).parents[1] / "native" / "c_host3.c"), "-ldl"],
                   check=True)
    inputs = {"r1": 1.0, "r2": -0.5, "q1": 0.1, "q3": 0.2}
    res = without_python([str(host), str(unzip), md.coSimulation.modelIdentifier, md.guid, repr(H), "50",
                           ",".join(f"{vr[n]}={v!r}" for n, v in inputs.items()),
                           *(f"{vr[t]}:1" for t in TAU)])
    assert res.returncode == 0, res.stderr
    got = np.array([[float(v) for v in line.split()] for line in res.stdout.splitlines()])
    unit = ControlUnit("c", sys)
    unit.setup(0.0, 1.0, H)
    for n, v in inputs.items():
        unit.u[unit.inputs.index(n)] = v
    expected = []
    for k in range(50):
        unit.do_step(k * H, H)
        unit.pull()
        expected.append([(k + 1) * H, *unit.y])
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-13, atol=1e-13 * np.abs(unit.y).max())


def test_fmi3_is_refused_for_the_python_runtime(tmp_path):
    with pytest.raises(InputError, match="runtime='native'"):
        export_fmu(DESIGNS["discrete_ss"](), tmp_path, fmi=3)


def _listed(unzipdir: Path) -> list[str]:
    md = read_model_description(str(unzipdir))
    (config,) = md.buildConfigurations
    (fileset,) = config.sourceFileSets
    return fileset.sourceFiles


def test_the_sources_rebuild_with_cc_into_the_shipped_binary(exported, plant_fmu, tmp_path):
    cc = need_tool("cc", "gcc")
    fmu = exported("discrete_pid")
    unzip = tmp_path / "fmu"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    (so,) = (unzip / "binaries" / "linux64").glob("*.so")
    shipped = so.read_bytes()
    src = unzip / "sources"
    files = [str(src / f) for f in _listed(unzip)]
    # the build's own flags give the same bytes
    from mbfmu.fmu.native.toolchain import CFLAGS, PLATFORMS
    again = tmp_path / "again.so"
    subprocess.run([cc, "-shared", *CFLAGS, *PLATFORMS["linux64"][2], "-o", str(again), *files, "-lm"], check=True)
    assert again.read_bytes() == shipped
    # a plain build computes the same numbers
    so.unlink()
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-std=c99", "-o", str(so), *files, "-lm"], check=True)
    _assert_same_loop(zip_folder(unzip, tmp_path / "rebuilt.fmu"), fmu, plant_fmu)


def _assert_same_loop(rebuilt: Path, shipped: Path, arm: Path) -> None:
    """The closed loop with the rebuilt PID FMU equals the one with the shipped binary, bit for bit."""
    a, b = closed_loop(arm, "discrete_pid", rebuilt, stop=0.3), closed_loop(arm, "discrete_pid", shipped, stop=0.3)
    for n in a.names:
        assert np.array_equal(a[n], b[n]), n


@pytest.mark.parametrize("fmi", [2, 3])
def test_fmpy_builds_the_sources_into_a_binary_that_computes_the_same(fmi, plant_fmu, tmp_path):
    need_tool("cmake", why="fmpy.build.build_platform_binary runs CMake")
    from fmpy.build import build_platform_binary
    fmu = export_fmu(DESIGNS["discrete_pid"](), tmp_path / "fmu", runtime="native", fmi=fmi, platforms=("linux64",))
    unzip = tmp_path / "unzip"
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzip)
    (so,) = [p for d in ("linux64", "x86_64-linux") for p in (unzip / "binaries" / d).glob("*.so")]
    so.unlink()
    build = tmp_path / "build"
    build.mkdir()
    # as `fmpy compile --all-warnings --warning-as-error` does: -Wall -Wextra -Wpedantic, no warning
    build_platform_binary(unzip.resolve(), build, all_warnings=True,
                          cmake_options={"CMAKE_COMPILE_WARNING_AS_ERROR:BOOL": "ON"})
    assert so.is_file()
    _assert_same_loop(zip_folder(unzip, tmp_path / "rebuilt.fmu"), fmu, plant_fmu)
