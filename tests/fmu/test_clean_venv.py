"""The FMUs on a machine that only has what they ask for (slow: wheel + venvs).

Once per session: a wheel of this repository is built, and two fresh virtual
environments are made in another folder with ``python -m venv`` (pip's cache
is reused): one with mbfmu installed from that wheel (not editable; its
dependencies come from the package index) and one with only fmpy. Every FMU
is copied into a fresh folder first and run from there, without PYTHONPATH.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mbfmu import __version__

from .conftest import OWN_CASES, REPO

from .travel import assert_matches_reference, build_user_fmus, clean_env, fresh_venv, run_c_host, run_pip, simulate_elsewhere

pytestmark = pytest.mark.slow

RUN = """
import json, sys
from fmpy import simulate_fmu
import mbfmu
assert not mbfmu.__file__.startswith({repo!r}), mbfmu.__file__
r = simulate_fmu(sys.argv[1], stop_time=float(sys.argv[2]), step_size=float(sys.argv[3]),
                 output_interval=float(sys.argv[3]), start_values=json.loads(sys.argv[4]))
print(json.dumps({{n: r[n].tolist() for n in r.dtype.names}}))
"""


@pytest.fixture(scope="session")
def venvs(tmp_path_factory) -> dict[str, Path]:
    """``{"mbfmu": python with mbfmu from the wheel, "fmpy": python with fmpy only}``."""
    base = tmp_path_factory.mktemp("fresh_venvs")
    wheels = base / "wheels"
    run_pip(sys.executable, "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO), cwd=base)
    wheel = next(wheels.glob("mbfmu-*.whl"))
    return {"mbfmu": fresh_venv(base / "with_mbfmu", str(wheel)),
            "fmpy": fresh_venv(base / "fmpy_only", "fmpy")}


@pytest.fixture(scope="session")
def travelling_fmus(tmp_path_factory) -> dict[str, Path]:
    """The user plants' FMUs and a library-style test plant, copied to a fresh folder."""
    from mbfmu.fmu.builder import build_fmu

    base = tmp_path_factory.mktemp("travelling")
    fmus = build_user_fmus(base / "src", base / "built")
    case = OWN_CASES[1]
    fmus["pendulum"] = build_fmu(case.spec, base / "built" / "pendulum.fmu", parameters=case.parameters)
    copy = base / "copy"
    copy.mkdir()
    return {k: Path(shutil.copy2(f, copy)) for k, f in fmus.items()}


def test_clean_copy_runs_in_a_fresh_venv_with_mbfmu_from_the_wheel(venvs, travelling_fmus, tmp_path):
    py = venvs["mbfmu"]
    case = OWN_CASES[1]
    plant = case.plant()
    h, n = plant.default_step, 100
    res = subprocess.run([str(py), "-c", RUN.format(repo=str(REPO)), str(travelling_fmus["pendulum"]), repr(n * h),
                          repr(h), json.dumps(case.inputs)], cwd=tmp_path, env=clean_env(), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.splitlines()[-1])
    _, _, Y = plant.simulate(stop_time=n * h, step=h, u=case.input_vector(plant))
    for j, s in enumerate(plant.outputs):
        np.testing.assert_allclose(got[s.name], Y[:, j], rtol=0, atol=1e-10)
    # the plant library ships inside the wheel: `mbfmu list` works from the plain install
    res = subprocess.run([str(py), "-m", "mbfmu", "list"], cwd=tmp_path, env=clean_env(), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    for name in ("rigid_arm", "canonical_2body", "flexible_arm", "satellite", "crash_occupant"):
        assert f"\n{name} " in "\n" + res.stdout, name


@pytest.mark.parametrize("kind", ["module", "script", "inline"])
def test_user_plants_run_in_a_fresh_venv_from_another_folder(venvs, travelling_fmus, kind, tmp_path):
    """The user's code exists only inside the FMU, the venv has never seen the repository."""
    rows = simulate_elsewhere(venvs["mbfmu"], travelling_fmus[kind], tmp_path / "run", clean_env())
    assert_matches_reference(rows)


def test_c_host_runs_the_copy_with_the_fresh_venv_named_by_mbfmu_python(venvs, travelling_fmus, c_host, tmp_path):
    with zipfile.ZipFile(travelling_fmus["module"]) as z:
        z.extractall(tmp_path / "x")
    res = run_c_host(c_host, tmp_path / "x", clean_env(MBFMU_PYTHON=str(venvs["mbfmu"]), PATH=str(tmp_path)))
    assert res.returncode == 0, res.stderr[-3000:]
    assert len(res.stdout.splitlines()) == 3


def test_venv_without_mbfmu_fails_with_what_to_install_in_the_fmu_log(venvs, travelling_fmus, tmp_path):
    py = venvs["fmpy"]
    code = ("import sys\nfrom fmpy import simulate_fmu\nlog = []\n"
            "try:\n    simulate_fmu(sys.argv[1], stop_time=0.1, logger=lambda *a: log.append(a[-1].decode()))\n"
            "except Exception as exc:\n    print('FAILED', exc)\nprint('\\n'.join(log))\n")
    res = subprocess.run([str(py), "-c", code, str(travelling_fmus["pendulum"])], cwd=tmp_path, env=clean_env(),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "FAILED Failed to instantiate model" in res.stdout
    assert (f"mbfmu {__version__} is not installed in {py}: run {py} -m pip install "
            in res.stdout), res.stdout[-3000:]
    assert f"mbfmu-{__version__}.tar.gz (mbfmu's source distribution, carried by this FMU" in res.stdout
