"""Result files: round trips and clear errors for malformed input."""
from __future__ import annotations

import json

import numpy as np
import pytest
from viewer_toys import DoublePendulum, pendulum_run, record

from mbfmu.errors import InputError
from mbfmu.viewer import load_results, save_results

META = {"plant": "toy_double_pendulum", "parameters": {"l1": 1.5}}


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_results_and_metadata_survive_a_round_trip(tmp_path, suffix):
    t, X = pendulum_run(n=17)
    res = record(DoublePendulum(), t, X, prefix="arm.")
    back, meta = load_results(save_results(tmp_path / f"r{suffix}", res, META))
    assert back.dtype.names == res.dtype.names
    for n in res.dtype.names:
        np.testing.assert_array_equal(back[n], res[n])
    assert meta == META


def test_npz_with_one_array_per_column_and_csv_sidecar_metadata(tmp_path):
    t = np.linspace(0, 1, 5)
    np.savez(tmp_path / "cols.npz", **{"q[1]": t * 2, "time": t})
    res, meta = load_results(tmp_path / "cols.npz")
    assert res.dtype.names == ("time", "q[1]") and meta == {}
    np.testing.assert_array_equal(res["q[1]"], t * 2)
    (tmp_path / "plain.csv").write_text("time,x\n0,1\n0.5,2\n")
    (tmp_path / "plain.json").write_text(json.dumps(META))
    res, meta = load_results(tmp_path / "plain.csv")
    assert meta == META and res["x"].tolist() == [1.0, 2.0]


@pytest.mark.parametrize("name, text, message", [
    ("bad.npz", "not a zip file", "not a readable .npz"),
    ("short.csv", "time,x\n0,1\n1\n", "malformed"),
    ("back.csv", "time,x\n0,1\n1,2\n0.5,3\n", "decreases at row 2"),
    ("first.csv", "x,time\n0,1\n", "first field must be 'time'"),
    ("dup.csv", "time,x,x\n0,1,2\n", "repeated column names"),
    ("meta.csv", "# metadata: {oops\ntime\n0\n", "not valid JSON"),
    ("r.txt", "time\n0\n", "unknown suffix"),
])
def test_malformed_result_files_are_refused_saying_why(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=message):
        load_results(tmp_path / name)


def test_missing_result_file_is_named(tmp_path):
    with pytest.raises(InputError, match="nope.npz.*does not exist"):
        load_results(tmp_path / "nope.npz")
