"""``mbfmu sweep`` end to end, and the study pictures."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.studies import Normal, plot_histories, sweep

from . import second_order


def test_sweep_command_writes_the_table_and_the_pictures(arm_fmu, tmp_path, capsys):
    out, png = tmp_path / "r.csv", tmp_path / "p.png"
    rc = main(["sweep", str(arm_fmu), "--param", "arm_mass=10,-1,30", "--param", "theta2_0=0.5,1",
               "--stop-time", "0.1", "--step", "0.01", "--metric", "final:q[2]", "--workers", "1",
               "--cache", str(tmp_path / "cache"), "--no-progress", "-o", str(out), "--plot", str(png),
               "--history", "q[2]"])
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 6 and [r["arm_mass"] for r in rows[::2]] == ["10.0", "-1.0", "30.0"]
    assert [r["status"] for r in rows] == ["ok", "ok", "failed", "failed", "ok", "ok"]
    assert rc == 3 and "arm_mass" in rows[2]["error"]
    ok = [r for r in rows if r["status"] == "ok"]
    assert all(r["result"].endswith(".npz") for r in ok)  # the full result of each run, in the cache
    direct = sweep(arm_fmu, {"arm_mass": [10.0], "theta2_0": [0.5]}, stop_time=0.1, step=0.01, metrics=["final:q[2]"],
                   executor="serial", progress=False)
    assert float(rows[0]["final:q[2]"]) == direct.rows[0]["final:q[2]"]  # 17 digits survive the CSV
    assert png.stat().st_size > 5000 and (tmp_path / "r_q2.png").stat().st_size > 5000  # q[2]: a clean file name
    captured = capsys.readouterr()
    assert "6 runs: 4 ok, 2 failed" in captured.out and "run 2 failed" in captured.err


@pytest.mark.parametrize("argv, words", [(["--param", "k=1:2:x"], "whole number"),
                                         (["--param", "nope=1,2"], "unknown parameter 'nope'"),
                                         (["--param", "arm_mass=normal(1,2)"], "need samples")])
def test_sweep_command_reports_bad_input_in_one_line(arm_fmu, argv, words, capsys):
    rc = main(["sweep", str(arm_fmu), *argv, "--stop-time", "0.1", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1 and words in err and err.count("\n") == 1


def test_pictures_follow_the_shape_of_the_study(tmp_path):
    kw = dict(stop_time=1.0, step=0.01, executor="serial", progress=False, metrics=["max:plant.y"])
    one = sweep(second_order.system, {"zeta": [0.2, 0.5, 0.8]}, **kw)
    two = sweep(second_order.system, {"zeta": [0.2, 0.5], "wn": [1.0, 2.0, 3.0]}, **kw)
    mc = sweep(second_order.system, {"zeta": Normal(0.5, 0.05)}, samples=8, seed=2, **kw)
    line = one.plot(tmp_path / "one.png")
    heat = two.plot(tmp_path / "two.png")
    hist = mc.plot(tmp_path / "mc.png")
    assert np.allclose(line.axes[0].lines[0].get_ydata(), one["max:plant.y"])
    image = heat.axes[0].images[0].get_array()
    assert image.shape == (3, 2) and image[2, 1] == two.rows[5]["max:plant.y"]  # wn=3 (row), zeta=0.5 (column)
    assert len(hist.axes) == 4 and sum(p.get_height() for p in hist.axes[0].patches) == 8  # 2x2 scatter matrix
    fam = plot_histories(one, "plant.y", tmp_path / "fam.png")
    assert len(fam.axes[0].lines) == 3
    for name in ("one", "two", "mc", "fam"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5000


def test_pictures_are_pyplot_figures_with_units_on_their_axes(tmp_path):
    """plt.show() and notebooks show a study's figures (pyplot tracks them), and every axis
    whose quantity has a unit says it: parameters from the plant, metrics from what they measure."""
    import matplotlib.pyplot as plt

    plt.close("all")
    study = sweep("rigid_arm", {"arm_mass": [10.0, 20.0]}, stop_time=0.2, executor="serial", progress=False,
                  metrics=["max:q[2]", "settling_time:q[2]", "overshoot:q[2]"])
    fig = study.plot()
    fam = plot_histories(study, "q[2]")
    assert {fig.number, fam.number} <= set(plt.get_fignums())
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["max:q[2] [rad]", "settling_time:q[2] [s]", "overshoot:q[2] [%]"]
    assert fig.axes[-1].get_xlabel() == "arm_mass [kg]"
    assert fam.axes[0].get_ylabel() == "q[2] [rad]"
    plt.close("all")


def test_the_csv_table_names_results_relative_to_itself(tmp_path):
    cache = tmp_path / "cache"
    study = sweep(second_order.system, {"zeta": [0.3, 0.6]}, stop_time=0.5, step=0.01, executor="serial",
                  progress=False, cache=cache, metrics=["final:plant.y"])
    out = study.to_csv(tmp_path / "tables" / "t.csv") if (tmp_path / "tables").mkdir() is None else None
    text = out.read_text()
    assert str(tmp_path) not in text
    rows = list(csv.DictReader(text.splitlines()))
    for row, original in zip(rows, study.rows):
        assert (out.parent / row["result"]).resolve() == Path(original["result"]).resolve()


def test_a_study_result_prints_its_runs_shape_and_metrics_in_one_short_line():
    """``repr(StudyResult)`` says how many runs ended how, over which grid,
    with which metrics; not the rows."""
    kw = dict(stop_time=0.2, step=0.01, executor="serial", progress=False, metrics=["max:plant.y"])
    two = sweep(second_order.system, {"zeta": [0.2, 0.5], "wn": [1.0, 2.0, 3.0]}, **kw)
    assert repr(two) == "StudyResult(6 runs: 6 ok; grid zeta (2) x wn (3); metrics: max:plant.y)"
    mc = sweep(second_order.system, {"zeta": Normal(0.5, 0.05)}, samples=4, seed=2, **kw)
    assert repr(mc) == "StudyResult(4 runs: 4 ok; Monte Carlo of zeta; metrics: max:plant.y)"
