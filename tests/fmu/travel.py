"""User plants for the "FMUs that travel" tests, and an independent reference.

The plants are the test pendulum of ``plants.py`` defined three ways: in a
user module imported by name, in a script run as ``__main__``, and in
``python -c`` code (``__main__`` without a file, as in a notebook). Each
changes the defaults through a module-level constant and helper function,
so the FMU is right only if those travelled too. The reference solves the
pendulum equation with scipy's ``solve_ivp`` at tight tolerance, which
shares no code with mbfmu.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import numpy as np
from fmpy import read_model_description
from scipy.integrate import solve_ivp

from .conftest import REPO

DAMPING, THETA0, TAU = 0.3, -0.4, 0.8   # the user code's defaults and the test input
STEPS, STEP = 50, 0.01

PLANT_SOURCE = textwrap.dedent('''
    from tests.fmu.plants import DampedPendulum

    DAMPING = {damping!r}


    def initial_angle():
        return {theta0!r}


    class {cls}(DampedPendulum):
        name = {name!r}

        def __init__(self, length=1.0, mass=2.0, damping=DAMPING, theta0=None):
            super().__init__(length, mass, damping, initial_angle() if theta0 is None else theta0)
''')

BUILD_TAIL = textwrap.dedent('''
    import sys
    from mbfmu.fmu import build_fmu
    print(build_fmu({cls}, sys.argv[1], platforms=["linux64"]))
''')

SIMULATE = textwrap.dedent('''
    import json, sys
    from fmpy import simulate_fmu
    r = simulate_fmu(sys.argv[1], stop_time={stop!r}, step_size={h!r}, output_interval={h!r},
                     start_values={{"tau": {tau!r}}})
    print(json.dumps({{"time": r["time"].tolist(), "theta": r["theta"].tolist(), "omega": r["omega"].tolist()}}))
''').format(stop=STEPS * STEP, h=STEP, tau=TAU)


def build_machine_paths(build_folders: list[str], prefix: str = sys.prefix, base_prefix: str = sys.base_prefix,
                        stdlib: str = sysconfig.get_paths()["stdlib"], home: str = os.path.expanduser("~"),
                        tmp: str = tempfile.gettempdir()) -> set[str]:
    """The paths of the build machine that must not leak into an FMU.

    The build's own folders, home, the temporary folders, and the
    interpreter's installation (its virtual environment, its standard
    library, the interpreter itself). An interpreter prefix
    is never a needle by itself: Debian's Python has ``sys.base_prefix ==
    "/usr"``, and ``/usr/...`` in a carried README (``/usr/lib/wine``) is
    text, not a leak.
    """
    folders = [*build_folders, home, stdlib, sys.executable, "/tmp/", tmp if tmp != "/tmp" else ""]
    if prefix != base_prefix:  # a virtual environment: a folder of this build
        folders.append(prefix)
    if base_prefix != "/usr" and not base_prefix.startswith("/usr/"):
        folders.append(base_prefix)  # an interpreter of its own folder (pyenv, conda): not a system prefix
    return {str(f) for f in folders if f and f != "/"}


def plant_source(cls: str, name: str) -> str:
    """Source of a module defining the user pendulum ``cls`` (plant ``name``)."""
    return PLANT_SOURCE.format(cls=cls, name=name, damping=DAMPING, theta0=THETA0)


def reference(times: np.ndarray) -> np.ndarray:
    """theta, omega of the user pendulum (length 1 m, mass 2 kg) at ``times``."""
    g, L, m = 9.81, 1.0, 2.0

    def f(t, x):
        return [x[1], (TAU - DAMPING * x[1]) / (m * L * L) - g / L * np.sin(x[0])]

    sol = solve_ivp(f, (0.0, float(times[-1])), [THETA0, 0.0], t_eval=times, rtol=1e-11, atol=1e-12,
                    method="DOP853")
    return sol.y.T


def repo_env(**extra: str) -> dict[str, str]:
    """Environment of a child that builds: the repository importable (mbfmu
    and the ``tests`` package that the user code imports)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def clean_env(**extra: str) -> dict[str, str]:
    """Environment of a child that only runs FMUs: nothing of the repository."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_PRELOAD", "VIRTUAL_ENV", "MBFMU_PYTHON", "MBFMU_LIBPYTHON")}
    env.update(extra)
    return env


def run_python(python: str | Path, args: list[str], cwd: Path, env: dict[str, str],
               timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def build_user_fmus(src: Path, out: Path) -> dict[str, Path]:
    """Build the three user plants' FMUs from ``src`` (which is then deleted).

    Returns ``{"module": ..., "script": ..., "inline": ...}`` FMU paths.
    """
    src.mkdir(parents=True)
    out.mkdir(parents=True)
    (src / "user_pendulums.py").write_text(plant_source("ModulePendulum", "module_pendulum"))
    script = src / "build_script.py"
    script.write_text(plant_source("ScriptPendulum", "script_pendulum") + BUILD_TAIL.format(cls="ScriptPendulum"))
    builder = src / "build_module.py"
    builder.write_text("from user_pendulums import ModulePendulum\n" + BUILD_TAIL.format(cls="ModulePendulum"))
    inline = plant_source("InlinePendulum", "inline_pendulum") + BUILD_TAIL.format(cls="InlinePendulum")
    env = repo_env()
    fmus = {}
    for key, args in (("module", [str(builder)]), ("script", [str(script)]), ("inline", ["-c", inline])):
        res = run_python(sys.executable, [*args, str(out)], cwd=src, env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        fmus[key] = Path(res.stdout.split()[-1])
    for f in src.iterdir():  # the user's code is gone: only the FMUs remain
        if f.is_file():
            f.unlink()
    return fmus


def simulate_elsewhere(python: str | Path, fmu: Path, cwd: Path, env: dict[str, str]) -> np.ndarray:
    """Run ``fmu`` with fmpy in ``python`` from folder ``cwd``: rows t, theta, omega."""
    cwd.mkdir(parents=True, exist_ok=True)
    res = run_python(python, ["-c", SIMULATE, str(fmu)], cwd=cwd, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.splitlines()[-1])
    return np.column_stack([got["time"], got["theta"], got["omega"]])


def assert_matches_reference(rows: np.ndarray) -> None:
    np.testing.assert_allclose(rows[:, 0], np.arange(STEPS + 1) * STEP, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rows[:, 1:], reference(rows[:, 0]), rtol=0, atol=1e-7)


def run_pip(py, *args, cwd):
    """``py -m pip args`` in ``cwd``; fails the test with pip's output when pip fails."""
    res = subprocess.run([str(py), "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, f"pip {' '.join(args)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


def fresh_venv(where: Path, *packages: str) -> Path:
    """A new ``python -m venv`` at ``where`` with ``packages`` installed; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=600)
    py = where / "bin" / "python"
    run_pip(py, "install", "-q", *packages, cwd=where.parent)
    return py


def run_c_host(host: Path, unzipped: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The C host on the unzipped pendulum FMU: three steps of STEP s with tau = TAU, printing theta."""
    md = read_model_description(str(unzipped / "modelDescription.xml"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    args = [str(host), str(unzipped), md.coSimulation.modelIdentifier, md.guid, repr(STEP), "3",
            f"{vr['tau']}={TAU!r}", str(vr["theta"])]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, cwd=unzipped.parent)
