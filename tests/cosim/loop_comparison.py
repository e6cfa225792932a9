"""Runs of one system in the compiled loop and in the Python loop, compared: both
results bit for bit, or the same failure with the same rows."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import simulate
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.master.options import SimulationOptions
from mbfmu.cosim.master.run import _Master
from mbfmu.errors import CosimError


def both_loops(make, monkeypatch, stop: float, step: float, **kw):
    """(compiled, Python-loop) runs of the systems ``make()`` returns, with those systems;
    asserts which loop each took."""
    calls = []
    real_run = fast_loop.run
    monkeypatch.setattr(fast_loop, "run", lambda *a: calls.append(1) or real_run(*a))
    fast_sys = make()
    assert fast_loop.python_loop_reason(_Master(fast_sys, step, SimulationOptions(progress=False), None)) is None
    fast = simulate(fast_sys, stop, step, progress=False, **kw)
    assert calls == [1] and "python_loop" not in fast.meta
    monkeypatch.setattr(fast_loop, "ENABLED", False)
    slow_sys = make()
    slow = simulate(slow_sys, stop, step, progress=False, **kw)
    assert calls == [1] and "python_loop" in slow.meta
    assert fast.names == slow.names
    return (fast, fast_sys), (slow, slow_sys)


def bitwise_equal(fast, slow, names=None) -> None:
    """Assert the columns ``names`` (default: all) of two results are equal to the bit."""
    for n in fast.names if names is None else names:
        a, b = np.asarray(fast[n]), np.asarray(slow[n])
        assert a.tobytes() == b.tobytes(), n


def same_failure_in_both_loops(make, monkeypatch, stop: float, step: float, first_line: bool = False) -> str:
    """Run ``make()`` in both loops; both must fail with the same one-line message and keep the
    same rows. Returns the message. ``first_line``: compare the messages' first lines only
    (the lines after it quote a worker process's output, which names its own thread)."""
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        with pytest.raises(CosimError) as err:
            simulate(make(), stop, step, progress=False)
        res = err.value.result
        msg = str(err.value).splitlines()[0] if first_line else str(err.value)
        out.append((msg, res.names, [np.asarray(res[n]).tobytes() for n in res.names]))
    assert out[0] == out[1]
    return out[0][0]
