"""An isolated unit in the compiled loop: C calls the proxy's own ``push``, ``pull``,
``do_step`` (its worker protocol) where the Python loop calls them, and every other
unit stays compiled. The results are the Python loop's (MBFMU_PYTHON_LOOP=1) bit for
bit, and a unit that fails, crashes or hangs in its worker ends both loops with the
same error and the same rows."""
from __future__ import annotations

import control
import pytest

from cosim.loop_comparison import bitwise_equal, both_loops, same_failure_in_both_loops
from mbfmu.cosim import ControlUnit, FmuUnit, Gain, System
from mbfmu.cosim.isolation.proxy import IsolatedUnit, isolate

from .helpers import FAIL_TIME, STEP

HANG_TIMEOUT = 1.0  # s: the step timeout of the hanging unit


def _system(fmu, mode: int, loop: bool = False, step_timeout: float | None = 30.0) -> System:
    """``bad`` (``y = t + u``, isolated) feeding an integrator ``plant`` (``z' = y``, C's
    controller) whose state drives the in-process FMU ``good`` (``y = t + u``), fed back to
    ``bad``; with ``loop``, ``bad.y`` reaches ``good`` through a gain of 0.5 instead: an
    algebraic loop through the isolated unit (``y = 2 t + y / 2``, solved at each exchange)."""
    bad = isolate(FmuUnit(fmu, "bad", values={"mode": mode, "fail_time": FAIL_TIME}), step_timeout)
    good = FmuUnit(fmu, "good", values={"mode": 0})
    plant = ControlUnit("plant", control.ss(0.0, 1.0, 1.0, 0.0, inputs="y", outputs="z"))
    if loop:
        half = Gain("half", 0.5)
        return System([bad, plant, good, half], [("bad.y", "plant.y"), ("bad.y", "half.u"),
                                                  ("half.y", "good.u"), ("good.y", "bad.u")])
    return System([bad, plant, good], [("bad.y", "plant.y"), ("plant.z", "good.u"), ("good.y", "bad.u")])


@pytest.mark.parametrize("loop, kw", [
    (False, {}),
    (False, {"extrapolation": 2}),
    (False, {"algorithm": "gauss-seidel"}),
    (False, {"threads": 2}),
    (True, {}),
])
def test_isolated_unit_in_the_compiled_loop_gives_the_python_loops_result(faulty_c_fmu, monkeypatch, loop, kw):
    (fast, fast_sys), (slow, _) = both_loops(lambda: _system(faulty_c_fmu, 0, loop), monkeypatch, 1.0, STEP, **kw)
    assert isinstance(fast_sys.units["bad"], IsolatedUnit)
    bitwise_equal(fast, slow)
    if "threads" in kw:  # stepped in parallel with the in-process units
        assert fast.summary.threads == 2
    if not kw:  # and the run is the system's: faulty.c's y = t + u, u the input held over the step
        t, bad, good = fast.time, fast["bad.y"], fast["good.y"]
        assert bad[1:] == pytest.approx(t[1:] + good[:-1], abs=1e-12)
        src = 0.5 * bad[:-1] if loop else fast["plant.z"][:-1]
        assert good[1:] == pytest.approx(t[1:] + src, abs=1e-12)


@pytest.mark.parametrize("mode, what", [(2, "returned error at t = 0.3 s"),
                                        (4, "its worker process died (signal 11 (SIGSEGV))"),
                                        (6, f"took more than the step timeout of {HANG_TIMEOUT!r} s")])
def test_isolated_unit_failing_gives_the_same_error_and_rows_in_both_loops(faulty_c_fmu, monkeypatch, mode, what):
    msg = same_failure_in_both_loops(lambda: _system(faulty_c_fmu, mode, step_timeout=HANG_TIMEOUT),
                                     monkeypatch, 1.0, STEP, first_line=mode == 4)
    assert "unit 'bad'" in msg and what in msg
