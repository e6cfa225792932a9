"""mbfmu analyze SYSTEM.ssp --open SRC->DST [--at TIME] [--sampled]: the loop
of a co-simulation system broken at a connection: gain, phase, delay and disk
margins printed (the worst of every gain and phase crossover, each crossover
listed and checked to |L| = 1 or phase -180 deg within 1e-6, and the disk
margins), the closed-loop stability verdict (eigenvalues, checked by a linear
simulation and a short co-simulation from a small pulse), Bode and Nyquist
plots of the loop gain saved; --json FILE stores all of it.

Each unit's linear model is the best available, and the output says which:
an FMU's own directional derivatives when they pass a check against central
differences (mbfmu's native FMUs), else its plant's exact linearization
(FMUs built by mbfmu; an exported controller FMU: its own matrices), else
ERA with its validated fit. With
--sampled the loop is the discrete one the master runs at the step (Jacobi,
zero-order hold); without, the continuous ideal.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..errors import InputError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "analyze", help="margins and loop plots of a co-simulation system broken at a connection",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("system", help="SSP system (.ssp archive or .ssd file)")
    p.add_argument("--open", dest="open_at", action="append", required=True, metavar="SRC->DST",
                   help="connection 'unit.output->unit.input' where the loop is broken (a whole vector allowed)")
    p.add_argument("--at", type=float, default=0.0, help="time of the operating point in a run, s (default 0)")
    p.add_argument("--step", type=float, default=None, help="macro step, s (default the system's)")
    p.add_argument("--sampled", action="store_true", help="the discrete loop of the master at the step")
    p.add_argument("-o", "--output", default=None, help="plot file (default <system>_loop.png)")
    p.add_argument("--json", default=None, metavar="FILE", help="store the margins, crossovers and verdict (JSON)")
    p.add_argument("--no-cosim", action="store_true", help="skip the co-simulation check of the verdict")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..cosim.ssp.read_write import read_ssp
    from .system_linearization import loop_analysis
    path = Path(args.system)
    if path.suffix.lower() not in (".ssp", ".ssd"):
        raise InputError(f"{args.system!r}: give an SSP system (.ssp or .ssd)")
    system = read_ssp(path)
    la = loop_analysis(system, args.open_at, args.at, sampled=args.sampled, step=args.step)
    kind = f"sampled at {la.L.dt} s" if args.sampled else "continuous"
    print(f"loop gain at {', '.join(args.open_at)} ({kind}, operating point t = {args.at:g} s): "
          f"{la.L.nstates} states")
    for name, source in la.unit_models.items():
        print(f"  model of {name}: {source}")
    record: dict = {"loop": args.open_at, "sampled": bool(args.sampled), "operating_time_s": args.at,
                    "states": la.L.nstates, "unit_models": la.unit_models}
    if la.siso:
        m = la.margins()
        rows = [("gain margin", m["gain_margin"], "", m["phase_crossover"]),
                ("phase margin", m["phase_margin"], "deg", m["gain_crossover"]),
                ("delay margin", m["delay_margin"], "s", math.nan),
                ("disk margin (alpha)", m["disk_margin"], "", math.nan),
                ("disk gain margin", m["disk_gain_margin"], "", math.nan),
                ("disk phase margin", m["disk_phase_margin"], "deg", math.nan)]
        for name, value, unit, w in rows:
            at_w = f"  at {w:.6g} rad/s" if math.isfinite(w) else ""
            print(f"  {name:>20} = {value:.6g} {unit}".rstrip() + at_w)
        if m["delay_margin_steps"] is not None:
            print(f"  {'':>20}   ({m['delay_margin_steps']} whole steps of extra delay tolerated)")
        crossings = la.crossovers()
        print("  crossovers (the headline margins above are the worst of these):")
        for line in crossings.table().splitlines():
            print(f"    {line}")
        for note in m["notes"]:
            print(f"  NOTE: {note}")
        record["margins"] = {k: v for k, v in m.items() if k not in ("gain_crossovers", "phase_crossovers")}
        record["gain_crossovers"] = [dict(vars(c), phase_margin_deg=c.phase_margin_deg) for c in m["gain_crossovers"]]
        record["phase_crossovers"] = [dict(vars(c), gain_margin_db=c.gain_margin_db) for c in m["phase_crossovers"]]
    else:
        print(f"  L has {la.L.ninputs} inputs and {la.L.noutputs} outputs: margins are for one loop; "
              "break one element (--open a.y[k]->b.u[k])")
    verdict = la.verdict(cosim=not args.no_cosim)
    for line in verdict.summary().splitlines():
        print(f"  {line}")
    if not verdict.checked:
        print("  WARNING: the stability verdict is contradicted by a simulation" +
              (f"; in doubt: {', '.join(verdict.doubtful_units)}" if verdict.doubtful_units else ""))
    record["verdict"] = {"stable": verdict.stable, "pole_figure": verdict.pole_figure,
                         "linear_check": verdict.linear_check, "cosim_check": verdict.cosim_check,
                         "doubtful_units": verdict.doubtful_units, "notes": verdict.notes}
    if args.json:
        import json
        Path(args.json).write_text(json.dumps(_plain(record), indent=1, allow_nan=False) + "\n")
        print(f"saved the margins, crossovers and verdict to {args.json}")
    out = Path(args.output or f"{path.stem}_loop.png")
    import matplotlib
    matplotlib.use("Agg")
    la.plot(out)
    print(f"saved the Bode and Nyquist plots to {out}")
    return 0


def _plain(value):
    """Standard JSON: numpy scalars as numbers, infinite values as "inf"/"-inf", NaN as null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
