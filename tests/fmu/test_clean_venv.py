"""The FMU runs in a fresh virtual environment holding only what it declares.

How the requirement is made resolvable here: the FMU's
``resources/requirements.txt`` (what ``pythonfmu deploy`` installs) names
``mbfmu==<version>``, which is not on a package index in this test. So the
test first builds a wheel of this repository and installs exactly that
requirement from it (``--no-index --find-links``), then installs the
requirements file verbatim with pip, as ``pythonfmu deploy`` does (mbfmu is
then already satisfied; its dependencies come from the index). The FMU is then
simulated with fmpy in that environment, from a folder outside the repository
and without PYTHONPATH, and compared with the plant simulated here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from .conftest import OWN_CASES, REPO

pytestmark = pytest.mark.slow

RUN = """
import json, sys
import numpy as np
from fmpy import simulate_fmu
import mbfmu
assert not mbfmu.__file__.startswith({repo!r}), mbfmu.__file__
r = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), step_size=float(sys.argv[3]),
                 output_interval=float(sys.argv[3]), start_values=json.loads(sys.argv[4]))
print(json.dumps({{n: r[n].tolist() for n in r.dtype.names}}))
"""


def _pip(py, *args, cwd):
    res = subprocess.run([str(py), "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, f"pip {' '.join(args)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


def test_fmu_runs_in_a_clean_venv_with_only_its_declared_requirements(build, tmp_path):
    case = OWN_CASES[1]
    fmu = build(case)
    with zipfile.ZipFile(fmu) as z:
        requirements = z.read("resources/requirements.txt").decode()
    mbfmu_req = next(line for line in requirements.split() if line.startswith("mbfmu"))
    (tmp_path / "requirements.txt").write_text(requirements)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    wheels = tmp_path / "wheels"
    _pip(sys.executable, "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO), cwd=tmp_path)
    _pip(py, "install", "-q", "--no-deps", "--no-index", "--find-links", str(wheels), mbfmu_req, cwd=tmp_path)
    _pip(py, "install", "-q", "-r", str(tmp_path / "requirements.txt"), cwd=tmp_path)

    plant = case.plant()
    h, n = plant.default_step, 100
    u = {name: v for name, v in case.inputs.items()}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD", "VIRTUAL_ENV")}
    res = subprocess.run([str(py), "-c", RUN.format(repo=str(REPO)), str(fmu), repr(n * h), repr(h), json.dumps(u)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.splitlines()[-1])
    uu = plant.default_inputs()
    for name, v in u.items():
        uu[plant.input_index(name)] = v
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=uu)
    for j, s in enumerate(plant.outputs):
        np.testing.assert_allclose(got[s.name], Y[:, j], rtol=0, atol=1e-10)
    # the plant library ships inside the wheel: `mbfmu list` and load_plant work
    # from the plain install (run outside the repository, without PYTHONPATH)
    res = subprocess.run([str(py), "-m", "mbfmu", "list"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    for name in ("rigid_arm", "canonical_2body", "flexible_arm", "satellite", "crash_occupant"):
        assert f"\n{name}: " in "\n" + res.stdout, name
    res = subprocess.run([str(py), "-c", "import mbfmu; p = mbfmu.load_plant('satellite'); print(mbfmu.__file__)"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and str(venv) in res.stdout, res.stderr[-3000:]
