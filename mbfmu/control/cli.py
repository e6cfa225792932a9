"""mbfmu linearize NAME|MODEL.py|FMU [--at ...]: poles, natural
frequencies and damping of a plant or an FMU; saves A, B, C, D to an npz file.

A plant (library name or model file) is linearized from its Jacobians; an FMU
by the best model available (mbfmu.control.fmu_model.fmu_unit_model): its
Model Exchange directional derivatives (FMI 2.0 or 3.0) when they pass a probe
against central differences (else central differences, with a warning line
naming the wrong entries), else, for an FMU built by mbfmu, its plant's exact
model; all discretized at the communication step; any other FMU is identified
from pulse responses (ERA) with a validated fit. The output's "model:" says which.

Guard rails: the operating point of --at trim or --at TIME is printed; a
point that is not an equilibrium (xdot0 != 0) is reported on stderr; an
existing output file is kept unless --force is given.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..errors import InputError



def modal_table(poles: np.ndarray, dt: float | None = None) -> list[tuple[complex, float, float, float]]:
    """``(pole, wn [rad/s], fn [Hz], zeta)`` per pole; discrete poles are
    mapped to continuous ones by ``s = ln(z) / dt``. Sorted by frequency."""
    rows = []
    for p in np.asarray(poles, complex):
        s = np.log(p) / dt if dt else p
        wn = abs(s)
        zeta = -s.real / wn if wn > 0 else 1.0
        rows.append((complex(p), wn, wn / (2 * np.pi), zeta))
    return sorted(rows, key=lambda r: (r[1], r[0].imag))


#: a pole part below this fraction of the fastest pole's |s| (or |z|) is round-off, shown as 0
ROUND_OFF = 1e-9


def modal_lines(poles: np.ndarray, dt: float | None = None) -> list[str]:
    """The pole table of ``mbfmu linearize``: a header, then one line per pole
    with its natural frequency and, for an oscillatory pair only, its damping
    ratio.

    A real pole has no damping ratio ("-"; its kind says whether it is
    stable), nor has a pole at s = 0 (z = 1 for a discrete model). Parts
    below :data:`ROUND_OFF` of the fastest pole are round-off and shown as 0.

    Parameters
    ----------
    poles : array_like of complex
        The poles (z-plane when ``dt`` is given).
    dt : float, optional
        Sampling period [s] of a discrete model.

    Returns
    -------
    list of str
        The lines, without newlines.
    """
    rows = modal_table(poles, dt)
    p_tol = ROUND_OFF * max((abs(r[0]) for r in rows), default=0.0)
    s_tol = ROUND_OFF * max((r[1] for r in rows), default=0.0)
    lines = [f"{'pole':>34}  {'wn [rad/s]':>12}  {'fn [Hz]':>10}  {'zeta':>7}  kind"]
    for p, wn, fn, zeta in rows:
        re_, im = (0.0 if abs(v) <= p_tol else v for v in (p.real, p.imag))
        s = np.log(p) / dt if dt else p
        if wn <= s_tol:
            wn = fn = 0.0
            zeta_text, kind = "-", "z = 1 (s = 0)" if dt else "s = 0"
        elif abs(s.imag) <= s_tol:
            zeta_text, kind = "-", "real, unstable" if s.real > 0 else "real"
        else:
            zeta_text = f"{0.0 if abs(zeta) <= ROUND_OFF else zeta:.4g}"
            kind = "oscillatory, unstable" if s.real > 0 else "oscillatory"
        lines.append(f"{re_:16.6g} {im:+16.6g}j  {wn:12.6g}  {fn:10.6g}  {zeta_text:>7}  {kind}")
    return lines


def _pairs(text: str | list[str] | None, what: str) -> dict[str, float]:
    """``name=value`` items (comma-separated, or a list of such texts from a
    repeated flag) as a dict; a name given twice is refused."""
    out: dict[str, float] = {}
    if not text:
        return out
    items = [i for t in ([text] if isinstance(text, str) else text) for i in t.split(",") if i.strip()]
    for item in items:
        if "=" not in item:
            raise InputError(f"{what}: expected name=value, got {item!r}")
        k, v = item.split("=", 1)
        if k.strip() in out:
            raise InputError(f"{what}: {k.strip()!r} is given twice")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise InputError(f"{what}: {k.strip()!r} = {v!r} is not a number") from None
    return out


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "linearize", help="linear model of a plant or an FMU: poles, frequencies, damping; saves A, B, C, D",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="library plant name, model file (.py) or co-simulation FMU (.fmu)")
    p.add_argument("--at", default=None,
                   help="operating point: 'trim' (equilibrium for the inputs), 'hold:q=a,b,...' (the "
                        "inputs that hold this configuration at rest; also hold:NAME=VALUE,...), a time "
                        "in s (state reached from the initial state with constant inputs), or state=value,...")
    p.add_argument("--u", default=None, help="operating inputs, name=value,... (default: start values)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="plant parameter in SI units; repeatable (or name=value,...)")
    p.add_argument("--step", type=float, default=None,
                   help="FMU: communication step (s); plant: also report the ZOH model at this step")
    p.add_argument("--markov", type=int, default=80, help="FMU: pulse-response length in steps (ERA)")
    p.add_argument("--order", type=int, default=None, help="FMU: model order (default from the Hankel SVD)")
    p.add_argument("-o", "--output", default=None, help="npz file for A, B, C, D (default <name>_linear.npz)")
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    p.set_defaults(func=run)


def _output_path(args, name: str) -> Path:
    """The npz file to write (numpy appends ``.npz``); refuses an existing one without ``--force``."""
    out = Path(args.output or f"{name}_linear.npz")
    if out.suffix != ".npz":
        out = out.with_name(out.name + ".npz")
    if out.exists() and not args.force:
        raise InputError(f"{out} exists; not overwriting it (use --force, or -o to choose another file)")
    return out


def _fmu_start_time(at: str | None) -> float:
    """``--at`` for an FMU: only a time in s (ERA runs from a simulated point)."""
    if at is None:
        return 0.0
    try:
        return float(at)
    except ValueError:
        raise InputError(f"--at {at!r} is not available for an FMU: its linear model is identified (ERA) from "
                         "the state it reaches at a time; give --at TIME in s, or linearize the plant "
                         "(library name or model .py) for trim or state values") from None


def _print_operating_point(plant, lin, how: str) -> None:
    """The plant state and inputs of the operating point, one ``name = value unit`` line each
    (a value within :data:`POINT_ROUND_OFF` of the largest, or of 1, is round-off and shown as 0)."""
    print(f"operating point ({how}), t = {lin.t:g} s:")
    x0, u0 = np.asarray(lin.x0, float), np.asarray(lin.u0, float)
    for sig, value in zip(plant.states, _round_off_as_zero(x0)):
        print(f"  {sig.name:>24} = {value: .9g} {sig.unit}")
    for sig, value in zip(plant.inputs, _round_off_as_zero(u0)):
        print(f"  {sig.name:>24} = {value: .9g} {sig.unit} (input)")


#: relative size below which a printed operating-point value is round-off
POINT_ROUND_OFF = 1e-12


def _round_off_as_zero(values: np.ndarray) -> np.ndarray:
    """``values`` with entries below :data:`POINT_ROUND_OFF` times ``max(1, max|values|)`` set to 0."""
    scale = max(1.0, float(np.max(np.abs(values), initial=0.0)))
    return np.where(np.abs(values) <= POINT_ROUND_OFF * scale, 0.0, values)


def _warn_if_not_equilibrium(sys_lin) -> None:
    """Say on stderr when ``xdot0`` is not zero: the model is then about a moving point."""
    lin = sys_lin.linearization
    if not lin.is_equilibrium():
        xdot = np.asarray(lin.xdot0, float)
        k = int(np.argmax(np.abs(xdot)))
        print(f"warning: the operating point is not an equilibrium (d{sys_lin.state_labels[k]}/dt = "
              f"{xdot[k]:.3g}, largest of xdot0): the linear model holds near a moving point only; "
              "use --at trim for an equilibrium", file=sys.stderr)


def _hold_state(plant, text: str) -> dict:
    """``--at hold:...``: ``hold:`` (the initial pose), ``hold:q=a,b,c`` (the
    configuration, one value per coordinate) or ``hold:NAME=VALUE,...`` (states)."""
    rest = text.strip()[len("hold:"):].strip()
    if not rest:
        return {}
    if rest.startswith("q="):
        try:
            return {"q": [float(v) for v in rest[2:].split(",") if v.strip()]}
        except ValueError:
            raise InputError(f"--at {text!r}: q= takes numbers separated by commas (rad, m)") from None
    return {"state": _pairs(rest, "--at hold:")}


def _linearize_plant(args, plant=None):
    from ..plant.library import load_plant
    from .linearization import linearize
    if plant is None:
        plant = load_plant(args.target, **_pairs(args.param, "--param"))
    u = plant.default_inputs()
    for k, v in _pairs(args.u, "--u").items():
        u[plant.input_index(k)] = v
    at = args.at
    if at is None:
        return plant, linearize(plant, None, u)
    if at.strip().lower().startswith("hold:"):
        from .input_trim import trim_inputs
        held = trim_inputs(plant, **_hold_state(plant, at), u=u)
        print(held.report())
        if not held.success or held.residual > 1e-8 * (1.0 + float(np.abs(held.x).max())):
            print(f"warning: no inputs hold this state exactly (residual {held.residual:.3g}): the nearest in "
                  "least squares are used", file=sys.stderr)
        sys_lin = linearize(plant, held.x, held.u)
        _print_operating_point(plant, sys_lin.linearization, "held by the trim inputs")
        return plant, sys_lin
    if at.strip().lower() == "trim":
        sys_lin = linearize(plant, None, u, trim_state=True)
        _print_operating_point(plant, sys_lin.linearization, "trim")
        return plant, sys_lin
    try:
        t_at = float(at)
    except ValueError:
        if "=" not in at:
            import difflib
            close = difflib.get_close_matches(at.strip().lower(), ["trim"], n=1, cutoff=0.5)
            hint = "; did you mean 'trim'?" if close else ""
            raise InputError(f"--at {at!r}: give 'trim', 'hold:q=...', a time in s, or state=value,...{hint}") from None
        return plant, linearize(plant, _pairs(at, "--at"), u)
    step = args.step or plant.default_step
    n = max(1, int(round(t_at / step)))
    time, X, _ = plant.simulate(stop_time=n * step, step=step, u=u)
    sys_lin = linearize(plant, X[-1], u, t=float(time[-1]))
    _print_operating_point(plant, sys_lin.linearization, f"reached at t = {time[-1]:g} s with constant inputs")
    return plant, sys_lin


def _plant_model_words(lin) -> str:
    """How a plant's linear model was made, "exact" only when every block is."""
    exact = lin.method == "analytic" and lin.output_method in ("analytic", "none")
    why = next((n for n in lin.notes.split("; ") if n.startswith("no exact tangents")), "")
    return (f"plant's {'exact ' if exact else ''}linearization; {lin.method} Jacobians; outputs: {lin.output_method}"
            + (f" ({why})" if why else ""))


def run(args) -> int:
    import control
    target = args.target
    if target.lower().endswith(".fmu") and args.at and args.at.strip().lower().startswith("hold:"):
        from .fmu_model import plant_of_fmu  # an mbfmu FMU held at a pose: its plant's exact model
        out = _output_path(args, Path(target).stem)  # refuse before the work
        plant, lin_sys = _linearize_plant(args, plant_of_fmu(target))
        name, dt = plant.name, None
        _warn_if_not_equilibrium(lin_sys)
        lin = lin_sys.linearization
        info = f"model: {_plant_model_words(lin)} of the FMU's plant"
    elif target.lower().endswith(".fmu"):
        from ..cosim.fmi.fmu_defaults import input_start_values
        from .fmu_model import linearize_fmu
        t0 = _fmu_start_time(args.at)
        name = Path(target).stem
        out = _output_path(args, name)  # refuse before the (long) identification
        starts = input_start_values(target)
        ins = list(starts)
        starts.update(_pairs(args.u, "--u"))
        lin_sys = linearize_fmu(target, step=args.step, t0=t0, u0=[starts[n] for n in ins],
                                n_markov=args.markov, order=args.order)
        if hasattr(lin_sys.linearization, "is_equilibrium"):  # the plant's own (exact) model
            _warn_if_not_equilibrium(lin_sys)
        dt = lin_sys.dt
        info = f"model: {lin_sys.model_source}; {lin_sys.linearization.method} at t0 = {t0} s, step {lin_sys.dt} s"
    else:
        from ..plant.library import load_plant
        plant = load_plant(args.target, **_pairs(args.param, "--param"))
        out = _output_path(args, plant.name)  # refuse before the work (trim, linearization)
        plant, lin_sys = _linearize_plant(args, plant)
        name, dt = plant.name, None
        _warn_if_not_equilibrium(lin_sys)
        info = f"model: {_plant_model_words(lin_sys.linearization)}"
    print(f"{name}: {lin_sys.nstates} states, {lin_sys.ninputs} inputs, {lin_sys.noutputs} outputs ({info})")
    print("\n".join(modal_lines(lin_sys.poles(), dt)))
    extra = {}
    if dt is None and args.step:
        d = control.c2d(lin_sys, args.step, "zoh")
        extra = dict(Ad=d.A, Bd=d.B, Cd=d.C, Dd=d.D, step=args.step)
    lin = lin_sys.linearization
    np.savez(out, A=lin_sys.A, B=lin_sys.B, C=lin_sys.C, D=lin_sys.D, dt=0.0 if dt is None else dt,
             states=np.array(lin_sys.state_labels), inputs=np.array(lin_sys.input_labels),
             outputs=np.array(lin_sys.output_labels), u0=lin.u0, y0=lin.y0,
             x0=getattr(lin, "x0", np.zeros(0)), **extra)
    print(f"saved A, B, C, D to {out}")
    return 0
