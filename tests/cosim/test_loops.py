"""Algebraic loops: detected from the declared dependencies, solved at the
communication points, compared with the closed-form solution."""
from __future__ import annotations

import control
import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, FmuUnit, System, simulate, sources


def gain_loop(gain_fmu, k1, k2):
    """y1 = k1 u1 + w1 (w1 = sin t), y2 = k2 u2 + 1, with u1 = y2, u2 = y1."""
    return System([FmuUnit(gain_fmu, "g1", values={"k": k1}), FmuUnit(gain_fmu, "g2", values={"k": k2, "b": 1.0}),
                   sources.sine("src", 1.0, 1 / (2 * np.pi))],
                  [("g1.y", "g2.u"), ("g2.y", "g1.u"), ("src.y", "g1.w")])


def closed_form(t, k1, k2):
    # y1 = k1 (k2 y1 + 1) + sin t  =>  y1 = (k1 + sin t) / (1 - k1 k2)
    y1 = (k1 + np.sin(t)) / (1 - k1 * k2)
    return y1, k2 * y1 + 1.0


@pytest.mark.parametrize("k1,k2", [(0.5, 0.8), (-0.9, 0.9), (2.0, 1.5), (-3.0, 2.0)],
                         ids=["contracting", "alternating", "diverging-fixed-point", "strongly-diverging"])
def test_loop_of_two_feedthrough_fmus_converges_to_solution(gain_fmu, k1, k2):
    s = gain_loop(gain_fmu, k1, k2)
    assert s.algebraic_loops() == [["g1.u", "g1.y", "g2.u", "g2.y"]]
    r = simulate(s, 1.0, 0.1)
    y1, y2 = closed_form(r.time, k1, k2)
    np.testing.assert_allclose(r["g1.y"], y1, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(r["g2.y"], y2, rtol=1e-9, atol=1e-9)
    assert r.summary.loop_iterations >= len(r)


def test_loop_with_python_control_feedthrough_unit(gain_fmu):
    """A static python-control gain (D only) closes a loop with a C FMU gain."""
    d = control.ss([], [], [], [[0.25]], inputs=["u"], outputs=["y"])
    s = System([FmuUnit(gain_fmu, "g", values={"k": 2.0}), ControlUnit("c", d, units={"u": "1", "y": "1"}),
                sources.ramp("r", 0.0, 1.0)],
               [("g.y", "c.u"), ("c.y", "g.u"), ("r.y", "g.w")])
    r = simulate(s, 1.0, 0.25)
    np.testing.assert_allclose(r["g.y"], r.time / (1 - 0.5), rtol=1e-10, atol=1e-12)


def test_singular_loop_is_refused_with_the_loop_named(gain_fmu):
    s = gain_loop(gain_fmu, 1.0, 1.0)  # y1 = y1 + 1 + sin t has no solution
    with pytest.raises(Exception) as e:
        simulate(s, 1.0, 0.1)
    assert "algebraic loop" in str(e.value) and "g1.y -> g2.u" in str(e.value)


def test_no_loop_when_outputs_do_not_depend_on_inputs(mass_fmu):
    s = System([FmuUnit(mass_fmu, "a"), FmuUnit(mass_fmu, "b", values={"kc": 1.0})],
               [("a.x", "b.xin"), ("b.Fc", "a.F")])
    assert s.algebraic_loops() == []
    assert simulate(s, 0.1, 0.01).summary.loop_iterations == 0


def test_function_unit_loop_with_saturation(gain_fmu):
    """u = sat(k*u + w): the loop solution sits on the saturation limit when it binds."""
    s = System([FmuUnit(gain_fmu, "g", values={"k": 0.5}), sources.saturation("sat", -1.0, 1.0),
                sources.step("w", 0.5, height=3.0)],
               [("g.y", "sat.u"), ("sat.y", "g.u"), ("w.y", "g.w")])
    r = simulate(s, 1.0, 0.1)
    w = np.where(r.time >= 0.5, 3.0, 0.0)
    expected = np.clip(w / 0.5, -1, 1)  # fixed point of u = clip(0.5 u + w): u = 2w unsaturated, else the limit
    np.testing.assert_allclose(r["sat.y"], expected, atol=1e-9)
