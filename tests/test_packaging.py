"""Packaging and set-up: ``mbfmu --version``, a wheel that ships every module
and the C sources without setuptools warnings, and the Makefile's two set-ups
(``make demo`` installs only the runtime dependencies, ``make test`` the test
extra too)."""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_version_flag_prints_the_installed_distribution_version():
    res = subprocess.run([sys.executable, "-m", "mbfmu", "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"mbfmu {importlib.metadata.version('mbfmu')}"


def _source_copy(dst: Path) -> Path:
    """The files a wheel is built from, without build products."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "*.pyc")
    for name in ("mbfmu", "models"):
        shutil.copytree(REPO / name, dst / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, dst / name)
    return dst


@pytest.mark.slow
def test_wheel_ships_every_module_and_the_c_sources_without_setuptools_warnings(tmp_path):
    src = _source_copy(tmp_path / "src")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                          "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    log = res.stdout + res.stderr
    for warning in ("absent from the `packages` configuration", "SetuptoolsDeprecationWarning",
                    "Installing '"):
        assert warning not in log, log[log.index(warning) - 500:][:2000]
    (wheel,) = (tmp_path / "dist").glob("mbfmu-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {p.relative_to(src).as_posix() for p in (src / "mbfmu").rglob("*")
                if p.is_file() and (p.suffix in (".py", ".c", ".h", ".js") or p.name == "fmi-headers-LICENSE.txt")}
    # the plant library, with the C of its plug-in elements (the crash occupant's sled frame and HIC recorder)
    expected |= {f"mbfmu/models/{p.name}" for p in (src / "models").iterdir() if p.suffix in (".py", ".c")}
    assert {"mbfmu/models/hic_recorder.c", "mbfmu/models/sled_frame.c"} <= expected
    assert expected <= names, sorted(expected - names)
    assert any(n.startswith("mbfmu/dynamics/_kernels") for n in names)


def _make_dry_run(tmp_path: Path, target: str) -> list[str]:
    """The pip commands ``make -n TARGET`` would run on a machine without .venv."""
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, tmp_path / name)
    res = subprocess.run(["make", "-n", target, "PYTHON=python3.11"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [line for line in res.stdout.splitlines() if "pip install" in line]


def test_make_demo_installs_the_runtime_dependencies_only(tmp_path):
    installs = _make_dry_run(tmp_path, "demo")
    assert any(line.rstrip().endswith("-e .") for line in installs), installs
    assert not any("[test]" in line for line in installs), installs


def test_make_test_installs_the_test_extra(tmp_path):
    installs = _make_dry_run(tmp_path, "test")
    assert any("-e '.[test]'" in line for line in installs), installs


@pytest.mark.parametrize("target", ["test", "test-all"])
def test_make_test_runs_the_linter_before_the_tests(tmp_path, target):
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, tmp_path / name)
    res = subprocess.run(["make", "-n", target, "PYTHON=python3.11"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    lint = [i for i, line in enumerate(lines) if "-m ruff check" in line]
    tests = [i for i, line in enumerate(lines) if "-m pytest" in line]
    assert lint and tests and lint[0] < tests[0], lines


def test_the_linter_finds_nothing():
    """ruff with the rules of pyproject.toml ([tool.ruff]) over every Python folder."""
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "mbfmu", "tests", "examples",
                          "benchmarks", "models", "docs"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


# import name -> distribution name, where they differ
_DISTRIBUTION = {"mpl_toolkits": "matplotlib", "yaml": "pyyaml", "PIL": "pillow"}
# imported only inside optional paths that name their extra in the error they raise
_OPTIONAL = {"pinocchio", "mujoco", "exudyn", "libcosimpy", "plotly", "IPython", "numpydoc", "sphinx"}


def test_every_third_party_module_the_package_imports_is_a_runtime_dependency():
    """A user of ``pip install mbfmu`` gets every module the package imports (pandas was
    missing: ``load_result(...).to_dataframe()`` raised a bare ModuleNotFoundError). The
    packages of the extras are imported through ``require_extra`` (tests/test_extras.py)."""
    import ast
    import re
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    declared = {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in deps}
    stdlib = set(sys.stdlib_module_names)
    missing = {}
    for path in [*(REPO / "mbfmu").rglob("*.py"), *(REPO / "models").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top in stdlib or top in ("mbfmu", "__future__") or top in _OPTIONAL:
                    continue
                if _DISTRIBUTION.get(top, top).lower().replace("_", "-") not in declared:
                    missing.setdefault(top, str(path.relative_to(REPO)))
    assert not missing, f"imported but not a runtime dependency: {missing}"


@pytest.mark.slow
def test_a_plain_venv_with_the_core_install_builds_an_fmu_carrying_mbfmu(tmp_path):
    """``python -m venv`` (setuptools as Python ships it: 65.5 for 3.11, which
    refused pyproject.toml's ``license = "MIT"``) and ``pip install -e .``
    (core dependencies only) build a pythonfmu FMU that carries its copy of
    mbfmu (``resources/mbfmu-<version>.tar.gz``), and ``mbfmu simulate`` runs it."""
    src = _source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    shipped = subprocess.run([py, "-c", "import setuptools; print(setuptools.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    res = subprocess.run([py, "-m", "pip", "install", "--quiet", "-e", str(src)], capture_output=True,
                         text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MBFMU_PYTHON", "LD_PRELOAD")}
    build = ("import logging, sys; logging.basicConfig(); from mbfmu.fmu import build_fmu; "
             "print(build_fmu('rigid_arm', sys.argv[1]))")
    res = subprocess.run([py, "-c", build, str(tmp_path / "fmus")], capture_output=True, text=True,
                         timeout=900, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "carries no copy" not in res.stderr, res.stderr
    fmu = Path(res.stdout.strip().splitlines()[-1])
    names = zipfile.ZipFile(fmu).namelist()
    version = importlib.metadata.version("mbfmu")
    assert f"resources/mbfmu-{version}.tar.gz" in names, (shipped, sorted(names))
    # the venv still has the setuptools Python shipped: the copy was made with it
    assert subprocess.run([py, "-c", "import setuptools; print(setuptools.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip() == shipped
    res = subprocess.run([venv / "bin" / "mbfmu", "simulate", str(fmu), "--stop-time", "0.1", "--no-progress",
                          "-o", str(tmp_path / "out.csv")], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "out.csv").stat().st_size > 0
