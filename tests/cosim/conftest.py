"""Session fixtures: the test FMUs, built once per test session into a tmp dir."""
from __future__ import annotations

import pytest
from tooling import skip_unless_required

from .fmu_build import build_c_fmu, build_python_fmu


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cosim_fmus")


@pytest.fixture(scope="session")
def mass_fmu(fmu_dir):
    """C FMU: mass with spring/damper to ground and a coupling spring (see cfmu/mass.c)."""
    return build_c_fmu("mass", fmu_dir)


@pytest.fixture(scope="session")
def gain_fmu(fmu_dir):
    """C FMU: y = k u + w + b (direct feedthrough, no state)."""
    return build_c_fmu("gain", fmu_dir)


@pytest.fixture(scope="session")
def clock_fmu(fmu_dir):
    """C FMU that sums the step sizes it gets and compares them with the time points
    (``drift``, ``missed``); ``hang_time`` makes it sleep forever inside a step."""
    return build_c_fmu("clock", fmu_dir)


@pytest.fixture(scope="session")
def pendulum_fmu(fmu_dir):
    """pythonfmu FMU: damped pendulum plant (no rollback)."""
    return build_python_fmu("pendulum", fmu_dir / "pendulum")


@pytest.fixture(scope="session")
def pd_fmu(fmu_dir):
    """pythonfmu FMU: PD controller."""
    return build_python_fmu("pd", fmu_dir / "pd")


@pytest.fixture(scope="session")
def pendulum_state_fmu(fmu_dir):
    """pythonfmu FMU: the pendulum built with state handling (getFMUstate/setFMUstate)."""
    return build_python_fmu("pendulum", fmu_dir / "pendulum_state", "--handle-state")


@pytest.fixture(scope="session")
def openmodelica_fmus(tmp_path_factory):
    """OpenModelica mass-spring FMUs (the two halves and the whole) from the gemseo-fmu wheel."""
    from .openmodelica_fmus import fetch
    try:
        return fetch(tmp_path_factory.mktemp("openmodelica"))
    except (RuntimeError, OSError) as exc:  # no package index reachable
        skip_unless_required(f"needs the gemseo-fmu wheel from PyPI: {exc}")


@pytest.fixture(scope="session")
def forgetful_fmu(fmu_dir):
    """pythonfmu FMU: a first-order lag that declares state handling but restores nothing."""
    return build_python_fmu("forgetful", fmu_dir / "forgetful", "--handle-state")
