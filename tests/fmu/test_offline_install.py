"""#23.4 "No mbfmu on the host": the command in the FMU's log installs mbfmu (slow: a venv and pip).

mbfmu is on no package index a recipient can reach, so the old advice
(``pip install mbfmu==<version>``) failed. The FMU now carries mbfmu's source
distribution and the log names ``python -m pip install <that file>``. Here a
fresh virtual environment with only fmpy runs the FMU from a copy elsewhere:
the run fails with that message, the command is run exactly as written (no
shell; the arguments as a POSIX shell would split them), and the FMU then
runs and follows the plant simulated here. pip takes mbfmu's dependencies
from this machine's package indexes, as a recipient's pip takes them from
theirs; mbfmu itself comes only from the file.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from mbfmu import __version__
from mbfmu.fmu.builder import build_fmu

from .conftest import OWN_CASES
from .travel import fresh_venv
from .travel import clean_env

pytestmark = pytest.mark.slow

RUN = """
import json, sys
from fmpy import simulate_fmu
log = []
try:
    r = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), step_size=float(sys.argv[3]),
                     output_interval=float(sys.argv[3]), start_values=json.loads(sys.argv[4]),
                     logger=lambda *a: log.append(a[-1].decode()))
    print(json.dumps({"rows": {n: r[n].tolist() for n in r.dtype.names}, "log": log}))
except Exception as exc:
    print(json.dumps({"failed": str(exc), "log": log}))
"""


def test_the_command_in_the_log_installs_mbfmu_and_the_fmu_then_runs(tmp_path):
    case = OWN_CASES[1]
    plant = case.plant()
    h, n = plant.default_step, 50
    fmu = build_fmu(case.spec, tmp_path / "built" / "pendulum.fmu", parameters=case.parameters,
                    platforms=["linux64"])
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    fmu = shutil.copy2(fmu, copy)
    py = fresh_venv(tmp_path / "venv", "fmpy")

    def simulate() -> dict:
        res = subprocess.run([str(py), "-c", RUN, str(fmu), repr(n * h), repr(h), json.dumps(case.inputs)],
                             cwd=copy, env=clean_env(), capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        return json.loads(res.stdout.splitlines()[-1])

    first = simulate()
    assert "failed" in first, first
    (message,) = [m for m in first["log"] if "is not installed" in m]
    found = re.search(r": run (.+?) \(mbfmu's source distribution, carried by this FMU as "
                      rf"resources/mbfmu-{re.escape(__version__)}\.tar\.gz", message)
    assert found, message
    command = shlex.split(found.group(1))
    assert command[:4] == [str(py), "-m", "pip", "install"] and command[4].endswith(f"mbfmu-{__version__}.tar.gz")
    install = subprocess.run(command, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]

    second = simulate()
    assert "rows" in second, second
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=case.input_vector(plant))
    for j, s in enumerate(plant.outputs):
        np.testing.assert_allclose(second["rows"][s.name], Y[:, j], rtol=0, atol=1e-10)
    assert np.any(np.abs(Y[-1] - Y[0]) > 1e-6)
