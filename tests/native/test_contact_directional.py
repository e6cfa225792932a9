"""Exact directional derivatives of native FMUs with sphere-plane contacts and
cables (#24.2, ``csrc/contact_dirder.c``), on the ball plant (a free-flying
ball with a flap on a revolute joint, pressed on a plane with friction, tied
by a cable and a spring).

The contact and cable laws are piecewise smooth; the states here are chosen
in one piece each, away from every switching surface (by 0.4 mm at least, against
difference steps of 4e-4 m at most): contact and cable both beyond their
damping ramps, both within them (sliding with friction), and apart/slack. At
each state the FMU's directional derivatives equal

* central differences of the FMU's own derivatives and outputs (fmpy) and of
  the Python plant, within the differences' error (1e-7 (1 + max |J|));
* Richardson-extrapolated central differences of the Python plant (steps h =
  2e-4 and 1e-4 in the plant's tangent chart, 100 times that in its input, in
  which it is affine; truncation O(h^4))
  to 1e-10 relative to each block's largest entry (measured 1e-13 to 1e-11). The Python plant has no exact
  linearization of contacts (its own is finite-difference), and its force
  laws run in the C kernels, which are not complex-safe: the extrapolation is
  the independent oracle, and its error is estimated by a second
  extrapolation at twice the steps, asserted below 5e-11 of the block scale
  (smaller steps lose to round-off: 1e-10 at h = 1e-4 in the input block).
"""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from mbfmu.dynamics.algorithms import element_forces, point_position
from mbfmu.fmu.builder import build_fmu

from .plants import Ball
from .tangent_checks import check_exact_tangents


def _state(height: float, stretch: float, spin, vel, flap: float = 0.2):
    """A ball state with its centre at ``height`` (m, radius 0.1 m above the
    plane z = 0), a small rotation ``spin`` (rotation vector, rad), the cable
    stretched by ``stretch`` (m, negative: slack; the ball moved sideways to
    set it) and velocities ``vel`` (7)."""
    plant = Ball()
    m = plant.model
    th = np.linalg.norm(spin)
    e = np.r_[np.cos(th / 2), np.sin(th / 2) * np.asarray(spin) / th]
    q = np.r_[0.0, 0.0, height, e, flap]
    anchor, L0 = np.array([0.0, 0.0, 1.5]), 1.3
    # the cable's body point (0, 0, 0.1): slide the ball in x until its length is L0 + stretch
    lo, hi = 0.0, 1.0
    for _ in range(100):
        q[0] = 0.5 * (lo + hi)
        L = np.linalg.norm(anchor - point_position(m, q, 1, (0.0, 0.0, 0.1)))
        lo, hi = (q[0], hi) if L < L0 + stretch else (lo, q[0])
    return plant, np.r_[q, vel]


STATES = {
    # contact and cable beyond their ramps, sliding slowly
    "pressed_taut": dict(height=0.095, stretch=5e-3, spin=(0.1, -0.2, 0.3),
                         vel=(0.3, -0.2, 1.0, 0.05, 0.1, -0.02, 0.5)),
    # both within their ramps (damping fading in), sliding fast (friction near saturation)
    "in_ramps": dict(height=0.09955, stretch=5.5e-4, spin=(-0.03, 0.02, 0.05),
                     vel=(0.5, 0.4, -0.3, 0.8, -0.6, 0.01, -1.0)),
    # the ball 5 cm above the plane, the cable 5 cm slack: only the spring and gravity
    "apart_slack": dict(height=0.15, stretch=-5e-2, spin=(0.3, 0.2, -0.1),
                        vel=(1.0, -0.5, 0.2, 0.3, 0.2, 0.4, 0.7)),
}


@pytest.fixture(scope="module")
def ball_fmu(tmp_path_factory):
    return build_fmu(Ball, tmp_path_factory.mktemp("dd_ball"), runtime="native", platforms=("linux64",))


def _modes(plant, x):
    """(penetration, contact normal force, cable stretch, tension) at x: which piece."""
    m = plant.model
    q, v = x[:m.nq], x[m.nq:m.nq + m.nv]
    ef = element_forces(m, q, v)
    return ef.penetration[0], ef.contact_force[0][2], ef.cable_length[0] - 1.3, ef.cable_tension[0]


@pytest.mark.parametrize("state", list(STATES))
def test_ball_directional_derivatives_are_exact_within_one_contact_mode(state, ball_fmu):
    plant, x = _state(**STATES[state])
    u = np.array([0.7])
    depth, fn, stretch, tension = _modes(plant, x)
    ramp, ramp_cable = plant.model.contacts[0].ramp, plant.model.cables[0].ramp
    assert ramp == ramp_cable == 1e-3
    RAMP = ramp
    if state == "pressed_taut":
        assert depth > RAMP + 1e-3 and fn > 10 and stretch > RAMP + 1e-3 and tension > 0.1
    elif state == "in_ramps":
        # margins to both ends of the ramps above the oracle's largest step (4e-4)
        assert 4e-4 < depth < RAMP - 4e-4 and fn > 1 and 4e-4 < stretch < RAMP - 4e-4 and tension > 0.01
    else:
        assert depth < -1e-2 and fn == 0 and stretch < -1e-2 and tension == 0
    check_exact_tangents(ball_fmu, plant, x, u, state)


def test_ball_fmu_claims_derivatives_and_validates(ball_fmu):
    md = read_model_description(str(ball_fmu))
    assert md.coSimulation.providesDirectionalDerivative and md.modelExchange.providesDirectionalDerivative
    assert validate_fmu(str(ball_fmu)) == []
