"""point_accelerations: world-frame accelerations of body points (accelerometers)."""
import numpy as np
import pytest

from mbfmu.dynamics import (FreeFlyer, ModelBuilder, Revolute, Spherical, _kernels, body_accelerations,
                            point_accelerations)
from mbfmu.errors import InputError


def _model():
    b = ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("base", "world", FreeFlyer(), 2.0, (0.05, 0, 0), np.diag([0.03, 0.02, 0.01]))
    b.add_body("arm", "base", Spherical(), 1.0, (0, 0, -0.2), np.diag([0.01, 0.01, 0.002]), p_PJ=(0.1, 0, 0))
    b.add_body("fore", "arm", Revolute(axis=(0, 1, 0)), 0.5, (0, 0, -0.1), np.diag([0.004, 0.004, 0.001]),
               p_PJ=(0, 0, -0.3))
    return b.build()


def _state(model, rng):
    q = model.neutral()
    q[:3] = rng.normal(size=3)
    e = rng.normal(size=4)
    q[3:7] = e / np.linalg.norm(e)
    e = rng.normal(size=4)
    q[7:11] = e / np.linalg.norm(e)
    q[11] = rng.normal()
    return q, rng.normal(size=model.nv)


@pytest.mark.parametrize("seed", range(4))
def test_point_accelerations_equal_the_rigid_body_formula(seed):
    """``R (dv + dw x c + w x (v + w x c))`` from the spatial accelerations."""
    model = _model()
    rng = np.random.default_rng(seed)
    q, v = _state(model, rng)
    a = _kernels.rhs(model._h, q, v, np.zeros(model.nv))[1]
    bodies = np.array([1, 2, 3, 3, 0])
    points = rng.normal(scale=0.2, size=(5, 3))
    R, _, vel = _kernels.kinematics(model._h, q, v)
    acc = body_accelerations(model, q, v, a)
    ref = np.zeros((5, 3))
    for k, (b, c) in enumerate(zip(bodies, points)):
        w, vo, dw, dvo = vel[b, :3], vel[b, 3:], acc[b, :3], acc[b, 3:]
        ref[k] = R[b] @ (dvo + np.cross(dw, c) + np.cross(w, vo + np.cross(w, c)))
    out = point_accelerations(model, q, v, a, bodies, points)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert not out[4].any()  # a point of the world


def test_point_accelerations_are_the_derivative_of_point_velocities():
    model = _model()
    q, v = _state(model, np.random.default_rng(7))
    tau = np.zeros(model.nv)
    a = _kernels.rhs(model._h, q, v, tau)[1]
    c = np.array([[0.02, -0.03, 0.05]])

    def velocity(q, v):
        R, _, vel = _kernels.kinematics(model._h, q, v)
        return R[3] @ (vel[3, 3:] + np.cross(vel[3, :3], c[0]))
    h = 1e-5
    q1, v1 = _kernels.rk4(model._h, q, v, tau, h, 1)
    q2, v2 = _kernels.rk4(model._h, q, v, tau, h, 2)
    fd = (-3 * velocity(q, v) + 4 * velocity(q1, v1) - velocity(q2, v2)) / (2 * h)
    np.testing.assert_allclose(point_accelerations(model, q, v, a, [3], c)[0], fd, rtol=1e-6, atol=1e-6)


def test_bad_point_arguments_raise():
    model = _model()
    q, v = model.neutral(), np.zeros(model.nv)
    with pytest.raises(InputError, match="out of range"):
        point_accelerations(model, q, v, v, [4], np.zeros((1, 3)))
    with pytest.raises(InputError, match="points"):
        point_accelerations(model, q, v, v, [1, 2], np.zeros((1, 3)))
