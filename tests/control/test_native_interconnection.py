"""An interconnection of controllers and blocks exported as one native controller
FMU (#36.1): the same units the compiled loop evaluates in C (controller.c), in
one FMU, equal in a closed loop with the native rigid_arm FMU to the master
running the units themselves; Python hidden, the FMU Compliance Checker runs it."""
from __future__ import annotations

import control
import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from mbfmu.control import export_fmu
from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, Gain, Sum, System, simulate
from mbfmu.errors import InputError
from mbfmu.fmu.builder import build_fmu
from native.python_free import fmu_check

from controller_designs import H, NETWORKS as DESIGNS, REF, pids


@pytest.fixture(scope="module")
def arm_fmu(tmp_path_factory):
    return build_fmu("rigid_arm", tmp_path_factory.mktemp("net_arm"), runtime="native", platforms=("linux64",))



def _plant_connections(kind: str, ctrl: str) -> list[tuple[str, str]]:
    """The arm's wiring to the controller's units (named ``ctrl`` + unit name, or inside the FMU ``ctrl``)."""
    p = (lambda unit, var: f"{ctrl}.{unit}.{var}") if ctrl == "fmu" else (lambda unit, var: f"{unit}.{var}")
    if kind == "blocks_pd":
        return [("arm.q", p("err", "q")), ("arm.v", p("kd", "u")), (p("lim", "y"), "arm.tau")]
    if kind == "pids":
        return [(f"arm.q[{i}]", p(f"pid{i}", "y")) for i in (1, 2, 3)] + [(p("lim", "y"), "arm.tau")]
    return ([("arm.q", p("ctrl", "q")), ("arm.v", p("ctrl", "v")), (p("tau1", "y"), "arm.tau[1]")]
            + [(p("lim", f"y[{i}]"), f"arm.tau[{i}]") for i in (2, 3)])


def _arm(arm_fmu):
    return FmuUnit(arm_fmu, name="arm", values={f"theta{i}_0": r - 0.3 for i, r in enumerate(REF, 1)})


def closed_loop(arm_fmu, kind: str, fmu=None, stop: float = 1.0):
    """The arm under DESIGNS[kind]: the units themselves in the master, or their FMU ``fmu``."""
    units, conns, values = DESIGNS[kind]()
    if fmu is None:
        system = System([_arm(arm_fmu), *units], conns + _plant_connections(kind, "units"), values=values)
    else:
        system = System([_arm(arm_fmu), FmuUnit(fmu, name="fmu")], _plant_connections(kind, "fmu"))
    return simulate(system, stop, H, progress=False)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cache = {}

    def get(kind: str, fmi: int = 2, scheduled: bool = False):
        key = (kind, fmi, scheduled)
        if key not in cache:
            units, conns, values = DESIGNS[kind]()
            cache[key] = export_fmu(System(units, conns, values=values), tmp_path_factory.mktemp(kind),
                                    name=f"{kind}_net", runtime="native", fmi=fmi, scheduled=scheduled,
                                    platforms=("linux64",))
        return cache[key]
    return get


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_the_interconnection_fmu_equals_its_units_in_the_master(kind, fmi, arm_fmu, exported):
    """Blocks, PIDs, a scheduled controller and a transfer function in one FMU equal the
    master running the units themselves (compiled loop, the same controller.c): bit for
    bit, the same operations in the same order (the scheduled gains' row sums both in C)."""
    fmu = exported(kind, fmi)
    assert validate_fmu(str(fmu)) == []
    native, units = closed_loop(arm_fmu, kind, fmu), closed_loop(arm_fmu, kind)
    for i in (1, 2, 3):
        assert np.array_equal(native[f"arm.q[{i}]"], units[f"arm.q[{i}]"]), i
        assert np.array_equal(native[f"arm.v[{i}]"], units[f"arm.v[{i}]"]), i
    err = [max(abs(units[f"arm.q[{i}]"][k] - REF[i - 1]) for i in (1, 2, 3)) for k in (0, -1)]
    assert err[1] < 0.7 * err[0]  # the controllers pull the arm towards REF (the PIDs slowest: 0.18 from 0.3)


def test_its_variables_are_the_units_open_inputs_outputs_states_and_parameters(exported):
    md = read_model_description(str(exported("pids")))
    by = {v.name: v for v in md.modelVariables}
    inputs = [v.name for v in md.modelVariables if v.causality == "input"]
    assert inputs == [f"pid{i}.{s}" for i in (1, 2, 3) for s in ("r", "y")]
    assert [by[f"pid{i}.r"].start for i in (1, 2, 3)] == [repr(r) for r in REF]
    assert [v.name for v in md.modelVariables if v.causality == "output"] == [f"lim.y[{i}]" for i in (1, 2, 3)]
    assert by["lim.y[1]"].unit == "N.m"
    assert {"states.pid1.I", "states.pid3.s_prev", "pid2.Kp", "pid3.u_max"} <= set(by)
    assert by["pid2.Kp"].variability == "tunable"
    # lim.y[1] depends directly on pid1's reference and measurement only
    deps = {u.variable.name: sorted(d.name for d in u.dependencies) for u in md.outputs}
    assert deps["lim.y[1]"] == ["pid1.r", "pid1.y"]
    assert md.defaultExperiment.stepSize == "0.005"


def test_a_scheduled_execution_interconnection_ticks_as_the_units_step(exported):
    """FMI 3 Scheduled Execution of the PIDs (one clock at their 5 ms): each tick
    latches the outputs and takes one sample of every unit, as the units do."""
    from fmpy.fmi3 import FMU3ScheduledExecution
    import zipfile
    fmu = exported("pids", 3, True)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    (clock,) = [v for v in md.modelVariables if v.type == "Clock"]
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(fmu) as z:
            z.extractall(tmp)
        fm = FMU3ScheduledExecution(guid=md.guid, unzipDirectory=tmp,
                                    modelIdentifier=md.scheduledExecution.modelIdentifier, instanceName="se")
        fm.instantiate()
        fm.enterInitializationMode(startTime=0.0)
        fm.exitInitializationMode()
        units, conns, _ = pids()
        system = System(units, conns)
        us = system.units
        for u in us.values():
            u.setup(0.0, 1.0, 0.005)
        rng = np.random.default_rng(2)
        for k in range(100):
            q = rng.normal(scale=0.5, size=3)
            fm.setFloat64([vr[f"pid{i}.y"] for i in (1, 2, 3)], list(q))
            fm.activateModelPartition(clock.valueReference, k * 0.005)
            for i in (1, 2, 3):
                us[f"pid{i}"].u[1] = q[i - 1]
                us[f"pid{i}"].pull()
                us["u"].u[i - 1] = us[f"pid{i}"].y[0]
            us["u"].pull()
            us["lim"].u[:] = us["u"].y
            us["lim"].pull()
            assert np.array_equal(fm.getFloat64([vr[f"lim.y[{i}]"] for i in (1, 2, 3)]), us["lim"].y)
            for i in (1, 2, 3):
                us[f"pid{i}"].do_step(k * 0.005, 0.005)
        fm.terminate()
        fm.freeInstance()


def test_the_compliance_checker_runs_it_with_no_warning_where_no_python_exists(exported,  # noqa: F811
                                                                             tmp_path):
    res = fmu_check(exported("scheduled_lqr"), H, 100 * H, tmp_path / "out.csv")
    text = res.stdout + res.stderr
    assert res.returncode == 0 and "0 Warning(s)" in text and "0 Error(s)" in text, text


def test_what_one_fmu_cannot_hold_is_refused_by_name(tmp_path):
    src = FunctionUnit("src", lambda t, u: [1.0], outputs=["y"])
    with pytest.raises(InputError, match=r"unit 'src' \(FunctionUnit\)"):
        export_fmu(System([src, Gain("g", 2.0)], [("src.y", "g.u")]), tmp_path, runtime="native")
    loop = System([Gain("a", 2.0), Sum("s", "+-", inputs=("x", "f"))], [("s.y", "a.u"), ("a.y", "s.f")])
    with pytest.raises(InputError, match=r"algebraic loop through units \['a', 's'\]"):
        export_fmu(loop, tmp_path, runtime="native")
    mixed = System([ControlUnit("c", control.ss(-1.0, 1.0, 1.0, 0.0)),
                    ControlUnit("d", control.ss(0.5, 1.0, 1.0, 0.0, 0.01))], [("c.y[1]", "d.u[1]")])
    with pytest.raises(InputError, match="not both"):
        export_fmu(mixed, tmp_path, runtime="native", step=0.01)
    with pytest.raises(InputError, match="runtime='native'"):
        export_fmu(System([Gain("g", 2.0)]), tmp_path)
