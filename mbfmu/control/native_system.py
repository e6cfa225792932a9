"""An interconnection of controllers and blocks as one native controller FMU.

:func:`interconnection_spec` turns a :class:`~mbfmu.cosim.System` whose units
are all evaluated in C by the compiled co-simulation loop (the blocks of
:mod:`mbfmu.cosim.blocks`, and :class:`~mbfmu.cosim.ControlUnit` s holding a
python-control ``StateSpace`` or ``TransferFunction``, a PID of
:func:`mbfmu.control.pid` or a scheduled controller) into the
:class:`~mbfmu.fmu.native.controller.ControllerSpec` of one FMU (kind
``"net"``): each unit described as its own export describes it
(:func:`~mbfmu.control.native_export.native_spec`, the blocks'
:func:`~mbfmu.cosim.master.c_units.block_op`), evaluated by the same
``controller.c`` the compiled loop uses for those units.

The FMU's inputs are the units' unconnected inputs (``unit.input``, starting
at the unit's value), its outputs the units' unconnected outputs
(``unit.output``), its states ``states.<unit>.<state>`` and its tunable
parameters ``<unit>.<parameter>``. It computes what the master computes with
the same units in a system: at each communication point the units' outputs
in an order where each unit's direct-feedthrough inputs are already
computed, then every unit steps with its inputs held over the step (the
master holds each unit's inputs over a macro step, extrapolation 0).
"""
from __future__ import annotations

from typing import Any, Sequence


from ..cosim.master import c_units
from ..cosim.system import System
from ..cosim.units import ControlUnit
from ..errors import InputError
from ..fmu.builder import identifier
from ..fmu.native.controller import ControllerSpec, Signal
from ..fmu.slave import STATE_PREFIX
from .native_export import native_spec


def _unit_spec(u: Any, step: float | None) -> ControllerSpec:
    """The spec of one unit of the interconnection, its inputs and outputs in the unit's order."""
    ins = [Signal(n) for n in u.inputs]
    outs = [Signal(n) for n in u.outputs]
    if isinstance(u, c_units.BLOCKS):
        op, k, k2 = c_units.block_op(u)
        return ControllerSpec(name=identifier(u.name), kind="block", dt=0.0, inputs=ins, outputs=outs, states=[],
                              parameters=[], op=op, k=k, k2=k2, feedthrough=_block_feedthrough(op, k, len(ins),
                                                                                               len(outs)))
    sys = u.sys
    discrete = sys.dt is not None and not sys.isctime(strict=True)
    spec = native_spec(sys, None if discrete else step, identifier(u.name), x0=u.x0)
    spec.inputs, spec.outputs = ins, outs  # the unit's names of the same signals, in the same order
    return spec


def _block_feedthrough(op: int, k: Any, nu: int, ny: int) -> dict[int, list[int]]:
    """Output -> the inputs of a block it is computed from (``controller.h``'s MBC_B_* operations)."""
    if op == c_units.B_MATRIX:
        return {i: [j for j in range(nu) if k[i * nu + j] != 0.0] for i in range(ny)}
    if op == c_units.B_SUM:
        return {i: [g * ny + i for g in range(nu // ny)] for i in range(ny)}
    return {i: [i] for i in range(ny)}  # element-wise: gain, offset, limits, Mux and Demux copies


def _order(names: list[str], specs: dict[str, ControllerSpec], feeds: dict[str, set[str]]) -> list[str]:
    """The units in an order where each unit with direct feedthrough comes after the units feeding it."""
    through = {n for n in names if any(specs[n].feedthrough.get(i) for i in range(len(specs[n].outputs)))}
    order: list[str] = []
    left = list(names)
    while left:
        ready = [n for n in left if n not in through or not (feeds[n] - set(order)) - {n}]
        if not ready:
            raise InputError(f"the interconnection has an algebraic loop through units {sorted(left)}: a native "
                             "controller FMU needs a unit without direct feedthrough in every loop")
        order += ready
        left = [n for n in left if n not in ready]
    return order


def _sample_time(order: list[str], specs: dict[str, ControllerSpec], step: float | None) -> tuple[float, float]:
    """``(dt, h0)`` of the net: its discrete units' longest sample time, or 0 and ``step``."""
    dts = {n: specs[n].dt for n in order if specs[n].dt > 0}
    continuous = [n for n in order if specs[n].kind == "lti" and specs[n].dt == 0 and specs[n].states]
    if dts and continuous:
        raise InputError(f"units {continuous[0]!r} (continuous) and {next(iter(dts))!r} (discrete, dt = "
                         f"{next(iter(dts.values()))} s): one native controller FMU holds discrete or continuous "
                         "controllers, not both")
    if dts:
        dt = max(dts.values())
        for n, d in dts.items():
            k = round(dt / d)
            if abs(dt - k * d) > 1e-12 * dt:
                raise InputError(f"unit {n!r}: its sample time {d} s does not divide {dt} s (unit "
                                 f"{max(dts, key=dts.get)!r}): the FMU's step must be whole samples of each")
        return dt, 0.0
    if continuous and step is None:
        raise InputError(f"unit {continuous[0]!r} is continuous-time: give `step` [s], the FMU's default "
                         "communication step")
    return 0.0, float(step) if continuous else 0.0


def interconnection_spec(system: System, name: str | None = None, step: float | None = None,
                         units: dict[str, str] | None = None) -> ControllerSpec:
    """The native controller spec of an interconnection of controllers and blocks.

    Parameters
    ----------
    system : System
        Blocks and ControlUnits (LTI, PID, scheduled) and their connections.
    name : str, optional
        Model name (default ``"controller"``).
    step : float, optional
        Default communication step, s: needed when a unit is continuous.
    units : dict, optional
        Physical unit symbols of variables ``"unit.var"`` (default: the
        system's own, carried over its connections).

    Returns
    -------
    ControllerSpec
        Kind ``"net"``, for :func:`mbfmu.fmu.native.controller.build_controller_fmu`.

    Raises
    ------
    InputError
        A unit that C does not evaluate (a FunctionUnit, a general
        NonlinearIOSystem, an FMU), a connection from or to an unknown
        variable, an algebraic loop, mixed continuous and discrete units,
        no output.
    """
    us = system.units
    if getattr(system, "_duplicates", None):
        raise InputError(f"unit names used twice: {sorted(set(system._duplicates))}")
    if not us:
        raise InputError("the system has no units to export")
    for u in us.values():
        if not (type(u) in c_units.BLOCKS or (type(u) is ControlUnit and c_units.evaluated_in_c(u))):
            raise InputError(f"unit {u.name!r} ({type(u).__name__}): a native controller FMU holds blocks and "
                             "ControlUnits of python-control LTI systems, PIDs and scheduled controllers")
    source: dict[tuple[str, str], tuple[str, str]] = {}
    feeds: dict[str, set[str]] = {n: set() for n in us}
    for c in system.connections:
        if c.src_unit not in us or c.src_var not in us[c.src_unit].outputs:
            raise InputError(f"connection {c.src} -> {c.dst}: {c.src} is not an output of the system's units")
        if c.dst_unit not in us or c.dst_var not in us[c.dst_unit].inputs:
            raise InputError(f"connection {c.src} -> {c.dst}: {c.dst} is not an input of the system's units")
        if (c.dst_unit, c.dst_var) in source:
            raise InputError(f"input {c.dst} is connected twice")
        source[(c.dst_unit, c.dst_var)] = (c.src_unit, c.src_var)
        feeds[c.dst_unit].add(c.src_unit)
    specs = {n: _unit_spec(u, step) for n, u in us.items()}
    order = _order(list(us), specs, feeds)
    dt, h0 = _sample_time(order, specs, step)
    symbols = dict(system.unit_symbols())
    symbols.update(units or {})
    unit_of = lambda full: symbols.get(full) or "1"  # noqa: E731
    used = {src for src in source.values()}
    inputs = [(n, v) for n in order for v in us[n].inputs if (n, v) not in source]
    outputs = [(n, v) for n in order for v in us[n].outputs if (n, v) not in used]
    if not outputs:
        raise InputError("every output of the system is connected: the FMU would have no output")
    nu = len(inputs)
    input_index = {iv: j for j, iv in enumerate(inputs)}
    output_index: dict[tuple[str, str], int] = {}
    for n in order:
        for v in us[n].outputs:
            output_index[(n, v)] = nu + len(output_index)
    src = [output_index[source[(n, v)]] if (n, v) in source else input_index[(n, v)]
           for n in order for v in us[n].inputs]
    su0 = [0.0] * len(src)  # every unit input is connected or a net input: no constants
    depends = _dependencies(order, specs, src, nu)
    out = [output_index[iv] for iv in outputs]
    states = [Signal(f"{STATE_PREFIX}{n}.{s.name[len(STATE_PREFIX):]}", s.unit, s.start, s.description)
              for n in order for s in specs[n].states]
    parameters = [Signal(f"{n}.{p.name}", p.unit, p.start, p.description) for n in order for p in specs[n].parameters]
    kinds = ", ".join(f"{n} ({type(us[n]).__name__})" for n in order)
    return ControllerSpec(
        name=identifier(name or "controller"), kind="net", dt=dt, h0=h0,
        inputs=[Signal(f"{n}.{v}", unit_of(f"{n}.{v}"), _input_start(us[n], v), f"input {v!r} of unit {n!r}")
                for n, v in inputs],
        outputs=[Signal(f"{n}.{v}", unit_of(f"{n}.{v}"), 0.0, f"output {v!r} of unit {n!r}") for n, v in outputs],
        states=states, parameters=parameters, subs=[specs[n] for n in order], src=src, su0=su0, out=out,
        feedthrough={i: sorted(depends[o]) for i, o in enumerate(out)},
        description=f"an interconnection of {len(order)} controllers and blocks: {kinds}")


def _input_start(u: Any, name: str) -> float:
    """The value the input ``name`` of ``u`` starts a run with (a value set on it, or its start)."""
    if name in u.values:
        return float(u.values[name])
    start = u.variables[name].start
    return float(u.u[u.inputs.index(name)] if start is None else start)


def _dependencies(order: list[str], specs: dict[str, ControllerSpec], src: Sequence[int],
                  nu: int) -> dict[int, set[int]]:
    """The net inputs each signal (net input or unit output) depends on directly."""
    depends: dict[int, set[int]] = {j: {j} for j in range(nu)}
    base, offset = 0, nu
    for n in order:
        spec = specs[n]
        for i in range(len(spec.outputs)):
            deps: set[int] = set()
            for j in spec.feedthrough.get(i, []):
                deps |= depends.get(src[base + j], set())
            depends[offset + i] = deps
        base += len(spec.inputs)
        offset += len(spec.outputs)
    return depends

