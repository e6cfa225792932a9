"""robustness: Monte Carlo of margins and poles of a linearized loop, each
sample against python-control on the same loop built by hand, the worst case
where the physics puts it, and the same numbers on worker processes."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from mbfmu.control import robustness
from mbfmu.cosim import ControlUnit, System, sources
from mbfmu.errors import InputError
from mbfmu.studies import Uniform

H = 0.01
P0 = ct.tf([2.0], [0.1, 1.1, 1.0])
C = ct.tf([1.5, 3.0], [1.0, 0.0])


def loop(k: float = 1.0) -> System:
    """Plant gain k times P0 under the PI C, the error formed by the PI's own unit."""
    plant = ControlUnit("plant", ct.ss(k * P0))
    ctrl = ControlUnit("ctrl", ct.ss(ct.tf([1.0], [1.0]) * C))
    from mbfmu.cosim.blocks import Sum
    return System([sources.step("ref", 1.0, 1.0), Sum("err", "+-", inputs=("r", "m")), ctrl, plant],
                  [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "ctrl.u[1]"), ("ctrl.y[1]", "plant.u[1]")])


def test_margins_per_sample_equal_python_control_and_the_worst_is_the_largest_gain():
    mc = robustness(loop, {"k": Uniform(0.5, 3.0)}, n=12, seed=3, open_at="ctrl.y[1]->plant.u[1]", step=H)
    pm_hand = []
    for row in mc.rows:
        Ld = ct.c2d(ct.ss(row["k"] * P0), H, "zoh") * ct.c2d(ct.ss(C), H, "zoh")
        _, pm, _, _, _, _ = ct.stability_margins(Ld, method="frd")
        pm_hand.append(pm)
        poles = ct.feedback(Ld, 1).poles()
        assert np.isclose(row["pole_figure"], np.abs(poles).max(), rtol=1e-9)
    assert np.allclose(mc.values("phase_margin"), pm_hand, rtol=1e-8)
    worst = mc.worst("phase_margin")
    assert worst["k"] == max(r["k"] for r in mc.rows)   # more loop gain, less phase margin
    assert mc.percentiles("phase_margin", (5, 50, 95)) == pytest.approx(
        dict(zip((5.0, 50.0, 95.0), np.percentile(pm_hand, [5, 50, 95]))), rel=1e-8)
    assert mc.stable_fraction == 1.0 and "phase_margin" in mc.summary()
    assert mc.unit_models["ctrl"] == "exact" and "model of ctrl: exact" in mc.summary()
    assert all(r["margins_checked"] and not r["conditionally_stable"] for r in mc.rows)
    assert "conditionally stable" not in mc.summary()


def test_conditionally_stable_samples_are_counted_in_words():
    """L = K (s+1)^2 / s^3: closed loop s^3 + K s^2 + 2K s + K, stable for
    K > 1/2 (Routh), with the phase at -180 deg at 1 rad/s where L = -2K: every
    sample with K in (1, 3) is conditionally stable, gain margin 1/(2K)."""
    from mbfmu.cosim.blocks import Gain, Sum

    def cubic(K):
        return System([sources.step("ref", 1.0, 1.0), Sum("err", "+-", inputs=("r", "m")), Gain("k", K),
                       ControlUnit("plant", ct.ss(ct.tf([1.0, 2.0, 1.0], [1.0, 0.0, 0.0, 0.0])))],
                      [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "k.u"), ("k.y", "plant.u[1]")])
    mc = robustness(cubic, {"K": Uniform(1.0, 3.0)}, n=4, seed=2, open_at="k.y->plant.u[1]", step=H, sampled=False)
    for r in mc.rows:
        assert r["stable"] and r["conditionally_stable"] and r["margins_checked"]
        assert r["gain_margin"] == pytest.approx(1 / (2 * r["K"]), rel=1e-9)
    assert "4 of 4 samples are conditionally stable" in mc.summary()


def test_worker_processes_give_the_same_samples():
    kw = dict(n=4, seed=8, open_at="ctrl.y[1]->plant.u[1]", step=H)
    serial = robustness(loop, {"k": Uniform(0.5, 3.0)}, **kw)
    local = robustness(loop, {"k": Uniform(0.5, 3.0)}, executor=2, **kw)
    for a, b in zip(serial.rows, local.rows):
        assert a["k"] == b["k"] and a["phase_margin"] == b["phase_margin"]


def test_plant_under_state_feedback_with_an_uncertain_mass():
    from mbfmu.control import linearize, trim_inputs
    from mbfmu.plant.library import load_plant
    arm = load_plant("rigid_arm")
    lin = linearize(arm, None, trim_inputs(arm).u)
    d = ct.c2d(ct.ss(lin.A, lin.B, np.eye(6), 0), H, "zoh")
    K, _, _ = ct.dlqr(d.A, d.B, np.diag([100, 100, 100, 1, 1, 1]), 0.01 * np.eye(3))
    mc = robustness(arm, {"arm_mass": Uniform(10.0, 60.0)}, n=6, seed=1, gain=K, dt=H)
    for row in mc.rows:
        heavy = load_plant("rigid_arm", arm_mass=row["arm_mass"])
        lh = linearize(heavy, None, trim_inputs(heavy).u)
        dh = ct.c2d(ct.ss(lh.A, lh.B, np.eye(6), 0), H, "zoh")
        assert np.isclose(row["pole_figure"], np.abs(np.linalg.eigvals(dh.A - dh.B @ K)).max(), rtol=1e-10)
    # the heaviest arm is the slowest under gains designed for 20 kg
    assert mc.worst("pole_figure")["arm_mass"] == max(r["arm_mass"] for r in mc.rows)
    assert mc.unit_models == {"rigid_arm": f"plant's exact linearization ({lin.linearization.method})"}
    with pytest.raises(InputError, match="needs the state-feedback gain"):
        robustness(arm, {"arm_mass": Uniform(10.0, 60.0)}, n=2)
    with pytest.raises(InputError, match="no parameters"):
        robustness(arm, {"mass": Uniform(10.0, 60.0)}, n=2, gain=K)
