"""Dymola's Drivetrain + Controller pair (FMPy's test FMUs): rollback that is right or refused.

The Controller's restore repeats its step exactly at the start (the start-up
probe passes) but not once it has taken steps with input slopes: iterative
coupling then converged to a wrong answer (w 4.5x the set-point) with no
warning. Each run mode is compared with a fixed-step run at 1e-5 s (an
independent, much finer co-simulation): it must be within 5x the error of the
fixed-step run at the same step, or refused naming the unit and the measured
difference.
"""
from __future__ import annotations

import re

import pytest

from mbfmu.cosim import FmuUnit, System, simulate, sources
from mbfmu.errors import CosimError

from tooling import FMPY_FMUS

T, H = 0.2, 1e-3


def pair() -> System:
    return System([FmuUnit(FMPY_FMUS / "Drivetrain.fmu", "drivetrain"),
                   FmuUnit(FMPY_FMUS / "Controller.fmu", "controller"),
                   sources.step("ref", 0.0, 1.0, initial=1.0)],
                  [("drivetrain.w", "controller.u_m"), ("controller.y", "drivetrain.tau"),
                   ("ref.y", "controller.u_s")])


@pytest.fixture(scope="module")
def reference() -> float:
    return float(simulate(pair(), T, 1e-5, progress=False)["drivetrain.w"][-1])


@pytest.mark.parametrize("mode", [dict(iterative=True), dict(adaptive=True, min_step=1e-4, max_steps=20000)],
                         ids=["iterative", "adaptive"])
def test_right_or_refused(reference, mode):
    fixed_error = abs(simulate(pair(), T, H, progress=False)["drivetrain.w"][-1] - reference)
    try:
        r = simulate(pair(), T, H, progress=False, **mode)
    except CosimError as exc:
        assert re.search(r"unit '(controller|drivetrain)' failed the rollback (check|probe).*relative difference "
                         r"\d", str(exc)), str(exc)
        return
    assert abs(r["drivetrain.w"][-1] - reference) <= 5 * fixed_error, (r["drivetrain.w"][-1], reference, fixed_error)
