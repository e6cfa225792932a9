"""Toy plants for the viewer tests, in plain numpy (independent of the engine).

* :class:`DoublePendulum`: two links swinging about the world y axis, point
  masses at the link ends; bodies 1 and 2; cylinders and spheres.
* :class:`FlexibleArm`: a hub turning about z carrying one beam along its x
  axis, bent in y by one assumed mode ``w(s) = e (s/L)^2``.
* :class:`SpinningBox`: one flat box (body 1) turning about the world z axis.
"""
from __future__ import annotations


import numpy as np

from mbfmu.plant import Plant, Shape
from mbfmu.plant.signals import Signal, vector


def rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


class DoublePendulum(Plant):
    name = "toy_double_pendulum"
    default_step = 0.01
    internal_step = 0.005

    def __init__(self, l1: float = 1.0, l2: float = 0.8, m1: float = 1.0, m2: float = 1.0, g: float = 9.81):
        self.l1, self.l2, self.m1, self.m2, self.g = l1, l2, m1, m2, g
        self.parameters = (Signal("l1", "m", start=l1, kind="parameter"), Signal("l2", "m", start=l2, kind="parameter"))
        self.states = vector("q", 2, "state", "rad", start=[1.2, -0.5]) + vector("v", 2, "state", "rad/s")
        self.outputs = vector("q", 2, "output", "rad")
        self.geometry = (
            Shape(1, "cylinder", (0.04, l1), p=np.array([0, 0, -l1 / 2]), color="#1f77b4", name="link1"),
            Shape(1, "sphere", (0.1,), p=np.array([0, 0, -l1]), color="#2ca02c", name="mass1"),
            Shape(2, "cylinder", (0.04, l2), p=np.array([0, 0, -l2 / 2]), color="#ff7f0e", name="link2"),
            Shape(2, "box", (0.15, 0.15, 0.15), p=np.array([0, 0, -l2]), color="#d62728", name="mass2"),
        )

    def poses(self, x):
        q1, q2 = x[0], x[1]
        R1 = rot_y(q1)
        R2 = R1 @ rot_y(q2)
        p1 = np.zeros(3)
        p2 = p1 + R1 @ np.array([0, 0, -self.l1])
        return np.stack([np.eye(3), R1, R2]), np.stack([np.zeros(3), p1, p2])

    def derivatives(self, t, x, u):
        q1, q2, w1, w2 = x
        m1, m2, l1, l2, g = self.m1, self.m2, self.l1, self.l2, self.g
        a2 = q1 + q2  # absolute angle of link 2 from the downward vertical
        w2a = w1 + w2
        d = q1 - a2
        den = 2 * m1 + m2 - m2 * np.cos(2 * d)
        dd1 = (-g * (2 * m1 + m2) * np.sin(q1) - m2 * g * np.sin(q1 - 2 * a2)
               - 2 * np.sin(d) * m2 * (w2a ** 2 * l2 + w1 ** 2 * l1 * np.cos(d))) / (l1 * den)
        dd2a = (2 * np.sin(d) * (w1 ** 2 * l1 * (m1 + m2) + g * (m1 + m2) * np.cos(q1)
                                 + w2a ** 2 * l2 * m2 * np.cos(d))) / (l2 * den)
        return np.array([w1, w2, dd1, dd2a - dd1])

    def outputs_at(self, t, x, u):
        return x[:2].copy()


class FlexibleArm(Plant):
    name = "toy_flexible_arm"

    def __init__(self, L: float = 1.5, r: float = 0.03):
        self.L, self.r = L, r
        self.states = (Signal("theta", "rad", kind="state"), Signal("e", "m", kind="state"),
                       Signal("dtheta", "rad/s", kind="state"), Signal("de", "m/s", kind="state"))
        self.geometry = (
            Shape(0, "cylinder", (0.2, 0.1), p=np.array([0, 0, -0.1]), color="gray", name="base"),
            Shape(1, "capsule", (0.08, 0.1), color="#9467bd", name="hub"),
            Shape(1, "beam", (r, L), p=np.array([0.08, 0, 0]), color="#17becf", name="beam"),
        )

    def poses(self, x):
        return np.stack([np.eye(3), rot_z(x[0])]), np.zeros((2, 3))

    def beam_deflection(self, x, shape_index, s):
        s = np.asarray(s, dtype=float)
        out = np.zeros((s.size, 3))
        out[:, 1] = x[1] * (s / self.L) ** 2
        return out


class SpinningBox(Plant):
    name = "toy_spinning_box"

    def __init__(self, size=(1.0, 0.3, 0.05), color="#2ca02c"):
        self.states = (Signal("theta", "rad", kind="state"),)
        self.geometry = (Shape(1, "box", tuple(size), color=color, name="box"),)

    def poses(self, x):
        return np.stack([np.eye(3), rot_z(x[0])]), np.zeros((2, 3))


def record(plant: Plant, time: np.ndarray, X: np.ndarray, prefix: str = "", extra: dict | None = None) -> np.ndarray:
    """A result array with the plant's states under their signal names."""
    names = ["time"] + [prefix + s.name for s in plant.states] + list(extra or {})
    out = np.empty(time.size, dtype=[(n, float) for n in names])
    out["time"] = time
    for i, s in enumerate(plant.states):
        out[prefix + s.name] = X[:, i]
    for k, v in (extra or {}).items():
        out[k] = v
    return out


def pendulum_run(n: int = 201, stop: float = 2.0):
    """Analytic (not simulated) pendulum motion, fast to make at any length."""
    t = np.linspace(0.0, stop, n)
    X = np.stack([1.2 * np.cos(2.0 * t), -0.8 * np.sin(3.0 * t), -2.4 * np.sin(2 * t), -2.4 * np.cos(3 * t)], 1)
    return t, X
