"""examples/rigid_arm_study.py: the tip move of Wang et al. (2009) under computed torque,
and the sampling comparison (Ts = 0.1 s against 0.05 s)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from mbfmu.cosim import load_result



EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rigid_arm_study.py"


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("rigid_arm_study", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def summary(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("rigid_arm_study")
    result = study.run(out, plots=True, replay=False)
    assert (out / "rigid_arm_study.png").stat().st_size > 10_000
    assert json.loads((out / "summary.json").read_text()).keys() == result.keys()
    data = load_result(out / "sampled_Ts0.05.npz").data
    assert data.dtype.names[0] == "time" and "q[1]" in data.dtype.names
    return result


def test_sampled_data_loop_reaches_the_seed_target_smoothly_at_both_intervals(summary):
    for Ts in ("0.1", "0.05"):
        m = summary[f"sampled_Ts{Ts}"]
        assert m["final_distance_to_target_mm"] < 0.01
        assert m["max_tip_error_mm"] < 1.0
    assert summary["sampled_Ts0.05"]["max_tip_error_mm"] < summary["sampled_Ts0.1"]["max_tip_error_mm"]


def test_euler_at_ts_0_1_shows_the_seed_jitter_and_the_sampled_loop_removes_it(summary):
    j = {k: v["jitter_index_mm"] for k, v in summary.items() if not k.startswith("_")}
    assert j["euler_Ts0.1"] > 10 * j["euler_Ts0.05"]
    assert j["sampled_Ts0.1"] < 0.1 * j["euler_Ts0.1"]


def test_euler_error_obeys_the_predicted_double_pole(study):
    """With an exact model and Euler at Ts the holding error satisfies
    e_{k+2} = 2 l e_{k+1} - l^2 e_k, l = 1 - w Ts (-0.5 at Ts = 0.1 s: the
    sign flips each sample)."""
    plant = study.make_plant()
    Ts = 0.1
    run = study.run_euler(plant, Ts, stop=6.0)
    t = run["time"]
    q_final = study.reference(plant, np.array([study.T_MOVE]))[0][0]
    e = run["x"][:, :3] - q_final
    lam = 1 - study.OMEGA * Ts
    k = np.flatnonzero(t > study.T_MOVE + 1e-9)[:-2]
    resid = e[k + 2] - 2 * lam * e[k + 1] + lam ** 2 * e[k]
    assert np.abs(resid).max() < 1e-6 * np.abs(e[k]).max()
    assert np.abs(e[k]).max() > 1e-7  # there is an error to speak of


def test_discrete_gains_place_the_sampled_poles(study):
    Ts = 0.1
    Kp, Kd = study.discrete_gains(Ts)
    Acl = np.array([[1.0, Ts], [0.0, 1.0]]) - np.array([[Ts ** 2 / 2], [Ts]]) @ np.array([[Kp, Kd]])
    assert np.allclose(np.linalg.eigvals(Acl), np.exp(-study.OMEGA * Ts), atol=1e-6)
