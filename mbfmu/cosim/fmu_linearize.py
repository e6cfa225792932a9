"""Linearize a co-simulation FMU from its pulse responses (ERA).

Any FMI 2.0 co-simulation FMU that can save and restore its state
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
nonlinear terms.

It lives in the co-simulation layer because it drives FMUs (through
``fmpy``, which only ``mbfmu.cosim`` imports); ``mbfmu.control`` re-exports
``linearize_fmu`` and ``era``.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import control
import numpy as np

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
        Pulse size per input.
    """

    method: str
    t0: float
    step: float
    u0: np.ndarray
    y0: np.ndarray
    markov: np.ndarray = field(repr=False)
    hankel_singular_values: np.ndarray = field(repr=False)
    amplitude: np.ndarray = field(repr=False)


def era(markov: np.ndarray, order: int | None = None, rtol: float = 1e-7
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eigensystem realization from Markov parameters.

    Parameters
    ----------
    markov : ndarray (N + 1, ny, nu)
        ``Y_0 = D``, ``Y_k = C A^(k-1) B``.
    order : int, optional
        Model order; default: the number of Hankel singular values above
        ``rtol`` times the largest.

    Returns
    -------
    A, B, C, D, s : ndarrays
        The realization and the Hankel singular values.
    """
    Y = np.asarray(markov, float)
    N = Y.shape[0] - 1
    ny, nu = Y.shape[1:]
    r = N // 2
    if r < 1:
        raise InputError("ERA needs at least 2 Markov parameters after Y_0")
    H0 = np.block([[Y[1 + i + j] for j in range(r)] for i in range(r)])
    H1 = np.block([[Y[2 + i + j] for j in range(r)] for i in range(r)]) if 2 * r <= N else None
    if H1 is None:
        r -= 1
        H0 = np.block([[Y[1 + i + j] for j in range(r)] for i in range(r)])
        H1 = np.block([[Y[2 + i + j] for j in range(r)] for i in range(r)])
    U, s, Vt = np.linalg.svd(H0)
    if order is None:
        order = int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
    if order < 1 or order > len(s):
        raise InputError(f"ERA order {order} not in 1..{len(s)} (Hankel singular values {s[:8]})")
    Ur, sr, Vr = U[:, :order], s[:order], Vt[:order].T
    si = 1.0 / np.sqrt(sr)
    A = (si[:, None] * (Ur.T @ H1 @ Vr)) * si[None, :]
    B = (np.sqrt(sr)[:, None] * Vr.T)[:, :nu]
    C = (Ur * np.sqrt(sr)[None, :])[:ny]
    return A, B, C, Y[0].copy(), s


def _value_refs(md, names: Sequence[str] | None, causality: str) -> tuple[list[str], list[int]]:
    vars_ = [v for v in md.modelVariables if v.causality == causality and v.type == "Real"]
    by_name = {v.name: v for v in vars_}
    if names is None:
        chosen = vars_
    else:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise InputError(f"FMU {md.modelName!r} has no real {causality}s {unknown}; "
                             f"known: {sorted(by_name)}")
        chosen = [by_name[n] for n in names]
    return [v.name for v in chosen], [v.valueReference for v in chosen]


def linearize_fmu(fmu_path: str | Path, step: float | None = None, t0: float = 0.0, u0=None,
                  inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                  parameters: Mapping[str, float] | None = None, n_markov: int = 80,
                  order: int | None = None, amplitude=None, rtol: float = 1e-7) -> control.StateSpace:
    """Discrete-time linear model of a co-simulation FMU around the state it
    reaches at ``t0`` with inputs held at ``u0``.

    Parameters
    ----------
    fmu_path : path
        FMI 2.0 co-simulation FMU with ``canGetAndSetFMUstate``.
    step : float, optional
        Communication step and sample time of the model, s (default: the
        FMU's ``DefaultExperiment`` step size, else 1e-2).
    t0 : float
        Operating time, s: the FMU is run from its start to ``t0`` with
        inputs ``u0`` (a whole number of steps), then its state is saved.
    u0 : array_like, optional
        Operating inputs (default: their start values).
    inputs, outputs : sequence of str, optional
        Real inputs and outputs to use (default: all).
    parameters : mapping, optional
        Start values to set before initialization.
    n_markov : int
        Number of Markov parameters measured (pulse-response length in steps).
    order : int, optional
        Model order (default from the Hankel singular values and ``rtol``).
    amplitude : array_like, optional
        Pulse size per input (default ``1e-4 max(1, |u0|)``).

    Returns
    -------
    control.StateSpace
        With ``dt = step``, in deviation variables around ``(u0, y0)``;
        ``sys.linearization`` is an :class:`ERAResult`.
    """
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    fmu_path = Path(fmu_path)
    if not fmu_path.is_file():
        raise InputError(f"FMU file {str(fmu_path)!r} does not exist")
    md = read_model_description(str(fmu_path))
    cs = md.coSimulation
    if cs is None:
        raise InputError(f"{fmu_path.name}: not a co-simulation FMU")
    if not cs.canGetAndSetFMUstate:
        raise InputError(f"{fmu_path.name}: the FMU cannot save and restore its state "
                         "(canGetAndSetFMUstate is false), which ERA linearization needs")
    if step is None:
        de = md.defaultExperiment
        step = float(de.stepSize) if de is not None and de.stepSize else 1e-2
    step = float(step)
    if not (np.isfinite(step) and step > 0):
        raise InputError(f"communication step {step} s must be > 0")
    in_names, in_vrs = _value_refs(md, inputs, "input")
    out_names, out_vrs = _value_refs(md, outputs, "output")
    if not in_names or not out_names:
        raise InputError(f"{fmu_path.name}: needs at least one real input and one real output")
    starts = {v.name: float(v.start) if v.start is not None else 0.0 for v in md.modelVariables
              if v.causality == "input" and v.type == "Real"}
    u0 = np.array([starts[n] for n in in_names]) if u0 is None else np.asarray(u0, float).reshape(-1)
    if u0.size != len(in_names) or not np.all(np.isfinite(u0)):
        raise InputError(f"u0 must be {len(in_names)} finite values for inputs {in_names}")
    amp = 1e-4 * np.maximum(1.0, np.abs(u0)) if amplitude is None else \
        np.broadcast_to(np.asarray(amplitude, float), u0.shape).copy()
    n0 = int(round(t0 / step))
    if n0 < 0 or abs(n0 * step - t0) > 1e-9 * max(1.0, abs(t0)):
        raise InputError(f"t0 = {t0} s must be a whole number of steps {step} s")

    unzip = extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=cs.modelIdentifier,
                    instanceName="era")
    try:
        fmu.instantiate()
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        if parameters:
            vr = {v.name: v.valueReference for v in md.modelVariables}
            for name, val in parameters.items():
                if name not in vr:
                    raise InputError(f"{fmu_path.name}: unknown parameter {name!r}")
                fmu.setReal([vr[name]], [float(val)])
        fmu.setReal(in_vrs, list(u0))
        fmu.exitInitializationMode()
        t = 0.0
        for _ in range(n0):
            fmu.setReal(in_vrs, list(u0))
            fmu.doStep(t, step)
            t += step
        fmu.setReal(in_vrs, list(u0))
        y0 = np.array(fmu.getReal(out_vrs))
        state = fmu.getFMUstate()

        def run(u_first: np.ndarray) -> np.ndarray:
            """Outputs Y[0..N] after holding u_first over the first step."""
            fmu.setFMUstate(state)
            tk = t
            fmu.setReal(in_vrs, list(u_first))
            ys = [fmu.getReal(out_vrs)]
            for k in range(n_markov):
                fmu.doStep(tk, step)
                tk += step
                if k == 0:
                    fmu.setReal(in_vrs, list(u0))
                ys.append(fmu.getReal(out_vrs))
            return np.array(ys)

        markov = np.zeros((n_markov + 1, len(out_names), len(in_names)))
        for j in range(len(in_names)):
            du = np.zeros(len(in_names))
            du[j] = amp[j]
            markov[:, :, j] = (run(u0 + du) - run(u0 - du)) / (2 * amp[j])
        fmu.freeFMUstate(state)
        fmu.terminate()
    except Exception as exc:
        if isinstance(exc, InputError):
            raise
        raise SimulationError(f"{fmu_path.name}: FMU failed during the pulse responses: {exc}") from exc
    finally:
        try:
            fmu.freeInstance()
        except Exception:
            pass
        shutil.rmtree(unzip, ignore_errors=True)
    if not np.all(np.isfinite(markov)):
        raise SimulationError(f"{fmu_path.name}: non-finite pulse responses")
    A, B, C, D, s = era(markov, order, rtol)
    sys = control.ss(A, B, C, D, step, inputs=in_names, outputs=out_names,
                     states=[f"x[{k + 1}]" for k in range(A.shape[0])], name=f"{md.modelName}_era")
    sys.linearization = ERAResult("ERA", float(t0), step, u0, y0, markov, s, amp)
    return sys


def input_start_values(path: str | Path) -> dict[str, float]:
    """Real inputs of an FMU, in declaration order, with their start values
    (0 where none is declared)."""
    from fmpy import read_model_description
    md = read_model_description(str(path))
    return {v.name: float(v.start or 0.0) for v in md.modelVariables
            if v.causality == "input" and v.type == "Real"}
