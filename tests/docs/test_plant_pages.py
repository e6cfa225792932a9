"""Each plant page's response shows motion: the flexible arm moves in a horizontal
plane, so its response at the inputs' start values (zero torque) was a flat line."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import plant_pages  # noqa: E402

from mbfmu.plant.library import list_plants, load_plant  # noqa: E402


@pytest.mark.parametrize("name", list_plants())
def test_the_response_on_each_plant_page_moves(name):
    plant = load_plant(name)
    time, X, _ = plant_pages._free_run(plant)
    coords = [i for i, s in enumerate(plant.states) if s.name.startswith("q[")]  # positions (m, rad, 1)
    assert coords, name
    motion = np.abs(X[:, coords] - X[0, coords]).max()
    assert motion > 1e-3, f"{name}: the page's response moves its coordinates by {motion:.2g} only"


@pytest.mark.parametrize("name", ["rigid_arm", "flexible_arm", "satellite"])
def test_each_plant_page_says_how_its_linearization_is_obtained(name):
    """'Exact' only where the A, B rows come from the analytic derivatives:
    checked against an independent central difference of the plant's
    derivatives (agreement to FD accuracy, not to rounding, for the others)."""
    from mbfmu.control.linearization import linearize
    plant = load_plant(name)
    text = plant_pages._linearization_text(plant)
    sys_ = linearize(plant)
    assert f"A and B by {sys_.linearization.method}:" in text
    exact = sys_.linearization.method == "analytic"
    assert ("exact, from the analytic derivatives" in text) == exact
    assert exact == (name == "rigid_arm")
    if exact:
        x0, u0 = plant.initial_state(), plant.default_inputs()
        h = 1e-6
        fd = np.column_stack([(plant.derivatives(0.0, x0 + h * e, u0) - plant.derivatives(0.0, x0 - h * e, u0)) / (2 * h)
                              for e in np.eye(x0.size)])
        np.testing.assert_allclose(sys_.A, fd, rtol=1e-6, atol=1e-6)
