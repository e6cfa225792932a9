"""Figures the README states, checked against where they come from: the plants' own error
control, and the measurements recorded in benchmarks/RESULTS.md (no speed is measured here)."""
from __future__ import annotations

import re
from pathlib import Path

from mbfmu.dynamics.integrators import ErrorControl
from mbfmu.plant.library import list_plants, load_plant

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _paragraph(heading: str) -> str:
    return README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _written(x: float) -> str:
    """``x`` as the README writes it: 1e-6, not Python's 1e-06."""
    return re.sub(r"e([+-])0(\d)", r"e\1\2", f"{x:g}").replace("e+", "e")


def test_the_readme_states_each_library_plants_default_tolerance():
    """The default tolerance, and each library plant's own where it differs (satellite's 1e-10)."""
    text = " ".join(_paragraph("Error-controlled plants").split())
    default = ErrorControl()
    assert default.rtol == default.atol
    assert f"relative and absolute tolerance {_written(default.rtol)} by default" in text, text[:400]
    for name in list_plants():
        control = load_plant(name).error_control
        if (control.rtol, control.atol) != (default.rtol, default.atol):
            assert control.rtol == control.atol, name
            assert f"{_written(control.rtol)} for {name}" in text, (name, control.rtol)


def test_the_readme_speed_ratio_is_the_range_recorded_in_the_benchmark_results():
    """The pythonfmu/native step ratio the README gives is the range of the dated re-measure it
    names in benchmarks/RESULTS.md (the py/nat column of benchmarks/pythonfmu_step.py)."""
    found = re.search(r"\| ([0-9.]+)-([0-9.]+)x the native FMU's time, measured (\d{4}-\d\d-\d\d)", README)
    assert found, "the README's pythonfmu speed row gives no measured range with its date"
    low, high, date = float(found.group(1)), float(found.group(2)), found.group(3)
    results = (REPO / "benchmarks" / "RESULTS.md").read_text()
    block = results.split(f"Re-measure, h-interop, {date}", 1)[1].split("```")[1]
    ratios = [float(line.split()[3]) for line in block.splitlines() if line.startswith("rigid_arm")]
    assert len(ratios) >= 3
    assert (round(min(ratios), 1), round(max(ratios), 1)) == (low, high), ratios
