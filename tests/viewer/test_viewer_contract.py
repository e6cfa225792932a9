"""What a plant must give the viewer: ``check_plant`` accepts the toys, lists
every breach, and (once the plant library exists) every library plant passes
it and is drawn at the poses of its own forward kinematics."""
from __future__ import annotations

import numpy as np
import pytest
from viewer_toys import DoublePendulum, FlexibleArm, record

from mbfmu.errors import InputError
from mbfmu.plant import Shape
from mbfmu.viewer import Recording, check_plant


def test_toy_plants_meet_the_contract():
    check_plant(DoublePendulum())
    check_plant(FlexibleArm(), np.array([0.3, 0.1, 0, 0]))


class Broken(FlexibleArm):
    def poses(self, x):  # forgot the world row, and the rotation is a shear
        return np.array([[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]], float), np.zeros((1, 3))

    def beam_deflection(self, x, shape_index, s):
        return np.zeros(len(s))


def test_every_breach_of_the_contract_is_listed():
    b = Broken()
    b.geometry = b.geometry + (Shape(1, "box", (1.0, 2.0), name="flat"),)
    with pytest.raises(InputError) as err:
        check_plant(b)
    msg = str(err.value)
    for part in ("bodies [0] are not rotation", "row 0 must be the world", "geometry uses bodies [1]",
                 "returned shape (5,)", "('flat'): a box needs 3 positive sizes"):
        assert part in msg, part


def test_library_plants_are_drawn_at_their_forward_kinematics():
    from mbfmu.plant import library as lib
    names = [getattr(n, "name", n) for n in lib.list_plants()]
    assert len(names) >= 5
    rng = np.random.default_rng(3)
    for name in names:
        plant = lib.load_plant(name)
        if not plant.geometry:
            continue
        check_plant(plant)
        x0 = plant.initial_state()
        X = np.array([plant.normalize_state(x0 + 0.05 * k * rng.normal(size=x0.size)) for k in range(3)])
        t = np.array([0.0, 0.5, 1.0])
        rec = Recording(record(plant, t, X, prefix="u."), plant)
        for k in range(3):
            R_WB, p_WB = plant.poses(X[k])
            R_WS, p_WS, _, _ = rec.scene_at(t[k])
            for i, s in enumerate(plant.geometry):
                np.testing.assert_allclose(p_WS[i], R_WB[s.body] @ s.p + p_WB[s.body], atol=1e-9,
                                           err_msg=f"{name}: shape {i}")
                np.testing.assert_allclose(R_WS[i], R_WB[s.body] @ s.R, atol=1e-9)
