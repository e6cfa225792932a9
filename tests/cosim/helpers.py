"""Independent references for the co-simulation tests: plain fmpy loops and a
monolithic linear model of the two-mass oscillator."""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

# two masses, springs/dampers to ground, coupling spring kc/dc (SI units)
M1, K1, D1, M2, K2, D2, KC, DC = 1.0, 10.0, 0.1, 2.0, 20.0, 0.2, 30.0, 0.5


def monolithic_two_mass(t: np.ndarray | float, x1_0: float = 1.0) -> np.ndarray:
    """Exact state [x1, v1, x2, v2] of the coupled oscillator at times t (matrix exponential)."""
    A = np.array([[0, 1, 0, 0],
                  [-(K1 + KC) / M1, -(D1 + DC) / M1, KC / M1, DC / M1],
                  [0, 0, 0, 1],
                  [KC / M2, DC / M2, -(K2 + KC) / M2, -(D2 + DC) / M2]])
    x0 = np.array([x1_0, 0.0, 0.0, 0.0])
    ts = np.atleast_1d(np.asarray(t, float))
    lam, V = scipy.linalg.eig(A)  # distinct eigenvalues: x(t) = V e^{lam t} V^-1 x0
    c = np.linalg.solve(V, x0)
    return np.real((V[None, :, :] * (np.exp(np.outer(ts, lam)) * c)[:, None, :]).sum(axis=2))


def bounce_times(n: int, h0: float = 1.0, g: float = 9.81, e: float = 0.7) -> np.ndarray:
    """The first ``n`` bounce times [s] of a ball dropped at rest from ``h0`` [m] (gravity ``g``
    [m/s^2], restitution ``e``): t1 = sqrt(2 h0 / g), then flights of 2 v_k / g."""
    t, v = [math.sqrt(2 * h0 / g)], g * math.sqrt(2 * h0 / g)
    for _ in range(n - 1):
        v *= e
        t.append(t[-1] + 2 * v / g)
    return np.array(t)


def grid_steps(t0: float, stop: float, n: int) -> list[tuple[float, float]]:
    """The master's ``n`` steps from ``t0`` to ``stop`` as ``(t, h)`` pairs: both
    points counted (``t_k = t0 + k (stop - t0) / n``, the last one ``stop``), the
    step their difference."""
    pts = [t0 + k * (stop - t0) / n for k in range(n)] + [stop]
    return [(pts[k], pts[k + 1] - pts[k]) for k in range(n)]


def sub_steps(t: float, h: float, m: int) -> list[tuple[float, float]]:
    """The ``m`` sub-steps of a multi-rate unit in the step ``(t, h)``, as the master
    counts them (``t + j h / m``, the last point ``t + h``)."""
    pts = [t + j * (h / m) for j in range(m)] + [t + h]
    return [(pts[j], pts[j + 1] - pts[j]) for j in range(m)]


class RawFmu:
    """The bare fmpy FMU2Slave API with names, for hand-written master loops."""

    def __init__(self, path, name, values=None):
        md = read_model_description(str(path))
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                             modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        self.fmu.instantiate()
        self.fmu.setupExperiment(startTime=0.0)
        for k, v in (values or {}).items():
            self.fmu.setReal([self.vr[k]], [v])
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()

    def get(self, *names):
        return self.fmu.getReal([self.vr[n] for n in names])

    def set(self, names, values):
        self.fmu.setReal([self.vr[n] for n in names], list(values))

    def step(self, t, h):
        self.fmu.doStep(t, h)

    def close(self):
        self.fmu.terminate()
        self.fmu.freeInstance()
