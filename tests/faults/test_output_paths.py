"""Issue 37.9: output paths are checked before any work.

``mbfmu view run.csv -o missing/x.html`` ended in a raw ``FileNotFoundError``
after drawing the replay; ``mbfmu sweep ... -o missing/t.csv`` (or a folder
nobody may write) ran the whole study, then crashed and lost the table. Now
each output is checked first, as ``simulate`` does: one line, exit 1, and
nothing was run.
"""
from __future__ import annotations

import sys

import pytest
from tooling import reference_fmu

from mbfmu.cli import main

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))
SWEEP = ["sweep", DAHLQUIST, "--param", "k=1,2", "--stop-time", "0.2", "--step", "0.1", "--workers", "1",
         "--no-progress"]


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err


def test_view_refuses_an_output_in_a_missing_folder_before_reading_the_results(tmp_path, capsys, monkeypatch):
    import mbfmu.viewer.plants as plants
    opened = []
    monkeypatch.setattr(plants, "open_recording", lambda *a, **k: opened.append(a) or pytest.fail("read"))
    (tmp_path / "run.csv").write_text("time,x\n0,1\n")
    assert main(["view", str(tmp_path / "run.csv"), "-o", str(tmp_path / "missing" / "x.html")]) == 1
    _one_line_error(capsys, "missing", "does not exist")
    assert opened == []


@pytest.mark.parametrize("option, name", [("-o", "t.csv"), ("--plot", "t.png")])
def test_sweep_refuses_an_output_in_a_missing_folder_before_any_run(tmp_path, capsys, option, name):
    args = [option, str(tmp_path / "missing" / name), "--metric", "final:x"]
    assert main([*SWEEP, "--cache", str(tmp_path / "cache"), *args]) == 1
    _one_line_error(capsys, "missing", "does not exist")
    assert not list(tmp_path.glob("cache/runs/*.npz"))  # nothing was run


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (/proc)")
def test_sweep_refuses_a_folder_it_cannot_write_before_any_run(tmp_path, capsys):
    # /proc takes no new file, even from root (whom a chmod would not stop)
    assert main([*SWEEP, "--cache", str(tmp_path / "cache"), "-o", "/proc/mbfmu_table.csv"]) == 1
    _one_line_error(capsys, "/proc/mbfmu_table.csv")
    assert not list(tmp_path.glob("cache/runs/*.npz"))
