"""The crash occupant's sled frame (a frame element, models/sled_frame.c) and the
sensors of the dynamics (mbfmu.dynamics.motion_sensors) against closed-form
solutions: a slider free along the sled's axis, the crash occupant's HIC recorder
(a plug-in element, models/hic_recorder.c, run in the sled frame) on a constant
resultant, bad arguments."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.dynamics import ModelBuilder, _kernels, sensors
from mbfmu.dynamics.integrators import ErrorControl
from mbfmu.dynamics.joints import Prismatic
from mbfmu.dynamics.motion_sensors import G, Accelerometer, CompiledSensors, FrameAcceleration, PointDisplacement
from mbfmu.errors import InputError, SimulationError
from mbfmu.models.crash_occupant import HIC_HISTORY, hic_recorder, sled_frame
from mbfmu.plant.elements import kernel_registry

PEAK, T, START, U = 150.0, 0.08, 0.01, -4.0  # m/s2, s, s, m/s2 (input)
GZ = 9.81


def _slider():
    """A 2 kg body on a frictionless slider along the sled's x axis, gravity -z."""
    b = ModelBuilder(gravity=(0.0, 0.0, -GZ))
    b.add_body("slider", "world", Prismatic(axis=(1.0, 0.0, 0.0)), 2.0, (0.0, 0.0, 0.0), np.eye(3) * 0.01)
    return b.build()


def _hic(body: int = 1, peak: float = PEAK, input: int = 0):
    """The sled frame (pulse ``peak``, plus input ``input``) and the HIC recorder at the origin of
    ``body``: the kernels' registry and the number of the recorder's states (integral, history,
    maximum)."""
    return (kernel_registry((sled_frame((1.0, 0.0, 0.0), peak, T, START, input), hic_recorder(body, (0.0, 0.0, 0.0)))),
            1 + HIC_HISTORY + 1)


def advance(model, registry, q, y, u, t, dt, control):
    """``(q, y)`` after ``dt`` (s) from ``t`` (s) with the inputs ``u`` held: the elements' advance."""
    options = control.options(None)
    q, y, _ = _kernels.element_adapt(model._h, q, y, np.zeros(model.nv), float(t), float(dt), options, registry,
                                     np.asarray(u, float))
    return q, y


def _x_exact(t: float) -> float:
    """Slider position relative to the sled: x'' = -a_s = -U + PEAK sin(pi (t - START) / T) in the pulse."""
    x = -0.5 * U * t * t
    w = math.pi / T
    tau = min(max(t - START, 0.0), T)
    # the pulse's part: PEAK (tau / w - sin(w tau) / w^2) while in it, then a constant-speed continuation
    x += PEAK * (tau / w - math.sin(w * tau) / w ** 2) + (PEAK * 2 / w) * max(t - START - T, 0.0)
    return x


def test_a_free_slider_moves_against_the_sled_and_its_accelerometer_reads_gravity_only():
    """Free along x, the body keeps its inertial motion: relative to the sled it moves
    by minus the double integral of a_s (closed form), and its accelerometer (specific
    force) reads 0 along x and +g along z; the HIC recorder then integrates g / 9.80665."""
    model = _slider()
    hic, size = _hic()
    q, y = np.zeros(1), np.zeros(1 + size)
    u = np.array([U])
    control = ErrorControl(rtol=1e-10, atol=1e-10)
    t = 0.0
    for _ in range(120):
        q, y = advance(model, hic, q, y, u, t, 1e-3, control)
        t += 1e-3
    assert q[0] == pytest.approx(_x_exact(t), rel=1e-8)
    probe = CompiledSensors([Accelerometer(1, (0.0, 0.0, 0.0), k) for k in range(4)]
                            + [FrameAcceleration(0), PointDisplacement(1, (0.0, 0.0, 0.0), 0, 0.25)], model, 1)
    t_in = START + 0.3 * T  # inside the pulse
    out = probe(t_in, np.r_[q, y], y[:1], u, np.zeros(1), hic)
    np.testing.assert_allclose(out[:4], [0.0, 0.0, GZ, GZ], atol=1e-12)
    assert out[4] == pytest.approx(U - PEAK * math.sin(math.pi * 0.3), rel=1e-14)
    assert out[5] == pytest.approx(q[0] - 0.25, rel=1e-14)
    # constant resultant GZ: I = GZ / G t, and the best window is the longest, 15 ms
    integral, history, best = y[1], y[2:2 + HIC_HISTORY], y[-1]
    assert integral == pytest.approx(GZ / G * t, rel=1e-9)
    np.testing.assert_allclose(history, GZ / G * (t - 5e-4 * np.arange(HIC_HISTORY)[::-1]), rtol=1e-9)
    assert best == pytest.approx(0.015 * (GZ / G) ** 2.5, rel=1e-9)
    qdot, ydot = _kernels.element_rhs(model._h, q, y, np.zeros(1), t_in, hic, u)
    assert ydot[0] == pytest.approx(-out[4], rel=1e-12) and ydot[1] == pytest.approx(GZ / G, rel=1e-12)
    assert not np.any(ydot[2:])


def test_hic_of_a_rectangular_pulse_is_its_closed_form():
    """A resultant of A g for D s (D < 15 ms), zero before and after: HIC = D A^2.5
    (the window that is the pulse). The integral state is set between grid instants
    (a rectangular resultant would need a discontinuous sled acceleration), so the
    recorder's history shift and window maximum are what is checked."""
    model = _slider()
    hic, size = _hic(peak=0.0, input=-1)  # the sled at rest
    A, D = 60.0, 0.006
    y = np.zeros(1 + size)
    t = 0.0
    for k in range(80):
        t_next = (k + 1) * 5e-4
        dI = A * 5e-4 if 0.01 <= t < 0.01 + D - 1e-12 else 0.0
        y[1] += dI - GZ / G * 5e-4  # cancel the slider's own +g resultant over the grid interval
        q, y = advance(model, hic, np.zeros(1), y, np.zeros(0), t, 5e-4, ErrorControl())
        t = t_next
    assert y[-1] == pytest.approx(D * A ** 2.5, rel=1e-6)


@pytest.mark.parametrize("call, words", [
    (lambda m: advance(m, _hic(5)[0], np.zeros(1), np.zeros(1 + 33), np.zeros(1), 0.0, 1e-3, ErrorControl()),
     r"plug-in element 1 \(HIC15 recorder\) acts on body 5"),
    (lambda m: advance(m, _hic()[0], np.zeros(1), np.zeros(3), np.zeros(1), 0.0, 1e-3, ErrorControl()),
     r"y = \[v; element states\] has 3 values, expected 34"),
    (lambda m: advance(m, _hic()[0], np.zeros(1), np.zeros(34), np.array([math.nan]), 0.0, 1e-3, ErrorControl()),
     r"u\[1\] is nan"),
    (lambda m: CompiledSensors([sensors.KineticEnergy(), Accelerometer(4, (0, 0, 0), 0)], m, 0)(
        0.0, np.zeros(2), np.zeros(1), np.zeros(0), np.zeros(1)), "sensor 2 .* body 4"),
    (lambda m: CompiledSensors([FrameAcceleration(3)], m, 0)(0.0, np.zeros(2), np.zeros(1), np.zeros(0),
                                                             np.zeros(1)), "frame acceleration.* axis 3"),
])
def test_bad_arguments_are_input_errors_naming_them(call, words):
    with pytest.raises(InputError, match=words):
        call(_slider())


def test_a_sled_input_the_plant_does_not_have_is_refused():
    """The sled frame reading input 0 of a plant without inputs: its acceleration is NaN
    (never a silently wrong frame), and the integration fails (its error norm infinite)."""
    model = _slider()
    hic, size = _hic()
    with pytest.raises(SimulationError, match="error norm inf"):
        advance(model, hic, np.zeros(1), np.zeros(1 + size), np.zeros(0), 0.02, 1e-3, ErrorControl())
