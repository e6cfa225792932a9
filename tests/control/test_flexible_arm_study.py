"""The flexible-arm study (examples/flexible_arm_study.py): the LQG designed
on the flexible linear model damps the links; the PD designed on the rigid
model excites them."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import flexible_arm_study as study  # noqa: E402


def _closed_loop_radius(sysd_q, K):
    return float(np.max(np.abs(np.linalg.eigvals(sysd_q.A + sysd_q.B @ K @ sysd_q.C))))


def test_designs_are_stable_on_the_linear_model_and_see_the_flexible_modes():
    import control
    plant = study.make_plant()
    d = study.design(plant)
    sys_c = d["sys"]
    # the linear model's first flexible frequency is that of the pinned arm:
    # above the clamped-free frequency of link 1 alone (the elbow and link 2 load it, the
    # rotor frees it), and its mode is lightly damped (structural damping 1 %)
    poles = np.linalg.eigvals(sys_c.A)
    osc = poles[poles.imag > 1e-6]
    first = osc[np.argmin(osc.imag)]
    assert d["mode_frequencies_hz"][0] == pytest.approx(first.imag / (2 * np.pi), rel=1e-6)
    assert -first.real / abs(first) < 0.05
    # LQG loop: plant (measured outputs) with the controller's output feedback
    sysd, lqg = d["sysd"], d["lqg"]
    A, B, C = sysd.A, sysd.B, sysd.C
    By, Dy = lqg.B[:, 2:], lqg.D[:, 2:]
    Acl = np.block([[A + B @ Dy @ C, B @ lqg.C], [By @ C, lqg.A]])
    assert np.max(np.abs(np.linalg.eigvals(Acl))) < 1.0
    # PD loop on (q, qd)
    names = list(sys_c.output_labels)
    idx = [names.index(n) for n in ["q[1]", "q[2]", "v[1]", "v[2]"]]
    m = control.c2d(control.ss(sys_c.A, sys_c.B, sys_c.C[idx], sys_c.D[idx]), study.H, "zoh")
    assert _closed_loop_radius(m, d["rigid_pd"].D[:, 2:]) < 1.0


@pytest.mark.slow
def test_lqg_settles_and_damps_vibration_that_the_rigid_pd_excites(tmp_path):
    summary = study.run(tmp_path, stop_time=2.0, replay=False)
    lqg, pd = summary["lqg"], summary["rigid_pd"]
    for joint in ("joint1", "joint2"):
        assert lqg[joint]["settling_time_s"] is not None and lqg[joint]["settling_time_s"] < 1.5
    assert lqg["residual_vibration_mm"] < 0.2 * pd["residual_vibration_mm"]
    assert lqg["peak_tip_deflection_mm"] < pd["peak_tip_deflection_mm"]
    assert (tmp_path / "flexible_arm_study.png").stat().st_size > 10_000


@pytest.mark.parametrize("method", ["modes", "segments"])
def test_linearized_flexible_arm_poles_are_the_natural_frequencies(method):
    """Issue 8's check: with damping off, the imaginary parts of the poles of
    mbfmu.linearize(flexible_arm) are the arm's natural frequencies, computed
    independently from the mass and stiffness matrices (sqrt(eig(M^-1 K)))."""
    import mbfmu
    from mbfmu.dynamics.flexible.analysis import natural_frequencies
    plant = mbfmu.load_plant("flexible_arm", damping_ratio=0.0, method=method,
                             n_segments=4, n_modes=2)
    sys = mbfmu.linearize(plant)
    poles = np.linalg.eigvals(sys.A)
    assert np.max(np.abs(poles.real)) < 1e-6 * np.max(np.abs(poles))
    w_poles = np.sort(np.abs(poles.imag[poles.imag > 1e-6 * np.max(np.abs(poles))]))
    w_ref = natural_frequencies(plant.system)
    w_ref = w_ref[w_ref > 1e-6 * w_ref.max()]
    assert len(w_poles) == len(w_ref) > 0
    np.testing.assert_allclose(w_poles, w_ref, rtol=1e-5)
