"""``mbfmu linearize NAME|MODEL.py|FMU [--at ...]``: poles, natural
frequencies and damping of a plant (exact Jacobians) or of an FMU (ERA at the
communication step); saves A, B, C, D to an ``.npz`` file."""
from __future__ import annotations

import argparse
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


def _pairs(text: str | None, what: str) -> dict[str, float]:
    out = {}
    if not text:
        return out
    for item in text.split(","):
        if "=" not in item:
            raise InputError(f"{what}: expected name=value, got {item!r}")
        k, v = item.split("=", 1)
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
                   help="operating point: 'trim' (equilibrium for the inputs), a time in s (state "
                        "reached from the initial state with constant inputs), or state=value,...")
    p.add_argument("--u", default=None, help="operating inputs, name=value,... (default: start values)")
    p.add_argument("--param", default=None, help="plant parameters, name=value,...")
    p.add_argument("--step", type=float, default=None,
                   help="FMU: communication step (s); plant: also report the ZOH model at this step")
    p.add_argument("--markov", type=int, default=80, help="FMU: pulse-response length in steps (ERA)")
    p.add_argument("--order", type=int, default=None, help="FMU: model order (default from the Hankel SVD)")
    p.add_argument("-o", "--output", default=None, help="npz file for A, B, C, D (default <name>_linear.npz)")
    p.set_defaults(func=run)


def _linearize_plant(args):
    from ..library import load_plant
    from .linearization import linearize
    plant = load_plant(args.target, **_pairs(args.param, "--param"))
    u = plant.default_inputs()
    for k, v in _pairs(args.u, "--u").items():
        u[plant.input_index(k)] = v
    at = args.at
    if at is None:
        return plant, linearize(plant, None, u)
    if at.strip().lower() == "trim":
        return plant, linearize(plant, None, u, trim_state=True)
    try:
        t_at = float(at)
    except ValueError:
        return plant, linearize(plant, _pairs(at, "--at"), u)
    step = args.step or plant.default_step
    n = max(1, int(round(t_at / step)))
    time, X, _ = plant.simulate(stop_time=n * step, step=step, u=u)
    return plant, linearize(plant, X[-1], u, t=float(time[-1]))


def run(args) -> int:
    import control
    target = args.target
    if target.lower().endswith(".fmu"):
        from ..cosim.fmu_linearize import input_start_values
        from .fmu_model import linearize_fmu
        t0 = 0.0 if args.at is None else float(args.at)
        starts = input_start_values(target)
        ins = list(starts)
        starts.update(_pairs(args.u, "--u"))
        sys = linearize_fmu(target, step=args.step, t0=t0, u0=[starts[n] for n in ins],
                            n_markov=args.markov, order=args.order)
        name, dt, info = Path(target).stem, sys.dt, f"{sys.linearization.method} at t0 = {t0} s, step {sys.dt} s"
    else:
        plant, sys = _linearize_plant(args)
        name, dt = plant.name, None
        info = f"{sys.linearization.method} Jacobians; outputs: {sys.linearization.output_method}"
    print(f"{name}: {sys.nstates} states, {sys.ninputs} inputs, {sys.noutputs} outputs ({info})")
    print(f"{'pole':>34}  {'wn [rad/s]':>12}  {'fn [Hz]':>10}  {'zeta':>9}")
    for p, wn, fn, zeta in modal_table(sys.poles(), dt):
        print(f"{p.real:16.6g} {p.imag:+16.6g}j  {wn:12.6g}  {fn:10.6g}  {zeta:9.4g}")
    out = Path(args.output or f"{name}_linear.npz")
    extra = {}
    if dt is None and args.step:
        d = control.c2d(sys, args.step, "zoh")
        extra = dict(Ad=d.A, Bd=d.B, Cd=d.C, Dd=d.D, step=args.step)
    lin = sys.linearization
    np.savez(out, A=sys.A, B=sys.B, C=sys.C, D=sys.D, dt=0.0 if dt is None else dt,
             states=np.array(sys.state_labels), inputs=np.array(sys.input_labels),
             outputs=np.array(sys.output_labels), u0=lin.u0, y0=lin.y0,
             x0=getattr(lin, "x0", np.zeros(0)), **extra)
    print(f"saved A, B, C, D to {out}")
    return 0
