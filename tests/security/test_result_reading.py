"""Issues 26.18 and 26.19: result files read back as data, with one-line errors.

``load_result`` and ``mbfmu view`` gave raw tracebacks on malformed,
truncated or empty ``.npz`` files, odd metadata types and deep JSON; a
killed ``.npz`` run left a 0-byte ``.npz`` and a ``.part.csv`` that loaded
as "completed"; a newline in a variable name made a CSV that could not be
read back.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from tooling import reference_fmu

from mbfmu.cli import main
from mbfmu.cosim import Result, load_result
from mbfmu.errors import InputError
from mbfmu.viewer import load_results, save_results


def _data(names=("time", "x")):
    d = np.zeros(3, dtype=[(n, float) for n in names])
    d["time"] = [0.0, 0.5, 1.0]
    return d


def _npz(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def _malformed(tmp_path):
    good = Result(_data(), meta={"units": {}}).save(tmp_path / "good.npz").read_bytes()
    cases = {
        "garbage": b"this is not a zip",
        "truncated": good[: len(good) // 2],
        "cut before the directory": good[:-30],
    }
    out = {}
    for name, data in cases.items():
        out[name] = tmp_path / f"{name.replace(' ', '_')}.npz"
        out[name].write_bytes(data)
    meta_cases = {
        "meta a list": json.dumps([1, 2]),
        "meta a number": "3",
        "meta not json": "{nope",
        "summary a string": json.dumps({"summary": "done"}),
        "summary steps not a number": json.dumps({"summary": {"steps": "many"}}),
        "unknown status": json.dumps({"summary": {"status": "fine"}}),
        "deep json": "[" * 100_000 + "]" * 100_000,
        "nested 100": json.dumps({"a": json.loads("[" * 100 + "]" * 100)}),
    }
    for name, meta in meta_cases.items():
        out[name] = _npz(tmp_path / f"{name.replace(' ', '_')}.npz", data=_data(), meta=np.array(meta))
    out["meta ints"] = _npz(tmp_path / "meta_ints.npz", data=_data(), meta=np.arange(3))
    out["data plain"] = _npz(tmp_path / "data_plain.npz", data=np.zeros((3, 2)), meta=np.array("{}"))
    out["data 2-d"] = _npz(tmp_path / "data_2d.npz", data=np.zeros((2, 2), dtype=[("time", float)]), meta=np.array("{}"))
    out["time not first"] = _npz(tmp_path / "tnf.npz", data=_data(("x", "time")), meta=np.array("{}"))
    out["no data"] = _npz(tmp_path / "no_data.npz", meta=np.array("{}"))
    (tmp_path / "empty.npz").write_bytes(b"")
    out["empty"] = tmp_path / "empty.npz"
    return out


CASES = ["garbage", "truncated", "cut before the directory", "meta a list", "meta a number", "meta not json",
         "summary a string", "summary steps not a number", "unknown status", "deep json",
         "nested 100", "meta ints", "data plain", "data 2-d", "time not first", "no data", "empty"]


@pytest.mark.parametrize("case", CASES)
def test_malformed_npz_is_one_clear_line(tmp_path, capsys, case):
    path = _malformed(tmp_path)[case]
    with pytest.raises(InputError) as e:
        load_result(path)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and str(path) in msg and len(msg) < 400, msg
    assert main(["view", str(path), "--model", "rigid_arm", "-o", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_the_depth_limit_is_stated(tmp_path):
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        load_result(_malformed(tmp_path)["nested 100"])


def test_an_empty_npz_says_where_its_rows_are(tmp_path):
    with pytest.raises(InputError, match=r"is empty \(0 bytes\).*run\.npz\.part\.csv"):
        (tmp_path / "run.npz").write_bytes(b"")
        load_result(tmp_path / "run.npz")


KILLED = """
import sys, time
from mbfmu.cosim import FmuUnit, FunctionUnit, System, simulate
from mbfmu.cosim.recording.result import open_writer
def slow(t, u):
    time.sleep(0.002)
    return ()
system = System([FmuUnit(sys.argv[1], "d"), FunctionUnit("slow", slow, outputs=())])
simulate(system, 1e6, 0.01, sink=open_writer(sys.argv[2]), progress=False)
"""


def test_a_killed_npz_run_leaves_no_empty_npz_and_its_part_file_says_interrupted(tmp_path):
    out = tmp_path / "run.npz"
    part = tmp_path / "run.npz.part.csv"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(reference_fmu("fmi2", "Dahlquist")), str(out)])
    try:
        deadline = time.monotonic() + 60
        while not (part.is_file() and part.read_text().count("\n") > 5):
            assert time.monotonic() < deadline and child.poll() is None, "the run wrote no rows"
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert not out.exists()  # neither a 0-byte nor a half-written .npz
    r = load_result(part)
    assert r.summary.status == "interrupted" and "did not finish" in r.summary.message
    assert len(r) > 4 and np.all(np.diff(r["time"]) > 0)


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".mat"])
def test_names_with_line_breaks_commas_and_quotes_read_back(tmp_path, suffix):
    names = ("time", "a\nb", "c,d", 'e"f', "g\r\nh")
    data = _data(names)
    data["a\nb"] = [1.0, 2.0, 3.0]
    back = load_result(Result(data, meta={"units": {"a\nb": "m"}}).save(tmp_path / f"r{suffix}"))
    assert back.names == list(names)
    np.testing.assert_array_equal(back["a\nb"], [1.0, 2.0, 3.0])
    assert back.units["a\nb"] == "m"


def test_string_columns_with_line_breaks_read_back(tmp_path):
    from mbfmu.cosim.recording.result import make_array
    from mbfmu.cosim.typed import string_code
    rows = np.array([[0.0, string_code("one\nline")], [1.0, string_code('two, "quoted"')]])
    data = make_array(["time", "s\nx"], rows, {"s\nx": "String"})
    back = load_result(Result(data, meta={"types": {"s\nx": "String"}}).save(tmp_path / "s.csv"))
    assert list(back["s\nx"]) == ["one\nline", 'two, "quoted"']


def test_the_viewer_format_reads_back_names_with_line_breaks(tmp_path):
    data = _data(("time", "a\nb"))
    arr, _ = load_results(save_results(tmp_path / "v.csv", data, {"plant": "rigid_arm"}))
    assert arr.dtype.names == ("time", "a\nb")
