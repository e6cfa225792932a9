"""The steps of ``mbfmu demo``, in order."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def pendulum_energy(out: Path, fmus: Path) -> None:
    """Simulate a free 10-link pendulum (compiled RK4) and plot its energy balance."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .dynamics import ModelBuilder, Revolute, _kernels, kinetic_energy, potential_energy
    from .dynamics.spatial import inertia_cylinder

    b = ModelBuilder()
    for k in range(1, 11):
        b.add_body(f"link{k}", k - 1, Revolute(axis=(0, 1, 0)), 1.0, (0, 0, -0.25),
                   inertia_cylinder(1.0, 0.02, 0.5), p_PJ=(0, 0, -0.5 if k > 1 else 0))
    model = b.build()
    q, v = np.linspace(0.2, 1.0, 10), np.zeros(10)
    h, n_out, sub = 1e-3, 1000, 10
    t = np.arange(n_out + 1) * h * sub
    E = np.empty(n_out + 1)
    E[0] = kinetic_energy(model, q, v) + potential_energy(model, q)
    for k in range(n_out):
        q, v = _kernels.rk4(model._h, q, v, np.zeros(10), h, sub)
        E[k + 1] = kinetic_energy(model, q, v) + potential_energy(model, q)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(t, (E - E[0]) / abs(E[0]))
    ax.set_xlabel("time [s]")
    ax.set_ylabel("relative energy error [1]")
    ax.set_title("10-link pendulum, RK4 at 1 ms: energy balance")
    fig.tight_layout()
    fig.savefig(out / "pendulum_energy.png", dpi=120)
    plt.close(fig)
    np.savez(out / "pendulum.npz", time=t, energy=E)
    print(f"   max relative energy error over 10 s: {np.max(np.abs(E - E[0])) / abs(E[0]):.2e}")


STEPS = [pendulum_energy]
