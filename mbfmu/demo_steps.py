"""The steps of ``mbfmu demo``, in order: build every plant FMU, run the
rigid-arm computed-torque and the canonical-variables studies, then the
flexible-arm and satellite closed-loop studies with the plant FMUs in the
co-simulation master, each writing plots, results and an HTML replay.

The studies live in the ``examples/`` folder of a clone (they are meant to be
read and changed by users); the demo runs them from there.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

from .errors import MbfmuError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _study(name: str):
    if not (EXAMPLES / f"{name}.py").is_file():
        raise MbfmuError(f"the demo runs the studies in {EXAMPLES}, which is not there: run it from a clone "
                         "of the repository (make demo)")
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def build_fmus(out: Path, fmus: Path) -> None:
    """Build every plant of the library as an FMI 2.0 co-simulation FMU and validate it."""
    from .cosim.fmi.fmu_unit import validate
    from .fmu import build_fmu
    from .plant.library import list_plants

    for name in list_plants():
        path = build_fmu(name, fmus, overwrite=True)  # the demo's own folder, rebuilt each run
        problems = validate(path)
        status = "valid" if not problems else f"{len(problems)} problems: {problems[0]}"
        print(f"   {path} ({path.stat().st_size / 1024:.0f} kB): {status}")


def settling_text(times: dict[str, float | None], stop_time: float) -> str:
    """``"joint1 settles in 0.83 s, joint2 does not settle within the 2 s run"``.

    Parameters
    ----------
    times : dict
        Settling time [s] per name, None for a response that has not settled.
    stop_time : float
        Length of the run [s].

    Returns
    -------
    str
        One phrase per name, comma-separated.
    """
    return ", ".join(f"{name} does not settle within the {stop_time:g} s run" if t is None
                     else f"{name} settles in {t:.2f} s" for name, t in times.items())


def rigid_arm(out: Path, fmus: Path) -> None:
    """Rigid arm: computed-torque tracking, continuous (Euler) against sampled controllers."""
    summary = _study("rigid_arm_study").run(out / "rigid_arm")
    for name, s in summary.items():
        if not name.startswith("_"):
            print(f"   {name:>16}: largest tool-tip error {s['max_tip_error_mm']:.2f} mm")
    print(f"   plots, results and replay in {out / 'rigid_arm'}")


def canonical_2body(out: Path, fmus: Path) -> None:
    """Turning arm and slider in canonical variables: spin-up, small step against the linear model."""
    summary = _study("canonical_2body_study").run(out / "canonical_2body")
    for run in ("spin_up", "small_step"):
        s = summary[run]
        print(f"   {run:>10}: turning rate settles in {s['settling_time_gamma1_dot_s']:.2f} s "
              f"(overshoot {s['overshoot_gamma1_dot_percent']:.1f} %), slider in {s['settling_time_y2_s']:.2f} s")
    print(f"   plots, results and replay in {out / 'canonical_2body'}")


def flexible_arm(out: Path, fmus: Path) -> None:
    """Flexible arm: LQG on the flexible model vs PD on the rigid model (plant FMU in the master)."""
    stop_time = 2.0
    summary = _study("flexible_arm_study").run(out / "flexible_arm", stop_time=stop_time)
    for label in ("rigid_pd", "lqg"):
        s = summary[label]
        settle_txt = settling_text({j: s[j]["settling_time_s"] for j in ("joint1", "joint2")}, stop_time)
        print(f"   {label:>8}: {settle_txt}; residual tip vibration "
              f"{s['residual_vibration_mm']:.2f} mm; peak tip deflection {s['peak_tip_deflection_mm']:.1f} mm")
    print(f"   plots, results and replays in {out / 'flexible_arm'}")


def satellite(out: Path, fmus: Path) -> None:
    """Satellite: attitude hold through panel deployment and a slew with reaction wheels (plant FMU in the master)."""
    summary = _study("satellite_study").run(out / "satellite", python_check=True, frozen=False,
                                            during_deployment=False)
    print(f"   every figure of the study in {out / 'satellite' / 'summary.json'}")
    for key in ("step_deployed", "deploy_then_slew", "python_plant_check"):
        if key in summary:
            items = {k: v for k, v in summary[key].items() if isinstance(v, (int, float))}
            shown = ", ".join(f"{k} = {v:.3g}" for k, v in list(items.items())[:6])
            print(f"   {key}: {shown}")
    print(f"   plots, results and replay in {out / 'satellite'}")


STEPS = [build_fmus, rigid_arm, canonical_2body, flexible_arm, satellite]
