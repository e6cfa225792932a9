"""Bad input to ``mbfmu simulate``: one line naming what is wrong, no traceback, nothing run.

Each case is a mistake a new user makes (a malformed SSP, a bad number in a
model description, an output path that cannot be written, a recording that
cannot fit in memory); ``main`` must return 1 (argparse: 2) and print one
error line.
"""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from mbfmu.cli import main
from mbfmu.cosim import FmuUnit, System, write_ssp

from .conftest import FAULTY_VARS, build_faulty_c_fmu, faulty_model_description


def _ssd(tmp_path, fmu, patch=None):
    local = tmp_path / Path(fmu).name  # the FMU beside the .ssd: inside the system's folder
    shutil.copy(fmu, local)
    ssd = write_ssp(System([FmuUnit(local, "bad", values={"fail_time": 0.35})]), tmp_path / "s.ssd",
                    stop_time=1.0, step=0.1)
    if patch:
        ssd.write_text(ssd.read_text().replace(*patch))
    return ssd


def _fmu_with(tmp_path, variables):
    return build_faulty_c_fmu(tmp_path / "fmu", faulty_model_description(str(uuid.uuid4()), variables))


def _case(tmp_path, fmu, name):
    """(arguments, fragment expected in the error line) of each case."""
    run = ["--stop-time", "1", "--step", "0.1"]
    if name == "ssp not a zip":
        (tmp_path / "bad.ssp").write_text("not a zip")
        return [str(tmp_path / "bad.ssp")], "is not a readable SSP archive"
    if name == "ssd malformed xml":
        ssd = _ssd(tmp_path, fmu)
        ssd.write_text(ssd.read_text()[:300])
        return [str(ssd)], "cannot read"
    if name == "ssp value abc":
        return [str(_ssd(tmp_path, fmu, ('value="0.35"', 'value="abc"')))], "'abc'"
    if name == "ssp step abc":
        return [str(_ssd(tmp_path, fmu, ('step="0.1"', 'step="abc"')))], "'abc'"
    if name == "start twenty":
        vs = [v if v[0] != "fail_time" else ("fail_time", "parameter", "fixed", "twenty") for v in FAULTY_VARS]
        return [str(_fmu_with(tmp_path, vs)), *run], "variable 'fail_time': start='twenty' is not a number"
    if name == "duplicate value references":
        vs = [v if v[0] != "u" else ("u", "input", "continuous", 0.0, 0) for v in FAULTY_VARS]  # u on fail_time's 0
        return [str(_fmu_with(tmp_path, vs)), *run], "share Real value reference 0"
    if name == "not an fmu":
        (tmp_path / "x.fmu").write_text("text")
        return [str(tmp_path / "x.fmu")], "is not a readable FMU"
    if name == "model missing":
        return [str(tmp_path / "none.fmu")], "does not exist"
    if name == "set not a number":
        return [str(fmu), "--set", "fail_time=soon", *run], "fail_time is a Real, 'soon' is not a number"
    if name == "recording too big":
        return [str(fmu), "--stop-time", "1e9", "--step", "1e-3"], "needs 2.24e+04 GiB"
    if name == "stream too big for the disk":
        return [str(fmu), "--stop-time", "1e9", "--step", "1e-3", "-o", str(tmp_path / "r.csv")], "GiB free"
    if name == "output folder missing":
        return [str(fmu), *run, "-o", str(tmp_path / "no" / "r.csv")], "does not exist"
    if name == "output suffix unknown":
        return [str(fmu), *run, "-o", str(tmp_path / "r.xlsx")], "use one of .csv"
    if name == "output /dev/full":
        return [str(fmu), *run, "-o", "/dev/full"], "unknown format"
    if name == "output unwritable":
        return [str(fmu), *run, "-o", "/proc/run.csv"], "cannot write results to '/proc/run.csv'"
    if name == "output is a folder":
        (tmp_path / "d.csv").mkdir()
        return [str(fmu), *run, "-o", str(tmp_path / "d.csv")], "it is a folder"
    if name == "tolerance zero":
        return [str(fmu), *run, "--tolerance", "0"], "must be positive"
    if name == "tolerance negative":
        return [str(fmu), *run, "--adaptive", "--tolerance=-1e-3"], "must be positive"
    if name == "not whole steps":
        return [str(fmu), "--stop-time", "1", "--step", "0.3"], "not a whole number of steps"
    if name == "stop before start":
        return [str(fmu), "--stop-time", "-1", "--step", "0.1"], "must be after start_time"
    raise AssertionError(name)


CASES = ["ssp not a zip", "ssd malformed xml", "ssp value abc", "ssp step abc", "start twenty",
         "duplicate value references", "not an fmu", "model missing", "set not a number", "recording too big",
         "stream too big for the disk", "output folder missing", "output suffix unknown", "output /dev/full",
         "output unwritable", "output is a folder", "tolerance zero", "tolerance negative", "not whole steps",
         "stop before start"]


@pytest.mark.parametrize("name", CASES)
def test_user_error_is_one_line_without_traceback(faulty_c_fmu, tmp_path, capsys, name):
    args, fragment = _case(tmp_path, faulty_c_fmu, name)
    assert main(["simulate", *args, "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("mbfmu simulate: error: ") and fragment in err, err


def test_a_non_number_on_the_command_line_is_an_argparse_error(faulty_c_fmu, capsys):
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(faulty_c_fmu), "--step", "abc"])
    assert e.value.code == 1  # bad input, as everywhere in mbfmu (argparse's own would be 2)
    err = capsys.readouterr().err
    assert "invalid float value: 'abc'" in err and "Traceback" not in err


def test_output_is_checked_before_the_first_step(faulty_c_fmu, tmp_path, capsys):
    """An unwritable output fails at once, before a (here: 30 s of wall time) run."""
    import time
    t = time.perf_counter()
    assert main(["simulate", str(faulty_c_fmu), "--stop-time", "1e5", "--step", "1e-3", "-o", "/proc/run.csv"]) == 1
    assert time.perf_counter() - t < 5
    assert "cannot write results" in capsys.readouterr().err
