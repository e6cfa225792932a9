"""The expression tape (mbfmu.dynamics.symbolic): a recorded computation, evaluated
at other parameter values, equals the same computation done with floats; comparisons
become guards; numpy object arrays keep the expressions."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.dynamics import symbolic as S
from mbfmu.dynamics.spatial import rot_z, spatial_inertia


def _model(a, b, xp=np):
    """Every operation the tape records, on scalars and arrays."""
    R = rot_z(a)
    v = R @ xp.array([b, 1.0, 2.0 * a])
    I = spatial_inertia(b, v, np.diag([a, b, a * b]))
    scalars = [a + b, a - 2.0, 3.0 - b, a * b, a / b, 2.0 / a, a ** 2, 2.0 ** b, a ** b, -a, abs(a - b),
               np.sin(a), np.cos(b), np.tan(a), np.sqrt(b), np.exp(a), np.log(b), np.arctan2(a, b),
               np.arcsin(a / 4), np.arccos(b / 4), np.arctan(a), np.hypot(a, b)]
    return np.concatenate([np.asarray(scalars, dtype=object).astype(float) if not S.is_recording()
                           else np.asarray(scalars, dtype=object), v.reshape(-1), I.reshape(-1)])


@pytest.mark.parametrize("a, b", [(0.7, 1.9), (1.3, 0.4), (-0.5, 2.0)])
def test_the_tape_evaluates_what_floats_compute(a, b):
    with S.recording(["a", "b"], [0.9, 1.1]) as tape:
        out = _model(*tape.params)
    nodes = [e.i for e in out]
    assert all(isinstance(e, S.Sym) for e in out)
    got = tape.evaluate([a, b])[nodes]
    expected = np.array(_model(a, b), float)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


def test_a_comparison_is_a_guard_naming_the_condition():
    with S.recording(["m", "r"], [2.0, 0.5]) as tape:
        m, r = tape.params
        assert not (0.5 * m * r ** 2 > 2.0)  # the branch taken: the check passes
        assert m != 0
    assert len(tape.guards) == 2
    assert tape.guard_text(0).startswith("((0.5 * m) * (r ^ 2)) <= 2")
    assert tape.failed_guard(tape.evaluate([2.0, 0.7])) is None
    assert tape.failed_guard(tape.evaluate([20.0, 0.7])) == 0
    assert tape.failed_guard(tape.evaluate([0.0, 0.7])) == 1


def test_outside_a_recording_the_helpers_are_the_float_versions():
    assert S.real_array([1, 2]).dtype == float
    assert S.zeros(3).dtype == float and S.tile(np.eye(3), (2, 1, 1)).dtype == float
    assert S.number(np.float64(2.5)) == 2.5 and type(S.number(np.float64(2.5))) is float


def test_float_of_a_sym_is_its_value_and_drops_the_expression():
    with S.recording(["x"], [0.3]) as tape:
        (x,) = tape.params
        y = math.sin(float(x))  # a plain float: the packer's verification finds such a leak
    assert isinstance(y, float) and y == math.sin(0.3)
