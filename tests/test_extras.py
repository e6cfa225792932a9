"""Optional extras: a feature whose package is not installed fails in one line
naming the ``pip install 'mbfmu[...]'`` that brings it, and each extra of
pyproject.toml declares the packages those messages promise.

A missing package is simulated with ``None`` in ``sys.modules`` (then
``import`` raises ImportError, as without the package)."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import control
import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.cosim import ControlUnit, System, simulate, sources
from mbfmu.errors import EXTRA_OF, MbfmuError, MissingExtra
from mbfmu.studies import sweep

REPO = Path(__file__).resolve().parents[1]


def _block(monkeypatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def _one_line(exc: BaseException, extra: str) -> str:
    text = str(exc)
    assert "\n" not in text and f"pip install 'mbfmu[{extra}]'" in text, text
    assert isinstance(exc, MbfmuError) and isinstance(exc, ImportError)
    return text


def _lag_system(gain: float = 1.0) -> System:
    """A first-order lag y' = 2 (gain u - y) driven by a unit step."""
    lag = ControlUnit("lag", control.ss(-2.0, 2.0 * gain, 1.0, 0.0, inputs="u", outputs="y", states="x"))
    return System([lag, sources.step("ref", 0.0)], [("ref.y", "lag.u")])


def test_every_extra_package_is_declared_in_the_extra_its_message_names():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    declared = {name: {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in deps}
                for name, deps in extras.items()}
    for module, extra in EXTRA_OF.items():
        dist = {"collada": "pycollada", "fast_simplification": "fast-simplification",
                "example_robot_data": "example-robot-data"}.get(module, module)
        assert dist in declared[extra], (module, extra, declared[extra])
        assert dist not in {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    # `all` brings every extra, and the test set-up (make test) all of them
    assert extras["all"] == ["mbfmu[dask,urdf,pandas]"] and "mbfmu[all]" in extras["test"]


def test_a_dask_sweep_without_the_extra_names_mbfmu_dask_in_one_line(monkeypatch, capsys):
    _block(monkeypatch, "distributed", "dask")
    with pytest.raises(MissingExtra) as err:
        sweep(_lag_system, {"gain": [1.0, 2.0]}, stop_time=0.1, step=0.05, executor="dask://127.0.0.1:1",
              progress=False)
    assert "Dask executor" in _one_line(err.value, "dask")
    with pytest.raises(MissingExtra) as err:
        sweep(_lag_system, {"gain": [1.0, 2.0]}, stop_time=0.1, step=0.05, executor="dask-local", progress=False)
    _one_line(err.value, "dask")


def test_the_sweep_command_with_a_scheduler_without_the_extra_names_it_in_one_line(monkeypatch, capsys):
    _block(monkeypatch, "distributed", "dask")
    assert main(["sweep", "rigid_arm", "--param", "arm_mass=10,20", "--stop-time", "0.02", "--step", "0.01",
                 "--no-progress", "--scheduler", "127.0.0.1:1"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'mbfmu[dask]'" in err, err


def test_to_dataframe_without_pandas_names_mbfmu_pandas_in_one_line(monkeypatch):
    result = simulate(_lag_system(), 0.2, 0.1)
    np.testing.assert_allclose(result["lag.y"][-1], 1 - np.exp(-2 * 0.2), atol=1e-12)  # a real run
    study = sweep(_lag_system, {"gain": [1.0, 2.0]}, stop_time=0.1, step=0.05, executor="serial", progress=False)
    _block(monkeypatch, "pandas")
    with pytest.raises(MissingExtra) as err:
        result.to_dataframe()
    assert "Result.to_dataframe" in _one_line(err.value, "pandas")
    with pytest.raises(MissingExtra) as err:
        study.to_dataframe()
    _one_line(err.value, "pandas")


def test_urdf_meshes_without_the_extra_name_mbfmu_urdf_in_one_line(monkeypatch, tmp_path):
    from mbfmu.plant.urdf_files import mesh_parts
    from mbfmu.plant.urdf_visuals import decimate
    stl = tmp_path / "box.stl"
    stl.write_text("solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
                   "endloop\nendfacet\nendsolid s\n")
    assert len(mesh_parts(stl)[0][1]) == 1  # with the extra: one triangle
    _block(monkeypatch, "trimesh", "fast_simplification")
    with pytest.raises(MissingExtra) as err:
        mesh_parts(stl)
    assert "meshes" in _one_line(err.value, "urdf")
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], float)
    F = np.array([[0, 1, 2], [1, 3, 2]])
    with pytest.raises(MissingExtra) as err:
        decimate(V, F, 1)
    _one_line(err.value, "urdf")


def test_the_extra_packages_are_imported_only_through_require_extra():
    """A plain ``import pandas`` in the package would skip the one-line message."""
    import ast
    found = []
    for path in [*(REPO / "mbfmu").rglob("*.py"), *(REPO / "models").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            found += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names if n.split(".")[0] in EXTRA_OF]
    assert not found, found
