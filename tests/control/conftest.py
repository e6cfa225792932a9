"""Fixtures of the control tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mbfmu.fmu import add_loader_shim
from native.platform_hosts import aarch64, hosts  # noqa: F401 (fixtures of this folder's tests)
from native.python_free import hidden_python_works  # noqa: F401 (a fixture of this folder's tests)

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def two_mass_fmu(tmp_path_factory):
    out = tmp_path_factory.mktemp("era_fmu")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, "-m", "pythonfmu", "build", "-f", str(HERE / "fmus" / "two_mass.py"),
                    "-d", str(out), "--handle-state"], check=True, capture_output=True, env=env)
    return add_loader_shim(next(out.glob("*.fmu")))


@pytest.fixture(scope="session")
def native_flexible_arm(native_fmus):
    """The flexible arm of examples/flexible_arm_study.py (geared motors) as a native FMU, built once."""
    sys.path.insert(0, str(HERE.parents[1] / "examples"))
    import flexible_arm_study as study
    return native_fmus("flexible_arm", parameters=dict(study.make_plant().parameter_values()),
                       platforms=("linux64",))


@pytest.fixture(scope="session")
def pythonfmu_flexible_arm(tmp_path_factory):
    """The same plant as :func:`native_flexible_arm`, built with the pythonfmu runtime."""
    sys.path.insert(0, str(HERE.parents[1] / "examples"))
    import flexible_arm_study as study
    from mbfmu.fmu import build_fmu
    out = tmp_path_factory.mktemp("pythonfmu_flexible_arm")
    return build_fmu("flexible_arm", out, parameters=dict(study.make_plant().parameter_values()))
