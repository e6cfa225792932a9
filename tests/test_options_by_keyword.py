"""Options are data given by name: no options object of mbfmu is built with
positional arguments (a reordered field would silently swap two values), and
the entry points with many options take them by keyword only."""
from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

import mbfmu
from mbfmu.cosim import SimulationOptions, simulate
from mbfmu.fmu import build_fmu
from mbfmu.studies import sweep, tune
from mbfmu.studies.targets import Options as StudyRunOptions

PACKAGE = Path(mbfmu.__file__).resolve().parent


def _positional_options_calls(source: str) -> list[int]:
    """Lines of calls ``...Options(<positional>)`` in ``source``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name.endswith("Options"):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_a_positional_construction():
    assert _positional_options_calls("opts = Options('jacobi', None, 0)\nb = Options(algorithm='x')\n") == [1]


def test_no_options_object_is_built_positionally_in_mbfmu():
    found = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if (lines := _positional_options_calls(p.read_text()))}
    assert not found, f"options built with positional arguments: {found}"


@pytest.mark.parametrize("cls", [SimulationOptions, StudyRunOptions])
def test_options_classes_are_frozen_and_keyword_only(cls):
    params = dataclasses.fields(cls)
    assert params and all(f.kw_only for f in params)
    assert cls.__dataclass_params__.frozen
    with pytest.raises(TypeError):
        cls(1.0)


@pytest.mark.parametrize("func,positional", [(simulate, ("system", "stop_time", "step")), (build_fmu, ("plant", "dest")),
                                             (sweep, ("target", "parameters")), (tune, ("target", "params"))])
def test_entry_points_take_their_options_by_keyword(func, positional):
    params = inspect.signature(func).parameters.values()
    assert tuple(p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD) == positional
    assert sum(p.kind is p.KEYWORD_ONLY for p in params) >= (1 if func is simulate else 8)
