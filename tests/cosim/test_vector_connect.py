"""``System.connect("plant.q", "ctrl.q")`` connects whole vector ports: the
same connections as the element-by-element tuples, the same run, and a clear
error when the sizes differ."""
from __future__ import annotations

import control
import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, System, simulate, sources
from mbfmu.cosim.blocks import Gain, port_names
from mbfmu.errors import CosimError, InputError

from .joint_plants import double_integrators

N = 6


def _units():
    """A 6-joint arm, a PD controller ``tau = Kp (q_ref - q) + Kd (v_ref - v)``
    (static python-control system) and a reference table."""
    kp, kd = 25.0, 10.0
    I = np.eye(N)
    ctrl = control.ss(np.zeros((0, 0)), np.zeros((0, 4 * N)), np.zeros((N, 0)),
                      np.hstack([kp * I, kd * I, -kp * I, -kd * I]),
                      inputs=port_names("q_ref", N) + port_names("v_ref", N) + port_names("q", N)
                      + port_names("v", N), outputs=port_names("tau", N), name="ctrl")
    q_goal = np.linspace(0.2, 1.2, N)
    ref = sources.table("ref", [0.0, 1.0], np.vstack([np.r_[np.zeros(N), q_goal], np.r_[q_goal, q_goal]]),
                        outputs=port_names("q_ref", N) + port_names("v_ref", N))
    return [double_integrators(N), ControlUnit("ctrl", ctrl), ref]


def _hand_built() -> list[tuple[str, str]]:
    """The 30 tuples a user writes today."""
    pairs = []
    for k in range(1, N + 1):
        pairs += [(f"ref.q_ref[{k}]", f"ctrl.q_ref[{k}]"), (f"ref.v_ref[{k}]", f"ctrl.v_ref[{k}]"),
                  (f"arm.q[{k}]", f"ctrl.q[{k}]"), (f"arm.v[{k}]", f"ctrl.v[{k}]"),
                  (f"ctrl.tau[{k}]", f"arm.tau[{k}]")]
    return pairs


VECTOR = [("ref.q_ref", "ctrl.q_ref"), ("ref.v_ref", "ctrl.v_ref"), ("arm.q", "ctrl.q"), ("arm.v", "ctrl.v"),
          ("ctrl.tau", "arm.tau")]


def test_five_vector_connections_equal_the_thirty_hand_built_tuples():
    by_hand, by_vector = System(_units(), _hand_built()), System(_units(), VECTOR)
    assert len(by_hand.connections) == len(by_vector.connections) == 30
    assert sorted(map(str, by_vector.connections)) == sorted(map(str, by_hand.connections))
    record = port_names("arm.q", N) + port_names("ctrl.tau", N)
    a = simulate(by_hand, stop_time=2.0, step=0.01, record=record).data
    b = simulate(by_vector, stop_time=2.0, step=0.01, record=record).data
    assert np.abs(a["arm.q[6]"]).max() > 0.5  # the loop really moves
    for name in record:
        np.testing.assert_array_equal(a[name], b[name])


def test_vectors_of_different_sizes_are_refused_naming_both():
    system = System([double_integrators(3), Gain("g", 1.0, n=2)])
    with pytest.raises(InputError, match=r"cannot connect arm\.q -> g\.u: arm\.q has 3 elements but g\.u has 2"):
        system.connect("arm.q", "g.u")
    with pytest.raises(InputError, match=r"g\.y has 2 elements but arm\.tau\[1\] is a scalar"):
        system.connect("g.y", "arm.tau[1]")
    assert system.connections == []


def test_a_scalar_connects_to_a_one_element_vector():
    arm = ControlUnit("arm", control.ss(0.0, 1.0, 1.0, 0.0, inputs=["tau[1]"], outputs=["q[1]"]))
    system = System([arm, Gain("g", 2.0)], [("arm.q", "g.u"), ("g.y", "arm.tau")])
    assert [str(c) for c in system.connections] == ["arm.q[1] -> g.u", "g.y -> arm.tau[1]"]


def test_a_vector_with_missing_elements_is_refused():
    gappy = ControlUnit("gappy", control.ss([], [], [], np.eye(2), inputs=["u[1]", "u[3]"], outputs=["y[1]", "y[3]"]))
    system = System([gappy, Gain("g", 1.0, n=2)])
    with pytest.raises(InputError, match=r"gappy\.y is not a vector y\[1\.\.n\]: its elements are numbered \[1, 3\]"):
        system.connect("gappy.y", "g.u")


def test_unknown_names_are_left_to_validate():
    system = System([Gain("g", 1.0, n=2)], [("nowhere.y", "g.u"), ("g.y", "g.nothing")])
    with pytest.raises(CosimError) as err:
        system.validate()
    assert "unknown source unit 'nowhere'" in str(err.value) and "no variable 'nothing'" in str(err.value)
