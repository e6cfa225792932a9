"""Sampled-data loops: a plant advanced by its own integrator, closed by a
discrete-time python-control system at the communication step.

At each sample ``t_k = k h`` the plant outputs ``y_k`` are measured, the
controller (inputs matched by signal name to plant outputs and to the
reference signals) computes ``u_k`` with its state update, and the plant is
advanced over ``[t_k, t_k + h]`` with ``u_k`` held (zero-order hold). This is
the loop an FMU master runs with a fixed step; here it runs directly in
Python, for design studies and tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import control
import numpy as np

from ..errors import InputError
from ..plant import Plant


def step_system(sys: control.InputOutputSystem, t: float, x: np.ndarray, u: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """One sample of a discrete-time python-control system: ``(y_k, x_{k+1})``.

    Parameters
    ----------
    sys : control.InputOutputSystem
        Discrete-time system.
    t : float
        Time of the sample, s.
    x : ndarray, shape (nstates,)
        State at the sample.
    u : ndarray, shape (ninputs,)
        Inputs at the sample.

    Returns
    -------
    y : ndarray, shape (noutputs,)
        Outputs at the sample.
    x_next : ndarray, shape (nstates,)
        State at the next sample.
    """
    x = np.asarray(x, float)
    u = np.asarray(u, float)
    if isinstance(sys, control.StateSpace):
        y = sys.C @ x + sys.D @ u if sys.nstates else sys.D @ u
        xn = sys.A @ x + sys.B @ u if sys.nstates else x
        return np.asarray(y, float).reshape(-1), np.asarray(xn, float).reshape(-1)
    y = np.asarray(sys.output(t, x, u), float).reshape(-1)
    xn = np.asarray(sys.dynamics(t, x, u), float).reshape(-1) if sys.nstates else x
    return y, xn


def initial_controller_state(sys: control.InputOutputSystem) -> np.ndarray:
    """Zero state, or the ``x0`` a controller stored on itself (``sys.x0``)."""
    x0 = getattr(sys, "x0", None)
    return np.zeros(sys.nstates) if x0 is None else np.asarray(x0, float).copy()


@dataclass
class LoopResult:
    """Samples of a sampled-data run (all arrays have len(time) rows).

    Attributes
    ----------
    time : ndarray (n + 1,)
        s.
    x : ndarray (n + 1, nx)
        Plant states.
    y : ndarray (n + 1, ny)
        Plant outputs.
    u : ndarray (n + 1, nu)
        Plant inputs applied from each sample on (last row repeats).
    controller_state : ndarray (n + 1, nc)
    cosim : mbfmu.cosim.Result or None
        The co-simulation master's own result (its columns, summary and
        ``meta``) when the loop ran on the master, else None.
    """

    time: np.ndarray
    x: np.ndarray
    y: np.ndarray
    u: np.ndarray
    controller_state: np.ndarray
    cosim: Any = None


def reference_function(sources: Sequence[Any]) -> Callable[[float], dict[str, float]]:
    """``t -> {signal name: value}`` of source units (FunctionUnits without
    inputs, :mod:`mbfmu.cosim.sources`): each output by its name, as the
    co-simulation master reads the units at ``t``."""
    sources = list(sources)
    empty = np.zeros(0)

    def reference(t: float) -> dict[str, float]:
        return {name: float(v) for s in sources for name, v in zip(s.outputs, s.fn(t, empty))}
    return reference


@dataclass
class LoopWiring:
    """How a sampled loop connects a plant and its discrete controller.

    Attributes
    ----------
    step : float
        Sample time (the controller's ``dt``), s.
    samples : int
        Samples in the run (``stop_time / step``).
    sources : list of (str, int or str)
        Per controller input: ``("y", i)`` for plant output ``i``, or
        ``("r", name)`` for the reference signal ``name``.
    targets : list of int
        Per controller output: the index of the plant input it drives.
    """

    step: float
    samples: int
    sources: list
    targets: list


def loop_wiring(controller: control.InputOutputSystem | None, output_names: Sequence[str],
                input_names: Sequence[str], reference_names: Sequence[str], stop_time: float,
                step: float | None = None) -> LoopWiring:
    """Match a discrete controller's signals to a plant's and check the run's length.

    Parameters
    ----------
    controller : control.InputOutputSystem or None
        Discrete-time (``dt > 0``); None: the plant alone, sampled at ``step``.
    output_names, input_names : sequence of str
        The plant's output and input names.
    reference_names : sequence of str
        The reference signals (controller inputs that are not plant outputs).
    stop_time : float
        s, a whole number of samples.
    step : float, optional
        Sample time, s, of a loop without a controller.

    Returns
    -------
    LoopWiring

    Raises
    ------
    InputError
        A continuous controller, a stop time off the sample grid, a controller
        input that is neither a plant output nor a reference signal, or a
        controller output that is not a plant input.
    """
    if controller is None:
        if step is None or not step > 0:
            raise InputError(f"a loop without a controller needs a sample time step > 0, got {step!r}")
    h = controller.dt if controller is not None else step
    if not isinstance(h, (int, float)) or h is True or h <= 0:
        raise InputError(f"controller {controller.name!r} must be discrete-time with a numeric dt > 0, got {h!r}")
    n = int(round(stop_time / h))
    if n < 1 or abs(n * h - stop_time) > 1e-9 * max(1.0, stop_time):
        raise InputError(f"stop time {stop_time} s is not a whole number of samples {h} s")
    out_names, in_names = list(output_names), list(input_names)
    src: list = []
    if controller is None:
        return LoopWiring(float(h), n, src, [])
    for name in controller.input_labels:
        if name in out_names:
            src.append(("y", out_names.index(name)))
        elif name in reference_names:
            src.append(("r", name))
        else:
            raise InputError(f"controller input {name!r} is neither a plant output ({out_names}) "
                             f"nor a reference signal ({sorted(reference_names)})")
    dst = []
    for name in controller.output_labels:
        if name not in in_names:
            raise InputError(f"controller output {name!r} is not a plant input ({in_names})")
        dst.append(in_names.index(name))
    return LoopWiring(float(h), n, src, dst)


def simulate_loop(plant: Plant, controller: control.InputOutputSystem, stop_time: float,
                  reference: Callable[[float], Mapping[str, float]] | None = None,
                  x0: np.ndarray | None = None, u_offset: np.ndarray | None = None,
                  y_offset: np.ndarray | None = None) -> LoopResult:
    """Close ``plant`` with the discrete ``controller`` (sample time ``controller.dt``), in Python.

    The plant is the Python plant (its own integrator, ``plant.advance``).
    :func:`mbfmu.control.master_loop.simulate_fmu_loop` runs the same loop
    with the plant's FMU in the co-simulation master's compiled loop.

    Parameters
    ----------
    plant : Plant
    controller : control.InputOutputSystem
        Discrete-time (``dt > 0``); every input must be a plant output name or
        a key of ``reference(t)``; every output must be a plant input name.
    stop_time : float
        s, a whole number of samples.
    reference : callable or sequence of Unit, optional
        ``t -> {signal name: value}`` for the controller inputs that are not
        plant outputs, or the source units of :func:`reference_function`.
    x0 : ndarray, optional
        Plant initial state (default ``plant.initial_state()``).
    u_offset : ndarray, optional
        Added to the plant inputs (for example the trim input ``u0`` when the
        controller works in deviations); plant inputs not driven by the
        controller keep their start values plus this offset.
    y_offset : ndarray, optional
        Subtracted from the plant outputs before the controller sees them
        (the operating outputs ``y0`` of a linear design).
    """
    out_names = [s.name for s in plant.outputs]
    in_names = [s.name for s in plant.inputs]
    if reference is not None and not callable(reference):
        reference = reference_function(reference)
    ref0 = dict(reference(0.0)) if reference else {}
    w = loop_wiring(controller, out_names, in_names, list(ref0), stop_time)
    h, n, src, dst = w.step, w.samples, w.sources, w.targets
    u_base = plant.default_inputs() if u_offset is None else np.asarray(u_offset, float)
    y_off = np.zeros(len(out_names)) if y_offset is None else np.asarray(y_offset, float)
    x = plant.initial_state() if x0 is None else plant.check_state(x0)
    xc = initial_controller_state(controller)
    T = np.arange(n + 1) * h
    X = np.empty((n + 1, len(x)))
    Y = np.empty((n + 1, len(out_names)))
    U = np.empty((n + 1, len(in_names)))
    XC = np.empty((n + 1, len(xc)))
    u = u_base.copy()
    for k in range(n + 1):
        t = T[k]
        y = plant.outputs_at(t, x, u) - y_off
        r = reference(t) if reference else {}
        uc = np.array([y[i] if kind == "y" else r[i] for kind, i in src], float)
        yc, xc_next = step_system(controller, t, xc, uc)
        u = u_base.copy()
        u[dst] += yc
        X[k], Y[k], U[k], XC[k] = x, plant.outputs_at(t, x, u), u, xc
        if k < n:
            x = plant.advance(t, x, u, h)
            xc = xc_next
    return LoopResult(T, X, Y, U, XC)
