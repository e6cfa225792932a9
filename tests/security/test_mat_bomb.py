"""Issue 37.7: a ``.mat`` compression bomb is refused early and cheaply; ``mbfmu view`` reads ``.mat``.

A 1.87 MB ``.mat`` whose compressed element inflates to about 1.9 GB cost 3.7
GB of memory and 17 s before it was refused: every inflated chunk was kept,
and the ratio was judged only at the end. Now the inflation stops once the
element passes ``max_ratio`` times its compressed size, dropping chunks as it
counts them. And ``mbfmu view run.mat`` said "unknown suffix '.mat'" though
``view`` works on any result.
"""
from __future__ import annotations

import struct
import tracemalloc
import zlib

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.cosim.recording.result import Result, load_result
from mbfmu.cosim.recording.checks import check_mat
from mbfmu.errors import InputError
from mbfmu.viewer.results import load_results

MiB = 1 << 20


def _bomb(path, inflated: int) -> int:
    """A MAT v5 file of one compressed element that inflates to ``inflated`` zero bytes; returns its size."""
    c = zlib.compressobj(9)
    block = bytes(MiB)
    packed = b"".join(c.compress(block) for _ in range(inflated // MiB)) + c.flush()
    header = b"MATLAB 5.0 MAT-file, a compression bomb".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) + b"IM"
    path.write_bytes(header + struct.pack("<II", 15, len(packed)) + packed)
    return path.stat().st_size


def test_a_mat_bomb_is_refused_without_holding_what_it_inflates(tmp_path):
    bomb = tmp_path / "bomb.mat"
    size = _bomb(bomb, 256 * MiB)  # ~250 kB inflating ~1000 times
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"bomb\.mat'.*compressed element .* expands more than 200 times"):
            check_mat(bomb, f"results file {str(bomb)!r}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # what the ratio allows (200 x the element) was inflated, in chunks of at most 1 MiB, none kept
    assert 200 * size > 40 * MiB
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB while refusing a {size / 1e3:.0f} kB bomb"


def test_a_mat_result_within_the_limits_still_reads(tmp_path):
    """The control: a real (compressed) result reads back equal, cells and all."""
    t = np.linspace(0.0, 1.0, 2001)
    data = np.zeros(t.size, dtype=[("time", float), ("u.x", float)])
    data["time"], data["u.x"] = t, np.exp(-t)
    path = Result(data, meta={"units": {"u.x": "m"}}).save(tmp_path / "run.mat")
    back = load_result(path)
    np.testing.assert_array_equal(back.data["u.x"], data["u.x"])


def test_view_reads_a_mat_result_and_refuses_a_bomb_in_one_line(tmp_path, capsys):
    t = np.linspace(0.0, 1.0, 11)
    data = np.zeros(t.size, dtype=[("time", float), ("pendulum.theta", float)])
    data["time"], data["pendulum.theta"] = t, np.sin(t)
    path = Result(data, meta={"units": {"pendulum.theta": "rad"}}).save(tmp_path / "run.mat")
    arr, meta = load_results(path)  # what view reads
    np.testing.assert_array_equal(arr["pendulum.theta"], data["pendulum.theta"])
    assert meta["units"] == {"pendulum.theta": "rad"}
    bomb = tmp_path / "bomb.mat"
    _bomb(bomb, 64 * MiB)
    assert main(["view", str(bomb), "-o", str(tmp_path / "b.html")]) == 1
    err = capsys.readouterr().err
    assert "unknown suffix" not in err and "expands more than" in err
    assert len(err.strip().splitlines()) == 1
