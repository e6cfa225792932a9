"""Model Exchange of the native FMU: which states are continuous, the event
indicators, and the ``ModelExchange`` part of the model description.

The native binary serves FMI 2.0 Co-Simulation and Model Exchange at once
(``csrc/model_exchange.h`` describes the runtime side). For Model Exchange:

* **Continuous states** are ``[q; v]`` (``[q; p]`` in canonical variables,
  the flexible system's public ``[q; v]``) and the plug-in elements'
  continuous states (the crash occupant's HIC recorder's integral
  ``hic_integral``). The plug-in elements' discrete states (a satellite's
  latch flags, the HIC history and its running maximum) are *discrete* states: they
  change only at events. Each continuous state ``states.<name>`` has a derivative variable
  ``der(states.<name>)`` from the same right-hand side that the
  co-simulation step integrates.
* **Quaternions** are renormalized by projection: every evaluation uses the
  host's states with each quaternion normalized, and when the host's
  quaternion has drifted from unit norm by more than 1e-9,
  ``fmi2CompletedIntegratorStep`` asks for a step event at which
  ``fmi2NewDiscreteStates`` hands back the projected states
  (``valuesOfContinuousStatesChanged``).
* **State events** (event indicators, :func:`event_indicators`): the plug-in
  elements' own indicators (a free hinge latch's travel past its stop: the
  latch engages at the event), each contact's penetration, each cable's stretch and each joint coordinate's
  distance to a range limit (the switches of those force elements, kinks
  of the right-hand side: the host's integrator restarts there).
* **Time events**: the plug-in elements' sampling grids (their discrete
  states sampled there, as the co-simulation step samples them: the HIC
  recorder's history) and a frame element's kinks in time (``frame_next_kink``:
  the start and end of the crash sled's built-in pulse).

A plant whose discontinuities have no event form is refused for Model
Exchange by :func:`check_model_exchange`, naming the piece.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence
from xml.etree.ElementTree import Element, SubElement

from ...dynamics.joints import FREE, SPHERICAL
from ...errors import ModelError
from ..units import parse_unit
from .pack import NativeUnsupported

# kinds of event indicators (csrc/model_exchange.h)
CONTACT, CABLE, LIMIT, ELEMENT = 1, 2, 3, 4
_NO_LIMIT = 1e299
DERIVATIVE_PREFIX = "der("
INTERFACES = ("cs", "me")


class ModelExchangeUnsupported(NativeUnsupported):
    """The plant has a discontinuity that Model Exchange events cannot express."""


@dataclass(frozen=True)
class Indicator:
    """One event indicator: ``kind`` (CONTACT, CABLE, LIMIT, ELEMENT), the
    element's ``index`` (contact, cable, velocity coordinate for a limit, or
    plug-in element), the configuration index ``qindex`` and ``side``
    (-1 lower, +1 upper limit) of a limit (for a plug-in element ``qindex`` is
    which of its indicators), and what it is."""

    kind: int
    index: int
    qindex: int
    side: int
    description: str

    def row(self) -> tuple[int, int, int, int]:
        return (self.kind, self.index, self.qindex, self.side)


def _tree(plant):
    """The rigid model whose elements the runtime evaluates indicators on, or
    None for a flexible plant (its elements are smooth: no indicators)."""
    if getattr(plant, "flexible_system", None) is not None:
        return None
    return plant.model


def continuous_states(plant) -> int:
    """Number of continuous states (the prefix of the plant state)."""
    if getattr(plant, "flexible_system", None) is not None:
        return plant.flexible_system.nq + plant.flexible_system.nv
    elements = sum(len(e.states) for e in getattr(plant, "native_elements", ()))  # after [q; v], continuous
    return plant.model.nq + plant.model.nv + elements


def discrete_outputs(plant) -> list[int]:
    """The 0-based output (sensor) indices that read a discrete state (such as
    the HIC recorder's running maximum): piecewise constant in time, changed
    only at events, so depending on no known (input, continuous state) in
    continuous time (their directional derivatives are zero)."""
    from ...dynamics.sensors import StateValue
    nxc = continuous_states(plant)
    return [k for k, s in enumerate(getattr(plant, "sensors", None) or ())
            if isinstance(s, StateValue) and s.index >= nxc]


def event_indicators(plant) -> list[Indicator]:
    """The event indicators of ``plant``, in the runtime's order."""
    out: list[Indicator] = []
    # the plug-in elements' own indicators (element.h's event; a satellite's hinge latches),
    # element after element, described by the element
    out += [Indicator(ELEMENT, e, k, 0, what)
            for e, el in enumerate(getattr(plant, "native_elements", ())) for k, what in enumerate(el.events)]
    model = _tree(plant)
    if model is None:
        return out
    out += [Indicator(CONTACT, k, -1, 0, f"contact {c.name or k + 1}: penetration (m)")
            for k, c in enumerate(model.contacts)]
    out += [Indicator(CABLE, k, -1, 0, f"cable {c.name or k + 1}: stretch (m), slack below 0")
            for k, c in enumerate(model.cables)]
    pk = model.packed
    rows = pk["dof_force"]
    iq = iv = 0
    for i in range(1, model.nbodies):
        nqi, nvi, jt = int(pk["nqi"][i]), int(pk["nvi"][i]), int(pk["jtype"][i])
        if nvi > 0 and jt not in (FREE, SPHERICAL):
            for k in range(nvi):
                lo, hi = rows[iv + k, 3], rows[iv + k, 4]
                name = model.v_names[iv + k]
                if abs(lo) < _NO_LIMIT:
                    out.append(Indicator(LIMIT, iv + k, iq + k, -1, f"{name}: distance to its lower limit"))
                if abs(hi) < _NO_LIMIT:
                    out.append(Indicator(LIMIT, iv + k, iq + k, 1, f"{name}: distance to its upper limit"))
        iq += nqi
        iv += nvi
    return out


def check_model_exchange(plant) -> None:
    """Raise ModelExchangeUnsupported naming a discontinuity of ``plant`` that
    has no event form. The kernel elements the native runtime packs (joint
    springs, dampers and range limits, springs, contacts with regularized
    friction, cables, servos and smoothed friction, plug-in elements such as
    hinge latches, a frame element among them) are continuous or switch at an event
    indicator or a time event; a plant that declares discontinuities of its
    own (``discontinuities``, names of pieces of its dynamics that jump) is
    refused by name."""
    pieces: Sequence[str] = tuple(getattr(plant, "discontinuities", ()) or ())
    if pieces:
        raise ModelExchangeUnsupported(
            f"plant {plant.name!r}: refused for Model Exchange: {', '.join(pieces)} "
            f"{'jumps' if len(pieces) == 1 else 'jump'} in a way no event indicator or time event "
            "expresses; export it for co-simulation only (--interface cs)")


def data_fields(plant, c_array) -> tuple[str, dict]:
    """The C text of the indicator table and the ``MBN_DATA`` fields
    ``nxc``, ``nz``, ``ztab``."""
    rows = [v for ind in event_indicators(plant) for v in ind.row()]
    return c_array("int", "ZTAB", rows), dict(nxc=continuous_states(plant), nz=len(rows) // 4, ztab="ZTAB")


# ---------------------------------------------------------------- model description
ME_FLAGS = {
    "needsExecutionTool": "false",
    "completedIntegratorStepNotNeeded": "false",
    "canBeInstantiatedOnlyOncePerProcess": "false",
    "canNotUseMemoryManagementFunctions": "true",
    "canGetAndSetFMUstate": "true",
    "canSerializeFMUstate": "true",
    "providesDirectionalDerivative": "false",
}


def add_model_exchange(root: Element, plant, state_prefix: str) -> list[str]:
    """Add Model Exchange to a native FMU's FMI 2.0 model description in place.

    ``<ModelExchange>`` (before ``<CoSimulation>``), ``numberOfEventIndicators``,
    discrete variability for the discrete states, a derivative variable after
    the states for each continuous state, and the ``ModelStructure``:
    ``Outputs`` depending on the continuous states and their feedthrough
    inputs (an output reading a discrete state, :func:`discrete_outputs`,
    depending on none: piecewise constant, it is no continuous-time unknown
    of the directional derivatives), ``Derivatives`` on the continuous states and the inputs, and
    ``InitialUnknowns`` (outputs, continuous states not declared
    ``initial="exact"``, derivatives) depending on the parameters, the inputs
    and the states' start values (the states :func:`.declare.declare_states`
    made settable: FMI 2.0's knowns of initialization are the inputs and the
    variables with ``initial="exact"``).

    Returns the names of the derivative variables (value-reference order).
    """
    cs = root.find("CoSimulation")
    ident = cs.get("modelIdentifier")
    me = Element("ModelExchange", modelIdentifier=ident, **ME_FLAGS)
    root.insert(list(root).index(cs), me)
    indicators = event_indicators(plant)
    root.set("numberOfEventIndicators", str(len(indicators)))

    variables = root.find("ModelVariables")
    svs = variables.findall("ScalarVariable")
    states = [sv for sv in svs if sv.get("name", "").startswith(state_prefix)]
    if len(states) != len(plant.states):
        raise ModelError(f"plant {plant.name!r}: {len(states)} state variables for {len(plant.states)} states")
    nxc = continuous_states(plant)
    index = {sv.get("name"): k + 1 for k, sv in enumerate(svs)}
    next_vr = max(int(sv.get("valueReference")) for sv in svs) + 1
    der_names = []
    for k, sv in enumerate(states):
        if k >= nxc:
            sv.set("variability", "discrete")
            continue
        name = f"{DERIVATIVE_PREFIX}{sv.get('name')})"
        unit = sv.find("Real").get("unit")
        d = SubElement(variables, "ScalarVariable", name=name, valueReference=str(next_vr + k),
                       description=f"time derivative of {sv.get('name')}", causality="local",
                       variability="continuous", initial="calculated")
        attrs = {"derivative": str(index[sv.get("name")])}
        derived = _per_second(unit)
        if derived:
            attrs["unit"] = derived
        SubElement(d, "Real", attrs)
        der_names.append(name)
    svs = variables.findall("ScalarVariable")
    index = {sv.get("name"): k + 1 for k, sv in enumerate(svs)}
    _declare_units(root, [sv.find("Real").get("unit") for sv in svs])

    inputs = [index[sv.get("name")] for sv in svs if sv.get("causality") == "input"]
    params = [index[sv.get("name")] for sv in svs if sv.get("causality") == "parameter"]
    xs = [index[sv.get("name")] for sv in states[:nxc]]
    starts = [index[sv.get("name")] for sv in states if sv.get("initial") == "exact"]
    structure = root.find("ModelStructure")
    old = structure.find("Outputs")
    feedthrough = {u.get("index"): u.get("dependencies", "") for u in (old.findall("Unknown") if old is not None
                                                                       else [])}
    for child in list(structure):
        structure.remove(child)

    def deps(values) -> str:
        return " ".join(map(str, sorted(set(values))))

    outputs = [index[sv.get("name")] for sv in svs if sv.get("causality") == "output"]
    # the k-th output by value reference is sensor k of the runtime
    by_vr = sorted((sv for sv in svs if sv.get("causality") == "output"), key=lambda sv: int(sv.get("valueReference")))
    discrete = {index[by_vr[k].get("name")] for k in discrete_outputs(plant) if k < len(by_vr)}
    if outputs:
        node = SubElement(structure, "Outputs")
        for idx in outputs:
            feed = [int(v) for v in feedthrough.get(str(idx), "").split()]
            SubElement(node, "Unknown", index=str(idx), dependencies="" if idx in discrete else deps(xs + feed))
    if der_names:
        node = SubElement(structure, "Derivatives")
        for name in der_names:
            SubElement(node, "Unknown", index=str(index[name]), dependencies=deps(xs + inputs))
    initial = sorted(outputs + [i for i in xs if i not in starts] + [index[n] for n in der_names])
    node = SubElement(structure, "InitialUnknowns")
    for idx in initial:
        SubElement(node, "Unknown", index=str(idx), dependencies=deps(params + inputs + starts))
    return der_names


def _declare_units(root: Element, units) -> None:
    """Add the units used but not yet in ``UnitDefinitions``."""
    ud = root.find("UnitDefinitions")
    if ud is None:
        ud = Element("UnitDefinitions")
        root.insert(list(root).index(root.find("CoSimulation")) + 1, ud)
    known = {u.get("name") for u in ud.findall("Unit")}
    for name in units:
        if name and name not in known:
            u = SubElement(ud, "Unit", name=name)
            attrs = parse_unit(name).base_unit_attributes()
            if attrs is not None:
                SubElement(u, "BaseUnit", attrs)
            known.add(name)


def _per_second(unit: str | None) -> str | None:
    """The unit of a time derivative (``rad`` -> ``rad/s``, ``m/s`` -> ``m/s2``,
    ``N.m.s`` -> ``N.m``); None for a variable without a unit."""
    if not unit:
        return None
    if unit.endswith("/s"):
        return unit + "2"
    if unit.endswith(".s"):
        return unit[:-2]
    return unit + "/s"
