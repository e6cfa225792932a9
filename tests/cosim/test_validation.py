"""Bad systems raise one error listing every problem; a failing unit stops the
run with its name, the time and its log, keeping the results so far."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate, sources
from mbfmu.errors import CosimError, InputError, UnknownNameError


def test_every_kind_of_problem_is_listed_in_one_error(mass_fmu, gain_fmu):
    import control
    c = ControlUnit("ctrl", control.ss([], [], [], [[1.0]], inputs=["e"], outputs=["u"]))  # input without start
    s = System([FmuUnit(mass_fmu, "m"), FmuUnit(gain_fmu, "g"), c, sources.step("ref", 1.0)])
    s.connect("nobody.y", "g.u")          # unknown unit
    s.connect("m.nothing", "g.u")         # unknown variable
    s.connect("m.F", "g.w")               # causality: source is an input
    s.connect("g.y", "m.x")               # causality: target is an output
    s.connect("g.y", "g.mode")            # type mismatch Real -> Integer
    s.connect("m.x", "m.F")               # unit mismatch m -> N
    s.connect("ref.y", "m.xin")
    s.connect("g.y", "m.xin")             # m.xin driven twice
    with pytest.raises(CosimError) as e:
        simulate(s, 1.0, 0.1)
    msg = str(e.value)
    expected = ["unknown source unit 'nobody'", "has no variable 'nothing'", "source m.F is an input",
                "target m.x is an output", "type mismatch, g.y is Real but g.mode is Integer",
                "unit mismatch, m.x is in 'm' but m.F in 'N'", "input m.xin is driven 2 times",
                "input ctrl.e is not connected and has no start value"]
    for piece in expected:
        assert piece in msg, piece
    assert msg.startswith(f"the system is invalid ({len(msg.splitlines()) - 1} problems)")


def test_valid_system_passes_validation(mass_fmu):
    s = System([FmuUnit(mass_fmu, "a"), FmuUnit(mass_fmu, "b")], [("a.x", "b.xin"), ("b.Fc", "a.F")])
    s.validate(0.01)


def test_unknown_parameter_names_the_known_ones(mass_fmu):
    with pytest.raises(UnknownNameError, match="has no variable 'mass'; known: m, k, d"):
        FmuUnit(mass_fmu, "a", values={"mass": 2.0})


def test_bad_arguments(gain_fmu, tmp_path):
    s = System([FmuUnit(gain_fmu, "g")])
    with pytest.raises(InputError, match="not a whole number of steps"):
        simulate(s, 1.0, 0.3)
    with pytest.raises(InputError, match="algorithm"):
        simulate(s, 1.0, 0.1, algorithm="newton")
    with pytest.raises(InputError, match="does not exist"):
        FmuUnit(tmp_path / "missing.fmu")
    (tmp_path / "bad.fmu").write_text("not a zip")
    with pytest.raises(InputError, match="not a readable FMU"):
        FmuUnit(tmp_path / "bad.fmu")


@pytest.mark.parametrize("broken_first", [False, True])
def test_failing_do_step_names_unit_time_and_log_and_keeps_results(mass_fmu, broken_first):
    """Also: each unit's log holds its own messages, whichever unit was instantiated last."""
    units = [FmuUnit(mass_fmu, "a", values={"x0": 1.0, "k": 1.0}),
             FmuUnit(mass_fmu, "broken", values={"fail_time": 0.35, "kc": 1.0})]
    s = System(units[::-1] if broken_first else units, [("a.x", "broken.xin"), ("broken.Fc", "a.F")])
    with pytest.raises(CosimError) as e:
        simulate(s, 1.0, 0.1)
    msg = str(e.value)
    assert "unit 'broken'" in msg and "fmi2DoStep" in msg and "t = 0.30000000000000004 s" not in msg
    assert "at t = 0.3 s" in msg
    assert "simulated failure in doStep from t=0.3" in msg  # the FMU's own log message
    partial = e.value.result
    np.testing.assert_array_equal(partial.time, [0.0, 0.1, 0.2, 0.3])
    assert np.all(np.isfinite(partial["a.x"]))


def test_gauss_seidel_order_must_name_every_unit(gain_fmu):
    s = System([FmuUnit(gain_fmu, "g1"), FmuUnit(gain_fmu, "g2")])
    with pytest.raises(InputError, match="missing: \\['g2'\\]"):
        simulate(s, 1.0, 0.1, algorithm="gauss-seidel", order=["g1"])


def test_failure_in_the_first_step_names_the_unit_and_frees_every_unit(mass_fmu, gain_fmu):
    ok = FmuUnit(mass_fmu, "ok")
    s = System([ok, FmuUnit(gain_fmu, "bad", values={"fail_time": -1.0})])  # fails at its first doStep
    with pytest.raises(CosimError, match="unit 'bad': fmi2DoStep.*at t = 0.0 s") as e:
        simulate(s, 1.0, 0.5)
    assert len(e.value.result) == 1  # the initial point only
    assert ok._fmu is None  # terminated and freed
