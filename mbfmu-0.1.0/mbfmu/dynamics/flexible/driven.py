"""Compiled error-controlled integration of a flexible system with driven joints.

:func:`simulate_driven` integrates ``x = [q; v]`` of a
:class:`~mbfmu.dynamics.flexible.system.FlexibleSystem` whose listed joints
follow imposed accelerations ``a(t)`` (a spin-up profile, a motor's
prescribed motion): the right-hand side is the compiled flexible
articulated-body algorithm with those joints driven (hybrid ABA), the
integrator the compiled embedded pair of ``csrc/adaptive.c`` (Dormand &
Prince 5(4) or Bogacki & Shampine 3(2)) with step-size control; only the
evaluation of ``a(t)`` and the call into the kernel run in Python. The
driven coordinates' positions and rates are integrated from ``a(t)``, so
start them consistent with the motion wanted.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ...errors import InputError, SimulationError
from .. import _kernels
from .analysis import natural_frequencies
from .integrators import Trajectory

PAIRS = {"BS32": 0, "DP54": 1}


def simulate_driven(system, x0, times, drive: Callable[[float], tuple], tau=None, rtol: float = 1e-6,
                    atol: float = 1e-8, method: str = "DP54", max_steps: int = 1_000_000,
                    max_step: float = 0.0) -> Trajectory:
    """Integrate ``system`` with driven joints over the output ``times`` (s).

    Parameters
    ----------
    system : FlexibleSystem
        Minimal coordinates (``nq == nv``: no ball or free joints).
    x0 : array_like (nq + nv,)
        State at ``times[0]``: m or rad, m/s or rad/s (modal coordinates and
        rates for the beams).
    times : array_like
        Increasing output times, s (the first is the start).
    drive : callable ``drive(t) -> (indices, accelerations)``
        Velocity indices of the driven joints (whole joints) and their
        accelerations at ``t``, rad/s^2 or m/s^2.
    tau : array_like (nv,), optional
        Generalized forces held constant (N, N m, modal forces).
    rtol, atol : float
        Tolerances of the error control (atol in the units of each state).
    method : {"DP54", "BS32"}
        Embedded pair.
    max_steps : int
        Attempted steps allowed per output interval.
    max_step : float
        Largest internal step, s (0: no limit). An explicit pair on a
        stiff chain does best just inside its stability limit
        (:func:`stable_step`): left to the error control alone it hovers at
        that limit with rejected steps.

    Returns
    -------
    Trajectory
        States at ``times``; ``nfev`` counts right-hand-side evaluations.

    Raises
    ------
    InputError
        Wrong sizes, times not increasing, a method not listed, a driven
        index that is a modal coordinate or part of a joint.
    SimulationError
        The tolerance cannot be met within the step limits (with the time
        reached), or a singular joint or modal mass.
    """
    if method not in PAIRS:
        raise InputError(f"simulate_driven: method {method!r} is not one of {', '.join(PAIRS)}")
    if not (np.isfinite(max_step) and max_step >= 0):
        raise InputError(f"simulate_driven: max_step = {max_step!r} must be finite and >= 0 s")
    if not hasattr(system, "_fh"):
        raise InputError("simulate_driven needs a FlexibleSystem (the compiled flexible ABA)")
    if system.nq != system.nv:
        raise InputError("simulate_driven needs nq == nv (no ball or free joints)")
    times = np.asarray(times, float)
    if times.ndim != 1 or times.size < 2 or not np.all(np.diff(times) > 0) or not np.all(np.isfinite(times)):
        raise InputError("simulate_driven: times must be at least two finite, increasing values (s)")
    x = np.array(x0, float)
    nq = system.nq
    if x.shape != (nq + system.nv,):
        raise InputError(f"simulate_driven: x0 has shape {x.shape}, expected ({nq + system.nv},)")
    idx0, _ = drive(float(times[0]))
    idx = np.atleast_1d(np.asarray(idx0, np.intp))
    reason = system.fast_path_reason((idx, np.zeros(idx.size)))
    if reason is not None:
        raise InputError(f"simulate_driven: {reason}")
    t_in = np.zeros(system.nv) if tau is None else np.asarray(tau, float)
    fh = system._fh
    acc = np.zeros(idx.size)

    def f(t, xs):
        acc[:] = drive(t)[1]
        qd, vd = _kernels.flex_rhs(fh, xs[:nq], xs[nq:], t_in, None, idx, acc)
        return np.concatenate((qd, vd))

    X = np.empty((times.size, x.size))
    X[0] = x
    h = 0.0
    nfev = 0
    for k in range(times.size - 1):
        dt = float(times[k + 1] - times[k])
        try:
            x, st = _kernels.adapt_callback(f, None, float(times[k]), x, dt,
                                            (rtol, atol, h, float(max_step), 0.0, int(max_steps), PAIRS[method]))
        except SimulationError as exc:
            raise SimulationError(f"simulate_driven: interval [{times[k]:.6g}, {times[k + 1]:.6g}] s: "
                                  f"{exc}") from None
        h = st[4]
        nfev += st[2]
        X[k + 1] = x
    return Trajectory(times.copy(), X, nfev, 0)


# |h omega| on the imaginary axis below which the third-order pair's steps are
# stable (sqrt(3), Bogacki-Shampine 3(2)); Dormand-Prince 5(4) reaches further,
# but its embedded error estimate settles near this bound on undamped modes
_IMAGINARY_LIMIT = math.sqrt(3.0)


def stable_step(system, fixed: Sequence[int] = (), safety: float = 0.9) -> float:
    """The largest stable explicit step of ``system``, s: ``safety * sqrt(3) / omega_max``.

    Parameters
    ----------
    system : FlexibleSystem
        Minimal coordinates.
    fixed : sequence of int
        Velocity coordinates driven or held (they carry no vibration).
    safety : float
        Fraction of the stability bound, in (0, 1].

    Returns
    -------
    float
        Step, s, from the highest undamped natural frequency ``omega_max``
        (rad/s) at rest (:func:`~mbfmu.dynamics.flexible.analysis.natural_frequencies`);
        spin stiffening raises it a little, which ``safety`` covers at moderate rates.
    """
    if not 0 < safety <= 1:
        raise InputError(f"stable_step: safety = {safety!r} must be in (0, 1]")
    w = natural_frequencies(system, fixed=fixed)
    if w.size == 0 or not w[-1] > 0:
        raise InputError("stable_step: the system has no vibration mode")
    return safety * _IMAGINARY_LIMIT / float(w[-1])
