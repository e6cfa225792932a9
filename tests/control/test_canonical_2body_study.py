"""examples/canonical_2body_study.py: the velocity-feedback motor of Shimanovsky and Ivanov (2013)
``k (omega_0 - gamma_1_dot)`` spinning the two-body system up (issue 8).

Independent expectations:

* steady rotation: no torque other than the motor's acts about Ox, so
  ``gamma_1_dot -> omega_0`` and the motor torque -> 0;
* the slider and body 2 settle at the stationary point of the effective
  potential of steady rotation about Ox (gravity plus spring energy minus the
  centrifugal term ``w^2 I_Ox / 2``, ``I_Ox`` body 2's moment of inertia about
  the spin axis; the textbook rotating-frame argument)::

      V(y2, a) = m2 g xc2 cos a + c (y2 - y20)^2 / 2
                 - w^2 (J2x cos^2 a + J2y sin^2 a + m2 (y2 + xc2 sin a)^2) / 2

  whose ``dV/dy2 = 0`` is the hand force balance: spring force
  ``c (y2 - y20)`` = centrifugal force ``m2 w^2 r_c2`` on body 2;
  written here from the mechanism's geometry, not from the engine;
* a small set-point step settles as the linear model at the steady state
  predicts (its step response, and the envelope of its slowest pole).
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
from scipy.optimize import fsolve

from mbfmu.cosim import load_result



EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "canonical_2body_study.py"


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("canonical_2body_study", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("canonical_2body_study")


@pytest.fixture(scope="module")
def summary(study, out):
    return study.run(out, spin_up_stop=14.0, small_step_stop=8.0, replay=True)


def hand_steady_state(plant, w: float) -> tuple[float, float]:
    """(y2, alpha2) of steady rotation at w from the amended potential."""
    P = {s.name: s.start for s in plant.parameters}
    m2, g, xc2, c, y20 = P["m2"], P["g"], P["xc2"], P["c"], P["y20"]
    J2x, J2y = P["J2x"], P["J2y"]

    def grad(z):
        y2, a = z
        r = y2 + xc2 * math.sin(a)                       # radius of body 2's centre of mass
        dV_dy2 = c * (y2 - y20) - w * w * m2 * r        # spring - centrifugal force
        dV_da = (-m2 * g * xc2 * math.sin(a)
                 - 0.5 * w * w * ((J2y - J2x) * math.sin(2 * a) + 2 * m2 * r * xc2 * math.cos(a)))
        return [dV_dy2, dV_da]

    y2, a = fsolve(grad, [y20, -0.3], xtol=1e-12)
    return float(y2), float(a)


def test_outputs_written(summary, out):
    for f in ("summary.json", "spin_up.npz", "small_step.npz", "canonical_2body_study.png", "replay.html"):
        assert (out / f).stat().st_size > 1000, f
    assert json.loads((out / "summary.json").read_text()).keys() == summary.keys()
    data = load_result(out / "spin_up.npz").data
    assert data.dtype.names[0] == "time" and "v[1]" in data.dtype.names and "p[1]" in data.dtype.names


def test_steady_state_is_the_hand_force_balance(study, summary):
    plant = study.make_plant()
    y2, a = hand_steady_state(plant, study.OMEGA_0)
    ss = summary["steady_state"]
    assert ss["y2_m"] == pytest.approx(y2, abs=1e-9)
    assert ss["alpha2_rad"] == pytest.approx(a, abs=1e-9)
    assert abs(ss["beta2_rad"]) < 1e-9
    y2b, _ = hand_steady_state(plant, study.OMEGA_0 + study.SMALL_STEP)
    assert ss["y2_after_small_step_m"] == pytest.approx(y2b, abs=1e-9)


def test_spin_up_reaches_omega_0_and_the_slider_settles_at_the_balance(study, summary):
    plant = study.make_plant()
    m = summary["spin_up"]
    assert m["final_gamma1_dot_rad_s"] == pytest.approx(study.OMEGA_0, abs=1e-4)
    assert abs(m["final_motor_torque_Nm"]) < 1e-3
    assert m["peak_motor_torque_Nm"] == pytest.approx(plant.k * study.OMEGA_0, rel=1e-12)  # at t = 0, from rest
    y2, a = hand_steady_state(plant, study.OMEGA_0)
    assert m["final_y2_m"] == pytest.approx(y2, abs=1e-5)
    assert m["final_alpha2_rad"] == pytest.approx(a, abs=1e-4)
    assert y2 > next(s.start for s in plant.parameters if s.name == "y20")   # the spring is stretched
    assert m["settling_time_gamma1_dot_s"] < 14.0 and m["settling_time_y2_s"] < 14.0


def test_small_step_settles_as_the_linear_model_predicts(summary):
    lin, m = summary["linear_model"], summary["small_step"]
    assert lin["method"] == "analytic"       # canonical (q, p) plant: the C tangents (#33)
    assert max(p["re"] for p in lin["poles"]) < 1e-8      # stable (gamma_1 itself is cyclic: pole 0)
    for key in ("settling_time_gamma1_dot_s", "settling_time_y2_s"):
        assert m[key] == pytest.approx(lin[key], rel=0.05, abs=0.05), key
        assert m[key] <= lin["settling_time_pole_estimate_s"] + 0.05
    assert m["overshoot_gamma1_dot_percent"] == pytest.approx(lin["overshoot_gamma1_dot_percent"], abs=1.0)
    step = summary["parameters"]["small_step_rad_s"]
    assert m["max_deviation_from_linear_gamma1_dot_rad_s"] < 0.02 * step
    assert m["final_gamma1_dot_rad_s"] == pytest.approx(summary["parameters"]["omega_0_rad_s"] + step, abs=1e-4)
