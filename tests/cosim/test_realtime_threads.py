"""Real-time pacing (``realtime=``, ``--realtime``) and parallel Jacobi stepping
(``threads=``, ``--threads``): paced runs take at least the simulated time over
the factor on the wall clock and report late steps; results of paced and
threaded runs equal the plain serial run bit for bit."""
from __future__ import annotations

import logging
import time

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.cosim.master import fast_loop
from mbfmu.cosim import simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.cosim.units import FunctionUnit
from mbfmu.errors import CosimError, InputError
from tooling import reference_fmu


def _vdp() -> System:
    return System([FmuUnit(reference_fmu("fmi3", "VanDerPol"), "v")])


def _timed(make, **kw):
    t = time.monotonic()
    r = simulate(make(), progress=False, **kw)
    return time.monotonic() - t, r


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_paced_run_holds_the_wall_clock_and_keeps_the_results(monkeypatch, loop):
    monkeypatch.setattr(fast_loop, "ENABLED", loop == "compiled")
    span, factor = 0.6, 2.0
    wall, paced = _timed(_vdp, stop_time=span, step=1e-3, realtime=factor)
    _, free = _timed(_vdp, stop_time=span, step=1e-3)
    assert wall >= span / factor and paced.summary.wall_time >= span / factor * (1 - 1e-6)
    assert paced.summary.realtime == factor and free.summary.realtime == 0.0
    assert np.array_equal(paced.data, free.data)
    assert free.summary.wall_time < span / factor  # (without pacing it is much faster: the pacing did it)


def _slow_source(delay: float) -> FunctionUnit:
    def f(t, u):
        time.sleep(delay)
        return [np.sin(t)]
    return FunctionUnit("slow", f, outputs=["y"])


def test_a_unit_slower_than_real_time_is_reported_python_loop(caplog):
    """Each step sleeps 4 ms against a 1 ms real-time budget: every step is late."""
    caplog.set_level(logging.WARNING, logger="mbfmu.cosim")
    r = simulate(System([_slow_source(4e-3)]), 0.05, 1e-3, progress=False, realtime=1.0)
    assert r.summary.realtime_overruns == 50
    assert r.summary.realtime_worst_lag >= 0.05 * 3  # 50 steps, each >= 3 ms late on its own
    assert "overruns" in str(r.summary) and "not held" in caplog.text


def test_a_unit_slower_than_real_time_is_reported_compiled_loop(mass_fmu, caplog, monkeypatch):
    """A mass FMU taking 200,000 RK4 sub-steps per 1 ms step, paced at 10x (0.1 ms per step)."""
    monkeypatch.setattr(fast_loop, "ENABLED", True)
    caplog.set_level(logging.WARNING, logger="mbfmu.cosim")
    calls = []
    real_run = fast_loop.run
    monkeypatch.setattr(fast_loop, "run", lambda *a: calls.append(1) or real_run(*a))
    s = System([FmuUnit(mass_fmu, "m", values=dict(nsub=200000, x0=1.0))])
    t = time.monotonic()
    r = simulate(s, 0.02, 1e-3, progress=False, realtime=10.0)
    wall = time.monotonic() - t
    assert calls == [1]
    assert r.summary.realtime_overruns > 0 and r.summary.realtime_worst_lag > 0
    assert r.summary.realtime_worst_lag <= wall
    assert "not held" in caplog.text


def test_cli_realtime_prints_the_pacing(capsys):
    path = reference_fmu("fmi3", "VanDerPol")
    t = time.monotonic()
    assert main(["simulate", str(path), "--stop-time", "0.4", "--step", "1e-3", "--realtime", "2"]) == 0
    assert time.monotonic() - t >= 0.2
    assert "paced at x2" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "fast"])
def test_bad_realtime_factor_is_refused(bad):
    with pytest.raises(InputError, match="realtime"):
        simulate(_vdp(), 0.1, 1e-3, realtime=bad)


# ------------------------------------------------------------------ threads
def _chain(mass_fmu, fail_time: float = 1e300) -> System:
    a = FmuUnit(mass_fmu, "a", values=dict(m=1.0, k=10.0, x0=1.0, d=0.1, nsub=20))
    b = FmuUnit(mass_fmu, "b", values=dict(m=2.0, k=20.0, kc=30.0, dc=0.5, fail_time=fail_time, nsub=20))
    c = FmuUnit(mass_fmu, "c", values=dict(m=0.5, k=5.0, kc=8.0, nsub=3))
    v = FmuUnit(reference_fmu("fmi3", "VanDerPol"), "v")
    return System([a, b, c, v], [("a.x", "b.xin"), ("a.v", "b.vin"), ("b.Fc", "a.F"), ("b.x", "c.xin"),
                                 ("b.v", "c.vin"), ("v.x0", "c.F")])


@pytest.mark.parametrize("extrapolation", [0, 1, 2])
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_jacobi_equals_serial_bit_for_bit(mass_fmu, extrapolation, threads):
    serial = simulate(_chain(mass_fmu), 1.0, 1e-3, progress=False, extrapolation=extrapolation)
    par = simulate(_chain(mass_fmu), 1.0, 1e-3, progress=False, extrapolation=extrapolation, threads=threads)
    assert np.array_equal(serial.data, par.data)
    assert par.summary.threads == threads and serial.summary.threads == 1
    assert np.ptp(par["c.x"]) > 0.01


def test_threads_run_python_fmus_too(pendulum_fmu, pd_fmu):
    """pythonfmu FMUs take the GIL in every call: stepped from the loop's threads they
    must still give the serial results (no deadlock: the compiled loop releases the GIL)."""
    def make():
        ft = {"theta": [], "omega": []}
        return System([FmuUnit(pendulum_fmu, "plant", feedthrough=ft),
                       FmuUnit(pd_fmu, "ctrl", values={"ref": 0.2}, feedthrough={"tau": []})],
                      [("plant.theta", "ctrl.theta"), ("plant.omega", "ctrl.omega"), ("ctrl.tau", "plant.tau")])
    serial = simulate(make(), 0.5, 1e-3, progress=False)
    par = simulate(make(), 0.5, 1e-3, progress=False, threads=2)
    assert np.array_equal(serial.data, par.data) and par.summary.threads == 2
    assert np.ptp(par["plant.theta"]) > 0.01


def test_failure_in_a_threaded_run_is_the_serial_one(mass_fmu):
    errs = []
    for threads in (1, 2):
        with pytest.raises(CosimError) as e:
            simulate(_chain(mass_fmu, fail_time=0.5), 2.0, 1e-2, progress=False, threads=threads)
        errs.append(e.value)
    assert str(errs[0]) == str(errs[1]) and "unit 'b'" in str(errs[1])
    assert np.array_equal(errs[0].result.data, errs[1].result.data)


def test_paced_threaded_extrapolated_run_equals_the_plain_one(mass_fmu):
    free = simulate(_chain(mass_fmu), 0.3, 1e-3, progress=False, extrapolation=2)
    t = time.monotonic()
    both = simulate(_chain(mass_fmu), 0.3, 1e-3, progress=False, extrapolation=2, threads=2, realtime=2.0)
    assert time.monotonic() - t >= 0.15
    assert np.array_equal(free.data, both.data) and both.summary.threads == 2 and both.summary.realtime == 2.0


def test_cli_threads(mass_fmu, tmp_path, capsys):
    from mbfmu.cosim import write_ssp
    ssp = write_ssp(_chain(mass_fmu), tmp_path / "chain.ssp", stop_time=0.5, step=1e-3)
    assert main(["simulate", str(ssp), "--threads", "2", "-o", str(tmp_path / "par.csv")]) == 0
    assert "2 threads" in capsys.readouterr().out
    assert main(["simulate", str(ssp), "--threads", "0"]) == 1
    assert "threads = 0" in capsys.readouterr().err


class _OwnPush(FunctionUnit):
    """A FunctionUnit with its own ``push``: the compiled loop does not call it, so the run keeps the Python loop."""

    def push(self) -> None:
        pass


def test_threads_refused_or_reported_where_they_cannot_apply(mass_fmu, caplog):
    with pytest.raises(InputError, match="Gauss-Seidel"):
        simulate(_chain(mass_fmu), 0.1, 1e-2, algorithm="gauss-seidel", threads=2)
    with pytest.raises(InputError, match="threads"):
        simulate(_chain(mass_fmu), 0.1, 1e-2, threads=0)
    caplog.set_level(logging.WARNING, logger="mbfmu.cosim")
    s = _chain(mass_fmu)
    s.add(_OwnPush("src", lambda t, u: [0.0], outputs=["y"]))  # a Python unit C cannot call back
    r = simulate(s, 0.1, 1e-2, progress=False, threads=2)
    assert r.summary.threads == 1 and "threads=2 not used" in caplog.text and "not an in-process FMU" in caplog.text
