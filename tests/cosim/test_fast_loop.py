"""The compiled fixed-step loop (mbfmu.cosim.fast_loop) gives the Python loop's
results bit for bit, and is taken only where its semantics are the same."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import fast_loop, simulate
from mbfmu.cosim.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.cosim.units import FunctionUnit
from mbfmu.errors import CosimError


def _chain(mass_fmu, fail_time: float = 1e300) -> System:
    """Three masses: a and b coupled (coupling force with direct feedthrough),
    c pulled by b: pre-pulls, re-pulls and an unconnected input (c.F)."""
    a = FmuUnit(mass_fmu, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1))
    b = FmuUnit(mass_fmu, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5, fail_time=fail_time))
    c = FmuUnit(mass_fmu, "c", values=dict(m=0.5, k=5.0, kc=8.0, nsub=3))
    return System([a, b, c], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F"), ("b.x", "c.xin"),
                              ("b.v", "c.vin")])


def _both(make, monkeypatch, **kw):
    """(compiled, Python) results of the same run, checking which loop ran."""
    calls = []
    real_run = fast_loop.run
    monkeypatch.setattr(fast_loop, "run", lambda *a: calls.append(1) or real_run(*a))
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(fast_loop, "ENABLED", enabled)
        try:
            out.append(simulate(make(), progress=False, **kw))
        except CosimError as exc:
            out.append(exc)
    return out, len(calls)


@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_compiled_loop_equals_python_loop_bit_for_bit(mass_fmu, monkeypatch, algorithm):
    (fast, slow), calls = _both(lambda: _chain(mass_fmu), monkeypatch, stop_time=2.0, step=1e-3,
                                algorithm=algorithm, order=["b", "a", "c"] if algorithm == "gauss-seidel" else None)
    assert calls == 1
    assert fast.names == slow.names and np.array_equal(fast.data, slow.data)
    assert fast.summary.steps == slow.summary.steps == 2000 and fast.time[-1] == 2.0


def test_failure_in_the_compiled_loop_keeps_the_rows_and_names_the_unit(mass_fmu, monkeypatch):
    (fast, slow), calls = _both(lambda: _chain(mass_fmu, fail_time=0.5), monkeypatch,
                                stop_time=2.0, step=1e-2)
    assert calls == 1
    assert isinstance(fast, CosimError) and isinstance(slow, CosimError)
    assert "unit 'b'" in str(fast) and "fmi2DoStep" in str(fast)
    assert np.array_equal(fast.result.data, slow.result.data) and len(fast.result) > 1


@pytest.mark.parametrize("variant", ["python unit", "adaptive", "record all"])
def test_other_runs_keep_the_python_loop(mass_fmu, monkeypatch, variant):
    def make():
        s = _chain(mass_fmu)
        if variant == "python unit":
            s.add(FunctionUnit("src", lambda t, u: [np.sin(t)]))
            s.connect("src.y", "c.F")
        return s
    kw = {"adaptive": {"adaptive": True}, "record all": {"record": "all"}}.get(variant, {})
    (fast, slow), calls = _both(make, monkeypatch, stop_time=0.5, step=1e-2, **kw)
    assert calls == 0 and np.array_equal(fast.data, slow.data)
