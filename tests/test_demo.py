"""The README's main job (``make demo`` = ``mbfmu demo``) runs end to end and
writes what it promises: valid FMUs of every plant, plots, results and HTML
replays of the flexible-arm and satellite studies run through the master."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_builds_valid_fmus_and_writes_the_studies(tmp_path):
    out = tmp_path / "results"
    fmus = out / "fmus"  # the default: the demo writes its FMUs under its output folder
    (tmp_path / "fmus").mkdir()
    (tmp_path / "fmus" / "flexible_arm.fmu").write_text("the user's FMU")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "mbfmu", "demo", "-o", str(out)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "fmus" / "flexible_arm.fmu").read_text() == "the user's FMU"
    assert (out / "flexible_arm" / "flexible_arm.fmu").is_file()  # the study's own (geared motors)
    for name in ("rigid_arm", "canonical_2body", "flexible_arm", "satellite", "crash_occupant"):
        assert f"{name}.fmu" in res.stdout and (fmus / f"{name}.fmu").is_file()
    assert res.stdout.count(": valid") == 5, res.stdout
    for path in ("flexible_arm/flexible_arm_study.png", "flexible_arm/replay_lqg.html",
                 "satellite/satellite_study.png", "satellite/replay.html",
                 "satellite/deploy_then_slew_python.npz"):
        assert (out / path).stat().st_size > 10_000, path
    flex = json.loads((out / "flexible_arm" / "summary.json").read_text())
    assert flex["plant"] == "native FMU in the co-simulation master" and flex["lqg"]["residual_vibration_mm"] < flex["rigid_pd"]["residual_vibration_mm"]
    sat = json.loads((out / "satellite" / "summary.json").read_text())
    assert sat["python_plant_check"]["max_diff_attitude"] < 1e-9
    assert "lqg: joint1 " in res.stdout and "python_plant_check: max_diff_attitude" in res.stdout
    # the rigid-arm and canonical-variables studies run too (getting_started says so)
    for path in ("rigid_arm/rigid_arm_study.png", "rigid_arm/replay.html",
                 "canonical_2body/canonical_2body_study.png", "canonical_2body/replay.html"):
        assert (out / path).stat().st_size > 10_000, path
    assert "largest tool-tip error" in res.stdout and "turning rate settles" in res.stdout
    # every result the demo records can be replayed: the first thing a newcomer tries
    runs = sorted(p for p in out.rglob("*.npz") if "fmus" not in p.parts)
    assert len(runs) >= 10, runs
    for run in runs:
        view = subprocess.run([sys.executable, "-m", "mbfmu", "view", str(run), "-o", str(run.with_suffix(".png")),
                               "--time", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert view.returncode == 0, f"{run.relative_to(out)}: {view.stderr[-500:]}"


def test_demo_says_which_joint_did_not_settle_and_where_the_summary_is(tmp_path, monkeypatch, capsys):
    """A response that has not settled is named with the run's length (not
    "settling not settled, not settled"); the satellite summary is named by
    its file, not by its size in characters."""
    from mbfmu import demo_steps
    assert demo_steps.settling_text({"joint1": 0.834, "joint2": None}, 2.0) == \
        "joint1 settles in 0.83 s, joint2 does not settle within the 2 s run"

    class Study:
        def run(self, folder, **options):
            return {"step_deployed": {"settling_time_s": 12.5, "note": "x" * 4000}}
    monkeypatch.setattr(demo_steps, "_study", lambda name: Study())
    demo_steps.satellite(tmp_path, tmp_path)
    out = capsys.readouterr().out
    assert "characters" not in out and str(tmp_path / "satellite" / "summary.json") in out
    assert "step_deployed: settling_time_s = 12.5" in out
