"""The native FMU's honest declaration of its parameters (FMI 2).

The model description starts as the pythonfmu FMU's, where every parameter
is ``tunable``. The native runtime applies a parameter during the run as the
pythonfmu FMU does (the model re-packed, the state kept), so the parameters it
takes stay tunable; a parameter it cannot take (its reason in
:attr:`.pack.ParameterMap.fixed`) is not settable there, so it becomes a
``calculatedParameter`` (``variability="fixed"``, listed among the
``InitialUnknowns``), and a count (a number of panels, modes, segments:
:func:`.build.count_parameters`) is typed ``Integer``, read with
``fmi2GetInteger`` (``csrc/fmi2.c``).

The states (``states.*``, local) are start values a host may set
(:func:`declare_states`): ``initial="exact"`` with the plant's initial state
at the build's parameters as ``start``, as a Modelica tool exports states
with fixed start values. The runtime takes them in the instantiated state and
in initialization mode only (``csrc/component.h``): a set state wins over the
parameters that would give it (an initial rate, say), also over one set
later; a state not set starts where the parameters put it. (The pythonfmu
FMU's states stay ``initial="calculated"``: read, never set.)

The FMI 3 description is written from this FMI 2 one (:mod:`.fmi3`), so
both declare the same parameters tunable and the same ones
``calculatedParameter``; there the counts are ``UInt64``.
"""
from __future__ import annotations

from typing import Mapping
from xml.etree.ElementTree import Element, SubElement

import numpy as np

from ...errors import ModelError

_REAL_ONLY = ("unit", "displayUnit", "relativeQuantity", "nominal", "unbounded", "derivative", "reinit")


def declare_parameters(root: Element, plant, fixed: Mapping[int, str], counts: set[str]) -> None:
    """Rewrite the parameters of the model description ``root`` in place (module docstring).

    Parameters
    ----------
    root : Element
        The FMI 2.0 model description.
    plant : Plant
    fixed : mapping
        Parameter index -> why the native runtime cannot take it.
    counts : set of str
        Count parameters declared ``Integer``.
    """
    names = [s.name for s in plant.parameters]
    calculated = []
    for index, sv in enumerate(root.find("ModelVariables"), start=1):
        name = sv.get("name")
        if sv.get("causality") != "parameter" or name not in names or names.index(name) not in fixed:
            continue
        sv.set("causality", "calculatedParameter")
        sv.set("variability", "fixed")
        sv.set("initial", "calculated")
        real = sv.find("Real")
        real.attrib.pop("start", None)
        if name in counts:
            sv.remove(real)
            integer = SubElement(sv, "Integer")
            for key, val in real.attrib.items():
                if key not in _REAL_ONLY:
                    integer.set(key, str(int(float(val))) if key in ("min", "max") else val)
        calculated.append(index)
    if not calculated:
        return
    structure = root.find("ModelStructure")
    init = structure.find("InitialUnknowns")
    if init is None:
        init = SubElement(structure, "InitialUnknowns")
    gone = {str(i) for i in calculated}
    unknowns = list(init)
    for u in unknowns:
        deps = u.get("dependencies")
        if deps:  # a calculated parameter is not a dependency (FMI 2.0, section 2.2.8)
            u.set("dependencies", " ".join(d for d in deps.split() if d not in gone))
        init.remove(u)
    for i in calculated:
        unknowns.append(Element("Unknown", index=str(i), dependencies=""))
    for u in sorted(unknowns, key=lambda e: int(e.get("index"))):
        init.append(u)


def declare_states(root: Element, plant, state_prefix: str) -> None:
    """Declare the state variables of the model description ``root`` settable start values, in place.

    Each ``<state_prefix><name>`` variable becomes ``initial="exact"`` with
    ``start`` the plant's initial state at its current parameters
    (``plant.initial_state()``, in the states' own units), which is what the
    native runtime starts from when no start value is set.

    Parameters
    ----------
    root : Element
        The FMI 2.0 model description (states ``causality="local"``).
    plant : Plant
        The plant the description is of.
    state_prefix : str
        The prefix of the state variables' names (``"states."``).

    Raises
    ------
    ModelError
        The description's state variables are not the plant's states, or
        the initial state is not finite.
    """
    x0 = np.asarray(plant.initial_state(), float)
    by_name = {sv.get("name"): sv for sv in root.find("ModelVariables").findall("ScalarVariable")}
    names = [state_prefix + s.name for s in plant.states]
    missing = [n for n in names if n not in by_name]
    if missing or x0.shape != (len(names),):
        raise ModelError(f"plant {plant.name!r}: the model description has no state variable {missing[0]!r}"
                         if missing else f"plant {plant.name!r}: initial state of {x0.size} values for "
                         f"{len(names)} states")
    if not np.isfinite(x0).all():
        bad = names[int(np.flatnonzero(~np.isfinite(x0))[0])]
        raise ModelError(f"plant {plant.name!r}: the initial value of {bad} is not finite")
    for name, value in zip(names, x0):
        sv = by_name[name]
        sv.set("initial", "exact")
        sv.find("Real").set("start", repr(float(value)))
