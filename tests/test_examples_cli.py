"""The example scripts and the demo write only where they are told: every
example answers ``--help`` (and writes nothing) and takes ``--output DIR``;
the demo and the studies build their FMUs under their output folder, never
into ``fmus/``."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("[!_]*.py"))
# examples whose outputs are explicit file paths instead of a folder
FILE_OUTPUTS = {"spinup_beam.py"}


def test_there_are_examples_to_check():
    assert {"rigid_arm_study.py", "flexible_arm_study.py", "satellite_study.py"} <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_help_exits_0_and_writes_nothing(script, tmp_path):
    res = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("usage:"), res.stdout[:500]
    assert list(tmp_path.iterdir()) == [], "--help wrote files"
    if script.name not in FILE_OUTPUTS:
        assert "--output DIR" in res.stdout, res.stdout


def test_flexible_arm_study_builds_its_fmu_in_its_output_folder(tmp_path, monkeypatch):
    """Its FMU has geared motors (not the library defaults): it must not
    replace a user's fmus/flexible_arm.fmu."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fmus").mkdir()
    (tmp_path / "fmus" / "flexible_arm.fmu").write_text("the user's FMU")
    monkeypatch.syspath_prepend(str(REPO / "examples"))
    import flexible_arm_study
    out = tmp_path / "out"
    summary = flexible_arm_study.run(out, stop_time=0.05, via_fmu=True, plots=False, replay=False)
    assert summary["via_fmu"]
    assert (out / "flexible_arm.fmu").stat().st_size > 10_000
    assert (tmp_path / "fmus" / "flexible_arm.fmu").read_text() == "the user's FMU"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fmus", "out"]


def test_demo_builds_the_library_fmus_under_its_output_folder(tmp_path, monkeypatch):
    from mbfmu import demo, demo_steps
    seen = []

    def step(out, fmus):
        """record where the demo sends its outputs"""
        seen.append((out, fmus))
    monkeypatch.setattr(demo_steps, "STEPS", [step])
    assert demo.run(argparse.Namespace(output=str(tmp_path / "res"), fmus=None)) == 0
    assert seen == [(tmp_path / "res", tmp_path / "res" / "fmus")]
