"""Spin-up of a cantilever on a hub (Kane, Ryan & Banerjee 1987).

Writes the tip's transverse deflection in the hub frame over time, with the
assumed-modes beam of mbfmu (geometric stiffening on unless ``--linear``),
the finite-segment chain (``--method segments``) or the beam of chained
floating-frame sub-beams (``--method subbeams``, ``--subbeams`` of them with
``--modes`` tip-loaded modes each, default 4 x 2), which is geometrically
exact in the limit. The beam is KRB's (L = 8 m, EI = 566.7 N m^2,
rho A = 0.2019 kg/m) unless ``--beam simo-vu-quoc`` (L = 10 m, EI = 14 000
N m^2, rho A = 1.2 kg/m).

Accuracy (KRB beam, against a geometrically exact ANCF reference: peaks
-0.5336 m at 4 rad/s, -1.0831 m at 10 rad/s): the modal beam overshoots the
peak by 0.5 % at 4 rad/s and 2.6 % at 10 rad/s whatever the mode count (its
kinematics is second-order in the deflection); the segment chain is exact in
the limit, its error falling as 1/n^2 (10 segments: -0.7 % and -1.4 %); 4
sub-beams x 2 modes are within 0.1 % at 10 rad/s.

    python examples/spinup_beam.py --omega 4 --csv spinup_4.csv
    python examples/spinup_beam.py --omega 10 --linear --t-final 10 --csv lin.csv
    python examples/spinup_beam.py --omega 10 --csv nl.csv --plot spinup_10.png --compare
    python examples/spinup_beam.py --omega 10 --method subbeams --csv exact.csv

CSV columns: ``time`` (s), ``tip_deflection`` (m). ``--plot`` draws the
history (PNG); with ``--compare`` the plot also shows the same beam without
geometric stiffening, whose spurious divergence is the point of the benchmark.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from mbfmu.dynamics.flexible.spinup import BEAMS, run_spinup
from mbfmu.example_cli import example_parser


def plot_history(path: str, omega: float, run, stiffening: bool, other=None,
                 stop_above: float | None = None, beam: str = "krb") -> None:
    """Tip deflection (m) against time (s) into a PNG; ``other`` is the run
    with the opposite stiffening setting, stopped once its deflection passed
    ``stop_above`` m (drawn past the plot's range so that the bounded history
    stays readable)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    label = {True: "with geometric stiffening", False: "without (linear floating frame)"}
    fig, ax = plt.subplots(figsize=(7, 4))
    t, d = run
    ax.plot(t, d, label=label[stiffening], color="C0")
    lim = 2.0 * max(np.max(np.abs(d)), 1e-6)
    if other is not None:
        ax.plot(other[0], other[1], label=label[not stiffening], color="C3", ls="--")
        if stop_above is not None and other[0][-1] < t[-1] - 1e-9:
            ax.annotate(f"|deflection| > {stop_above:.2g} m at t = {other[0][-1]:.1f} s", xy=(other[0][-1], 0),
                        xytext=(5, 10), textcoords="offset points", color="C3")
        ax.set_ylim(-lim, lim)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("tip deflection in the hub frame (m)")
    ax.set_title(f"Spin-up beam ({beam}), Omega_s = {omega:g} rad/s over 15 s")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = example_parser(__doc__, ".")  # --output DIR: where --csv and --plot go
    ap.add_argument("--omega", type=float, required=True, help="final spin rate Omega_s, rad/s")
    ap.add_argument("--csv", required=True, help="output CSV file (inside --output)")
    ap.add_argument("--t-final", type=float, default=20.0, help="simulated time, s (default 20)")
    ap.add_argument("--modes", type=int, default=None,
                    help="bending modes (default 4; per sub-beam with --method subbeams: default 2)")
    ap.add_argument("--method", choices=("modes", "segments", "subbeams"), default="modes",
                    help="modes: one assumed-modes beam; segments: rigid segments (at least 10); "
                         "subbeams: chained floating-frame sub-beams")
    ap.add_argument("--subbeams", type=int, default=4, help="sub-beams of --method subbeams (default 4)")
    ap.add_argument("--beam", choices=sorted(BEAMS), default="krb",
                    help="krb: Kane, Ryan & Banerjee 1987 (default); simo-vu-quoc: Simo & Vu-Quoc 1988")
    ap.add_argument("--linear", action="store_true", help="switch geometric stiffening off")
    ap.add_argument("--dt", type=float, default=0.01, help="output interval, s")
    ap.add_argument("--plot", help="also draw the history into this PNG (inside --output)")
    ap.add_argument("--compare", action="store_true",
                    help="with --plot: add the model with the other stiffening setting")
    args = ap.parse_args(argv)
    if not args.omega > 0 or not args.t_final > 0:
        ap.error("--omega and --t-final must be > 0")
    if (args.modes is not None and args.modes < 1) or args.subbeams < 1:
        ap.error("--modes and --subbeams must be >= 1")
    Path(args.output).mkdir(parents=True, exist_ok=True)
    args.csv = str(Path(args.output) / args.csv)
    args.plot = args.plot and str(Path(args.output) / args.plot)
    modes = args.modes or (2 if args.method == "subbeams" else 4)
    n = {"modes": modes, "segments": max(modes, 10), "subbeams": args.subbeams}[args.method]
    # the compiled error-controlled integrator for the stiffer chains, scipy's DOP853 for one beam
    kw = dict(method=args.method, n=n, dt_out=args.dt, rtol=1e-7, atol=1e-9, beam=args.beam,
              subbeam_modes=modes, integrator="DOP853" if args.method == "modes" else "DP54")
    t, d = run_spinup(args.omega, args.t_final, stiffening=not args.linear, **kw)
    np.savetxt(args.csv, np.column_stack([t, d]), delimiter=",", header="time,tip_deflection",
               comments="", fmt="%.9g")
    if args.plot:
        other = bound = None
        if args.compare:
            bound = 4.0 * max(float(np.max(np.abs(d))), 1e-3)  # stop a diverging run past the plot
            kw["integrator"] = "DOP853"  # stop_above needs scipy's events
            other = run_spinup(args.omega, args.t_final, stiffening=args.linear, stop_above=bound, **kw)
        plot_history(args.plot, args.omega, (t, d), not args.linear, other, bound, args.beam)
    print(f"peak tip deflection {d[np.argmax(np.abs(d))]:.4f} m at t = {t[np.argmax(np.abs(d))]:.2f} s; "
          f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
