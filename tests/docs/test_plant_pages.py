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
