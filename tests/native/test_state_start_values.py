"""Start values of the native FMU's states (issue 35): the states are
``initial="exact"`` local variables a host sets before initialization ends,
as a Modelica tool exports states with fixed start values.

Checked against the Python plant:

* every state of ``rigid_arm`` and of ``satellite`` (its hinges deployed,
  latches engaged, all moving) set before initialization, then stepped in
  Co-Simulation (FMI 2 and 3): equal to the plant's own ``advance`` from
  that state to 1e-12 of each state's scale;
* Model Exchange (FMI 2 and 3): after initialization the continuous states
  are the values set (bit for bit), the discrete ones too, and the
  derivatives are the plant's at that state;
* a set state wins over the parameters that give it (``theta1_0``), also
  over one set after it; an unset state follows its parameter;
* a state set after initialization, a NaN start and a latch flag outside its declared [0, 1]
  are refused with one line naming the variable (and the mode), and the
  value is kept;
* the model description declares each state ``initial="exact"`` with the
  plant's initial state as its start, and fmpy validates it (FMI 2 and 3).
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Model, FMU2Slave, calloc, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, free)
from fmpy.fmi3 import FMU3Model, FMU3Slave
from fmpy.validation import validate_fmu

from mbfmu.plant.library import load_plant

from .conftest import NATIVE_PLANTS

REL = 1e-12


def _moving_state(name: str) -> np.ndarray:
    """A state far from the plant's initial one, every velocity non-zero (the
    satellite deployed: hinges at 0 with their latches engaged)."""
    plant = load_plant(name)
    nq, nv = plant.model.nq, plant.model.nv
    x = plant.initial_state()
    rng = np.random.default_rng(35)
    if name == "rigid_arm":
        x[:nq] = [0.4, -0.7, 0.9]
        x[nq:] = rng.normal(size=nv) * 0.5
        return x
    x[plant._hinge_iq] = rng.normal(size=plant.n_hinges) * 0.01  # rad, about the latched position
    x[nq:nq + nv] = rng.normal(size=nv) * 0.02                   # rad/s, m/s
    x[nq + nv:] = 1.0                                            # every latch engaged
    return x


def _inputs(plant) -> np.ndarray:
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = NATIVE_PLANTS[plant.name].get(s.name, u[k])
    return u


def _refs(md, names: list[str]) -> tuple[list[int], list[int]]:
    """(value references, index into ``names`` of each scalar they hold, in order) of
    the variables holding the scalars ``names``: FMI 2 scalars, FMI 3 arrays element by element."""
    index = {n: k for k, n in enumerate(names)}
    vrs, order = [], []
    for v in md.modelVariables:
        elements = [f"{v.name}[{i}]" for i in range(1, v.shape[0] + 1)] if v.shape else [v.name]
        if elements[0] in index:
            vrs.append(v.valueReference)
            order += [index[n] for n in elements]
    assert sorted(order) == list(range(len(names)))
    return vrs, order


def _state_refs(md, plant) -> tuple[list[int], list[int]]:
    """:func:`_refs` of the plant's state variables ``states.*``."""
    return _refs(md, ["states." + s.name for s in plant.states])


class _Instance:
    """An fmpy instance of a native FMU (FMI 2 or 3, CS or ME) with its log and
    the state variables' references."""

    def __init__(self, path, plant, fmi: int, me: bool):
        self.md = read_model_description(str(path))
        self.plant, self.fmi, self.me = plant, fmi, me
        self.log: list[str] = []
        ident = (self.md.modelExchange if me else self.md.coSimulation).modelIdentifier
        cls = {(2, False): FMU2Slave, (2, True): FMU2Model, (3, False): FMU3Slave, (3, True): FMU3Model}[fmi, me]
        self.fmu = cls(guid=self.md.guid, unzipDirectory=extract(str(path)), modelIdentifier=ident,
                       instanceName="x")
        if fmi == 2:
            self._cb = fmi2CallbackFunctions()
            self._cb.logger = fmi2CallbackLoggerTYPE(self._log2)
            self._cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
            self._cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
            self.fmu.instantiate(callbacks=self._cb, loggingOn=True)
        else:
            self.fmu.instantiate(logMessage=lambda env, status, cat, msg: self.log.append(msg.decode()))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.size = {v.valueReference: int(np.prod(v.shape)) if v.shape else 1 for v in self.md.modelVariables}
        self.state_vrs, self.order = _state_refs(self.md, plant)

    def _log2(self, env, instance, status, category, message):
        self.log.append(message.decode())

    def set(self, vrs, values) -> None:
        (self.fmu.setReal if self.fmi == 2 else self.fmu.setFloat64)(list(vrs), list(map(float, values)))

    def get(self, vrs) -> np.ndarray:
        if self.fmi == 2:
            return np.array(self.fmu.getReal(list(vrs)))
        return np.array(self.fmu.getFloat64(list(vrs), sum(self.size[vr] for vr in vrs)))

    def set_inputs(self, u: np.ndarray) -> None:
        vrs, order = _refs(self.md, [s.name for s in self.plant.inputs])
        self.set(vrs, np.asarray(u)[order])

    def set_states(self, x: np.ndarray) -> None:
        self.set(self.state_vrs, x[self.order])

    def states(self) -> np.ndarray:
        x = np.empty(len(self.order))
        x[self.order] = self.get(self.state_vrs)
        return x

    def initialize(self, inputs: np.ndarray | None = None) -> None:
        f = self.fmu
        if self.fmi == 2:
            f.setupExperiment(startTime=0.0)
            f.enterInitializationMode()
        else:
            f.enterInitializationMode(startTime=0.0)
        if inputs is not None:
            self.set_inputs(inputs)
        f.exitInitializationMode()

    def step(self, t: float, h: float) -> None:
        self.fmu.doStep(t, h)

    def close(self) -> None:
        self.fmu.freeInstance()


@pytest.fixture
def instance(native_fmu, native_fmu3):
    """``instance(name, fmi, me)``: an instantiated FMU of library plant ``name``, freed after the test."""
    made = []

    def get(name: str, fmi: int = 2, me: bool = False) -> _Instance:
        made.append(_Instance((native_fmu if fmi == 2 else native_fmu3)(name), load_plant(name), fmi, me))
        return made[-1]
    yield get
    for inst in made:
        inst.close()


def _messages(inst: _Instance) -> str:
    return "\n".join(inst.log)


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", ["rigid_arm", "satellite"])
def test_set_states_then_steps_equal_the_python_plants_advance(instance, name, fmi):
    inst = instance(name, fmi)
    plant = inst.plant
    x0, u = _moving_state(name), _inputs(plant)
    inst.set_states(x0)
    inst.initialize(u)
    np.testing.assert_array_equal(inst.states(), x0)
    h, n = plant.default_step, 6
    X, Y = [x0], [inst.states()]
    for k in range(n):
        X.append(plant.advance(k * h, X[-1], u, h))
        inst.step(k * h, h)
        Y.append(inst.states())
    X, Y = np.array(X), np.array(Y)
    scale = np.maximum(np.abs(X).max(axis=0), 1e-300)
    assert (np.abs(Y - X) / scale).max() <= REL, np.abs(Y - X).max()
    assert np.abs(X[-1] - X[0]).max() > 1e-3  # it moved
    if name == "satellite":  # the latches stayed engaged (a free hinge would swing back towards its stop)
        nz = plant.model.nq + plant.model.nv
        assert (Y[:, nz:] == 1.0).all()


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", ["rigid_arm", "satellite"])
def test_model_exchange_starts_from_the_set_states(instance, name, fmi):
    """After initialization the continuous states are the values set (bit for bit), the
    discrete states too, and the derivatives are the Python plant's there."""
    inst = instance(name, fmi, me=True)
    plant = inst.plant
    x0, u = _moving_state(name), _inputs(plant)
    inst.set_states(x0)
    inst.initialize(u)
    nxc = int(inst.md.numberOfContinuousStates)
    x = np.zeros(nxc)
    dx = np.zeros(nxc)
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))  # noqa: E731
    inst.fmu.getContinuousStates(ptr(x), nxc)
    np.testing.assert_array_equal(x, x0[:nxc])
    np.testing.assert_array_equal(inst.states(), x0)  # discrete states (latch flags) included
    (inst.fmu.getDerivatives if fmi == 2 else inst.fmu.getContinuousStateDerivatives)(ptr(dx), nxc)
    expected = plant.derivatives(0.0, x0, u)[:nxc]
    np.testing.assert_allclose(dx, expected, rtol=0, atol=REL * np.abs(expected).max())


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_set_state_wins_over_the_parameters_an_unset_one_follows_them(instance, fmi):
    """rigid_arm's start angles are parameters (theta1_0..theta3_0). FMI 2: q[1] set,
    then theta1_0 and theta2_0 changed in initialization mode and theta1_0 again
    before the first step: q[1] keeps the set value, q[2] follows theta2_0, q[3]
    stays at theta3_0. FMI 3 sets states.q as one array: all three keep the set
    values. The run then equals the Python plant's from that state."""
    inst = instance("rigid_arm", fmi)
    plant = inst.plant
    if fmi == 2:
        inst.set([inst.vr["states.q[1]"]], [0.7])
        expected = load_plant("rigid_arm", theta2_0=-0.4).initial_state()
        expected[0] = 0.7
        inst.fmu.setupExperiment(startTime=0.0)
        inst.fmu.enterInitializationMode()
    else:
        inst.set([inst.vr["states.q"]], [0.7, 0.1, 0.2])
        expected = np.r_[0.7, 0.1, 0.2, plant.initial_state()[3:]]
        inst.fmu.enterInitializationMode(startTime=0.0)
    inst.set([inst.vr["theta1_0"], inst.vr["theta2_0"]], [0.2, -0.4])
    np.testing.assert_array_equal(inst.states(), expected)
    inst.fmu.exitInitializationMode()
    inst.set([inst.vr["theta1_0"]], [0.3])  # tunable: before the first step the parameters re-pack the state
    np.testing.assert_array_equal(inst.states(), expected)
    u = _inputs(plant)
    inst.set_inputs(u)
    inst.step(0.0, 0.01)
    ref = load_plant("rigid_arm", theta1_0=0.3, theta2_0=-0.4).advance(0.0, expected, u, 0.01)
    np.testing.assert_allclose(inst.states(), ref, rtol=0, atol=REL * np.abs(ref).max())


@pytest.mark.parametrize("fmi", [2, 3])
def test_without_set_states_the_parameters_give_the_state(instance, fmi):
    """The start values are the plant's initial state only while nothing sets them:
    a changed theta2_0 moves q[2] (the parameter's own meaning, unchanged)."""
    inst = instance("rigid_arm", fmi)
    if fmi == 2:
        inst.fmu.setupExperiment(startTime=0.0)
        inst.fmu.enterInitializationMode()
    else:
        inst.fmu.enterInitializationMode(startTime=0.0)
    inst.set([inst.vr["theta2_0"]], [-0.4])
    np.testing.assert_array_equal(inst.states(), load_plant("rigid_arm", theta2_0=-0.4).initial_state())


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_state_set_after_initialization_is_refused_by_name(instance, fmi):
    inst = instance("rigid_arm", fmi)
    inst.initialize()
    vr = inst.state_vrs[0]
    before = inst.get([vr])
    with pytest.raises(FMICallException):
        inst.set([vr], np.full(len(before), 1.25))
    last = inst.log[-1]
    assert "cannot be set in step mode" in last and "states.q[1]" in last and "\n" not in last, last
    np.testing.assert_array_equal(inst.get([vr]), before)


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_state_set_in_continuous_time_mode_is_refused_by_name(instance, fmi):
    inst = instance("rigid_arm", fmi, me=True)
    inst.initialize()
    if fmi == 2:
        inst.fmu.newDiscreteStates()
    else:
        inst.fmu.updateDiscreteStates()
    inst.fmu.enterContinuousTimeMode()
    with pytest.raises(FMICallException):
        inst.set([inst.vr["states.v[2]" if fmi == 2 else "states.v"]], [0.5] if fmi == 2 else [0.5, 0.5, 0.5])
    assert "cannot be set in continuous-time mode" in inst.log[-1] and "states.v" in inst.log[-1], inst.log[-1]


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_nan_start_is_refused_and_the_state_keeps_its_value(instance, fmi):
    inst = instance("rigid_arm", fmi)
    plant = inst.plant
    x = plant.initial_state()
    x[4] = math.nan  # states.v[2]
    with pytest.raises(FMICallException):
        inst.set_states(x)
    assert "refused: start value of state states.v[2] = nan is not finite" in _messages(inst)
    inst.initialize()
    expected = x.copy()  # the other values of the call are taken (each scalar on its own, as inputs are)
    expected[4] = plant.initial_state()[4]
    np.testing.assert_array_equal(inst.states(), expected)


@pytest.mark.parametrize("fmi", [2, 3])
def test_a_latch_flag_outside_its_declared_bounds_is_refused(instance, fmi):
    inst = instance("satellite", fmi)
    plant = inst.plant
    nz = plant.model.nq + plant.model.nv
    x = _moving_state("satellite")
    x[nz + 2] = 2.0
    with pytest.raises(FMICallException):
        inst.set_states(x)
    assert "refused: start value of state states.latched[3] = 2 is outside [0, 1]" \
        in _messages(inst), _messages(inst)
    inst.initialize()
    assert inst.states()[nz + 2] == 0.0  # free, as it starts


@pytest.mark.parametrize("fmi", [2, 3])
@pytest.mark.parametrize("name", ["rigid_arm", "satellite"])
def test_the_description_declares_the_states_exact_start_values(name, fmi, native_fmu, native_fmu3):
    path = (native_fmu if fmi == 2 else native_fmu3)(name)
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    plant = load_plant(name)
    vrs, order = _state_refs(md, plant)
    states = [v for v in md.modelVariables if v.name.startswith("states.")]
    assert all((v.causality, v.initial) == ("local", "exact") for v in states)
    start = np.array([float(s) for v in states for s in str(v.start).split()])
    np.testing.assert_array_equal(start, plant.initial_state()[order])
    initial = {u.variable.name for u in md.initialUnknowns}
    assert not initial & {v.name for v in states}


@pytest.mark.parametrize("interface", ["cs", "me"])
def test_the_master_starts_the_fmu_at_the_set_states(native_fmu, interface):
    """``FmuUnit.set("states.<name>", ...)`` (what ``values=`` and ``simulate_fmu_loop(x0=...)`` do)
    sets the start values before initialization: the first sample is the state set, bit for bit,
    and the run follows the Python plant's advance from it (Co-Simulation to 1e-12 of scale;
    Model Exchange with the master's own integrator at rtol 1e-10, to its error)."""
    from mbfmu.cosim import FmuUnit, System, simulate
    from mbfmu.cosim.master.options import SimulationOptions
    plant = load_plant("rigid_arm")
    x0 = _moving_state("rigid_arm")
    unit = FmuUnit(native_fmu("rigid_arm"), name="p", interface=interface,
                   **({"rtol": 1e-10} if interface == "me" else {}))
    names = ["p.states." + s.name for s in plant.states]
    for name, value in zip(names, x0):
        unit.set(name[2:], value)
    h, n = 0.01, 20
    res = simulate(System([unit], []), n * h, h, options=SimulationOptions(progress=False), record=names)
    X = np.column_stack([res[name] for name in names])
    ref = [x0]
    for k in range(n):
        ref.append(plant.advance(k * h, ref[-1], plant.default_inputs(), h))
    ref = np.array(ref)
    np.testing.assert_array_equal(X[0], x0)
    tol = REL if interface == "cs" else 1e-7
    np.testing.assert_allclose(X, ref, rtol=0, atol=tol * np.abs(ref).max())
    assert np.abs(ref[-1] - ref[0]).max() > 1e-2  # it moved
