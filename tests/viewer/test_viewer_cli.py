"""``mbfmu view``: outputs by suffix, the plant from --model or metadata, and
clear errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tooling import need_tool
from viewer_toys import DoublePendulum, pendulum_run, record

from mbfmu.cli import main
from mbfmu.viewer import open_recording, save_results

TOYS = str(Path(__file__).with_name("viewer_toys.py"))
MODEL = f"{TOYS}:DoublePendulum"


@pytest.fixture
def npz(tmp_path):
    t, X = pendulum_run(n=41)
    return save_results(tmp_path / "run.npz", record(DoublePendulum(), t, X, prefix="arm."),
                        {"plants": {"arm": {"plant": MODEL, "parameters": {"l1": 1.5}}},
                         "units": {"arm.q[1]": "rad"}})


def test_view_writes_html_png_and_gif(tmp_path, npz, capsys):
    assert main(["view", str(npz), "--model", MODEL, "-o", str(tmp_path / "r.html"), "--time", "0.5"]) == 0
    assert 'id="mbfmu-data"' in (tmp_path / "r.html").read_text()
    assert main(["view", str(npz), "--model", MODEL, "-o", str(tmp_path / "r.png"), "--time", "1.0", "--size", "320x240",
                 "--signal", "q[1]", "--trail", "mass2"]) == 0
    assert Image.open(tmp_path / "r.png").size == (320, 240)
    assert main(["view", str(npz), "--model", MODEL, "-o", str(tmp_path / "r.gif"), "--speed", "4", "--fps", "5",
                 "--size", "160x120"]) == 0
    with Image.open(tmp_path / "r.gif") as im:
        assert im.n_frames == 3  # 2 s at 4x and 5 fps: t = 0, 0.8, 1.6 s


def test_view_writes_mp4(tmp_path, npz):
    need_tool("ffmpeg")
    assert main(["view", str(npz), "--model", MODEL, "-o", str(tmp_path / "r.mp4"), "--fps", "5", "--speed", "2",
                 "--size", "160x120"]) == 0
    assert (tmp_path / "r.mp4").stat().st_size > 0


def test_parameters_come_from_the_metadata_for_the_model_it_names(npz):
    """The model file is the user's to name (results never run code); the
    parameters recorded for that very model apply, --param overrides them."""
    rec = open_recording(npz, MODEL)
    assert rec.plant.l1 == 1.5 and rec.state_columns[0] == "arm.q[1]"
    assert open_recording(npz, MODEL, params={"l1": 2.0}).plant.l1 == 2.0
    t = rec.time[10]
    q1, q2 = rec.state_at(t)[:2]
    np.testing.assert_allclose(rec.scene_at(t)[1][1], [-1.5 * np.sin(q1), 0, -1.5 * np.cos(q1)], atol=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--model", "no_such_plant_xyz"], "no_such_plant_xyz"),
    (["--model", f"{TOYS}:Nope"], "has no 'Nope'"),
    (["--model", f"{TOYS}:DoublePendulum", "--param", "mass=3"], "does not take the parameters"),
    (["-o", "x.avi"], "unknown suffix '.avi'"),
    (["--model", MODEL, "--time", "9", "-o", "x.png"], "outside the recorded span"),
    (["--model", MODEL, "--trail", "nose", "-o", "x.png"], "no body index or shape named 'nose'"),
])
def test_view_errors_name_what_is_wrong(tmp_path, npz, capsys, args, message):
    assert main(["view", str(npz), *args]) == 1
    assert message in capsys.readouterr().err


def test_results_lacking_the_plants_states_are_refused(tmp_path, capsys):
    path = save_results(tmp_path / "other.csv", np.zeros(3, dtype=[("time", float), ("x", float)]))
    assert main(["view", str(path), "--model", MODEL, "-o", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err
    assert "hold neither its states" in err and "q[1]" in err and "record the states" in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300, err
    assert main(["view", str(path), "-o", str(tmp_path / "x.html")]) == 1
    assert "does not name its plant" in capsys.readouterr().err


def test_malformed_results_file_is_reported(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_text("garbage")
    assert main(["view", str(bad), "--model", MODEL]) == 1
    assert "not a readable .npz" in capsys.readouterr().err


def test_trail_specs_from_the_command_line():
    from viewer_toys import FlexibleArm

    from mbfmu.viewer.plants import parse_trail
    arm = FlexibleArm()
    assert parse_trail("1", arm) == (1, (0.0, 0.0, 0.0))
    assert parse_trail("1:0.5,0,-1", arm) == (1, (0.5, 0.0, -1.0))
    assert parse_trail("beam", arm) == ("beam", 2, 1.5)
    assert parse_trail("beam@0.4", arm) == ("beam", 2, 0.4)
    assert parse_trail("hub", arm) == (1, (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="needs a beam"):
        parse_trail("hub@0.2", arm)
    with pytest.raises(ValueError, match="x,y,z"):
        parse_trail("1:0.5,0", arm)


def test_cosimulation_result_written_by_the_master_is_replayed(tmp_path):
    """The file format of mbfmu.cosim.recording.result; the plant named by the user,
    its parameters taken from the values the run set."""
    from mbfmu.cosim.recording import result as recording
    t, X = pendulum_run(n=21)
    p = DoublePendulum()
    data = record(p, t, X, prefix="arm.", extra={"pid.u": np.ones_like(t)})
    meta = {"units": {"arm.q[1]": "rad"}, "values": {"arm.l1": 1.25, "pid.kp": 3.0},
            "plants": {"arm": {"kind": "file", "target": TOYS, "class_name": "DoublePendulum", "parameters": {}}}}
    for suffix in (".csv", ".npz"):
        path = recording.Result(data, meta=meta).save(tmp_path / f"cosim{suffix}")
        rec = open_recording(path, MODEL)
        assert rec.unit == "arm" and rec.plant.l1 == 1.25
        q1 = X[7, 0]
        np.testing.assert_allclose(rec.scene_at(t[7])[1][1], [-1.25 * np.sin(q1), 0, -1.25 * np.cos(q1)], atol=1e-9)


def test_several_plants_in_the_metadata_need_a_unit(tmp_path, capsys):
    t, X = pendulum_run(n=5)
    p = DoublePendulum()
    data = record(p, t, X, prefix="a.", extra={f"b.{s.name}": X[:, i] for i, s in enumerate(p.states)})
    path = save_results(tmp_path / "two.npz", data, {"plants": {"a": {"plant": MODEL}, "b": {"plant": MODEL}}})
    assert main(["view", str(path), "-o", str(tmp_path / "x.html")]) == 1
    assert "several plants (a, b)" in capsys.readouterr().err
    assert main(["view", str(path), "--model", MODEL, "--unit", "b", "-o", str(tmp_path / "x.html")]) == 0


def test_window_without_a_display_says_to_write_a_file(npz, capsys):
    import matplotlib
    assert matplotlib.get_backend().lower() == "agg"
    assert main(["view", str(npz), "--model", MODEL]) == 1
    assert "no interactive display" in capsys.readouterr().err
