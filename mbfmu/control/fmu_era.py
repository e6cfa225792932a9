"""Linearize a co-simulation FMU from its pulse responses (ERA).

Any FMI 2.0 or 3.0 co-simulation FMU that can save and restore its state
(``canGetAndSetFMUstate``) is run to an operating point, its state is saved,
and from that state it is stepped once with each input pulsed for one
communication step and then held at its operating value. The output
deviations are the Markov parameters of the zero-order-hold discrete-time
linear model at the communication step ``h``::

    Y_0 = D,   Y_k = C A^(k-1) B   (k >= 1).

The eigensystem realization algorithm (Juang & Pappa, "An eigensystem
realization algorithm for modal parameter identification and model
reduction", J. Guidance 8(5), 1985) builds the Hankel matrices of the Markov
parameters, truncates their SVD at the model order, and returns a balanced
realization ``(A, B, C, D)``. Pulses are applied with both signs and
differenced (``(y+ - y-) / 2 delta``), which removes the even-order
nonlinear terms and the FMU's free response: at a point that is not an
equilibrium the outputs keep moving with the inputs held, and that free
motion cancels in the difference (this is the detrending). They are scaled
to each input's declared nominal value or range. The order is taken at the
largest gap between the Hankel singular values that stand above an
estimated noise floor: that choice is what this module adds. The
realization at that order is python-control's
:func:`control.eigensys_realization`, which needs the order given.

The model is then **validated** on a second, independent excitation: a
seeded random input sequence (``n_markov // 2`` steps, each input uniform
in ``+-`` its pulse size at every step, then back at its operating value) applied from the same saved FMU state,
again with both signs and differenced, and the outputs recorded over
``2 n_markov`` steps (twice the identification window, so the poles are
tested beyond the data they were fitted to). Per output ``k``, with the
FMU's response ``y_k`` and the model's ``yhat_k`` (from zero state)::

    fit_k = 1 - ||y_k - yhat_k|| / ||y_k - mean(y_k)||      (NRMSE fit)

and the model's ``confidence`` is the worst output's fit (outputs the
excitation does not reach are left out). Below ``0.95`` an
:class:`ERAWarning` gives the fit; ``min_fit`` refuses such a model with an
:class:`~mbfmu.errors.InputError` instead.

It lives in the co-simulation layer because it drives FMUs (through
``fmpy``, which only ``mbfmu.cosim`` imports); ``mbfmu.control`` re-exports
``linearize_fmu`` and ``era``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import control
import numpy as np

from ..cosim.fmi.fmu_defaults import real_signals
from ..errors import InputError, SimulationError


@dataclass
class ERAResult:
    """Metadata attached to the model as ``sys.linearization``.

    Attributes
    ----------
    method : str
        ``"ERA"``.
    t0 : float
        Time of the operating point, s.
    step : float
        Communication step = sample time of the model, s.
    u0, y0 : ndarray
        Inputs and outputs at the operating point.
    markov : ndarray (n_markov + 1, ny, nu)
        Measured Markov parameters ``Y_0 .. Y_N``.
    hankel_singular_values : ndarray
        Singular values of the Hankel matrix (the order was chosen from them).
    amplitude : ndarray (nu,)
        Pulse size per input (in the inputs' units).
    noise_floor : float
        Estimated singular value of the measurement noise alone; the order is
        chosen among the singular values above it.
    gap : float
        Ratio of the last kept singular value to the first dropped one (or to
        the noise floor): large for a clear order.
    fit_error : float
        Relative RMS error of the model's Markov parameters against the
        measured ones (the identification data).
    confidence : float
        The validated fit: the worst output's NRMSE fit of the model's
        response to the independent random excitation against the FMU's own
        (see the module docs), at most 1 (negative when the model is worse
        than the mean).
    drift : float
        Largest change of the outputs over the response window with the
        inputs held at ``u0``, relative to the largest operating output or
        pulse response: 0 at an equilibrium.
    """

    method: str
    t0: float
    step: float
    u0: np.ndarray
    y0: np.ndarray
    markov: np.ndarray = field(repr=False)
    hankel_singular_values: np.ndarray = field(repr=False)
    amplitude: np.ndarray = field(repr=False)
    noise_floor: float = 0.0
    gap: float = np.inf
    fit_error: float = 0.0
    confidence: float = 1.0
    drift: float = 0.0


class ERAWarning(UserWarning):
    """An ERA model that deserves a second look (validated fit below 95 %, off equilibrium)."""


FIT_THRESHOLD = 0.95


def validation_fit(A, B, C, D, du: np.ndarray, y: np.ndarray) -> float:
    """The worst output's NRMSE fit of the model's response to ``du`` against ``y``.

    Parameters
    ----------
    A, B, C, D : ndarray
        The discrete model.
    du : ndarray (K, nu)
        Input deviations over the steps (zero after them).
    y : ndarray (K, ny)
        The FMU's output deviations, ``y[k]`` read with ``du[k]`` applied.

    Returns
    -------
    float
        ``min_k 1 - ||y_k - yhat_k|| / ||y_k - mean(y_k)||`` over the outputs
        the excitation reaches (1 is a perfect fit).
    """
    x = np.zeros(A.shape[0])
    yhat = np.empty_like(y)
    for k in range(len(y)):
        yhat[k] = C @ x + D @ du[k]
        x = A @ x + B @ du[k]
    den = np.linalg.norm(y - y.mean(axis=0), axis=0)
    reached = den > 1e-9 * den.max(initial=0.0)
    if not reached.any():
        return 0.0
    fits = 1.0 - np.linalg.norm(y - yhat, axis=0)[reached] / den[reached]
    return float(fits.min())


def _block_count(Y: np.ndarray) -> int:
    """Block rows (= columns) of the Hankel matrix of Markov parameters ``Y`` (it uses
    ``Y_1 .. Y_2r``; python-control's shifted matrix needs them all)."""
    r = (Y.shape[0] - 1) // 2
    if r < 1:
        raise InputError("ERA needs at least 2 Markov parameters after Y_0")
    return r


def _hankel(Y: np.ndarray, r: int) -> np.ndarray:
    """The block Hankel matrix ``[Y_(1+i+j)]``, ``i, j < r``, whose singular values choose the order."""
    return np.block([[Y[1 + i + j] for j in range(r)] for i in range(r)])


def noise_floor(markov: np.ndarray) -> float:
    """Estimated largest Hankel singular value that measurement noise alone would give.

    The noise level ``sigma`` is estimated from finite differences of order 1
    to 6 of the Markov parameters (robustly, by the median absolute
    deviation, over the whole sequence and over its second half): the
    differences of a smooth response shrink with the order while those of
    white noise grow by ``sqrt(C(2k, k))``, so the smallest estimate bounds
    the noise. White noise of that level in an ``m x n`` Hankel matrix has
    singular values up to about ``sigma (sqrt(m) + sqrt(n))``.
    """
    from math import comb
    Y = np.asarray(markov, float)[1:]
    estimates = []
    for part in (Y, Y[len(Y) // 2:]):
        for k in range(1, 7):
            if len(part) <= k + 2:
                break
            d = np.diff(part, n=k, axis=0).ravel()
            estimates.append(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(comb(2 * k, k)))
    if not estimates:
        return 0.0
    Y = np.asarray(markov, float)
    H0 = _hankel(Y, _block_count(Y))
    return float(3.0 * min(estimates) * (np.sqrt(H0.shape[0]) + np.sqrt(H0.shape[1])))


def choose_order(s: np.ndarray, floor: float, rtol: float = 1e-10) -> tuple[int, float]:
    """Model order at the largest gap between consecutive Hankel singular values
    above the floor ``level = max(floor, rtol s[0])`` (the last of them measured
    against the level itself); returns ``(order, gap)``."""
    if len(s) == 0 or s[0] <= 0:
        raise InputError("ERA: the pulse responses are all zero (no input reaches an output)")
    level = max(floor, rtol * s[0])
    above = int(np.sum(s > level))
    if above == 0:
        raise InputError(f"ERA: no Hankel singular value stands above the noise floor {level:.3g} "
                         "(pulses too small or responses buried in noise)")
    below = np.append(s[1:above], max(s[above] if above < len(s) else 0.0, level))
    ratios = s[:above] / below
    order = int(np.argmax(ratios)) + 1
    return order, float(ratios[order - 1])


def era(markov: np.ndarray, order: int | None = None, rtol: float = 1e-10
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eigensystem realization from Markov parameters.

    Parameters
    ----------
    markov : ndarray (N + 1, ny, nu)
        ``Y_0 = D``, ``Y_k = C A^(k-1) B``.
    order : int, optional
        Model order; default: at the largest gap between the Hankel singular
        values above the estimated noise floor (:func:`noise_floor`) and
        ``rtol`` times the largest (:func:`choose_order`).
    rtol : float
        Singular values below ``rtol`` times the largest never count.

    Returns
    -------
    A, B, C, D, s : ndarrays
        The realization and the Hankel singular values.
    """
    Y = np.asarray(markov, float)
    r = _block_count(Y)
    s = np.linalg.svd(_hankel(Y, r), compute_uv=False)
    if order is None:
        order, _ = choose_order(s, noise_floor(Y), rtol)
    if order < 1 or order > len(s):
        raise InputError(f"ERA order {order} not in 1..{len(s)} (Hankel singular values {s[:8]})")
    # the realization itself is python-control's (dt=True: unit pulses, no impulse-area scaling)
    sys, _ = control.eigensys_realization(np.transpose(Y, (1, 2, 0)), order, m=r, n=r, dt=True)
    A, B, C = (np.asarray(M, float) for M in (sys.A, sys.B, sys.C))
    return A, B, C, Y[0].copy(), s


def _fit_error(A, B, C, D, Y: np.ndarray) -> float:
    model = np.empty_like(Y)
    model[0] = D
    Ak_B = B
    for k in range(1, Y.shape[0]):
        model[k] = C @ Ak_B
        Ak_B = A @ Ak_B
    scale = np.sqrt(np.mean(Y[1:] ** 2))
    return float(np.sqrt(np.mean((model[1:] - Y[1:]) ** 2)) / scale) if scale > 0 else 0.0


def _pulse_scale(unit: Any, names: Sequence[str], u0: np.ndarray) -> np.ndarray:
    """Per input: its declared nominal value, else its declared range (max - min),
    else max(1, |u0|) [input unit]."""
    by_name = {v.name: v for v in unit.md.modelVariables}
    out = []
    for n, u in zip(names, u0):
        v = by_name.get(n.split("[")[0])
        nominal = _number(getattr(v, "nominal", None))
        lo, hi = _number(getattr(v, "min", None)), _number(getattr(v, "max", None))
        if nominal is not None and nominal > 0:
            out.append(nominal)
        elif lo is not None and hi is not None and hi > lo:
            out.append(hi - lo)
        else:
            out.append(max(1.0, abs(u)))
    return np.array(out)


def _number(x: Any) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def linearize_fmu(fmu_path: str | Path, step: float | None = None, t0: float = 0.0, u0=None,
                  inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                  parameters: Mapping[str, Any] | None = None, n_markov: int = 80,
                  order: int | None = None, amplitude=None, rtol: float = 1e-10,
                  tolerance: float | None = 1e-10, min_fit: float | None = None) -> control.StateSpace:
    """Discrete-time linear model of a co-simulation FMU around the state it
    reaches at ``t0`` with inputs held at ``u0``.

    Parameters
    ----------
    fmu_path : path
        FMI 2.0 or 3.0 co-simulation FMU that can save and restore its state.
    step : float, optional
        Communication step and sample time of the model, s (default: the
        FMU's ``DefaultExperiment`` step size, else 1e-2).
    t0 : float
        Operating time, s: the FMU is run from its start to ``t0`` with
        inputs ``u0`` (a whole number of steps), then its state is saved.
    u0 : array_like, optional
        Operating inputs (default: their start values).
    inputs, outputs : sequence of str
        Real inputs and outputs to use (default: all).
    parameters : mapping, optional
        Parameters and start values to set before initialization.
    n_markov : int
        Number of Markov parameters measured (pulse-response length in steps).
    order : int, optional
        Model order (default: from the gap of the Hankel singular values
        above the estimated noise floor, see :func:`era`).
    amplitude : array_like, optional
        Pulse size per input (default ``1e-4`` times the input's declared
        nominal value, else its declared range, else ``max(1, |u0|)``).
    rtol : float
        Singular values below ``rtol`` times the largest never count.
    tolerance : float, optional
        Relative tolerance given to the FMU's own solver (``None``: its default).
    min_fit : float, optional
        Refuse (:class:`~mbfmu.errors.InputError`) a model whose validated
        fit is below this; default: return it, with an :class:`ERAWarning`
        when the fit is below 0.95.

    Returns
    -------
    control.StateSpace
        With ``dt = step``, in deviation variables around ``(u0, y0)``,
        names python-control accepts; ``sys.linearization`` is an
        :class:`ERAResult` whose ``confidence`` is the validated fit. An
        :class:`ERAWarning` is issued when the fit is below 0.95 or the
        operating point is not an equilibrium (its free response is then
        subtracted, see the module docs).
    """
    import warnings
    from ..cosim.fmi.fmu_open import open_fmu

    fmu_path = Path(fmu_path)
    if not fmu_path.is_file():
        raise InputError(f"FMU file {str(fmu_path)!r} does not exist")
    unit = open_fmu(fmu_path, "era")
    if not unit.can_rollback:
        raise InputError(f"{fmu_path.name}: the FMU cannot save and restore its state "
                         "(canGetAndSetFMUstate is false), which ERA linearization needs")
    if step is None:
        de = unit.md.defaultExperiment
        step = float(de.stepSize) if de is not None and de.stepSize else 1e-2
    step = float(step)
    if not (np.isfinite(step) and step > 0):
        raise InputError(f"communication step {step} s must be > 0")
    in_names, out_names = real_signals(unit, inputs, "input"), real_signals(unit, outputs, "output")
    if not in_names or not out_names:
        raise InputError(f"{fmu_path.name}: needs at least one real input and one real output")
    for name, val in (parameters or {}).items():
        unit.set(name, val)
    starts = {n: float(unit.values.get(n, unit.variables[n].start) or 0.0) for n in in_names}
    u0 = np.array([starts[n] for n in in_names]) if u0 is None else np.asarray(u0, float).reshape(-1)
    if u0.size != len(in_names) or not np.all(np.isfinite(u0)):
        raise InputError(f"u0 must be {len(in_names)} finite values for inputs {in_names}")
    amp = 1e-4 * _pulse_scale(unit, in_names, u0) if amplitude is None else \
        np.broadcast_to(np.asarray(amplitude, float), u0.shape).copy()
    n0 = int(round(t0 / step))
    if n0 < 0 or abs(n0 * step - t0) > 1e-9 * max(1.0, abs(t0)):
        raise InputError(f"t0 = {t0} s must be a whole number of steps {step} s")
    ii = [unit.inputs.index(n) for n in in_names]
    oi = [unit.outputs.index(n) for n in out_names]

    def set_inputs(u: np.ndarray) -> None:
        for j, v in zip(ii, u):
            unit.u[j] = v
        unit.push()

    def outputs_now() -> np.ndarray:
        unit.pull()
        return np.array([unit.y[k] for k in oi])

    unit.tolerance = tolerance
    unit.will_roll_back = True
    n_val = 2 * n_markov  # validation window, steps
    excitation = np.random.default_rng(1).uniform(-1.0, 1.0, (max(1, n_markov // 2), len(in_names))) * amp
    try:
        unit.setup(0.0, t0 + (n_val + 1) * step, step)
        t = 0.0
        set_inputs(u0)
        for k in range(n0):
            unit.do_step(t, step)
            t = (k + 1) * step
        y0 = outputs_now()
        state = unit.get_state()

        def run(du: np.ndarray, length: int) -> np.ndarray:
            """Outputs after 0..length steps from the saved state, the inputs
            u0 + du[k] over step k (u0 after the rows of du)."""
            unit.set_state(state)
            set_inputs(u0 + du[0])
            ys = [outputs_now()]
            for k in range(length):
                unit.do_step(t + k * step, step)
                set_inputs(u0 + du[k + 1] if k + 1 < len(du) else u0)
                ys.append(outputs_now())
            return np.array(ys)

        markov = np.zeros((n_markov + 1, len(out_names), len(in_names)))
        for j in range(len(in_names)):
            du = np.zeros((1, len(in_names)))
            du[0, j] = amp[j]
            # the free response (inputs held at u0) is common to both runs: it cancels
            markov[:, :, j] = (run(du, n_markov) - run(-du, n_markov)) / (2 * amp[j])
        held = run(np.zeros((1, len(in_names))), n_markov)
        y_val = (run(excitation, n_val) - run(-excitation, n_val)) / 2
        unit.free_state(state)
    except InputError:
        raise
    except Exception as exc:
        raise SimulationError(f"{fmu_path.name}: FMU failed during the pulse responses: {exc}") from exc
    finally:
        unit.terminate()
    if not np.all(np.isfinite(markov)):
        raise SimulationError(f"{fmu_path.name}: non-finite pulse responses")
    s = np.linalg.svd(_hankel(markov, _block_count(markov)), compute_uv=False)
    floor = noise_floor(markov)
    if order is None:
        order, gap = choose_order(s, floor, rtol)
    else:
        gap = float(s[order - 1] / max(s[order] if order < len(s) else 0.0, floor, np.finfo(float).tiny))
    A, B, C, D, s = era(markov, order, rtol)
    fit = _fit_error(A, B, C, D, markov)
    du_val = np.zeros((n_val + 1, len(in_names)))
    du_val[:len(excitation)] = excitation
    confidence = min(1.0, validation_fit(A, B, C, D, du_val, y_val)) if np.all(np.isfinite(y_val)) else -np.inf
    scale = max(np.abs(y0).max(), np.abs(markov[1:]).max() * amp.max())
    drift = float(np.abs(held - held[0]).max() / scale) if scale > 0 else 0.0
    from ..cosim.signal_names import control_names
    sys = control.ss(A, B, C, D, step, inputs=control_names(in_names), outputs=control_names(out_names),
                     states=[f"x[{k + 1}]" for k in range(A.shape[0])], name=control_names([unit.md.modelName])[0]
                     + "_era")
    sys.linearization = ERAResult("ERA", float(t0), step, u0, y0, markov, s, amp, floor, gap, fit, confidence, drift)
    off = (f"; the point at t0 = {t0} s is not an equilibrium (outputs drift by {drift:.3g} of their size "
           f"over {n_markov} steps with the inputs held)") if drift > 1e-3 else ""
    if min_fit is not None and confidence < min_fit:
        raise InputError(f"{fmu_path.name}: ERA model of order {order} has a validated fit of "
                         f"{100 * confidence:.1f} %, below min_fit = {100 * min_fit:.1f} %{off}")
    if confidence < FIT_THRESHOLD:
        warnings.warn(f"{fmu_path.name}: ERA model of order {order} reproduces an independent random excitation "
                      f"with a fit of only {100 * confidence:.1f} % (below {100 * FIT_THRESHOLD:.0f} %){off}; "
                      "do not trust it", ERAWarning, stacklevel=2)
    elif off:
        warnings.warn(f"{fmu_path.name}: the operating point at t0 = {t0} s is not an equilibrium (with the "
                      f"inputs held the outputs move by {drift:.3g} of their size over {n_markov} steps); "
                      f"its free response was subtracted, validated fit {100 * confidence:.1f} %",
                      ERAWarning, stacklevel=2)
    return sys
