"""Fixtures of the FMU tests: which plants, built once per session.

Cases: the test plants of ``plants.py`` (always), and every plant of the
library (``mbfmu.plant.library.list_plants()``) when the library has plants. The
library plants are built by name, i.e. exactly as ``mbfmu build NAME`` does.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PLANTS = HERE / "plants.py"
if str(REPO) not in sys.path:  # the FMUs import mbfmu in this process
    sys.path.insert(0, str(REPO))

from mbfmu.fmu.builder import build_fmu  # noqa: E402
from mbfmu.fmu.plantref import build_plant, parse  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One FMU to test: plant reference, parameter overrides, constant inputs."""

    id: str
    spec: str
    parameters: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)   # input name -> constant value
    excite: bool = False                         # drive every input (library plants may rest at 0)

    def plant(self):
        return build_plant(parse(self.spec).with_parameters(self.parameters))

    def input_vector(self, plant) -> np.ndarray:
        """Constant inputs of the runs: ``inputs``, or with ``excite`` a tenth
        of each input's maximum (0.1 in SI units when unbounded)."""
        u = plant.default_inputs()
        for i, s in enumerate(plant.inputs):
            if self.excite:
                u[i] = 0.1 * s.max if s.max is not None and s.max > 0 else 0.1
                if s.min is not None:
                    u[i] = max(u[i], s.min)
        for name, value in self.inputs.items():
            u[plant.input_index(name)] = value
        return u


OWN_CASES = [
    Case("pendulum", f"{PLANTS}:DampedPendulum", inputs={"tau": 1.5}),
    Case("pendulum_tuned", f"{PLANTS}:DampedPendulum", {"length": 0.7, "damping": 0.3, "theta0": -1.0},
         inputs={"tau": -2.0}),
]


def library_plants() -> tuple[list[str], str]:
    """Library plant names, and why there are none when there are none."""
    try:
        from mbfmu.plant.library import list_plants
        names = list_plants()
    except ImportError as exc:
        return [], f"mbfmu.plant.library is not importable ({exc})"
    return names, "" if names else "mbfmu.plant.library lists no plants yet"


LIBRARY_NAMES, LIBRARY_REASON = library_plants()
LIBRARY_CASES = [Case(name, name, excite=True) for name in LIBRARY_NAMES]
ALL_CASES = OWN_CASES + LIBRARY_CASES
# for checks that take long per plant: the library plants only in the slow run
ALL_CASES_LIBRARY_SLOW = OWN_CASES + [pytest.param(c, marks=pytest.mark.slow, id=c.id) for c in LIBRARY_CASES]


def subprocess_env() -> dict[str, str]:
    """Environment for child processes: mbfmu importable from the repo, and
    this interpreter the one a non-Python host's FMU starts (MBFMU_PYTHON)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["MBFMU_PYTHON"] = sys.executable
    env.pop("LD_PRELOAD", None)
    return env


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fmus")


_BUILT: dict[str, Path] = {}


@pytest.fixture(scope="session")
def build(fmu_dir):
    """``build(case) -> Path`` of the case's FMU, built once per session."""
    def _build(case: Case) -> Path:
        if case.id not in _BUILT:
            _BUILT[case.id] = build_fmu(case.spec, fmu_dir / f"{case.id}.fmu", parameters=case.parameters or None)
        return _BUILT[case.id]
    return _build


@pytest.fixture(params=ALL_CASES, ids=lambda c: c.id)
def case(request) -> Case:
    return request.param


@pytest.fixture(scope="session")
def blowup_fmu(fmu_dir) -> Path:
    return build_fmu(f"{PLANTS}:Blowup", fmu_dir / "blowup.fmu")


@pytest.fixture(scope="session")
def c_host(tmp_path_factory):
    """A C program that loads an FMU with dlopen and steps it (it does not link libpython)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler: the non-Python host test cannot run")
    exe = tmp_path_factory.mktemp("c_host") / "c_host"
    subprocess.run([cc, "-O1", "-o", str(exe), str(HERE / "c_host.c"), "-ldl"], check=True)
    return exe
