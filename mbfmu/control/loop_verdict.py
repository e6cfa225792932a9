"""The stability verdict of a closed loop, from its eigenvalues, cross-checked
by simulations from a small perturbation.

:func:`stability_verdict` takes the closed-loop state matrix (continuous, or
sampled at ``dt``): the verdict is its eigenvalues (continuous: every real
part < 0; sampled: every modulus < 1). It is checked by simulating the same
linear closed loop from a small random initial state with python-control
(:func:`control.initial_response`) over a horizon long enough for the
slowest mode to grow or decay by a factor ``e^4``: the norm of the state over
the second half of the horizon must shrink for a stable verdict and grow for
an unstable one. A loop too close to the boundary for such a horizon (more
than ``max_steps`` steps) is reported as not checked, never as agreeing.

A further check against a co-simulation of the real system is
:func:`cosim_check` (the same perturbation at a loop input in the master and
in the sampled linear model); a disagreement names the units whose linear
model is not exact, whose models are then in doubt.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .crossovers import poles_stable
from .fmu_model import SOURCE_DIRECTIONAL, SOURCE_PLANT
from .system_ports import parse_connection


@dataclass
class StabilityVerdict:
    """Closed-loop stability and its checks.

    Attributes
    ----------
    stable : bool
        The eigenvalue verdict.
    pole_figure : float
        Spectral radius (sampled) or largest real part, 1/s (continuous).
    dt : float or None
        Sample time of a sampled loop, s.
    linear_check : str
        ``"agrees"``, ``"disagrees"`` or ``"not checked"``: the linear simulation.
    cosim_check : str
        ``"agrees"``, ``"disagrees"``, ``"not checked"`` or ``"not run"``: the co-simulation.
    doubtful_units : list of str
        Units whose linear model a disagreement puts in doubt, with their model source.
    notes : list of str
        What was found, in words.
    """

    stable: bool
    pole_figure: float
    dt: float | None
    linear_check: str
    cosim_check: str = "not run"
    doubtful_units: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        """Whether no check disagrees with the eigenvalue verdict."""
        return "disagrees" not in (self.linear_check, self.cosim_check)

    def summary(self) -> str:
        """The verdict and its checks, in words."""
        what = "spectral radius" if self.dt is not None else "largest real part"
        unit = "" if self.dt is not None else " 1/s"
        head = (f"closed loop {'stable' if self.stable else 'UNSTABLE'} by its eigenvalues ({what} "
                f"{self.pole_figure:.6g}{unit}); linear simulation: {self.linear_check}; "
                f"co-simulation: {self.cosim_check}")
        return "\n".join([head, *self.notes])


def _figure(poles: np.ndarray, dt: float | None) -> float:
    if not poles.size:
        return 0.0 if dt is not None else -math.inf
    return float(np.abs(poles).max()) if dt is not None else float(poles.real.max())


def linear_simulation_check(A: np.ndarray, dt: float | None, stable: bool, *, seed: int = 0,
                            max_steps: int = 20_000) -> tuple[str, str]:
    """Simulate ``x' = A x`` (or ``x+ = A x``) from a small random state.

    Parameters
    ----------
    A : ndarray (n, n)
        Closed-loop state matrix (1/s, or dimensionless when sampled).
    dt : float or None
        Sample time, s (``None``: continuous).
    stable : bool
        The eigenvalue verdict to check.
    seed : int
        Seed of the initial state.
    max_steps : int
        Longest simulation, in steps.

    Returns
    -------
    (str, str)
        ``"agrees"``, ``"disagrees"`` or ``"not checked"``, and a sentence.
    """
    import control as ct
    n = A.shape[0]
    if not n:
        return "agrees", "no states: a static loop"
    poles = np.linalg.eigvals(A)
    rate = (math.log(max(np.abs(poles).max(), 1e-300)) / dt) if dt is not None else float(poles.real.max())
    fastest = float(np.abs(np.log(np.abs(poles[np.abs(poles) > 0])) / dt).max()) if dt is not None else \
        float(np.abs(poles).max())
    if rate == 0.0 or not math.isfinite(rate):
        return "not checked", "the slowest mode is on the stability boundary: a simulation cannot tell"
    horizon = 4.0 / abs(rate)
    h = dt if dt is not None else min(horizon / 2000, 0.5 / max(fastest, 1e-300))
    steps = int(math.ceil(horizon / h))
    if steps > max_steps:
        return "not checked", (f"the slowest mode (rate {rate:.3g} 1/s) needs {steps} steps to show; "
                               f"more than {max_steps}")
    x0 = 1e-6 * np.random.default_rng(seed).standard_normal(n)
    sys = ct.ss(A, np.zeros((n, 1)), np.eye(n), np.zeros((n, 1)), dt if dt is not None else 0)
    t = np.arange(steps + 1) * h
    x = np.asarray(ct.initial_response(sys, T=t, X0=x0).states)
    size = np.linalg.norm(x, axis=0)
    half = size[steps // 2:]
    grows = bool(half[-1] > half[0])
    word = "agrees" if grows != stable else "disagrees"
    return word, (f"the linear closed loop from a random state of size {np.linalg.norm(x0):.1g} "
                  f"{'grows' if grows else 'decays'} by {half[-1] / half[0]:.3g} over the second half "
                  f"of {t[-1]:.4g} s")


def stability_verdict(A: np.ndarray, dt: float | None) -> StabilityVerdict:
    """Eigenvalue verdict of a closed loop, checked by a linear simulation.

    Parameters
    ----------
    A : ndarray (n, n)
        Closed-loop state matrix.
    dt : float or None
        Sample time of a sampled loop, s; ``None`` for a continuous one.

    Returns
    -------
    StabilityVerdict
    """
    A = np.asarray(A, float)
    poles = np.linalg.eigvals(A) if A.shape[0] else np.zeros(0, complex)
    stable = poles_stable(poles, dt)
    word, note = linear_simulation_check(A, dt, stable)
    notes = [f"linear simulation: {note}"]
    if word == "disagrees":
        notes.append("the eigenvalues and the linear simulation DISAGREE: the eigenvalues of this closed loop "
                     "are ill-conditioned; do not trust the verdict")
    return StabilityVerdict(stable, _figure(poles, dt), dt, word, notes=notes)


# model sources whose linear model is exact (mbfmu.control.fmu_model's labels and the units' own)
_EXACT_SOURCES = ("exact", "memoryless", "source", SOURCE_DIRECTIONAL, SOURCE_PLANT)


def _in_doubt(model_sources: dict[str, str]) -> list[str]:
    """Units whose linear model is not exact (ERA, central differences of a
    dynamic unit, ...), as ``"name (source)"``."""
    return [f"{name} ({how})" for name, how in model_sources.items()
            if not how.startswith(_EXACT_SOURCES)]


def cosim_check(system, connection: str, at: float, step: float, model_sources: dict[str, str], *,
                closed_loop, steps: int = 200, relative: float = 0.1) -> tuple[str, list[str], str]:
    """Compare a co-simulation of the real system with its sampled linear model.

    Both are given the same one-step pulse, small against the signal, added at
    the input end of ``connection`` at the operating time ``at``; the
    co-simulation's response is the perturbed run minus the unperturbed one,
    at the source end of ``connection``. They agree when the responses match
    within ``relative``, or when both grow or both decay over the second half
    of the run (the difference is then reported with the units in doubt);
    they disagree when one grows and the other decays.

    Parameters
    ----------
    system : mbfmu.cosim.System
        The closed loop (not modified: the pulse goes into a copy of its wiring).
    connection : str
        One scalar connection ``"a.y->b.u"``.
    at, step : float
        Operating time and macro step, s.
    model_sources : dict
        How each unit's linear model was made (``LoopAnalysis.unit_models``).
    steps : int
        Length of the comparison, in macro steps.
    relative : float
        Largest relative difference (2-norm over the steps) that agrees.
    closed_loop : control.StateSpace or callable
        The sampled closed loop at ``step`` from the injection at the input end
        of ``connection`` to its source end (a sampled loop analysis has it as
        ``-T``), or a function of no arguments that makes it (called only when
        ``connection`` is one scalar connection).

    Returns
    -------
    (str, list of str, str)
        ``"agrees"``, ``"disagrees"`` or ``"not checked"``; the units in
        doubt when the run contradicts the eigenvalues or differs from the
        linear response by more than ``relative``; a sentence.
    """
    import control as ct

    from ..cosim import System, simulate
    from ..cosim.units import FunctionUnit
    conns = parse_connection(system, connection)
    if len(conns) != 1:
        return "not checked", [], f"{connection} is not one scalar connection"
    c = conns[0]
    src = f"{c.src_unit}.{c.src_var}"
    G = closed_loop if isinstance(closed_loop, ct.LTI) else closed_loop()
    poles = np.asarray(G.poles())
    stable = poles_stable(poles, step)
    if not stable:  # an unstable loop: stop before the run overflows (growth 1e6 at most)
        steps = max(20, min(steps, math.ceil(math.log(1e6) / max(math.log(np.abs(poles).max()), 1e-9))))
    n_at = int(round(at / step))
    stop = (n_at + steps) * step
    nominal = simulate(system, stop_time=stop, step=step, record=[src], progress=False)
    y_nom = np.asarray(nominal[src], float)
    amp = 1e-4 * max(1.0, abs(float(y_nom[n_at])))
    name = "_pulse"
    while name in system.units:
        name += "_"

    def pulse(t, u):
        return [u[0] + (amp if round(t / step) == n_at else 0.0)]
    wiring = [(x.src, x.dst) for x in system.connections if x is not c]
    copy = System([*system.units.values(), FunctionUnit(name, pulse, inputs=["u"])],
                  [*wiring, (src, f"{name}.u"), (f"{name}.y", f"{c.dst_unit}.{c.dst_var}")])
    copy.experiment = dict(system.experiment)
    dy_sim = np.asarray(simulate(copy, stop_time=stop, step=step, record=[src], progress=False)[src], float)
    dy_sim = (dy_sim - y_nom)[n_at:n_at + steps]
    u = np.zeros(steps)
    u[0] = amp
    dy_lin = np.asarray(ct.forced_response(G, T=np.arange(steps) * step, U=u).outputs, float).ravel()
    scale = float(np.linalg.norm(dy_lin))
    if scale == 0.0 or not np.isfinite(dy_sim).all():
        return "not checked", [], "the pulse does not reach the loop's output in the linear model"
    err = float(np.linalg.norm(dy_sim - dy_lin)) / scale
    grows, grows_lin = _grows(dy_sim), _grows(dy_lin)
    drift = float(np.ptp(y_nom[n_at:n_at + steps]))
    where = (f"; the unperturbed run moves by {drift:.3g} over these steps (not an equilibrium: the linear "
             "model holds at the start only)") if drift > 10 * float(np.abs(dy_lin).max()) else ""
    doubt = _in_doubt(model_sources)
    who = (f"the linear model of {', '.join(doubt)} is in doubt" if doubt else
           "every unit's model is exact: the real system is not linear at this amplitude or point")
    said = f"a pulse of {amp:.3g} at {c.dst_unit}.{c.dst_var}: the co-simulation {'grows' if grows else 'decays'}"
    if err <= relative:
        return "agrees", [], (f"{said}; its response equals the linear model's within {err:.2g} (relative) over "
                              f"{steps} steps")
    if grows != grows_lin:  # the real loop does not do what the model behind the eigenvalues says
        return "disagrees", doubt, (f"{said}, the linear model's response {'grows' if grows_lin else 'decays'} "
                                    f"(eigenvalues: {'stable' if stable else 'unstable'}); they differ by {err:.2g} "
                                    f"(relative) over {steps} steps; {who}{where}")
    return "agrees", doubt, (f"{said} as the linear model's does, but differs from it by {err:.2g} (relative) over "
                             f"{steps} steps; {who}{where}")


def _grows(y: np.ndarray) -> bool:
    """Whether a response is larger at the end of its second half than at its start."""
    half = np.abs(y[len(y) // 2:])
    k = max(1, len(half) // 10)
    return bool(half[-k:].max() > half[:k].max())
