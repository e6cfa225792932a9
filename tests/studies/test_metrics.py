"""Step metrics of a second-order system against the analytic formulas, and the signal statistics."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from mbfmu.errors import UnknownNameError
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


def test_a_metric_on_an_unknown_variable_is_refused_by_name_at_the_first_result(tmp_path):
    """A function target's system exists only in its runs: the first result decides, and
    the study stops there instead of filling NaN rows counted "ok"."""
    counter = tmp_path / "calls.txt"

    def build(zeta):
        with counter.open("a") as f:
            f.write(f"{zeta}\n")
        return second_order.system(zeta)
    with pytest.raises(UnknownNameError, match=r"metric 'final:nope': no recorded variable 'nope'"):
        sweep(build, {"zeta": [0.5, 0.6, 0.7]}, stop_time=0.5, step=0.01, executor="serial",
              metrics=["final:nope"], progress=False)
    assert len(counter.read_text().splitlines()) == 1
    with pytest.raises(UnknownNameError, match=r"'y' is ambiguous: plant.y, u.y"):
        sweep(second_order.system, {"zeta": [0.5]}, stop_time=0.5, step=0.01, executor="serial",
              metrics=["final:y"], progress=False)


def test_a_metric_on_an_unknown_variable_of_a_plant_is_refused_before_any_run(tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(UnknownNameError, match=r"no recorded variable 'q\[9\]'; did you mean 'q\[3\]'"):
        sweep("rigid_arm", {"arm_mass": [10.0, 20.0]}, stop_time=0.1, metrics=["final:q[9]"], cache=cache,
              executor="serial", progress=False)
    assert not cache.exists() or not any(cache.rglob("*.npz"))

def test_a_response_that_never_settles_has_no_settling_time_and_says_so():
    """zeta = 0.05 at wn = 2 rad/s settles in about 4 / (zeta wn) = 40 s: a 3 s run must
    not report a settling time near its end, while a 60 s run gives the analytic one."""
    short = sweep(second_order.system, {"zeta": [0.05]}, stop_time=3.0, step=H, executor="serial",
                  metrics={"given": "settling_time:plant.y:1.0", "last": "settling_time:plant.y"}, progress=False)
    row = short.rows[0]
    assert row["status"] == "ok" and math.isnan(row["given"]) and math.isnan(row["last"])
    assert row["error"].count("not settled") == 2
    long = sweep(second_order.system, {"zeta": [0.05]}, stop_time=60.0, step=H, executor="serial",
                 metrics=["settling_time:plant.y:1.0"], progress=False)
    assert abs(long.rows[0]["settling_time:plant.y:1.0"] - _last_exit(0.05, 0.02)) <= H + 1e-9
