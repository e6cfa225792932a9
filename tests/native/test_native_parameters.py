"""Every parameter of the native FMU (issue 23 section 1, issue 26 item 13).

The native runtime recomputes its packed model from the plant's expression
tape (mbfmu.dynamics.symbolic, mbfmu.fmu.native.tape) when a parameter is
set. Checked against the Python plant built with the same values:

* each parameter at 0.8x and 1.25x its start (or the end of its range),
  set before initialization: outputs equal to 1e-12;
* a tunable parameter changed during the run: equal to the Python plant
  rebuilt with the new value from the state reached (what the pythonfmu FMU
  does, mbfmu.fmu.slave);
* a value outside the plant's range: fmi2Error naming the parameter, the
  value and the bound, and the instance keeps its values;
* the tape evaluated in Python equals the description the packer takes
  from the plant built with real numbers.
"""
from __future__ import annotations

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.fmi1 import FMICallException

from mbfmu.errors import MbfmuError
from mbfmu.fmu.native.pack import describe, parameter_map, rest_radius
from mbfmu.fmu.native.tape import probe_values
from mbfmu.plant.library import load_plant

from .conftest import COUNTS, NATIVE_PLANTS, assert_same
from .fmi_loop import Loaded

# the plants whose every parameter the native FMU takes (the others: see the report of issue 23)
TAPED = ("rigid_arm", "canonical_2body", "satellite", "crash_occupant", "flexible_arm")

STEPS = 12


def _cases():
    for name in sorted(NATIVE_PLANTS):
        for sig in load_plant(name).parameters:
            for v in probe_values(sig):
                yield pytest.param(name, sig.name, v, id=f"{name}-{sig.name}={v:.6g}")


def python_run(name: str, n: int, parameters: dict, change_at: int | None = None, change: dict | None = None):
    """Outputs (n + 1, ny) of the Python plant with NATIVE_PLANTS' inputs; after
    ``change_at`` steps the plant is rebuilt with ``change`` and continues from its state."""
    plant = load_plant(name, **parameters)
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = NATIVE_PLANTS[name].get(s.name, u[k])
    h = plant.default_step
    x, t = plant.initial_state(), 0.0
    rows = [plant.outputs_at(t, x, u)]
    for k in range(n):
        if k == change_at:
            plant = load_plant(name, **{**parameters, **change})
        x = plant.advance(t, x, u, h)
        t = (k + 1) * h
        rows.append(plant.outputs_at(t, x, u))
    return np.array(rows), [s.name for s in plant.outputs], h


@pytest.mark.parametrize("name", TAPED)
def test_every_parameter_is_taken_by_the_native_runtime(name):
    plant = load_plant(name)
    ref = {s.name: s.start for s in plant.parameters}
    pmap = parameter_map(plant, lambda values: load_plant(name, **{**ref, **values}))
    assert pmap.tape is not None, pmap.tape_failure
    fixed = {plant.parameters[j].name: why for j, why in pmap.fixed.items()}
    assert set(fixed) == COUNTS.get(name, set()), fixed
    assert all("structure" in why or "count" in why for why in fixed.values()), fixed


@pytest.mark.parametrize("name", TAPED)
def test_the_tape_in_python_equals_the_plant_built_with_real_numbers(name):
    """Each parameter at each probe value: the tape's description equals the packer's."""
    plant = load_plant(name)
    ref = {s.name: s.start for s in plant.parameters}
    pmap = parameter_map(plant, lambda values: load_plant(name, **{**ref, **values}))
    d0 = describe(plant).d
    moved = probes = 0
    for j, sig in enumerate(plant.parameters):
        for v in probe_values(sig):
            p = np.array([ref[s.name] for s in plant.parameters])
            p[j] = v
            try:
                built = load_plant(name, **{**ref, sig.name: v})
                expected = describe(built).d
            except MbfmuError:  # the plant refuses it: so do the tape's conditions or the runtime's checks
                continue
            actual = pmap.tape.description(d0, p)
            if pmap.step_rule:  # the runtime's internal step: min(cap, k / rho), rho as csrc/steplimit.c
                cap, k = pmap.step_rule
                o = describe(plant).offsets
                actual[[o["o_step"], o["o_adapt"] + 2, o["o_adapt"] + 3]] = min(cap, k / rest_radius(
                    built.flexible_system))
            assert_same(actual[None], expected[None], floor=1e-300)
            assert pmap.tape.tape.failed_guard(pmap.tape.tape.evaluate(p)) is None
            moved += not np.array_equal(expected, d0)
            probes += 1
    assert probes > len(plant.parameters) and moved >= probes - 4  # (satellite: the strip parameters need
    # panel_segments > 1)


@pytest.mark.parametrize("name, parameter, value", list(_cases()))
def test_a_parameter_set_before_initialization_equals_the_python_plant(name, parameter, value, loaded):
    """Every library plant, every parameter: equal to the Python plant; a parameter the native
    runtime cannot take (declared calculatedParameter) is refused with the reason."""
    L = loaded(name)
    if next(v for v in L.md.modelVariables if v.name == parameter).causality == "calculatedParameter":
        assert name not in TAPED or parameter in COUNTS.get(name, ())
        L.slave.setupExperiment(startTime=0.0)
        L.slave.enterInitializationMode()
        with pytest.raises(FMICallException):
            L.set(parameter, value)
        assert f"refused parameter {parameter}" in L.log[-1] and "rebuild it" in L.log[-1], L.log[-1]
        return
    try:
        Y, outs, h = python_run(name, STEPS, {parameter: value})
    except MbfmuError as exc:  # a probe the plant refuses (a moment that breaks the triangle inequality)
        L.slave.setupExperiment(startTime=0.0)
        L.slave.enterInitializationMode()
        with pytest.raises(FMICallException):
            L.set(parameter, value)
        assert parameter in L.log[-1] and "refused" in L.log[-1], (L.log[-1], str(exc))
        return
    L.setup(parameters={parameter: value}, inputs=NATIVE_PLANTS[name])
    assert L.get([parameter]).tolist() == [value]
    assert_same(L.run(outs, h, STEPS), Y)


@pytest.mark.parametrize("name", TAPED)
def test_all_parameters_set_together_equal_the_python_plant(name, loaded):
    """Every parameter the tape takes, 3 % off its start at once (a zero start 0.05 off)."""
    values = {s.name: (s.start * 1.03 if s.start else 0.05) for s in load_plant(name).parameters
              if s.name not in COUNTS.get(name, ())}
    Y, outs, h = python_run(name, STEPS, values)
    L = loaded(name)
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    # in one fmi2SetReal: canonical_2body's J1x alone would break the triangle inequality with J1y, J1z
    L.slave.setReal([L.vr[n] for n in values], list(values.values()))
    for k, v in NATIVE_PLANTS[name].items():
        L.set(k, v)
    L.slave.exitInitializationMode()
    assert_same(L.run(outs, h, STEPS), Y)


@pytest.mark.parametrize("name, parameter, value", [("rigid_arm", "link_length", 1.3),
                                                    ("rigid_arm", "link_radius", 0.15),
                                                    ("rigid_arm", "arm_mass", 26.0),
                                                    ("rigid_arm", "gravity", 3.7),
                                                    ("canonical_2body", "c", 250.0),
                                                    ("canonical_2body", "J2y", 0.046),
                                                    ("canonical_2body", "yc1", 0.45),
                                                    ("canonical_2body", "k", 12.0),
                                                    ("satellite", "hub_mass", 450.0),
                                                    ("satellite", "panel_length", 1.2),
                                                    ("satellite", "hinge_preload", 0.4),
                                                    ("flexible_arm", "rotor_mass", 0.25),
                                                    # taken while the internal step stays 1 ms (step rule)
                                                    ("flexible_arm", "damping_ratio", 0.015),
                                                    ("flexible_arm", "payload_mass", 0.12),
                                                    ("flexible_arm", "motor_inertia_2", 0.005),
                                                    # the beams' parameters, through the mode shapes' scalings
                                                    ("flexible_arm", "length_1", 0.85),
                                                    ("flexible_arm", "length_2", 0.65),
                                                    ("flexible_arm", "thickness", 0.0045),
                                                    ("flexible_arm", "height", 0.055),
                                                    ("flexible_arm", "youngs_modulus", 6.5e10),
                                                    ("flexible_arm", "density", 2800.0),
                                                    ("flexible_arm", "motor_inertia_1", 0.012),
                                                    ("flexible_arm", "elbow_motor_mass", 1.2),
                                                    ("crash_occupant", "seat_stiffness", 4.5e4),
                                                    ("crash_occupant", "stature", 1.9),
                                                    ("crash_occupant", "pulse_peak", 150.0)])
def test_a_tunable_parameter_changed_during_the_run_equals_the_rebuilt_plant(name, parameter, value, loaded):
    half = STEPS // 2
    Y, outs, h = python_run(name, STEPS, {}, change_at=half, change={parameter: value})
    L = loaded(name)
    var = next(v for v in L.md.modelVariables if v.name == parameter)
    assert var.variability == "tunable"
    L.setup(inputs=NATIVE_PLANTS[name])
    first = L.run(outs, h, half)
    L.set(parameter, value)
    rest = L.run(outs, h, STEPS - half, t0=half * h)
    assert_same(np.vstack([first, rest[1:]]), Y)
    assert not np.allclose(Y[-1], python_run(name, STEPS, {})[0][-1], rtol=1e-9)  # the change shows


@pytest.mark.parametrize("name, parameter, value, words", [
    ("rigid_arm", "arm_mass", 0.0, ["arm_mass", "= 0", "(0, inf)"]),
    ("rigid_arm", "gravity", -1.0, ["gravity", "= -1", "[0, inf)"]),
    # a cross-parameter bound of the plant: axial m r^2 / 2 <= 2 x transverse moment
    ("rigid_arm", "link_inertia", 0.04, ["link_inertia = 0.04", "<= (2 * link_inertia)", "rigid_arm.py"]),
    ("canonical_2body", "m1", 0.0, ["m1", "= 0", "(0, inf)"]),
    ("canonical_2body", "xc2", 0.0, ["xc2 = 0", "xc2 != 0", "canonical_2body.py"]),
    # moments of body 2 that break the triangle inequality: J2x + J2z = 0.047 < 0.06
    ("canonical_2body", "J2y", 0.06, ["J2y = 0.06", "(J2x + J2z) >= J2y", "canonical_2body.py"]),
    ("satellite", "hub_mass", 0.0, ["hub_mass", "= 0", "(0, inf)"]),
    ("crash_occupant", "body_mass", 0.0, ["body_mass", "= 0", "outside"]),
    ("crash_occupant", "stature", 2.5, ["stature", "= 2.5", "outside", "2.2"]),
    ("crash_occupant", "stature", 1.1, ["stature", "= 1.1", "outside", "1.2"]),
    # the stowed stack: a panel thinner than twice the hinge offset (a declared open bound)
    ("satellite", "panel_thickness", 0.05, ["panel_thickness", "= 0.05", "(0, 0.04)"]),
    ("satellite", "panel_thickness", 0.04, ["panel_thickness", "= 0.04", "(0, 0.04)"]),
    # the plant's bounds, open where the plant refuses the bound itself
    ("flexible_arm", "rotor_mass", 0.0, ["rotor_mass", "= 0", "(0, inf)"]),
    ("flexible_arm", "length_2", -0.1, ["length_2", "= -0.1", "(0, inf)"]),
    ("flexible_arm", "damping_ratio", -0.01, ["damping_ratio", "= -0.01", "[0, inf)"]),
])
def test_a_value_the_plant_refuses_is_refused_and_the_previous_values_kept(name, parameter, value, words, loaded):
    with pytest.raises(Exception):
        load_plant(name, **{parameter: value})  # the Python plant refuses it too
    start = {s.name: s.start for s in load_plant(name).parameters}
    Y, outs, h = python_run(name, STEPS, {})
    L = loaded(name)
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    with pytest.raises(FMICallException):
        L.set(parameter, value)
    assert all(w in L.log[-1] for w in words), L.log[-1]
    for k, v in NATIVE_PLANTS[name].items():
        L.set(k, v)
    L.slave.exitInitializationMode()
    assert L.get([parameter]).tolist() == [start[parameter]]
    assert_same(L.run(outs, h, STEPS), Y)


@pytest.mark.parametrize("parameter, value", [("damping_ratio", 0.1), ("payload_mass", 0.01),
                                              ("length_2", 0.48), ("youngs_modulus", 1e11),
                                              ("thickness", 0.06)])  # (thicker than high)
def test_a_value_that_shortens_the_flexible_arms_internal_step_equals_the_python_plant(parameter, value, loaded):
    """flexible_arm integrates with min(1 ms, 2 / rho), rho the spectral radius at rest
    (1888 1/s at the start values): the native runtime computes rho from its re-packed
    model (csrc/steplimit.c) and follows the rule, before initialization and during the run."""
    plant = load_plant("flexible_arm", **{parameter: value})
    assert plant.internal_step < 0.95e-3  # the plant takes the value, with a shorter step
    Y, outs, h = python_run("flexible_arm", STEPS, {parameter: value})
    L = loaded("flexible_arm")
    L.setup(parameters={parameter: value}, inputs=NATIVE_PLANTS["flexible_arm"])
    assert_same(L.run(outs, h, STEPS), Y)
    half = STEPS // 2  # and changed during the run, from the state reached
    Y, outs, h = python_run("flexible_arm", STEPS, {}, change_at=half, change={parameter: value})
    L = loaded("flexible_arm")
    L.setup(inputs=NATIVE_PLANTS["flexible_arm"])
    first = L.run(outs, h, half)
    L.set(parameter, value)
    rest = L.run(outs, h, STEPS - half, t0=half * h)
    assert_same(np.vstack([first, rest[1:]]), Y)


# ------------------------------------------------------------ declarations
@pytest.mark.parametrize("name", sorted(NATIVE_PLANTS))
def test_the_declarations_say_what_the_native_fmu_takes(name, native_fmu):
    """tunable: the native FMU takes it (during the run too); calculatedParameter: it
    cannot (fixed, with the reason in the packer's report); counts are Integer. fmpy
    validates the description."""
    from fmpy.validation import validate_fmu
    from mbfmu.fmu.native import native_parameter_report
    from mbfmu.fmu.plantref import parse
    fmu = native_fmu(name)
    assert validate_fmu(fmu) == []
    md = read_model_description(fmu)
    report = native_parameter_report(parse(name))
    declared = {v.name: v for v in md.modelVariables if v.causality in ("parameter", "calculatedParameter")}
    assert set(declared) == set(report)
    for pname, why in report.items():
        v = declared[pname]
        if why is None:
            assert (v.causality, v.variability, v.type) == ("parameter", "tunable", "Real"), pname
        else:
            assert (v.causality, v.variability) == ("calculatedParameter", "fixed"), pname
    integers = {n for n, v in declared.items() if v.type == "Integer"}
    assert integers == {n for n in ("n_modes", "n_segments", "tip_shapes", "panels_per_wing", "panel_segments")
                        if n in declared}
    if name in TAPED:
        assert {n for n, why in report.items() if why is not None} == COUNTS.get(name, set()), report
    if integers:  # read with fmi2GetInteger: the plant's counts
        plant = load_plant(name)
        L = Loaded(fmu)
        try:
            L.slave.setupExperiment(startTime=0.0)
            L.slave.enterInitializationMode()
            got = L.slave.getInteger([L.vr[n] for n in sorted(integers)])
            assert got == [int(next(s.start for s in plant.parameters if s.name == n)) for n in sorted(integers)]
        finally:
            L.close()


def test_refusal_messages_print_six_significant_digits(loaded):
    """A value refused for its bound, or a count (calculated) parameter refused, is printed with 6
    significant digits (as %g), not 17: the reader needs the magnitude, not the last bits."""
    L = loaded("rigid_arm")
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    with pytest.raises(FMICallException):
        L.set("arm_mass", -1.2345678912345)
    assert "arm_mass = -1.23457 kg is outside" in L.log[-1], L.log[-1]
    F = loaded("flexible_arm")
    F.slave.setupExperiment(startTime=0.0)
    F.slave.enterInitializationMode()
    with pytest.raises(FMICallException):
        F.set("n_modes", 3.123456789)
    kept = next(p.start for p in load_plant("flexible_arm").parameters if p.name == "n_modes")
    assert "refused parameter n_modes = 3.12346:" in F.log[-1], F.log[-1]
    assert f"the native FMU keeps {kept:g} (" in F.log[-1], F.log[-1]
