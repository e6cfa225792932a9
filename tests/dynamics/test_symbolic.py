"""The expression tape (mbfmu.dynamics.symbolic): a recorded computation, evaluated
at other parameter values, equals the same computation done with floats; comparisons
become guards; numpy object arrays keep the expressions."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbfmu.dynamics import symbolic
from mbfmu.dynamics.spatial import rot_z, spatial_inertia


def _model(a, b, xp=np):
    """Every operation the tape records, on scalars and arrays."""
    R = rot_z(a)
    v = R @ xp.array([b, 1.0, 2.0 * a])
    I = spatial_inertia(b, v, np.diag([a, b, a * b]))
    scalars = [a + b, a - 2.0, 3.0 - b, a * b, a / b, 2.0 / a, a ** 2, 2.0 ** b, a ** b, -a, abs(a - b),
               np.sin(a), np.cos(b), np.tan(a), np.sqrt(b), np.exp(a), np.log(b), np.arctan2(a, b),
               np.arcsin(a / 4), np.arccos(b / 4), np.arctan(a), np.hypot(a, b)]
    return np.concatenate([np.asarray(scalars, dtype=object).astype(float) if not symbolic.is_recording()
                           else np.asarray(scalars, dtype=object), v.reshape(-1), I.reshape(-1)])


@pytest.mark.parametrize("a, b", [(0.7, 1.9), (1.3, 0.4), (-0.5, 2.0)])
def test_the_tape_evaluates_what_floats_compute(a, b):
    with symbolic.recording(["a", "b"], [0.9, 1.1]) as tape:
        out = _model(*tape.params)
    nodes = [e.i for e in out]
    assert all(isinstance(e, symbolic.Sym) for e in out)
    got = tape.evaluate([a, b])[nodes]
    expected = np.array(_model(a, b), float)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


def test_a_comparison_is_a_guard_naming_the_condition():
    with symbolic.recording(["m", "r"], [2.0, 0.5]) as tape:
        m, r = tape.params
        assert not (0.5 * m * r ** 2 > 2.0)  # the branch taken: the check passes
        assert m != 0
    assert len(tape.guards) == 2
    assert tape.guard_text(0).startswith("((0.5 * m) * (r ^ 2)) <= 2")
    assert tape.failed_guard(tape.evaluate([2.0, 0.7])) is None
    assert tape.failed_guard(tape.evaluate([20.0, 0.7])) == 0
    assert tape.failed_guard(tape.evaluate([0.0, 0.7])) == 1


def test_outside_a_recording_the_helpers_are_the_float_versions():
    assert symbolic.real_array([1, 2]).dtype == float
    assert symbolic.zeros(3).dtype == float and symbolic.tile(np.eye(3), (2, 1, 1)).dtype == float
    assert symbolic.number(np.float64(2.5)) == 2.5 and type(symbolic.number(np.float64(2.5))) is float


def test_float_of_a_sym_is_its_value_and_drops_the_expression():
    with symbolic.recording(["x"], [0.3]) as tape:
        (x,) = tape.params
        y = math.sin(float(x))  # a plain float: the packer's verification finds such a leak
    assert isinstance(y, float) and y == math.sin(0.3)


def test_equal_syms_and_numbers_hash_alike():
    """Python's rule: a == b implies hash(a) == hash(b). A Sym equals the number
    of its value, so a set or dict finds it by that number (and by another Sym of
    the same value); the comparison is recorded as a guard, as any comparison."""
    with symbolic.recording(["m", "k"], [2.0, 3.0]) as tape:
        m, k = tape.params
        twice = k - 1.0  # another expression of the same value
        assert m == 2.0 and hash(m) == hash(2.0)
        assert m == twice and hash(m) == hash(twice)
        assert m != k and {m: "m"}[2.0] == "m" and 2.0 in {m} and twice in {m}


def test_a_recording_belongs_to_its_thread():
    """The recording stack is a context variable: a plant built in another thread
    while one thread records gets plain floats and records nothing on that tape."""
    import threading
    seen = {}

    def other():
        seen["recording"] = symbolic.is_recording()
        seen["zeros"] = symbolic.zeros(2).dtype
        seen["array"] = symbolic.real_array([1.0, 2.0]).dtype

    with symbolic.recording(["a"], [1.0]) as tape:
        assert symbolic.is_recording() and symbolic.zeros(2).dtype == object
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        nodes = len(tape.nodes)
    assert seen == {"recording": False, "zeros": np.dtype(float), "array": np.dtype(float)}
    assert nodes == 1  # the parameter's node only
    assert not symbolic.is_recording()


def test_recordings_nest_and_unwind():
    with symbolic.recording(["a"], [1.0]):
        with symbolic.recording(["b"], [2.0]) as inner:
            assert symbolic.is_recording() and inner.names == ["b"]
        assert symbolic.is_recording()
    assert not symbolic.is_recording()


def test_the_symbolic_module_has_one_import_name():
    """Every module imports mbfmu.dynamics.symbolic as ``symbolic`` (no aliases S, Y)."""
    import ast
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]
    bad = []
    for path in [*root.joinpath("mbfmu").rglob("*.py"), *root.joinpath("models").glob("*.py"),
                 *root.joinpath("tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name.split(".")[-1] == "symbolic" and alias.asname not in (None, "symbolic"):
                        bad.append(f"{path.relative_to(root)}: {alias.name} as {alias.asname}")
    assert not bad, bad
