"""The native FMU refuses exactly the values outside a parameter's declared bounds,
open and closed ends both, and no library plant parameter is fixed silently
(issue 33, sections 4 and 5).

Each library plant declares its parameters once (mbfmu.plant.parameters). For
every bound of every parameter, a value just inside, the bound itself and a
value just outside are set with fmpy before initialization: the FMU takes the
inside values and a closed end, and refuses an open end and the outside values,
naming the parameter and its interval. The model description's min and max are
the declared ones. The parameters the native FMU keeps fixed are exactly those
declared with a rebuild reason; a parameter the expression tape cannot follow
fails the build instead.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy.fmi1 import FMICallException

from mbfmu.dynamics import ModelBuilder, Revolute, sensors
from mbfmu.fmu.native import NativeUnsupported, native_parameter_report
from mbfmu.fmu.native.pack import parameter_map
from mbfmu.fmu.plantref import parse
from mbfmu.plant.library import list_plants, plant_class
from mbfmu.plant.multibody import MultibodyPlant
from mbfmu.plant.parameters import Declaration, Parameter
from mbfmu.plant.signals import Signal

from .conftest import NATIVE_PLANTS

PLANTS = list_plants()


def _probes(p: Parameter):
    """(value, taken) just inside, at and just outside each finite bound."""
    out = []
    for bound, is_open, side in ((p.min, p.min_open, -1.0), (p.max, p.max_open, 1.0)):
        if bound is not None:
            step = 1e-6 * max(1.0, abs(bound))
            out += [(bound - side * step, True), (bound, not is_open), (bound + side * step, False)]
    return out


def test_every_library_plant_is_exported_natively():
    assert set(PLANTS) == set(NATIVE_PLANTS)  # the plants of the test below


@pytest.mark.parametrize("name", PLANTS)
def test_the_native_fmu_refuses_exactly_the_values_outside_the_declared_bounds(name, loaded):
    declared = plant_class(name).parameter_declaration
    L = loaded(name)
    variables = {v.name: v for v in L.md.modelVariables}
    L.slave.setupExperiment(startTime=0.0)
    L.slave.enterInitializationMode()
    checked = 0
    for p in declared:
        for element in p.element_names():
            v = variables[element]
            assert (None if v.min is None else float(v.min), None if v.max is None else float(v.max)) == \
                (p.min, p.max), element
            start = float(v.start) if v.start is not None else None
            if p.rebuild:  # fixed in the native FMU: no value is taken, the reason is given
                assert v.causality == "calculatedParameter", element
                continue
            for value, taken in _probes(p):
                before = len(L.log)
                try:
                    L.set(element, value)
                    refused = None
                except FMICallException:
                    refused = " ".join(L.log[before:])
                if taken:
                    # a value inside its bounds is taken, or refused by a condition that ties
                    # it to another parameter (a guard of the tape), never by its own bounds
                    assert refused is None or (p.interval() not in refused and element in refused), refused
                else:
                    assert refused is not None, f"{element} = {value!r} was taken outside {p.interval()}"
                    assert element in refused and p.interval() in refused, refused
                if refused is None:
                    L.set(element, start)  # back to the start value for the next probe
                checked += 1
    L.slave.exitInitializationMode()
    assert checked >= 4


@pytest.mark.parametrize("name", PLANTS)
def test_no_library_plant_parameter_is_fixed_silently(name):
    """The native FMU keeps fixed exactly the parameters the plant declares with a
    rebuild reason, and gives that reason (satellite: its 2 counts; flexible_arm: 3)."""
    declared = plant_class(name).parameter_declaration.rebuild_reasons()
    report = native_parameter_report(parse(name))
    assert {k: v for k, v in report.items() if v is not None} == declared
    expected = {"satellite": 2, "flexible_arm": 3}.get(name, 0)
    assert len(declared) == expected


# ------------------------------------------------ a parameter the tape loses
_DECL = Declaration("pendulum", Parameter("mass", "kg", 2.0, "bob mass", "(0, inf)"),
                    Parameter("length", "m", 0.5, "rod length", "(0, inf)"))


class _Pendulum(MultibodyPlant):
    """A pendulum whose build drops the expression of ``length`` (``float()``)."""

    name = "pendulum"
    parameter_declaration = _DECL

    @_DECL.constructor
    def __init__(self, p, lose: bool = True):
        b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
        length = float(p.length) if lose else p.length
        b.add_body("bob", "world", Revolute(axis=(0.0, 1.0, 0.0)), p.mass, (length, 0.0, 0.0),
                   (1e-4, 1e-4, 1e-4))
        super().__init__(b.build(), np.eye(1))
        self.parameters = _DECL.signals(p)
        self.inputs = (Signal("tau", "N.m", kind="input"),)
        self.outputs = (Signal("angle", "rad"),)
        self.sensors = (sensors.StateValue(0),)


@pytest.mark.parametrize("lose", [True, False])
def test_a_parameter_the_tape_cannot_follow_fails_the_native_build(lose):
    def rebuild(values):
        return _Pendulum(**{**{s.name: s.start for s in plant.parameters}, **values}, lose=lose)
    plant = _Pendulum(lose=lose)
    if lose:
        with pytest.raises(NativeUnsupported, match=r"cannot follow parameter 'length' .*rebuild="):
            parameter_map(plant, rebuild)
    else:
        assert parameter_map(plant, rebuild).fixed == {}


def test_a_declared_rebuild_parameter_is_fixed_with_its_reason():
    decl = Declaration("pendulum", Parameter("mass", "kg", 2.0, "bob mass", "(0, inf)"),
                       Parameter("length", "m", 0.5, "rod length", "(0, inf)",
                                 rebuild="the rod is machined to length"))

    class Listed(_Pendulum):
        parameter_declaration = decl

        @decl.constructor
        def __init__(self, p):
            _Pendulum.__init__.__wrapped__(self, p, lose=True)
            self.parameters = decl.signals(p)

    plant = Listed()
    pmap = parameter_map(plant, lambda values: Listed(**{**{s.name: s.start for s in plant.parameters}, **values}))
    assert pmap.fixed == {1: "the rod is machined to length"}
    assert math.isfinite(plant.parameters[1].start)
