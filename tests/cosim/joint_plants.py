"""A multi-joint test plant for the block and vector-connection tests."""
from __future__ import annotations

import control
import numpy as np

from mbfmu.cosim import ControlUnit
from mbfmu.cosim.blocks import port_names


def double_integrators(n: int, name: str = "arm") -> ControlUnit:
    """``n`` unit masses, ``q'' = tau - w`` (``w``: a constant load per joint,
    like gravity; start value 0); outputs ``q[1..n]`` (rad), ``v[1..n]`` (rad/s)."""
    A = np.block([[np.zeros((n, n)), np.eye(n)], [np.zeros((n, n)), np.zeros((n, n))]])
    B = np.vstack([np.zeros((n, n)), np.eye(n)])
    sys = control.ss(A, np.hstack([B, -B]), np.eye(2 * n), 0,
                     inputs=port_names("tau", n) + port_names("w", n),
                     outputs=port_names("q", n) + port_names("v", n), name=name)
    return ControlUnit(name, sys, inputs_start={n_: 0.0 for n_ in port_names("w", n)})
