"""Issue 37.5: a cache entry cannot make mbfmu read and hash any file it names.

``RunCache.load`` hashed every path in an entry's ``inputs``: an entry naming
``/proc/self/mem`` or a 4 GiB sparse file stalled a study for a minute. Now
an entry of a file target names no inputs (its key covers the file), and for
a function target only files a run could have recorded are checked, each a
regular file of bounded size, hashed once per study. Checked by what the
study opens (an audit hook), not by time.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from tooling import reference_fmu

from mbfmu.cosim import FmuUnit, System
from mbfmu.studies import sweep
from mbfmu.untrusted.archive import file_digest

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))
OPENED: list[str] | None = None


def _audit(event, args):
    if event == "open" and OPENED is not None and args and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # records only while a test sets OPENED


def _forge(cache, inputs):
    """Name ``inputs`` (path -> digest) in every entry of ``cache``."""
    for js in (cache / "runs").glob("*.json"):
        info = json.loads(js.read_text())
        info["inputs"] = {**info["inputs"], **inputs}
        js.write_text(json.dumps(info))


def _opened_during(fn):
    global OPENED
    OPENED = []
    try:
        return fn(), OPENED
    finally:
        OPENED = None


@pytest.fixture
def sparse(tmp_path, limits):
    """A sparse file 16 times the bound on the bytes hashed (lowered to 4 MiB here;
    the report's was 4 GiB under the default 2 GiB)."""
    limits(max_expand_bytes=4 << 20)
    big = tmp_path / "sparse.bin"
    with open(big, "wb") as f:
        f.truncate(64 << 20)
    return big


def test_inputs_named_by_an_entry_of_a_file_target_are_never_opened(tmp_path, sparse):
    def study():
        return sweep(DAHLQUIST, {"k": [1.0, 2.0]}, stop_time=0.5, step=0.1, executor="serial",
                     cache=tmp_path / "cache", progress=False)
    study()
    _forge(tmp_path / "cache", {"/proc/self/mem": "0" * 64, str(sparse): "0" * 64})
    again, opened = _opened_during(study)
    assert not any(r["cached"] for r in again.rows)  # a file target's entry names no inputs: a miss
    assert "/proc/self/mem" not in opened and str(sparse) not in opened


def test_a_function_target_checks_only_bounded_regular_files_a_run_could_read(tmp_path, sparse):
    fmu = tmp_path / "unit.fmu"
    shutil.copy(DAHLQUIST, fmu)

    def build(k=1.0):
        return System([FmuUnit(fmu, "d", values={"k": k})])

    def study():
        return sweep(build, {"k": [1.0, 2.0]}, stop_time=0.5, step=0.1, executor="serial",
                     cache=tmp_path / "cache", progress=False)
    study()
    again, opened = _opened_during(study)
    assert all(r["cached"] for r in again.rows)  # the FMU it loads is checked, once for both entries
    assert opened.count(str(fmu.resolve())) == 1
    _forge(tmp_path / "cache", {"/proc/self/mem": "0" * 64})
    forged, opened = _opened_during(study)
    assert not any(r["cached"] for r in forged.rows) and "/proc/self/mem" not in opened
    study()  # the runs, stored again
    # beside a small file with its true digest, the sparse one is past the bound: a miss, never read
    small = tmp_path / "small.bin"
    with open(small, "wb") as f:
        f.truncate(1 << 10)
    _forge(tmp_path / "cache", {str(sparse): "0" * 64, str(small.resolve()): file_digest(small)})
    forged, opened = _opened_during(study)
    assert not any(r["cached"] for r in forged.rows)
    assert str(sparse) not in opened
