"""Gain, Sum, Offset, Saturation, Mux and Demux inside co-simulations, checked
against the same arithmetic done by hand with numpy, and a deviation-variable
controller built from blocks against the closed loop computed by hand."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mbfmu.cosim import System, simulate, sources
from mbfmu.cosim.blocks import Demux, Gain, Mux, Offset, Saturation, Sum, port_names
from mbfmu.errors import CosimError, InputError

from .joint_plants import double_integrators

TIMES = [0.0, 1.0]
RAMPS = np.array([[-2.0, 3.0, 1.0], [2.0, -1.0, -1.5]])  # table rows at TIMES: y[1..3]


def test_a_chain_of_every_block_gives_the_hand_computed_outputs():
    src = sources.table("src", TIMES, RAMPS, outputs=port_names("y", 3))
    off = Offset("off", [1.0, -2.0, 0.5])
    K = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])
    gain = Gain("K", K, unit_in="m", unit_out="N")
    sat = Saturation("sat", [-1.0, -2.0], [1.0, 2.0], unit="N")
    dm = Demux("dm", [1, 1], outputs=("a", "b"), unit="N")
    sm = Sum("sm", "+-", inputs=("a", "b"), unit="N")
    mx = Mux("mx", [2, 1], unit="N")
    g = Gain("g", 2.0, n=3, unit_in="N", unit_out="N")
    system = System([g, mx, sm, dm, sat, gain, off, src])  # out of order: the master sorts the chain
    for a, b in (("src.y", "off.u"), ("off.y", "K.u"), ("K.y", "sat.u"), ("sat.y", "dm.u"), ("dm.a", "sm.a"),
                 ("dm.b", "sm.b"), ("sat.y", "mx.u1"), ("sm.y", "mx.u2"), ("mx.y", "g.u")):
        system.connect(a, b)
    assert len(system.connections) == 3 + 3 + 2 + 2 + 1 + 1 + 2 + 1 + 3
    rec = ["sat.y[1]", "sat.y[2]", "sm.y", "g.y[1]", "g.y[2]", "g.y[3]"]
    data = simulate(system, stop_time=1.0, step=0.05, record=rec).data

    t = np.asarray(data["time"])
    x = np.column_stack([np.interp(t, TIMES, RAMPS[:, j]) for j in range(3)])
    s = np.clip((x + [1.0, -2.0, 0.5]) @ K.T, [-1.0, -2.0], [1.0, 2.0])
    d = s[:, 0] - s[:, 1]
    assert np.abs(s).max() == 2.0 and (np.abs(s[:, 0]) == 1.0).any()  # the limits are reached
    np.testing.assert_allclose(np.column_stack([data["sat.y[1]"], data["sat.y[2]"]]), s, rtol=0, atol=1e-12)
    np.testing.assert_allclose(data["sm.y"], d, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.column_stack([data[f"g.y[{k}]"] for k in (1, 2, 3)]),
                               2 * np.column_stack([s, d]), rtol=0, atol=1e-12)


def test_deviation_variable_controller_from_blocks_equals_the_loop_by_hand():
    """tau = sat(u0 + K (y0 - y)) about the hold point y0 = (q0, 0), u0 = w,
    without any FunctionUnit glue: Mux, Offset, Gain, Offset, Saturation."""
    n, h, stop = 3, 0.02, 3.0
    w = np.array([9.81, 4.0, -2.0])
    q0 = np.array([0.5, -0.3, 1.0])
    kp, kd = 40.0, 9.0
    K = np.hstack([kp * np.eye(n), kd * np.eye(n)])
    arm = double_integrators(n)
    blocks = [Mux("y", [n, n], inputs=("q", "v")), Offset("dy", -np.r_[q0, np.zeros(n)]),
              Gain("K", -K), Offset("u", w), Saturation("lim", -15.0, 15.0, n=n)]
    system = System([arm, *blocks], values={f"arm.w[{k + 1}]": w[k] for k in range(n)})
    for a, b in (("arm.q", "y.q"), ("arm.v", "y.v"), ("y.y", "dy.u"), ("dy.y", "K.u"), ("K.y", "u.u"),
                 ("u.y", "lim.u"), ("lim.y", "arm.tau")):
        system.connect(a, b)
    data = simulate(system, stop_time=stop, step=h, record=[f"arm.q[{k + 1}]" for k in range(n)]
                    + [f"lim.y[{k + 1}]" for k in range(n)]).data

    Ad = np.block([[np.eye(n), h * np.eye(n)], [np.zeros((n, n)), np.eye(n)]])
    Bd = np.vstack([h ** 2 / 2 * np.eye(n), h * np.eye(n)])
    x = np.zeros(2 * n)
    Q, U = [], []
    for _ in range(len(data)):
        tau = np.clip(w + K @ (np.r_[q0, np.zeros(n)] - x), -15.0, 15.0)
        Q.append(x[:n].copy())
        U.append(tau)
        x = Ad @ x + Bd @ (tau - w)
    Q, U = np.array(Q), np.array(U)
    assert (np.abs(U) == 15.0).any()  # the limit is active at the start
    np.testing.assert_allclose(np.column_stack([data[f"arm.q[{k + 1}]"] for k in range(n)]), Q, atol=1e-10)
    np.testing.assert_allclose(np.column_stack([data[f"lim.y[{k + 1}]"] for k in range(n)]), U, atol=1e-9)
    np.testing.assert_allclose(Q[-1], q0, atol=1e-3)  # holds the point against the load


@pytest.mark.parametrize("make, message", [
    (lambda: Gain("g", [1.0, 2.0], n=3), "length 2 for width n = 3"),
    (lambda: Gain("g", [[1.0, np.nan]]), "finite"),
    (lambda: Saturation("s", 1.0, -1.0), "lower limit"),
    (lambda: Sum("s", "+*"), "'+' and '-'"),
    (lambda: Sum("s", "++", inputs=("a", "a")), "distinct"),
    (lambda: Mux("m", [2, 0]), "positive integers"),
    (lambda: Offset("o", [1.0, 2.0], n=0), "positive integer"),
])
def test_bad_block_parameters_are_one_clear_error(make, message):
    with pytest.raises(InputError, match=re.escape(message)):
        make()


def test_an_unconnected_block_input_is_reported_by_validate():
    system = System([Gain("g", 2.0), sources.step("s", 0.0)])
    with pytest.raises(CosimError, match="input g.u is not connected"):
        system.validate()
