"""Integrators against analytic solutions."""
import numpy as np
import pytest

from mbfmu.dynamics.integrators import DormandPrince, integrate_adaptive, integrate_rk4
from mbfmu.errors import InputError


def oscillator(t, x):
    """Undamped unit oscillator x'' = -x (exact: cos t, -sin t)."""
    return np.array([x[1], -x[0]])


@pytest.mark.parametrize("rtol", [1e-5, 1e-8, 1e-11])
def test_dormand_prince_holds_the_requested_tolerance(rtol):
    times = np.linspace(0, 10, 11)
    X, dp = integrate_adaptive(oscillator, [1.0, 0.0], times, rtol=rtol, atol=rtol * 1e-2)
    err = np.max(np.abs(X[:, 0] - np.cos(times)))
    assert err < 50 * rtol            # global error stays near the local tolerance
    assert err > 1e-16 or rtol < 1e-10


def test_dormand_prince_rejects_and_repeats_steps_on_a_sharp_transient():
    """A stiff-ish decay switching on at t = 1 forces step rejections."""
    def f(t, x):
        k = 200.0 if t > 1.0 else 0.1
        return -k * (x - np.sin(t))
    dp = DormandPrince(f, rtol=1e-8, atol=1e-10)
    dp.advance(0.0, np.array([0.0]), 3.0)
    assert dp.rejected > 0 and dp.accepted > 0


def test_dormand_prince_uses_far_fewer_steps_on_smooth_motion_than_needed_by_rk4_at_equal_accuracy():
    X, dp = integrate_adaptive(oscillator, [1.0, 0.0], [0.0, 20.0], rtol=1e-9, atol=1e-11)
    err_dp = abs(X[-1, 0] - np.cos(20.0))
    _, x = integrate_rk4(oscillator, [1.0, 0.0], 20.0, 20.0 / dp.accepted, record=False)
    err_rk4 = abs(x[0] - np.cos(20.0))
    assert err_dp < err_rk4


def test_rk4_refuses_an_interval_that_is_not_whole_steps():
    with pytest.raises(InputError, match="whole number of steps"):
        integrate_rk4(oscillator, [1.0, 0.0], 1.0, 0.3)
    t, X = integrate_rk4(oscillator, [1.0, 0.0], 10.0, 1e-3)
    assert t[-1] == 10.0 and len(t) == 10001
