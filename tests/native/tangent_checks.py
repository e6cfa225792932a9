"""Checks that a native FMU's directional derivatives are exact, shared by the
directional-derivative tests: against central differences of the FMU and of the
Python plant (in its tangent chart), and against a Richardson-extrapolated oracle
of the Python plant with its own error estimate."""
from __future__ import annotations

import numpy as np

from mbfmu.control.linearization import fd_step, state_jacobians
from mbfmu.control.fmu_jacobians import CENTRAL, DIRECTIONAL, jacobians
from mbfmu.cosim.fmi.me_instance import ModelExchangeInstance

EXACT_RTOL = 1e-10


def central_differences(f, z0):
    h = fd_step(z0)
    return np.column_stack([(f(z0 + h[k] * e) - f(z0 - h[k] * e)) / (2 * h[k]) for k, e in enumerate(np.eye(z0.size))])


def fd_tolerance(J: np.ndarray) -> float:
    """Central differences with h = eps^(1/3) max(1, |z|) err by h^2/6 |f'''| + eps |f| / h:
    about 1e-10 times the function's scale for these smooth plants; 1e-7 (1 + max |J|) leaves
    three orders for third derivatives larger than the first."""
    return 1e-7 * (1.0 + float(np.abs(J).max()))


def check_against_plant_differences(plant, x, u, A, B, C, D, t=0.0) -> str:
    """A, B, C, D (the FMU's continuous states and inputs) against central differences of
    the Python plant at (x, u), in its tangent chart (quaternions); returns the method of
    the plant's own state Jacobian."""
    nq, nv, nxc = plant.model.nq, plant.model.nv, A.shape[0]
    _, _, _, method, chart = state_jacobians(plant, x, u, t)
    T = chart.state_jacobian()[:nxc, :nxc - (nq - nv if chart.tangent else 0)]
    nz = T.shape[1]

    def pad(z):
        return np.concatenate([z, np.zeros(chart.n - nz)])
    z0 = np.zeros(nz)
    Ax = central_differences(lambda z: plant.derivatives(t, chart.to_state(pad(z)), u)[:nxc], z0)
    Bx = central_differences(lambda w: plant.derivatives(t, x, w)[:nxc], u)
    Cx = central_differences(lambda z: plant.outputs_at(t, chart.to_state(pad(z)), u), z0)
    Dx = central_differences(lambda w: plant.outputs_at(t, x, w), u)
    for got, want in ((A @ T, Ax), (B, Bx), (C @ T, Cx), (D, Dx)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))
    return method


def richardson(f, z0, h):
    """Central differences at steps h and h/2 (h: one per coordinate), extrapolated: error O(h^4)."""
    def central(s):
        return np.column_stack([(f(z0 + s[k] * e) - f(z0 - s[k] * e)) / (2 * s[k])
                                for k, e in enumerate(np.eye(z0.size))])
    return (4.0 * central(h / 2) - central(h)) / 3.0


def plant_oracle(plant, x, u, h):
    """[A B; C D] of the Python plant in its tangent chart by Richardson extrapolation."""
    nq, nv = plant.model.nq, plant.model.nv
    nxc = nq + nv
    _, _, _, _, chart = state_jacobians(plant, x, u, 0.0)
    nz = nxc - (nq - nv if chart.tangent else 0)

    def pad(z):
        return np.concatenate([z, np.zeros(chart.n - nz)])

    def f(zu):
        xs = chart.to_state(pad(zu[:nz]))
        uu = zu[nz:]
        return np.r_[plant.derivatives(0.0, xs, uu)[:nxc], plant.outputs_at(0.0, xs, uu)]
    # the plant is affine in its input (B u enters the joint forces): a large input step
    # has no truncation error and less round-off
    J = richardson(f, np.r_[np.zeros(nz), u], np.r_[np.full(nz, h), np.full(u.size, 100 * h)])
    T = chart.state_jacobian()[:nxc, :nz]
    return J, T, nz


def check_exact_tangents(fmu, plant, x, u, label):
    """The native FMU's directional derivatives at state ``x``, input ``u`` equal the FMU's own
    central differences and the Python plant's, and the plant's Richardson oracle (whose own
    error, estimated at twice its step, must be below 5e-11 of each block's scale) to
    ``EXACT_RTOL`` of each block's largest entry."""
    with ModelExchangeInstance(fmu) as inst:
        assert inst.provides_directional
        nxc = inst.n
        dd = jacobians(inst, x[:nxc], u, DIRECTIONAL)
        fd = jacobians(inst, x[:nxc], u, CENTRAL)
    # the FMU's own central differences (raw states)
    for got, want in ((dd.A, fd.A), (dd.B, fd.B), (dd.C, fd.C), (dd.D, fd.D)):
        np.testing.assert_allclose(got, want, rtol=0, atol=fd_tolerance(want))
    # the Python plant's central differences (tangent chart)
    check_against_plant_differences(plant, x, u, dd.A, dd.B, dd.C, dd.D)
    # the Richardson oracle, with its own error estimate
    J1, T, nz = plant_oracle(plant, x, u, 2e-4)
    J2, _, _ = plant_oracle(plant, x, u, 4e-4)
    got = np.block([[dd.A @ T, dd.B], [dd.C @ T, dd.D]])
    rows, cols = (slice(0, nxc), slice(nxc, None)), (slice(0, nz), slice(nz, None))
    for r in rows:
        for c in cols:
            scale = max(np.abs(J1[r, c]).max(), 1e-300)
            assert np.abs(J1[r, c] - J2[r, c]).max() < 5e-11 * scale + 1e-300, (label, r, c)
            np.testing.assert_allclose(got[r, c], J1[r, c], rtol=0, atol=EXACT_RTOL * scale)
