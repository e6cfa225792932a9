"""Issue 26.6: a refused run does not destroy an existing result.

``mbfmu simulate ... -o keep.csv`` refused before stepping (the rows would not
fit) left keep.csv with a header only and its sidecar saying ``running``.
Now the output is written to a temporary name in the same folder and put in
place with the first row: a run refused, or failing, before it leaves the
old file and its sidecar byte for byte.
"""
from __future__ import annotations

import pytest
from tooling import reference_fmu

from mbfmu.cli import main
from mbfmu.cosim import load_result

from .attacks import patched_dahlquist

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))
RUN = ["simulate", DAHLQUIST, "--stop-time", "1", "--step", "0.1", "--no-progress"]


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("name", ["keep.csv", "keep.npz", "keep.mat"])
def test_a_run_refused_before_stepping_leaves_the_old_result_untouched(tmp_path, capsys, name):
    out = tmp_path / name
    assert main([*RUN, "-o", str(out)]) == 0
    before = _files(tmp_path)
    assert load_result(out).summary.status == "completed" and len(load_result(out)) == 11
    # 1e12 rows cannot fit on the disk: refused before the first step
    assert main(["simulate", DAHLQUIST, "--stop-time", "1e6", "--step", "1e-6", "--no-progress", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "cannot write results" in err and "GiB" in err
    assert _files(tmp_path) == before  # same files (no temporary left), same bytes
    assert load_result(out).summary.status == "completed"


def test_a_run_failing_before_its_first_row_leaves_the_old_result(tmp_path, capsys):
    """An FMU whose GUID does not match its binary fails in fmi2Instantiate, after the output was opened."""
    out = tmp_path / "results" / "keep.csv"
    out.parent.mkdir()
    assert main([*RUN, "-o", str(out)]) == 0
    before = _files(out.parent)
    bad = patched_dahlquist(tmp_path, "fmi2", ("{221063D2-EF4A-45FE-B954-B5BFEEA9A59B}", "{00000000-0000-0000-0000-000000000000}"))
    assert main(["simulate", str(bad), "--stop-time", "1", "--step", "0.1", "--no-progress", "-o", str(out)]) == 3
    assert "keep.csv was not written" in capsys.readouterr().err
    assert _files(out.parent) == before


def test_a_new_run_replaces_the_old_result_whole(tmp_path):
    out = tmp_path / "keep.csv"
    assert main([*RUN, "-o", str(out)]) == 0
    assert main([*RUN, "--set", "k=2", "-o", str(out)]) == 0
    r = load_result(out)
    assert r.summary.status == "completed" and r.meta["values"]["Dahlquist.k"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv", "keep.csv.json"]
