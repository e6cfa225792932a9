"""mbfmu analyze SYSTEM.ssp --open SRC->DST [--at TIME] [--sampled]: the loop
of a co-simulation system broken at a connection: gain, phase, delay and disk
margins printed, Bode and Nyquist plots of the loop gain saved.

Each unit's linear model is its plant's exact one for FMUs built by mbfmu (an
exported controller FMU: its own matrices), ERA for other FMUs. With
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
    p.set_defaults(func=run)


def run(args) -> int:
    from ..cosim.ssp import read_ssp
    from .system_linearization import loop_analysis
    path = Path(args.system)
    if path.suffix.lower() not in (".ssp", ".ssd"):
        raise InputError(f"{args.system!r}: give an SSP system (.ssp or .ssd)")
    system = read_ssp(path)
    la = loop_analysis(system, args.open_at, args.at, sampled=args.sampled, step=args.step)
    kind = f"sampled at {la.L.dt} s" if args.sampled else "continuous"
    print(f"loop gain at {', '.join(args.open_at)} ({kind}, operating point t = {args.at:g} s): "
          f"{la.L.nstates} states")
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
    else:
        print(f"  L has {la.L.ninputs} inputs and {la.L.noutputs} outputs: margins are for one loop; "
              "break one element (--open a.y[k]->b.u[k])")
    out = Path(args.output or f"{path.stem}_loop.png")
    import matplotlib
    matplotlib.use("Agg")
    la.plot(out)
    print(f"saved the Bode and Nyquist plots to {out}")
    return 0
