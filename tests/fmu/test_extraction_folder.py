"""The pythonfmu FMU extracted into folders whose names need percent-encoding.

fmpy passes the standard ``file:`` URI of the resources folder, with non-ASCII
bytes, spaces, ``#`` and ``%`` escaped. pythonfmu 0.7 decodes only ``%20`` and
then called a NULL class (signal 11 in the host); the loader shim now gives it
a plain path (``resources/shim.c``, ``resource_folder``). Each host runs in a
child process, so a crash fails the test instead of ending pytest, and the
results must equal the same FMU's in a plain folder bit for bit.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tooling import FMU_CHECK

from .conftest import OWN_CASES, subprocess_env

# 'ü' (two UTF-8 bytes), a space, '#' (a URI fragment), '%' and '%41' (which a
# second decoding would turn into 'A'), and '%20' (which pythonfmu itself turns into a space)
AWKWARD = ["Jürgen #1 %41 ü", "a%20b ü#%"]

FMPY_CHILD = """
import json, sys
from fmpy import simulate_fmu
res = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), step_size=float(sys.argv[3]),
                   output_interval=float(sys.argv[3]), start_values=json.loads(sys.argv[4]))
print(json.dumps([list(map(float, row)) for row in res]))
"""


@pytest.fixture(scope="module")
def pendulum_fmu(build) -> tuple[Path, dict]:
    case = OWN_CASES[0]
    return build(case), case.inputs


def _fmpy_rows(fmu: Path, folder: Path, inputs: dict) -> np.ndarray:
    import json
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    res = subprocess.run([sys.executable, "-c", FMPY_CHILD, str(folder), "0.2", "0.01", json.dumps(inputs)],
                         capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert res.returncode == 0, f"fmpy in {folder.name!r}: exit {res.returncode}\n{res.stderr[-3000:]}"
    return np.array(json.loads(res.stdout))


@pytest.mark.parametrize("name", AWKWARD)
def test_fmpy_runs_the_fmu_in_a_folder_whose_name_needs_escaping(pendulum_fmu, name, tmp_path):
    fmu, inputs = pendulum_fmu
    plain = _fmpy_rows(fmu, tmp_path / "plain", inputs)
    awkward = _fmpy_rows(fmu, tmp_path / name, inputs)
    assert plain.shape[0] == 21 and not np.array_equal(plain[0, 1:], plain[-1, 1:])
    assert np.array_equal(awkward, plain)


def _checker_rows(fmu: Path, temp: Path, out: Path, env: dict | None = None) -> np.ndarray:
    temp.mkdir()
    res = subprocess.run([str(FMU_CHECK), "-h", "0.01", "-s", "0.2", "-t", str(temp), "-o", str(out), str(fmu)],
                         capture_output=True, text=True, timeout=300, env=env or subprocess_env())
    assert res.returncode == 0, f"fmuCheck in {temp.name!r}: exit {res.returncode}\n{res.stderr[-3000:]}"
    assert "0 warning(s) and error(s)" in res.stderr and "\t0 Error(s)" in res.stderr, res.stderr[-3000:]
    return np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)


@pytest.mark.parametrize("name", AWKWARD)
def test_compliance_checker_runs_the_fmu_in_a_folder_whose_name_needs_escaping(pendulum_fmu, name, tmp_path):
    """The checker (a C host, FMI Library) extracts into ``-t`` and passes its own URI."""
    fmu, _ = pendulum_fmu
    plain = _checker_rows(fmu, tmp_path / "plain", tmp_path / "plain.csv")
    awkward = _checker_rows(fmu, tmp_path / name, tmp_path / "awkward.csv")
    assert len(plain) >= 20 and not np.array_equal(plain[0, 1:], plain[-1, 1:])
    assert np.array_equal(awkward, plain)


def test_compliance_checker_runs_the_fmu_in_a_non_ascii_folder_without_a_utf8_locale(pendulum_fmu, tmp_path):
    """A C host started with no locale at all (``env -i``: C/POSIX, ASCII): the interpreter the
    shim starts is in UTF-8 mode, so it decodes the folder's name as the file system spells it."""
    fmu, _ = pendulum_fmu
    plain = _checker_rows(fmu, tmp_path / "plain", tmp_path / "plain.csv")
    keep = ("PYTHONPATH", "MBFMU_PYTHON", "PATH", "HOME", "TMPDIR")
    bare = {k: v for k, v in subprocess_env().items() if k in keep}
    awkward = _checker_rows(fmu, tmp_path / "Jürgen ü", tmp_path / "awkward.csv", env=bare)
    assert np.array_equal(awkward, plain)
