"""The validation figure of a plant page, computed while the page is built.

Two checks that are cheap and independent of the plant's own integrator:

* agreement: the plant's compiled ``advance`` (the integrator its FMU runs)
  against SciPy's ``solve_ivp`` (DOP853, tight tolerances) of the same
  ``plant.derivatives``, from the same initial state and inputs;
* a conservation law where the plant has one without input: the total
  energy of a frictionless mechanism under zero torque, the angular and
  linear momentum of a free-floating body under zero external force.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import matplotlib.pyplot as plt


@dataclass(frozen=True)
class Check:
    """What one plant's validation runs."""

    time: float = 2.0                                        #: length of the run, s
    inputs: dict[str, float] = field(default_factory=dict)   #: constant inputs (SI), others at their start
    conserved: tuple[str, ...] = ()                          #: outputs (or "energy") that must stay constant
    why: str = ""                                            #: sentence: why they are conserved
    states: tuple[str, ...] = ()                             #: base names of the compared states (default all)


CHECKS = {
    "rigid_arm": Check(conserved=("energy",),
                       why="The joints are frictionless and the torques zero, so kinetic plus potential "
                           "energy is conserved."),
    "satellite": Check(conserved=("angular_momentum", "linear_momentum"),
                       why="Nothing outside acts on the free-floating satellite with the wheel torques at "
                           "zero: its angular and linear momentum are conserved while the wings swing, "
                           "damp and latch."),
    "flexible_arm": Check(inputs={"tau[1]": 2.0, "tau[2]": 0.5}),
    "canonical_2body": Check(),
    # the HIC states are a running record kept by ``advance``, not an ODE: only the motion is compared
    "crash_occupant": Check(time=0.2, states=("q", "v"),
                            why="The seat, floor and belt contacts make this plant's right-hand side "
                                "non-smooth; the difference shown is what remains between the two "
                                "integrators over this run."),
}

RTOL, ATOL = 1e-10, 1e-12


def _series(plant, Y: np.ndarray, name: str) -> np.ndarray:
    """Output ``name`` (a vector base name gives all its elements; ``energy``: kinetic + potential)."""
    names = [s.name for s in plant.outputs]
    if name == "energy":
        return (Y[:, names.index("kinetic_energy")] + Y[:, names.index("potential_energy")])[:, None]
    cols = [i for i, n in enumerate(names) if n == name or n.startswith(name + "[")]
    return Y[:, cols]


def _unit(plant, name: str) -> str:
    base = "kinetic_energy" if name == "energy" else name
    return next(s.unit for s in plant.outputs if s.name == base or s.name.startswith(base + "["))


def validation_figure(plant, path: Path) -> str:
    """Draw the validation figure of ``plant`` into ``path``; return its caption (rst)."""
    check = CHECKS.get(plant.name, Check())
    h = plant.default_step
    n = max(1, int(round(check.time / h)))
    u = plant.default_inputs()
    for k, v in check.inputs.items():
        u[[s.name for s in plant.inputs].index(k)] = v
    t, X, Y = plant.simulate(stop_time=n * h, step=h, u=u)
    ref = solve_ivp(lambda tt, x: plant.derivatives(tt, x, u), (t[0], t[-1]), plant.initial_state(),
                    method="DOP853", rtol=RTOL, atol=ATOL, t_eval=t)
    if not ref.success:
        raise RuntimeError(f"{plant.name}: solve_ivp failed: {ref.message}")
    keep = [i for i, st in enumerate(plant.states) if not check.states or st.name.split("[")[0] in check.states]
    Xr = ref.y.T[:, keep]
    err = (np.abs(X[:, keep] - Xr) / np.maximum(np.abs(Xr).max(axis=0), 1.0)).max(axis=1)

    panels = 1 + bool(check.conserved)
    fig, axes = plt.subplots(1, panels, figsize=(3.6 * panels + 0.5, 3.0), layout="constrained", squeeze=False)
    ax = axes[0, 0]
    ax.semilogy(t[1:], np.maximum(err[1:], 1e-17))
    ax.set(xlabel="time [s]", ylabel="max |x - x_ref| / max(|x_ref|, 1)",
           title="advance vs solve_ivp")
    ax.grid(True, alpha=0.3, which="both")
    which = "the states" if not check.states else "the states " + ", ".join(f"``{b}``" for b in check.states)
    caption = (f"Left: the largest difference over {which} between the plant's own step "
               f"(``advance``, step {h:g} s) and SciPy's ``solve_ivp`` (DOP853, rtol {RTOL:g}) of the same "
               f"``plant.derivatives``, over {n * h:g} s")
    caption += (" with " + ", ".join(f"``{k}`` = {v:g}" for k, v in check.inputs.items()) if check.inputs
                else " with the inputs at their start values")
    caption += f"; each state is scaled by its largest value (at least 1 in its SI unit). Largest: {err.max():.1e}."
    if check.conserved:
        ax = axes[0, 1]
        for name in check.conserved:
            series = _series(plant, Y, name)
            drift = np.linalg.norm(series - series[0], axis=1)
            unit = _unit(plant, name)
            ax.semilogy(t[1:], np.maximum(drift[1:], 1e-20), label=f"{name} [{unit}]")
            caption += (f" Right: the change of ``{name}`` from its initial value (norm, {unit}), largest "
                        f"{drift.max():.1e} against a largest value of {float(np.abs(series).max()):.3g}.")
        ax.set(xlabel="time [s]", ylabel="|c(t) - c(0)|", title="conserved quantities")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3, which="both")
    if check.why:
        caption += " " + check.why
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return caption
