"""The README's "Blocks and vector connections" example, run as written."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from mbfmu.fmu import build_fmu

REPO = Path(__file__).resolve().parents[2]


def _readme_block(section: str) -> str:
    text = (REPO / "README.md").read_text()
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", body, re.S).group(1)


def test_readme_blocks_example_reaches_its_set_point(tmp_path, monkeypatch):
    """The PD loop of the README, run on the rigid arm's FMU, ends at its
    set-point (within 1e-3 rad, at rest) without touching the ±300 N.m
    limit, holding the arm with the gravity torque; ``print(system)`` names
    the units and the vector connections."""
    build_fmu("rigid_arm", tmp_path / "fmus" / "rigid_arm.fmu", platforms=["linux64"])
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_readme_block("Blocks and vector connections"), "README.md", "exec"), scope)
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("System(7 units: arm (FmuUnit), err (Sum)") and "arm.q -> err.q" in printed[0]
    assert " at 0x" not in printed[0] and len(printed[0]) < 400
    r, ref = scope["result"], scope["ref"]
    final = np.array([r[f"arm.q[{i}]"][-1] for i in (1, 2, 3)])
    np.testing.assert_allclose(final, ref, atol=1e-3)
    np.testing.assert_allclose([r[f"arm.v[{i}]"][-1] for i in (1, 2, 3)], 0.0, atol=1e-3)
    assert max(np.max(np.abs(r[f"lim.y[{i}]"])) for i in (1, 2, 3)) < 300.0
    # at rest the torque is the one that holds the arm against gravity: the plant's potential energy gradient
    plant = scope["mbfmu"].load_plant("rigid_arm")
    h = 1e-6
    grad = [(_potential(plant, final + h * e) - _potential(plant, final - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose([r[f"lim.y[{i}]"][-1] for i in (1, 2, 3)], grad, atol=0.5)
    assert eval(printed[1]) == [round(x, 4) for x in ref]


def _potential(plant, q) -> float:
    """The plant's gravitational potential energy [J] at joint angles ``q`` (rad)."""
    y = plant.outputs_at(0.0, np.concatenate([q, np.zeros(len(q))]), np.zeros(len(plant.inputs)))
    return float(y[plant.output_index("potential_energy")])
