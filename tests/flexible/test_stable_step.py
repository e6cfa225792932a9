"""The stable explicit step of a flexible system and its use as a step cap.

References: the Euler-Bernoulli clamped-free frequency (a one-mode cantilever
carries it exactly), and the same driven run without the cap."""
import math

import numpy as np
import pytest

from mbfmu.dynamics import Revolute
from mbfmu.dynamics.flexible import FlexibleSystemBuilder, ModeSet
from mbfmu.dynamics.flexible.driven import simulate_driven, stable_step
from mbfmu.dynamics.flexible.spinup import spinup_beam, spinup_profile, spinup_system
from mbfmu.errors import InputError


def test_stable_step_of_a_one_mode_cantilever_is_sqrt3_over_its_frequency():
    beam = spinup_beam("krb")
    b = FlexibleSystemBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_beam("beam", "world", Revolute(axis=(0.0, 0.0, 1.0)), beam, ModeSet(bending_y=1))
    system = b.build()
    w1 = beam.clamped_frequency(1)  # 1.8751^2 sqrt(EI / (rho A L^4)), rad/s
    assert stable_step(system, fixed=(0,), safety=1.0) == pytest.approx(math.sqrt(3.0) / w1, rel=1e-6)
    with pytest.raises(InputError, match="safety"):
        stable_step(system, safety=1.5)


def test_capping_the_pair_at_the_stable_step_saves_rejected_steps_not_accuracy():
    system, tip = spinup_system("subbeams", 3, subbeam_modes=2)
    times = np.arange(0.0, 3.0 + 1e-9, 0.01)
    x0 = np.zeros(system.nq + system.nv)
    drive = lambda t: ((0,), (spinup_profile(t, 10.0)[2],))  # noqa: E731
    runs = [simulate_driven(system, x0, times, drive, rtol=1e-5, atol=1e-7, method="BS32", max_step=h)
            for h in (0.0, stable_step(system, fixed=(0,)))]
    d = [np.array([tip(x[:system.nq]) for x in r.x]) for r in runs]
    assert np.abs(d[1] - d[0]).max() <= 1e-4 * np.abs(d[0]).max()
    assert runs[1].nfev < 0.8 * runs[0].nfev  # the error control alone hovers at the limit, rejecting steps
    with pytest.raises(InputError, match="max_step"):
        simulate_driven(system, x0, times, drive, max_step=-1.0)
