"""Step metrics of a second-order system against the analytic formulas, and the signal statistics."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from mbfmu.studies import sweep

from . import second_order

WN, H, T = 2.0, 2e-3, 12.0


def _last_exit(zeta: float, band: float) -> float:
    """Analytic settling time: the last time |y - 1| = band (the envelope bounds where to look)."""
    y = lambda t: abs(second_order.response(t, zeta, WN) - 1) - band
    t_env = -math.log(band * math.sqrt(1 - zeta * zeta)) / (zeta * WN)  # the envelope meets the band
    ts = np.linspace(0.0, t_env, 20001)
    vals = np.array([y(t) for t in ts])
    k = np.flatnonzero(vals >= 0)[-1]
    return brentq(y, ts[k], ts[k + 1])


def _crossing(zeta: float, level: float) -> float:
    return brentq(lambda t: second_order.response(t, zeta, WN) - level, 0.0, math.pi / (WN * math.sqrt(1 - zeta ** 2)))


def test_overshoot_settling_and_rise_time_of_a_second_order_system_match_the_analytic_values():
    zetas = [0.2, 0.4, 0.7]
    study = sweep(second_order.system, {"zeta": zetas, "wn": [WN]}, stop_time=T, step=H, executor="serial",
                  metrics=[f"{k}:plant.y:1.0" for k in ("overshoot", "settling_time", "rise_time", "peak_time")],
                  progress=False)
    for zeta, row in zip(zetas, study.rows):
        wd = WN * math.sqrt(1 - zeta * zeta)
        # the ZOH discretization of a step response is exact at the samples: only sampling limits the figures
        assert row["overshoot:plant.y:1.0"] == pytest.approx(100 * math.exp(-zeta * math.pi / math.sqrt(1 - zeta ** 2)),
                                                         abs=100 * (WN * H) ** 2)
        assert abs(row["peak_time:plant.y:1.0"] - math.pi / wd) <= H
        assert abs(row["settling_time:plant.y:1.0"] - _last_exit(zeta, 0.02)) <= H + 1e-9
        assert abs(row["rise_time:plant.y:1.0"] - (_crossing(zeta, 0.9) - _crossing(zeta, 0.1))) <= 2 * H


def test_final_min_max_rms_and_a_user_metric_match_the_analytic_response():
    zeta = 0.3

    def undershoot_area(result):  # a user metric: integral of (y - 1) where y > 1
        y = result["plant.y"]
        return float(np.trapezoid(np.clip(y - 1, 0, None), result.time))

    study = sweep(second_order.system, {"zeta": [zeta]}, stop_time=4.0, step=H, executor="serial", progress=False,
                  metrics=["final:plant.y", "min:plant.y", "max:plant.y", "rms:plant.y", "mean:plant.y", undershoot_area])
    row = study.rows[0]
    y = lambda t: second_order.response(t, zeta, WN)
    tp = math.pi / (WN * math.sqrt(1 - zeta ** 2))
    assert row["final:plant.y"] == pytest.approx(y(4.0), abs=1e-12)
    assert row["min:plant.y"] == pytest.approx(0.0, abs=1e-15)
    assert row["max:plant.y"] == pytest.approx(y(tp), abs=(WN * H) ** 2)
    # time averages by the trapezoidal rule: O(h^2) against the exact integrals
    assert row["rms:plant.y"] == pytest.approx(math.sqrt(quad(lambda t: y(t) ** 2, 0, 4, limit=200)[0] / 4), abs=1e-5)
    assert row["mean:plant.y"] == pytest.approx(quad(y, 0, 4, limit=200)[0] / 4, abs=1e-5)
    above = [brentq(lambda t: y(t) - 1, a, b) for a, b in ((0.5, tp), (tp, 2 * tp))]
    assert row["undershoot_area"] == pytest.approx(quad(lambda t: y(t) - 1, *above)[0], abs=1e-5)


def test_an_unknown_metric_variable_gives_nan_and_names_the_problem():
    study = sweep(second_order.system, {"zeta": [0.5]}, stop_time=0.5, step=0.01, executor="serial",
                  metrics=["final:nope", "final:y"], progress=False)
    assert study.rows[0]["status"] == "ok" and math.isnan(study.rows[0]["final:nope"])
    assert "no recorded variable 'nope'" in study.rows[0]["error"]
    assert "'y' is ambiguous: plant.y, u.y" in study.rows[0]["error"]
