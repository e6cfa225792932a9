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
    """'Exact' only where the A, B rows come from the analytic derivatives (the C
    tangents, #33: all three now): checked against an independent central
    difference of the plant's derivatives in the linear model's chart (the
    dynamics rows; a quaternion chart's configuration rows are its kinematics)."""
    from mbfmu.control.linearization import linearize
    from mbfmu.fmu.native.model_exchange import continuous_states
    plant = load_plant(name)
    text = plant_pages._linearization_text(plant)
    sys_ = linearize(plant)
    assert f"A and B by {sys_.linearization.method}:" in text
    exact = sys_.linearization.method == "analytic"
    assert ("exact, from the analytic derivatives" in text) == exact
    assert exact
    lin, u0 = sys_.linearization, plant.default_inputs()
    tangent = lin.tangent
    nq, r0 = (plant.model.nq, plant.model.nv) if tangent else (0, 0)
    nxc = continuous_states(plant)
    nzc = sys_.nstates - (len(plant.states) - nxc)  # the latch flags are discrete

    def f(z):
        return plant.derivatives(0.0, lin.to_state(np.r_[z, np.zeros(sys_.nstates - nzc)]), u0)[nq:nxc]
    h = 1e-6
    fd = np.column_stack([(f(h * e) - f(-h * e)) / (2 * h) for e in np.eye(nzc)])
    np.testing.assert_allclose(sys_.A[r0:r0 + nxc - nq, :nzc], fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))
