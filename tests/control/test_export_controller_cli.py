"""``mbfmu export-controller FILE.py:FUNCTION``: the design file's controller as a
native FMU that steps like the Python unit; bad input is one line and exit 1."""
from __future__ import annotations

import ctypes
import subprocess
import zipfile

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu

from mbfmu.cli import main
from mbfmu.cosim import ControlUnit
from tooling import assert_standard_fmi_headers

DESIGN = '''
import control
from mbfmu.control import pid


def lead():
    return control.tf([2.0, 1.0], [0.1, 1.0], inputs=["e"], outputs=["u"], name="lead")


def speed_pid():
    return pid(3.0, 1.0, 0.1, dt=0.005, u_min=-2.0, u_max=2.0, name="speed")


def broken():
    raise RuntimeError("the plant model file is missing")


def limited_pid():
    from mbfmu.cosim import ControlUnit, Saturation, System
    return System([ControlUnit("pid", speed_pid()), Saturation("lim", -1.0, 1.0)], [("pid.u", "lim.u")])
'''


@pytest.fixture
def design(tmp_path):
    path = tmp_path / "design.py"
    path.write_text(DESIGN)
    return path


@pytest.mark.parametrize("fmi", [2, 3])
def test_the_design_becomes_a_native_fmu_that_steps_like_the_python_unit(fmi, design, tmp_path, capsys):
    out = tmp_path / "fmus"
    rc = main(["export-controller", f"{design}:lead", "--step", "0.01", "--fmi", str(fmi), "-o", str(out),
               "--unit", "e=rad", "--unit", "u=N.m", "--platform", "linux64"])
    assert rc == 0
    fmu = out / "lead.fmu"
    assert f"wrote {fmu}" in capsys.readouterr().out
    md = read_model_description(str(fmu))
    assert md.fmiVersion == f"{fmi}.0" and {v.name: v.unit for v in md.modelVariables}["e"] == "rad"
    res = simulate_fmu(str(fmu), stop_time=0.2, output_interval=0.01, start_values={"e": 1.0})
    import control
    unit = ControlUnit("c", control.tf([2.0, 1.0], [0.1, 1.0], inputs=["e"], outputs=["u"]))
    unit.setup(0.0, 0.2, 0.01)
    unit.u[:] = 1.0
    expected = []
    for k in range(21):
        unit.pull()
        expected.append(unit.y[0])
        unit.do_step(k * 0.01, 0.01)
    np.testing.assert_allclose(res["u"], expected, rtol=1e-13, atol=0)
    # its sources/ carry the FMI standard's headers and build with a plain cc
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path / "unzipped")
    sources = tmp_path / "unzipped" / "sources"
    assert_standard_fmi_headers(sources)
    lib = tmp_path / "rebuilt.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-std=c99", "-o", str(lib), *map(str, sorted(sources.glob("*.c"))),
                    "-lm"], check=True, capture_output=True)
    rebuilt = ctypes.CDLL(str(lib))
    assert hasattr(rebuilt, "fmi2Instantiate" if fmi == 2 else "fmi3InstantiateCoSimulation")


def test_a_pid_design_exports_with_its_gains_as_parameters(design, tmp_path):
    assert main(["export-controller", f"{design}:speed_pid", "-o", str(tmp_path / "speed.fmu"),
                 "--platform", "linux64"]) == 0
    md = read_model_description(str(tmp_path / "speed.fmu"))
    params = {v.name: float(v.start) for v in md.modelVariables if v.causality == "parameter"}
    assert (params["Kp"], params["Ki"], params["Kd"], params["u_max"]) == (3.0, 1.0, 0.1, 2.0)
    assert md.defaultExperiment.stepSize == "0.005"


def test_a_discrete_design_exports_for_scheduled_execution(design, tmp_path, capsys):
    assert main(["export-controller", f"{design}:speed_pid", "--fmi", "3", "--scheduled", "-o", str(tmp_path),
                 "--platform", "linux64"]) == 0
    assert "FMI 3.0 scheduled execution" in capsys.readouterr().out
    md = read_model_description(str(tmp_path / "speed.fmu"))
    assert md.scheduledExecution is not None and [v.name for v in md.modelVariables if v.type == "Clock"] == ["sample"]


@pytest.mark.parametrize("args, message", [
    (["{design}:nope"], "defines no function 'nope'"),
    (["{design}:broken"], "RuntimeError: the plant model file is missing"),
    (["{design}:lead"], "--step"),
    (["{design}:lead", "--step", "0.01", "--unit", "e"], "expected SIGNAL=UNIT"),
    (["design_without_function.py"], "expected FILE.py:FUNCTION"),
    (["{design}:speed_pid", "--scheduled"], "FMI 3"),
])
def test_bad_input_is_one_line_and_exit_1(args, message, design, tmp_path, capsys):
    rc = main(["export-controller", *[a.format(design=design) for a in args], "-o", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and message in err and len(err.splitlines()) == 1, err


def test_an_existing_controller_fmu_is_kept_unless_forced(design, tmp_path, capsys):
    """A second export to the same file is refused in one line (the first FMU
    stays as it was); --force replaces it."""
    fmu = tmp_path / "speed.fmu"
    args = ["export-controller", f"{design}:speed_pid", "-o", str(fmu), "--platform", "linux64"]
    assert main(args) == 0
    before = fmu.read_bytes()
    capsys.readouterr()
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert "speed.fmu" in err and len(err.splitlines()) == 1 and fmu.read_bytes() == before
    assert main(args + ["--force"]) == 0


def test_an_interconnection_design_exports_as_one_fmu(design, tmp_path, capsys):
    """A design function returning a System of a PID and a Saturation: one native FMU whose
    inputs are the PID's and whose output is the limited one."""
    out = tmp_path / "fmus"
    rc = main(["export-controller", f"{design}:limited_pid", "-o", str(out), "--name", "limited",
               "--platform", "linux64"])
    assert rc == 0
    assert "an interconnection of 2 units: pid, lim" in capsys.readouterr().out
    md = read_model_description(str(out / "limited.fmu"))
    assert [v.name for v in md.modelVariables if v.causality in ("input", "output")] == ["pid.r", "pid.y", "lim.y"]
    res = simulate_fmu(str(out / "limited.fmu"), stop_time=0.05, output_interval=0.005, start_values={"pid.r": 5.0})
    assert res["lim.y"].max() == 1.0  # the PID asks for 2 (its own limit), the block holds it at 1
