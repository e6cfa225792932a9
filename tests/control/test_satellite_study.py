"""examples/satellite_study.py: attitude control of the deploying satellite with
reaction wheels (issue 8), checked against independent expectations:

* the closed-loop rigid-body poles of the full linear model (panel modes
  included) sit where the PD design puts them (``wn``, ``zeta``);
* a small step on the nonlinear plant settles as the sampled linear closed
  loop predicts, and overshoots as a second-order system with damping
  ``zeta`` does: ``exp(-pi zeta / sqrt(1 - zeta^2))`` (the standard second-order result,
  e.g. Ogata, *Modern Control Engineering*, ch. 5, maximum overshoot);
* the total angular momentum is conserved (no external torque) while the
  wheels take up the momentum of the slew;
* the loop in the co-simulation master (the plant's native FMU) matches the
  loop closed on the Python plant.
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mbfmu.cosim import load_result



EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "satellite_study.py"


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("satellite_study", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def plant(study):
    return study.make_plant()


@pytest.fixture(scope="module")
def design(study, plant):
    return study.design(plant)


def test_linear_model_shows_lightly_damped_panel_modes_and_the_loop_keeps_them_damped(design):
    open_modes, closed_modes = design["panel_open"], design["panel_closed"]
    assert len(open_modes) == len(closed_modes) >= 2
    assert min(m["zeta"] for m in open_modes) < 0.15      # lightly damped hinge modes
    assert 1.0 < open_modes[0]["wn_rad_s"] < 10.0
    for o, c in zip(open_modes, closed_modes):
        assert c["zeta"] >= o["zeta"] - 1e-6
    assert design["max_abs_z"] <= 1.0 + 1e-9             # nothing unstable
    assert design["conserved_closed"] > 0                 # momentum, wheel angles: on z = 1


def test_closed_loop_rigid_poles_are_the_designed_ones(study, design):
    """Kp = J wn^2, Kd = 2 zeta wn J on the locked inertia: the rigid-body
    poles of the full sampled model must sit at wn, zeta (panels and wheel
    spin take a little)."""
    rigid = design["rigid_closed"]
    assert len(rigid) == 3
    for m in rigid:
        assert m["wn_rad_s"] == pytest.approx(study.WN, rel=0.02)
        assert m["zeta"] == pytest.approx(study.ZETA, rel=0.02)


def test_small_step_settles_as_the_linear_closed_loop_predicts(study, plant, design, fmu):
    fig = study.step_response(plant, design, fmu)[0]
    assert fig["peak_wheel_torque_Nm"] < study.U_MAX        # linear regime: no saturation
    assert fig["settling_time_s"] == pytest.approx(fig["settling_time_linear_model_s"], abs=2 * study.H)
    assert fig["settling_time_s"] <= fig["settling_time_pole_estimate_s"]   # envelope bound
    z = study.ZETA
    assert fig["overshoot_percent"] == pytest.approx(100 * math.exp(-math.pi * z / math.sqrt(1 - z * z)), abs=0.2)
    assert fig["residual_hinge_vibration_rad"] < 1e-6


def test_fixed_gains_stay_stable_over_the_deployment_inertia_range(study, plant, design):
    frozen = study.frozen_time_check(plant, design, times=(0.0, 6.0, 10.0, 14.0))
    inertia = [f["locked_inertia_diag_kgm2"][2] for f in frozen]
    assert inertia[-1] > 3 * inertia[0]                  # the inertia changes by a lot
    for f in frozen:
        assert f["rigid_max_abs_z"] < 0.995
        assert f["rigid_zeta_range"][0] > 0.5


@pytest.fixture(scope="module")
def fmu(native_fmus, plant):
    return native_fmus("satellite", parameters=dict(plant.parameter_values()), platforms=("linux64",))


def test_slew_during_deployment_conserves_momentum_and_the_wheels_absorb_it(study, plant, design, fmu):
    ref = lambda t: study.slew_reference(t, start=2.0, duration=10.0)
    res = study.run_loop(plant, design, ref, 32.0, fmu)
    fig = study.metrics(plant, design, res, ref, 2.0, 12.0)
    assert fig["last_latch_s"] < 32.0
    assert fig["peak_wheel_momentum_Nms"] > 1.0
    assert fig["angular_momentum_drift_Nms"] < 1e-8 * fig["peak_wheel_momentum_Nms"]
    assert fig["final_error_deg"] < 0.5
    # hub + panels momentum = - wheel spin momentum (total zero from rest)
    H_tot = study._outputs(plant, res, "angular_momentum", 3)
    assert np.abs(H_tot).max() < 1e-8


def test_run_writes_results_plots_replay_and_summary(study, tmp_path):
    summary = study.run(tmp_path, stop=42.0, slew_start=30.0, slew_time=6.0, slew_angle=math.radians(1.0),
                        step_stop=12.0, frozen=False, during_deployment=False, replay=True)
    for f in ("summary.json", "deploy_then_slew.npz", "step_deployed.npz", "satellite_study.png",
              "satellite_poles.png", "replay.html"):
        assert (tmp_path / f).stat().st_size > 1000, f
    assert json.loads((tmp_path / "summary.json").read_text()).keys() == summary.keys()
    data = load_result(tmp_path / "deploy_then_slew.npz").data
    assert data.dtype.names[0] == "time" and "wheel_torque[1]" in data.dtype.names
    main = summary["deploy_then_slew"]
    assert main["final_error_deg"] < 0.05
    assert main["peak_error_before_slew_deg"] > 1.0       # the deployment pushes the hub
    assert main["overshoot_percent"] < 1.0
    assert main["residual_hinge_vibration_rad"] < 1e-4      # 6 s after a short, quick slew


@pytest.mark.slow
def test_full_study_with_the_python_plant_check(study, tmp_path):
    summary = study.run(tmp_path, python_check=True, replay=False)
    assert summary["python_plant_check"]["max_diff_attitude"] < 1e-9
    assert summary["deploy_then_slew"]["residual_hinge_vibration_rad"] < 1e-6   # 40 s after the slew
    during = summary["slew_during_deployment"]
    assert during["final_error_deg"] < 0.01
    assert during["angular_momentum_drift_Nms"] < 1e-8 * during["peak_wheel_momentum_Nms"]
