"""Result files that every tool reads: CSV (header first, metadata in a sidecar),
npz, MATLAB .mat; DataFrame and plot; the output suffix is checked before the run."""
from __future__ import annotations

import json

import control
import numpy as np
import pytest

from mbfmu.cosim import ControlUnit, System, load_result, simulate, sources
from mbfmu.cosim.recording.result import check_output
from mbfmu.errors import InputError, UnknownNameError


@pytest.fixture(scope="module")
def result():
    """A first-order lag y' = (u - y) / tau driven by a unit step, tau = 0.5 s (y = 1 - exp(-t / tau))."""
    lag = ControlUnit("lag", control.ss(-2.0, 2.0, 1.0, 0.0, inputs="u", outputs="y", states="x"),
                      units={"u": "m", "y": "m", "x": "m"})
    s = System([lag, sources.step("ref", 0.0, unit="m")], [("ref.y", "lag.u")])
    return simulate(s, 2.0, 0.01, record="all")


def test_csv_header_first_read_by_pandas_and_numpy(result, tmp_path):
    import pandas as pd
    path = result.save(tmp_path / "run.csv")
    assert path.read_text().splitlines()[0] == ",".join(result.names)  # no comment line
    df = pd.read_csv(path)
    assert list(df.columns) == result.names and list(df.columns)[0] == "time"
    np.testing.assert_allclose(df["lag.y"], 1 - np.exp(-df["time"] / 0.5), atol=1e-12)  # ZOH of a step is exact
    arr = np.genfromtxt(path, delimiter=",", names=True)
    assert arr.dtype.names[0] == "time" and len(arr.dtype.names) == len(result.names)
    np.testing.assert_array_equal(arr["time"], result.time)  # %.17g: doubles round-trip exactly
    meta = json.loads((tmp_path / "run.csv.json").read_text())
    assert meta["units"]["lag.y"] == "m" and meta["summary"]["status"] == "completed"
    back = load_result(path)
    np.testing.assert_array_equal(back.data, result.data)
    assert back.units["lag.y"] == "m" and back.summary.steps == 200


def test_mat_file_keeps_names_and_units(result, tmp_path):
    import scipy.io
    path = result.save(tmp_path / "run.mat")
    m = scipy.io.loadmat(path, simplify_cells=True)
    assert list(m["names"]) == result.names
    assert dict(zip(m["names"], m["units"]))["lag.y"] == "m"
    np.testing.assert_array_equal(m["data"][:, result.names.index("lag.y")], result["lag.y"])
    np.testing.assert_array_equal(m["signals"]["lag_y"], result["lag.y"])
    assert json.loads(m["meta"])["step"] == 0.01
    np.testing.assert_array_equal(load_result(path).data, result.data)


def test_npz_is_the_layout_the_viewer_reads(result, tmp_path):
    from mbfmu.viewer import load_results
    path = result.save(tmp_path / "run.npz")
    data, meta = load_results(path)
    np.testing.assert_array_equal(data, result.data)
    assert meta["units"]["lag.y"] == "m"


def test_dataframe_and_plot(result):
    import matplotlib
    matplotlib.use("Agg")
    from mbfmu.viewer.result_plot import plot_result
    df = result.to_dataframe()
    assert list(df.columns) == result.names and df.attrs["units"]["lag.u"] == "m"
    fig = plot_result(result, ["lag", "ref.y"])
    axes = fig.get_axes()
    assert len(axes) == 2  # one subplot per unit
    assert axes[0].get_ylabel() == "lag [m]" and axes[1].get_ylabel() == "ref [m]"
    assert axes[-1].get_xlabel() == "time [s]"
    assert [ln.get_label() for ln in axes[0].get_lines()] == ["u [m]", "y [m]", "x [m]"]
    fig = result.plot(["lag.y"])  # the method draws the same way
    assert len(fig.get_axes()) == 1 and [ln.get_label() for ln in fig.get_axes()[0].get_lines()] == ["y [m]"]
    with pytest.raises(UnknownNameError, match="no recorded column .nope."):
        plot_result(result, ["nope"])


def test_old_csv_layout_still_loads(result, tmp_path):
    path = tmp_path / "old.csv"
    rows = np.column_stack([result.data[n] for n in result.names])
    np.savetxt(path, rows, delimiter=",", header="# mbfmu " + json.dumps({"units": {"lag.y": "m"}}) + "\n"
               + ",".join(result.names), comments="", fmt="%.17g")
    back = load_result(path)
    np.testing.assert_array_equal(back.data, result.data)
    assert back.meta["units"]["lag.y"] == "m"


def test_output_suffix_is_checked_first_and_lists_formats(tmp_path):
    with pytest.raises(InputError, match=r"unknown format '.xlsx'; use one of .csv \(.*\), .npz \(.*\), .mat"):
        check_output(tmp_path / "run.xlsx")
    with pytest.raises(InputError, match="does not exist"):
        check_output(tmp_path / "none" / "run.csv")


def test_viewer_reads_the_csv_and_its_sidecar(result, tmp_path):
    from mbfmu.viewer import load_results
    data, meta = load_results(result.save(tmp_path / "run.csv"))
    np.testing.assert_array_equal(data["lag.y"], result["lag.y"])
    assert meta["units"]["lag.y"] == "m"
