"""python-control designs as native (C only) controller FMUs.

:func:`native_spec` turns a python-control ``StateSpace`` or
``TransferFunction`` (discrete or continuous), a PID of
:func:`mbfmu.control.pid` or a gain-scheduled controller of
:func:`mbfmu.control.scheduling.scheduled_controller` into the :class:`~mbfmu.fmu.native.controller.ControllerSpec`
that :func:`~mbfmu.fmu.native.controller.build_controller_fmu` compiles;
:func:`mbfmu.control.export_fmu` with ``runtime="native"`` calls both.

The FMU computes what :class:`mbfmu.cosim.units.ControlUnit` computes for the
same system:

* discrete systems run their difference equation at their ``dt``; a
  communication step of ``n dt`` runs ``n`` samples with the inputs held
  (what the master does with a ``ControlUnit``, whose own step ``dt``
  divides the macro step), any other step is refused with ``fmi2Error``;
* continuous systems are held over each step (zero-order hold). At the
  default step ``step`` the FMU uses the matrices of ``control.c2d(sys,
  step, "zoh")`` computed at export (the ones ``ControlUnit`` uses); at any
  other step the FMU computes them in C (``controller.c``'s ``mbc_expm``:
  scaling and squaring with the degree-13 Pade approximant, Higham 2005),
  which agrees with scipy's ``expm`` to rounding, not bit for bit;
* a scheduled controller evaluates its law ``u = u_ref - K(s) (x -
  x_ref)`` from the tables of its ``ScheduledLaw`` (grid, gains, x_ref,
  u_ref), interpolating the gains at the scheduling input as
  ``ScheduledLaw.output`` does;
* a discrete ``NonlinearIOSystem`` whose update and output functions
  trace through the expression tape (:mod:`mbfmu.control.traced`) is
  evaluated from its tape; a comparison in them is a guard: inputs and
  states on its other branch are refused with an FMI error naming it;
* a linear system's output gain ``gain`` (1 by default, ``y = gain (C x +
  D u)``) and a scheduled controller's (``u = u_ref - gain K(s) (x -
  x_ref)``) are tunable parameters, a PID's gains, time constants and limits
  are tunable parameters; states are visible as ``states.<name>``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import control
import numpy as np

from ..errors import InputError
from ..fmu.builder import identifier
from ..fmu.native.controller import ControllerSpec, Signal
from ..fmu.slave import STATE_PREFIX
from ..plant.signals import fmi_names
from ..cosim.master.c_units import scheduled_law
from .signal_layout import signal_layout
from .system_reference import known_reference

PID_MODULE = "mbfmu.control.discrete_pid"
NO_LIMIT = float(np.finfo(float).max)  # stands for an infinite limit or tracking time in the FMU


def _is_pid(sys: Any) -> bool:
    return getattr(getattr(sys, "updfcn", None), "__module__", None) == PID_MODULE and hasattr(sys, "gains")


def _signals(labels: Sequence[str], names: Sequence[str], units: Mapping[str, str], starts: Sequence[float],
             prefix: str = "") -> list[Signal]:
    return [Signal(prefix + n, units.get(l, "1"), float(s), f"python-control signal {l!r}")
            for l, n, s in zip(labels, names, starts)]


def _sample_time(sys: Any, step: float | None) -> float:
    """The controller's sample time [s] (0: continuous)."""
    if step is not None and not (isinstance(step, (int, float)) and step > 0 and math.isfinite(step)):
        raise InputError(f"step {step!r} must be a positive finite number of seconds")
    if sys.dt is None:  # a static system: ControlUnit holds it at any step, as a continuous one
        return 0.0
    if sys.isctime(strict=True):
        if step is None:
            raise InputError(f"system {sys.name!r} is continuous-time: give `step` [s] (--step), the FMU's "
                             "default communication step (other steps are held exactly too)")
        return 0.0
    if sys.dt is True:
        if step is None:
            raise InputError(f"system {sys.name!r} is discrete with an unspecified sample time (dt=True): give `step`")
        return float(step)
    if step is not None and not math.isclose(float(step), float(sys.dt), rel_tol=1e-12):
        raise InputError(f"system {sys.name!r} is discrete with dt = {sys.dt} s; it cannot run at step {step} s")
    return float(sys.dt)


def native_spec(sys: Any, step: float | None = None, name: str | None = None, x0: Sequence[float] | None = None,
                units: Mapping[str, str] | None = None,
                inputs_start: Mapping[str, float] | None = None) -> ControllerSpec:
    """The native controller spec of a python-control system (that of a
    :class:`~mbfmu.cosim.System` of controllers and blocks is
    :func:`mbfmu.control.native_system.interconnection_spec`'s).

    Parameters are those of :func:`mbfmu.control.export_fmu`.

    Returns
    -------
    ControllerSpec
        For :func:`mbfmu.fmu.native.controller.build_controller_fmu`.

    Raises
    ------
    InputError
        A system the native runtime cannot express (a general
        ``NonlinearIOSystem``), a missing or inconsistent ``step``, a bad
        ``x0``, non-finite matrices.
    """
    design_name = getattr(sys, "name", None)
    if isinstance(sys, control.TransferFunction):
        sys = control.ss(sys)  # as ControlUnit converts it (python-control renames it '<name>$converted')
    if not isinstance(sys, control.InputOutputSystem):
        raise InputError(f"cannot export {type(sys).__name__}: expected a python-control StateSpace, "
                         "TransferFunction or a PID of mbfmu.control.pid")
    pid = _is_pid(sys)
    law = scheduled_law(sys)
    traced = None
    if not isinstance(sys, control.StateSpace) and not pid and law is None:
        if not isinstance(sys, control.NonlinearIOSystem):
            raise InputError(f"system {sys.name!r} ({type(sys).__name__}): the native runtime exports linear systems, "
                             "mbfmu.control.pid, scheduled controllers and traced NonlinearIOSystems")
        from .traced import trace_system
        traced = trace_system(sys)  # refuses, naming what broke the trace
    dt = _sample_time(sys, step)
    units = dict(units or {})
    inputs_start = dict(inputs_start or {})
    layout = signal_layout(sys, x0)
    ins, outs, states, x0 = layout.inputs, layout.outputs, layout.states, layout.x0
    in_names, out_names = layout.input_names, layout.output_names
    common = dict(
        name=identifier(name or design_name or "controller"),
        dt=dt,
        inputs=_signals(ins, in_names, units, [inputs_start.get(l, 0.0) for l in ins]),
        outputs=_signals(outs, out_names, units, [0.0] * len(outs)),
        states=_signals(states, layout.state_names, units, x0, prefix=STATE_PREFIX),
    )
    if pid:
        g = sys.gains
        out_unit = units.get(outs[0], "1")
        limit = lambda v: max(-NO_LIMIT, min(NO_LIMIT, float(v)))  # noqa: E731
        params = [Signal("Kp", "1", float(g["Kp"]), "proportional gain [output unit per error unit]"),
                  Signal("Ki", "1", float(g["Ki"]), "integral gain [output unit per error unit and second]"),
                  Signal("Kd", "1", float(g["Kd"]), "derivative gain [output unit times second per error unit]"),
                  Signal("Tf", "s", float(g["Tf"]), "derivative filter time constant"),
                  Signal("Tt", "s", limit(g["Tt"]), f"anti-windup tracking time ({NO_LIMIT!r}: none)"),
                  Signal("u_min", out_unit, limit(g["u_min"]), f"lower output limit ({-NO_LIMIT!r}: none)"),
                  Signal("u_max", out_unit, limit(g["u_max"]), f"upper output limit ({NO_LIMIT!r}: none)")]
        return ControllerSpec(kind="pid", parameters=params, on_error=_derivative_on(sys) == "error",
                              feedthrough={0: [0, 1]}, description=f"discrete PID {sys.name!r} (mbfmu.control.pid)",
                              **common)
    taken = {s.name for s in common["inputs"] + common["outputs"] + common["states"]}
    gain_name = fmi_names(["gain"], taken=taken)[0]
    if law is not None:
        return _scheduled_spec(sys, law, gain_name, common)
    if traced is not None:
        return ControllerSpec(kind="tape", parameters=[], tape=traced.tape, tout=traced.out,
                              feedthrough={i: list(range(len(ins))) for i in range(len(outs))},
                              description=f"discrete nonlinear system {sys.name!r} (python-control, traced)", **common)
    mats = {k: np.asarray(getattr(sys, k), float) for k in "ABCD"}
    for k, M in mats.items():
        if not np.all(np.isfinite(M)):
            raise InputError(f"system {sys.name!r}: matrix {k} is not finite")
    Ad0 = Bd0 = None
    h0 = 0.0
    if dt == 0.0 and step is not None:
        h0 = float(step)
        d = control.c2d(sys, h0, method="zoh")  # the matrices ControlUnit uses at this step
        Ad0, Bd0 = np.asarray(d.A, float), np.asarray(d.B, float)
    D = mats["D"]
    feedthrough = {i: [j for j in range(D.shape[1]) if D[i, j] != 0.0] for i in range(D.shape[0])}
    what = "discrete" if dt else "continuous (zero-order hold)"
    return ControllerSpec(kind="lti", parameters=[Signal(gain_name, "1", 1.0, "output gain: y = gain (C x + D u)")],
                          h0=h0, Ad0=Ad0, Bd0=Bd0, feedthrough=feedthrough,
                          description=f"{what} linear system {sys.name!r} (python-control)", **mats, **common)


def _scheduled_spec(sys: Any, law: Any, gain_name: str, common: dict) -> ControllerSpec:
    """The spec of a scheduled controller: its law's tables; each output depends on
    the measured inputs its gains weigh and on the scheduling input."""
    K = law.gains
    ny, nk = K.shape[1], K.shape[2]
    scheduling = [law.index] if law.index >= 0 and len(law.grid) > 1 else []
    feedthrough = {i: sorted({j for j in range(nk) if np.any(K[:, i, j] != 0.0)} | set(scheduling))
                   for i in range(ny)}
    what = f"{len(law.grid)} grid points" + (f", scheduled by input {common['inputs'][law.index].name!r}"
                                            if scheduling else "")
    return ControllerSpec(kind="sched", parameters=[Signal(gain_name, "1", 1.0,
                                                           "gain scale: u = u_ref - gain K(s) (x - x_ref)")],
                          grid=law.grid, gains=K, x_ref=law.x_ref, u_ref=law.u_ref, sidx=law.index,
                          feedthrough=feedthrough,
                          description=f"gain-scheduled state feedback {sys.name!r} ({what}; mbfmu.control.schedule)",
                          **common)


def _derivative_on(sys: Any) -> str:
    on = getattr(sys, "derivative_on", None)
    if on is None:  # a PID built before mbfmu recorded it: find it as export's reference does
        ref = known_reference(sys)
        if ref is None:
            raise InputError(f"PID {sys.name!r}: cannot tell whether its derivative acts on the error or the measurement")
        on = ref[1]["derivative_on"]
    return on
