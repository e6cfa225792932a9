"""Issue 26.17: small inputs cannot make mbfmu allocate without bound.

A 2.9 MB ``.npz`` allocated 2.8 GB; a sweep grid of 1e8 runs or ``--samples
1e9`` allocated before refusing; ``--size 100000x100000`` gave a raw
MemoryError. Each is refused up front, with the size in the message; the
limits are in :mod:`mbfmu.untrusted.limits`. Nothing here allocates the
sizes it refuses (the tests would run out of memory if it did).
"""
from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest

from mbfmu.cli import main
from mbfmu.cosim import load_result
from mbfmu.errors import InputError
from mbfmu.studies import Normal
from mbfmu.studies.params import parse_spec, runs
from mbfmu.viewer import load_results

from .attacks import declare_size

ROWS = 350_000_000  # x 8 bytes = 2.8 GB


def _npy_header(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _npz(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_an_npz_declaring_gigabytes_in_its_zip_headers_is_refused(tmp_path):
    path = _npz(tmp_path / "bomb.npz", {"data.npy": _npy_header((ROWS,)) + b"\0" * 4096,
                                        "meta.npy": _npy_header((), "<U2") + "{}".encode("utf-32-le")})
    declare_size(path, "data.npy", ROWS * 8 + 128)
    with pytest.raises(InputError, match=r"'data.npy' declares 2.61 GiB from .* zip bomb"):
        load_result(path)
    with pytest.raises(InputError, match="zip bomb"):
        load_results(path)


def test_an_npy_header_declaring_more_than_its_member_holds_is_refused(tmp_path):
    """The zip is honest (4 kB), the array header claims 2.8 GB: numpy would allocate them first."""
    path = _npz(tmp_path / "liar.npz", {"data.npy": _npy_header((ROWS,)) + b"\0" * 4096,
                                        "meta.npy": _npy_header((), "<U2") + "{}".encode("utf-32-le")})
    with pytest.raises(InputError, match=r"'data.npy' declares 2.61 GiB \(\(350000000,\) of float64\) but holds 4.12 kiB"):
        load_result(path)


def test_a_mat_file_expanding_past_the_limit_is_refused(tmp_path, limits):
    from mbfmu.cosim import Result
    data = np.zeros(200_000, dtype=[("time", float), ("x", float)])  # 3.2 MB of zeros, compressed to kB
    data["time"] = np.arange(data.size)
    path = Result(data).save(tmp_path / "r.mat")
    assert len(load_result(path)) == data.size
    limits(max_expand_bytes=1_000_000)
    with pytest.raises(InputError, match=r"expands past 977 kiB \(MBFMU_MAX_EXPAND_BYTES\)"):
        load_result(path)


def test_a_mat_cell_declaring_more_elements_than_it_holds_is_refused(tmp_path):
    """A cell array whose dimensions claim 1e9 elements: scipy would allocate them first."""
    from mbfmu.cosim import Result
    path = Result(np.zeros(2, dtype=[("time", float), ("x", float)])).save(tmp_path / "r.mat")
    raw = bytearray(path.read_bytes())
    # rewrite as an uncompressed file holding a cell 'names' of 1e9 x 1 elements
    cell = _mat_cell("names", (1_000_000_000, 1))
    path.write_bytes(bytes(raw[:128]) + cell)
    with pytest.raises(InputError, match="declares 1000000000 elements"):
        load_result(path)


def _mat_cell(name: str, dims) -> bytes:
    def element(typ, data):
        pad = (-len(data)) % 8
        return struct.pack("<II", typ, len(data)) + data + b"\0" * pad
    body = (element(6, struct.pack("<II", 1, 0)) + element(5, struct.pack(f"<{len(dims)}i", *dims))
            + element(1, name.encode()))
    return element(14, body)


@pytest.mark.parametrize("parameters, samples, message", [
    ({"a": list(range(10_000)), "b": list(range(10_000))}, None, "100,000,000 runs (10000 x 10000 grid points"),
    ({"a": Normal(1.0, 0.1)}, 1_000_000_000, "1,000,000,000 runs (1 grid points x 1,000,000,000 samples)"),
])
def test_a_study_too_large_is_refused_before_allocating(parameters, samples, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        runs(parameters, samples=samples, seed=1)


def test_sweep_command_refuses_huge_grids_and_samples(capsys):
    base = ["sweep", "rigid_arm", "--stop-time", "1", "--no-progress"]
    assert main([*base, "--param", "payload_mass=0:1:100000000"]) == 1
    assert "100,000,000 values, above the limit of 1,000,000" in capsys.readouterr().err
    assert main([*base, "--param", "payload_mass=normal(1,0.1)", "--samples", "1000000000"]) == 1
    assert "1,000,000,000 runs" in capsys.readouterr().err
    with pytest.raises(InputError, match="above the limit of 1,000,000"):
        parse_spec("0:1:100000000")


def test_the_run_limit_is_configurable(limits):
    limits(max_runs=10)
    with pytest.raises(InputError, match="12 runs"):
        runs({"a": [1, 2, 3], "b": [1, 2, 3, 4]})
    assert len(runs({"a": [1, 2], "b": [1, 2, 3, 4, 5]})) == 10


def test_view_size_too_large_is_refused_with_the_size(tmp_path, capsys):
    from mbfmu.cosim import Result
    from mbfmu import load_plant
    plant = load_plant("rigid_arm")
    data = np.zeros(3, dtype=[("time", float)] + [(s.name, float) for s in plant.states])
    data["time"] = [0, 0.1, 0.2]
    path = Result(data, meta={"plant": "rigid_arm"}).save(tmp_path / "r.csv")
    with pytest.raises(SystemExit):
        main(["view", str(path), "-o", str(tmp_path / "x.png"), "--size", "100000x100000"])
    err = capsys.readouterr().err
    assert "size 100000x100000 px is 1e+04 Mpx" in err and "MBFMU_MAX_PIXELS" in err
    assert "MemoryError" not in err
