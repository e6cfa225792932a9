"""Co-simulation error against the monolithic solution falls at the promised order.

Two masses coupled by a spring-damper, split across two C FMUs, compared with
the matrix-exponential solution of the 4-state linear system:
* with feedthrough: FMU b owns the coupling spring and outputs its force
  (depends directly on b's inputs x1, v1); FMU a gets the force.
* without feedthrough: both FMUs model the coupling spring from the other's
  position and velocity (outputs are states only).
Expected orders: Jacobi/Gauss-Seidel with constant inputs 1; linear
extrapolation 2; quadratic extrapolation 3 (the C FMU interpolates its inputs);
the mean-value fallback for units that cannot interpolate gives 2 at most.
"""
from __future__ import annotations

import control
import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2, monolithic_two_mass
from .systems import with_feedthrough, without_feedthrough

T = 1.0


def observed_order(make, steps, **kw):
    ref = monolithic_two_mass(T)[0]
    errs = []
    for h in steps:
        r = simulate(make(), T, h, **kw)
        got = np.array([r["a.x"][-1], r["a.v"][-1], r["b.x"][-1], r["b.v"][-1]])
        errs.append(np.max(np.abs(got - ref)))
    return np.log2(errs[0] / errs[-1]) / np.log2(steps[0] / steps[-1]), errs


@pytest.mark.parametrize("split", [with_feedthrough, without_feedthrough], ids=["feedthrough", "no-feedthrough"])
@pytest.mark.parametrize("algorithm,extrapolation,expected", [
    ("jacobi", 0, 1), ("jacobi", 1, 2), ("jacobi", 2, 3), ("gauss-seidel", 0, 1)])
def test_error_order_against_monolithic(mass_fmu, split, algorithm, extrapolation, expected):
    steps = (0.01, 0.005, 0.0025) if expected < 3 else (0.005, 0.0025, 0.00125)
    p, errs = observed_order(lambda: split(mass_fmu), steps, algorithm=algorithm, extrapolation=extrapolation)
    assert errs[-1] < errs[0]
    assert abs(p - expected) < 0.3, (p, errs)


def test_mean_value_extrapolation_for_units_without_interpolation(mass_fmu):
    """Mass a as a python-control unit (cannot interpolate inputs): order 2 with
    linear extrapolation (mean over the step), and quadratic gains no order."""
    ss = control.ss([[0, 1], [-K1 / M1, -D1 / M1]], [[0], [1 / M1]], [[1, 0], [0, 1]], 0,
                    inputs=["F"], outputs=["x", "v"], states=["x", "v"])

    def make():
        return System([ControlUnit("a", ss, x0=[1.0, 0.0], units={"F": "N", "x": "m", "v": "m/s"}),
                       FmuUnit(mass_fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                      [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])
    p1, _ = observed_order(make, (0.01, 0.005, 0.0025), extrapolation=1)
    p2, _ = observed_order(make, (0.0025, 0.00125, 0.000625), extrapolation=2)
    assert abs(p1 - 2) < 0.3 and abs(p2 - 2) < 0.3
