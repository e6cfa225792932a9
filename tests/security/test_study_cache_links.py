"""Issue 37.1: a handed-over cache folder cannot make ``sweep`` write or read outside it.

``RunCache.store`` wrote ``runs/.{key}.{pid}.part.json`` with
``Path.write_text``, which follows a link planted there: keys are public and
pids sequential, so the next run's entry went into any file the user can
write. A ``runs`` folder that is a link sent every entry elsewhere. Now the
temporary names are random and opened ``O_CREAT|O_EXCL|O_NOFOLLOW``, a
linked ``runs`` is refused in one line, and an entry that is a link is a miss.
"""
from __future__ import annotations

import os

import pytest
from tooling import reference_fmu

from mbfmu.errors import InputError
from mbfmu.studies import sweep
from mbfmu.studies.cache import run_key
from mbfmu.studies.study import _options
from mbfmu.studies.targets import resolve

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))
KS = [1.0, 2.0]


def _study(cache):
    return sweep(DAHLQUIST, {"k": KS}, stop_time=0.5, step=0.1, metrics=["final:x"], executor="serial",
                 cache=cache, progress=False)


def _keys():
    target, opts = resolve(DAHLQUIST), _options(0.5, 0.1, 0.0, "outputs", "jacobi", None)
    return [run_key(target, {"k": k}, opts) for k in KS]


def test_links_planted_at_the_entry_names_are_never_written_through(tmp_path):
    runs = tmp_path / "cache" / "runs"
    runs.mkdir(parents=True)
    victims = []
    pid = os.getpid()  # the serial study stores its entries from this process
    for key in _keys():
        for name in (f".{key}.{pid}.part.json", f".{key}.{pid}.part.npz", f"{key}.json", f"{key}.npz"):
            victim = tmp_path / f"victim-{len(victims)}"
            victim.write_text("precious")
            (runs / name).symlink_to(victim)
            victims.append(victim)
    study = _study(tmp_path / "cache")
    assert [r["status"] for r in study.rows] == ["ok", "ok"]
    assert all(v.read_text() == "precious" for v in victims)
    for key in _keys():  # the entries are files of the cache itself, the links replaced
        assert not (runs / f"{key}.json").is_symlink() and (runs / f"{key}.json").is_file()
        assert not (runs / f"{key}.npz").is_symlink() and (runs / f"{key}.npz").is_file()
    again = _study(tmp_path / "cache")
    assert all(r["cached"] for r in again.rows)
    assert [r["final:x"] for r in again.rows] == [r["final:x"] for r in study.rows]


def test_a_runs_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "runs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InputError, match="'runs' is a symbolic link") as err:
        _study(tmp_path / "cache")
    assert "\n" not in str(err.value)
    assert list(elsewhere.iterdir()) == []


def test_an_entry_that_is_a_link_to_another_folder_is_not_read(tmp_path):
    first = _study(tmp_path / "theirs")
    assert not any(r["cached"] for r in first.rows)
    runs = tmp_path / "mine" / "runs"
    runs.mkdir(parents=True)
    for key in _keys():  # valid entries, but outside the cache folder
        for suffix in (".json", ".npz"):
            (runs / f"{key}{suffix}").symlink_to(tmp_path / "theirs" / "runs" / f"{key}{suffix}")
    study = _study(tmp_path / "mine")
    assert not any(r["cached"] for r in study.rows) and all(r["status"] == "ok" for r in study.rows)
