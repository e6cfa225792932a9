"""Every FMI 2.0 and FMI 3.0 Reference FMU (Modelica Association) runs through
``mbfmu simulate`` and the Python API at its default experiment, with outputs
equal to ``fmpy.simulate_fmu`` at the same communication step."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu

from mbfmu.cli import main
from mbfmu.cosim import load_result, simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.errors import InputError
from tooling import REFERENCE_FMUS

REF = REFERENCE_FMUS
CASES = [(v, p.stem) for v in ("fmi2", "fmi3") for p in sorted((REF / v).glob("*.fmu")) if p.stem != "Clocks"]
# Roberts (FMI 3) is a stiff DAE whose default stop time is 1e8 s: a short run
# instead, at its fixed internal step (1e-3 s), as (span, step)
SHORT_STOP = {("fmi3", "Roberts"): (0.1, 1e-3)}
# Its fixed internal step makes it count internal steps from the times it is given: the
# master's t0 + k (t_end - t0) / N and fmpy's t0 + k h differ in the last bit at some
# points, which moves one internal step: 4e-8 absolute on each y (y1 ~ 1)
TOL = {"Robertson Problem": (0.0, 1e-7)}  # (rtol, atol)
# Stair asks to stop before its stop time (FMI 2: fmi2Discard + fmi2Terminated; FMI 3:
# terminateSimulation). Ending there with the rows kept is the master loop's job,
# owned by engineer "faults" (issue 14 defect 2): until their work is merged, these
# runs raise instead of ending early.
STOPS_EARLY = {"Stair"}


def _experiment(version: str, model: str) -> tuple[Path, float, float, float]:
    path = REF / version / f"{model}.fmu"
    de = read_model_description(str(path)).defaultExperiment
    start = float(de.startTime or 0.0)
    if (version, model) in SHORT_STOP:
        span, step = SHORT_STOP[(version, model)]
        return path, start, start + span, step
    stop = float(de.stopTime)
    step = float(de.stepSize) if de.stepSize else (stop - start) / 500
    return path, start, stop, step


def _fmpy_columns(ref: np.ndarray) -> dict[str, np.ndarray]:
    """fmpy's result as scalar columns named like mbfmu's (arrays split as ``y[1]``)."""
    out = {}
    for n in ref.dtype.names[1:]:
        col = ref[n]
        if col.ndim == 1:
            out[n] = col
        else:
            for i in range(col.shape[1]):
                out[f"{n}[{i + 1}]"] = col[:, i]
    return out


def _check_against_fmpy(data: np.ndarray, unit: str, ref: np.ndarray, stop: float) -> None:
    cols = _fmpy_columns(ref)
    assert set(f"{unit}.{n}" for n in cols) <= set(data.dtype.names)
    n = min(len(data), len(ref))
    assert n >= 2
    np.testing.assert_allclose(data["time"][:n], ref["time"][:n], rtol=1e-12, atol=1e-12)
    for name, col in cols.items():
        mine = data[f"{unit}.{name}"][:n]
        if col.dtype.kind in "fc":
            rtol, atol = TOL.get(unit, (1e-10, 1e-12))
            np.testing.assert_allclose(mine, col[:n], rtol=rtol, atol=atol, err_msg=name)
        else:
            assert list(mine) == list(col[:n]), name
    assert data["time"][-1] == stop or unit in STOPS_EARLY


def _maybe_xfail_stop(model: str) -> None:
    if model in STOPS_EARLY:
        pytest.xfail("ending at the FMU's stop request with the rows kept is engineer 'faults' work "
                     "(issue 14 defect 2), not merged on this branch")


@pytest.mark.parametrize("version,model", CASES, ids=[f"{v}-{m}" for v, m in CASES])
def test_python_api_matches_fmpy(version, model):
    path, start, stop, step = _experiment(version, model)
    ref = simulate_fmu(str(path), start_time=start, stop_time=stop, output_interval=step, fmi_type="CoSimulation")
    unit = FmuUnit(path)
    try:
        r = simulate(System([unit]), stop, step, start_time=start, progress=False)
    except Exception:
        _maybe_xfail_stop(model)
        raise
    _check_against_fmpy(r.data, unit.name, ref, stop)


@pytest.mark.parametrize("version,model", CASES, ids=[f"{v}-{m}" for v, m in CASES])
def test_cli_matches_fmpy(version, model, tmp_path, capsys):
    path, start, stop, step = _experiment(version, model)
    ref = simulate_fmu(str(path), start_time=start, stop_time=stop, output_interval=step, fmi_type="CoSimulation")
    out = tmp_path / "r.npz"
    args = ["simulate", str(path), "-o", str(out), "--no-progress"]
    if (version, model) in SHORT_STOP:
        args += ["--stop-time", repr(stop), "--step", repr(step)]
    status = main(args)
    if status != 0:
        _maybe_xfail_stop(model)
    assert status == 0, capsys.readouterr().err
    _check_against_fmpy(load_result(out).data, read_model_description(str(path)).modelName, ref, stop)


def test_fmi3_units_keep_types_and_arrays():
    """FMI 3 Feedthrough: every integer type, Boolean, String and Enumeration set and
    read back with its own type; StateSpace: arrays split into elements."""
    u = FmuUnit(REF / "fmi3" / "Feedthrough.fmu")
    u.set("UInt64_input", 2**40 + 3)
    u.set("Int8_input", -5)
    u.set("Boolean_input", True)
    u.set("String_input", "a, \"quoted\" text")
    u.set("Enumeration_input", 2)
    r = simulate(System([u]), 1.0, 0.5, progress=False)
    last = r.data[-1]
    assert last["Feedthrough.UInt64_output"] == 2**40 + 3 and r.data.dtype["Feedthrough.UInt64_output"] == np.int64
    assert last["Feedthrough.Int8_output"] == -5
    assert last["Feedthrough.Boolean_output"] is np.True_
    assert last["Feedthrough.String_output"] == "a, \"quoted\" text"
    assert last["Feedthrough.Enumeration_output"] == 2
    assert "Binary_output" in u.skipped
    s = FmuUnit(REF / "fmi3" / "StateSpace.fmu")
    assert s.inputs == ["u[1]", "u[2]", "u[3]"] and s.outputs == ["y[1]", "y[2]", "y[3]"]
    assert s.feedthrough["y[2]"] == ("u[1]", "u[2]", "u[3]")
    with pytest.raises(InputError, match="has 3 elements"):
        s.set("u", [1.0, 2.0])


def test_fmi3_without_cosimulation_is_refused_by_name():
    """Clocks offers Scheduled Execution only: FmuUnit opens it as such
    (tests/cosim/test_scheduled_execution.py); as a co-simulation unit it is refused by name."""
    from mbfmu.cosim.fmi.fmu3_scheduled import Fmu3ScheduledUnit
    from mbfmu.cosim.fmi.fmu3_unit import Fmu3Unit
    with pytest.raises(InputError, match=r"no co-simulation interface \(it offers scheduled execution only\)"):
        Fmu3Unit(REF / "fmi3" / "Clocks.fmu")
    assert type(FmuUnit(REF / "fmi3" / "Clocks.fmu")) is Fmu3ScheduledUnit
