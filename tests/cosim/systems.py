"""The co-simulation systems several test modules run (two masses coupled by a
spring-damper, split across two FMUs, with and without feedthrough), and the
master's choice of loop for a run and a run on both loops."""
from __future__ import annotations

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim.master.options import SimulationOptions
from mbfmu.cosim.master.run import _Master
from mbfmu.errors import CosimError

from .helpers import D1, D2, DC, K1, K2, KC, M1, M2


def with_feedthrough(fmu):
    """The two masses with FMU b owning the coupling spring (its force depends on b's inputs)."""
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def without_feedthrough(fmu):
    """The two masses, each FMU modelling the coupling spring (outputs are states only)."""
    return System([FmuUnit(fmu, "a", values=dict(m=M1, k=K1, d=D1, kc=KC, dc=DC, x0=1.0)),
                   FmuUnit(fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.x", "a.xin"), ("b.v", "a.vin")])


def two_mass(mass_fmu):
    """The two masses with feedthrough, mass a taking 7 sub-steps."""
    return System([FmuUnit(mass_fmu, "a", values=dict(m=M1, k=K1, d=D1, x0=1.0, nsub=7)),
                   FmuUnit(mass_fmu, "b", values=dict(m=M2, k=K2, d=D2, kc=KC, dc=DC))],
                  [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F")])


def master_loop_reason(system: System, record=None, **kw):
    """``python_loop_reason`` of the master a run of ``system`` with ``kw`` builds."""
    return fast_loop.python_loop_reason(_Master(system, 1e-2, SimulationOptions(**kw), record))


def compiled_and_python_runs(make, monkeypatch, **kw):
    """``([compiled, Python-loop], compiled loop runs)``: the results (or the
    :class:`CosimError`) of the same run of ``make()`` with ``simulate(**kw)`` on the
    compiled loop allowed and forbidden, and how often the compiled loop ran."""
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
