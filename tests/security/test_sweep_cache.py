"""Issue 26.5: a sweep's cache is data; resuming takes only runs it can trust.

The resume key missed what a result depends on (the FMUs a function target
opens, module globals); a damaged entry aborted the study; an entry copied
over another was taken. Now the key covers the function's globals (or the
target is uncacheable and never hits), the FMUs a run loaded are checked by
their bytes, and a damaged or swapped entry is a miss that is run again.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
import warnings

import pytest
from tooling import reference_fmu

from mbfmu.cosim import FmuUnit, System
from mbfmu.studies import sweep

GAIN = 1.0


def _study(target, cache, ks=(1.0, 2.0)):
    return sweep(target, {"k": list(ks)}, stop_time=0.5, step=0.1, metrics=["final:x"], executor="serial",
                 cache=cache, progress=False)


def _finals(study):
    return [r["final:x"] for r in study.rows]


def test_an_fmu_the_function_opens_is_checked_by_its_bytes(tmp_path):
    fmu = tmp_path / "unit.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)

    def build(k=1.0):
        return System([FmuUnit(fmu, "d")])
    runs = {"k": [1.0]}
    opts = dict(stop_time=0.5, step=0.1, executor="serial", cache=tmp_path / "cache", progress=False)
    first = sweep(build, runs, **opts)
    again = sweep(build, runs, **opts)
    assert again.rows[0]["cached"] and "d.x" in again.result(0).names  # a true resume
    shutil.copy(reference_fmu("fmi2", "BouncingBall"), fmu)  # same path, other bytes
    changed = sweep(build, runs, **opts)
    assert not changed.rows[0]["cached"]
    assert "d.h" in changed.result(0).names and "d.x" not in changed.result(0).names
    assert first.rows[0]["key"] == changed.rows[0]["key"]  # the key could not see it: the bytes check did


def _global_gain(k=1.0):
    return System([FmuUnit(reference_fmu("fmi2", "Dahlquist"), "d", values={"k": k * GAIN})])


def test_a_module_global_the_function_reads_is_in_the_key(tmp_path):
    global GAIN
    GAIN = 1.0
    first = _study(_global_gain, tmp_path / "cache")
    GAIN = 2.0
    try:
        changed = _study(_global_gain, tmp_path / "cache")
    finally:
        GAIN = 1.0
    assert not any(r["cached"] for r in changed.rows)
    assert _finals(changed)[0] == pytest.approx(_finals(first)[1], rel=1e-12)  # k=1 with gain 2 is k=2


def test_a_target_reading_what_cannot_be_hashed_never_hits(tmp_path):
    built = System([FmuUnit(reference_fmu("fmi2", "Dahlquist"), "d")])

    def reuse(k=1.0):
        built.set("d.k", k)
        return built
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _study(reuse, tmp_path / "cache")
    with pytest.warns(UserWarning, match="not taken from the cache.*'built' is a System"):
        again = _study(reuse, tmp_path / "cache")
    assert not any(r["cached"] for r in again.rows)


@pytest.fixture
def cached_fmu_study(tmp_path):
    fmu = tmp_path / "d.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    first = _study(str(fmu), tmp_path / "cache")
    runs = tmp_path / "cache" / "runs"
    return str(fmu), tmp_path / "cache", runs, first


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage json", "json list"])
def test_a_damaged_entry_is_run_again(cached_fmu_study, damage):
    fmu, cache, runs, first = cached_fmu_study
    key = first.rows[0]["key"]
    if damage == "truncated":
        data = (runs / f"{key}.npz").read_bytes()
        (runs / f"{key}.npz").write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        (runs / f"{key}.npz").write_bytes(b"")
    elif damage == "garbage json":
        (runs / f"{key}.json").write_text("{not json")
    else:
        (runs / f"{key}.json").write_text("[1, 2]")
    again = _study(fmu, cache)
    assert [r["cached"] for r in again.rows] == [False, True]
    assert [r["status"] for r in again.rows] == ["ok", "ok"] and _finals(again) == _finals(first)


def test_an_entry_copied_over_another_is_detected(cached_fmu_study):
    fmu, cache, runs, first = cached_fmu_study
    a, b = (r["key"] for r in first.rows)
    for ext in (".npz", ".json"):
        shutil.copy(runs / f"{a}{ext}", runs / f"{b}{ext}")  # run k=2 now holds k=1's result
    again = _study(fmu, cache)
    assert [r["cached"] for r in again.rows] == [True, False]
    assert _finals(again) == _finals(first)
    shutil.copy(runs / f"{a}.npz", runs / f"{b}.npz")  # the result alone, beside b's own JSON
    assert [r["cached"] for r in _study(fmu, cache).rows] == [True, False]


HELPERS = "def gain():\n    return {gain!r}\n"
TARGET = """import {helpers}
from mbfmu.cosim import FmuUnit, System


def build(k=1.0):
    return System([FmuUnit({fmu!r}, "d", values={{"k": k * {helpers}.gain()}})])
"""


def test_a_helper_in_another_user_module_is_in_the_key(tmp_path, monkeypatch):
    """Issue 37.6: ``helpers.gain()`` reached through the module, not a global function."""
    import importlib
    import uuid
    name = f"helpers_{uuid.uuid4().hex[:8]}"  # a module of its own: no other test's import is reused
    (tmp_path / f"{name}.py").write_text(HELPERS.format(gain=1.0))
    (tmp_path / f"target_{name}.py").write_text(TARGET.format(helpers=name, fmu=str(reference_fmu("fmi2", "Dahlquist"))))
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers = importlib.import_module(name)
    target = importlib.import_module(f"target_{name}")
    first = _study(target.build, tmp_path / "cache")
    assert [r["cached"] for r in _study(target.build, tmp_path / "cache").rows] == [True, True]
    (tmp_path / f"{name}.py").write_text(HELPERS.format(gain=2.0))
    importlib.reload(helpers)
    changed = _study(target.build, tmp_path / "cache")
    assert not any(r["cached"] for r in changed.rows)
    assert _finals(changed)[0] == pytest.approx(_finals(first)[1], rel=1e-12)  # k=1 with gain 2 is k=2


def test_a_data_file_the_target_reads_is_checked_by_its_bytes(tmp_path):
    """Issue 37.6: a file read while the system is built (a table of gains) is an input of the run."""
    table = tmp_path / "gain.txt"
    table.write_text("1.0")

    def build(k=1.0):
        with open(table) as f:
            gain = float(f.read())
        return System([FmuUnit(reference_fmu("fmi2", "Dahlquist"), "d", values={"k": k * gain})])
    first = _study(build, tmp_path / "cache")
    assert [r["cached"] for r in _study(build, tmp_path / "cache").rows] == [True, True]
    table.write_text("2.0")  # same path, the key cannot see it
    changed = _study(build, tmp_path / "cache")
    assert not any(r["cached"] for r in changed.rows)
    assert _finals(changed)[0] == pytest.approx(_finals(first)[1], rel=1e-12)


def test_only_mbfmus_marked_temp_folders_are_never_inputs():
    """A file in an extracted FMU's private folder is never a run's input (its
    archive is); a user's folder that is merely named ``mbfmu-*`` in the temp
    folder (a clone of mbfmu made there) holds inputs like any other."""
    import tempfile

    from mbfmu.studies.run_inputs import could_be_input
    from mbfmu.untrusted.scratch import private_dir, release
    mine = private_dir("fmu")
    users = Path(tempfile.mkdtemp(prefix="mbfmu-clone-"))
    try:
        for folder in (mine, users):
            (folder / "data.txt").write_text("1.0")
        assert not could_be_input(os.path.realpath(mine / "data.txt"))
        assert could_be_input(os.path.realpath(users / "data.txt"))
        assert not could_be_input("/proc/self/mem")
    finally:
        release(mine)
        shutil.rmtree(users)
