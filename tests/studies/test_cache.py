"""Resume from the cache: an interrupted study continues without redoing finished runs."""
from __future__ import annotations

import os
import signal

import pytest

from mbfmu.studies import sweep

from . import second_order


def _counting_builder(counter, pid=None):
    """A system builder that logs each call to ``counter`` and, while the file
    ``counter.stop`` exists, sends process ``pid`` (default: the caller's) a
    Ctrl-C (SIGINT) during the call whose number is that file's size in bytes.

    The builder reads neither file (it appends and looks at sizes): a run
    records the files it reads as inputs, and these change between studies.
    """
    stop, sent = counter.with_suffix(".stop"), counter.with_suffix(".sent")

    def build(zeta):
        fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{zeta!r:>24}\n".encode())  # 25 bytes a call
        os.close(fd)
        if stop.exists() and os.path.getsize(counter) // 25 >= os.path.getsize(stop):
            # ">=" and an exclusive marker file: two workers may both log a call before
            # either counts, and exactly one of them must press Ctrl-C
            try:
                os.close(os.open(sent, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(pid or os.getpid(), signal.SIGINT)
        return second_order.system(zeta)
    return build


ZETAS = [0.1 + 0.05 * k for k in range(12)]
METRICS = ["overshoot:plant.y", "final:plant.y"]


def test_interrupted_study_resumes_from_its_cache_without_redoing_finished_runs(tmp_path):
    counter, cache = tmp_path / "calls.txt", tmp_path / "cache"
    counter.with_suffix(".stop").write_text("x" * 4)
    with pytest.warns(UserWarning, match="interrupted: 4 runs finished, 8 cancelled"):
        first = sweep(_counting_builder(counter), {"zeta": ZETAS}, stop_time=2.0, step=0.01,
                      metrics=METRICS, cache=cache, executor="serial", progress=False)
    assert first.interrupted
    assert [r["status"] for r in first.rows] == ["ok"] * 4 + ["cancelled"] * 8
    assert len(counter.read_text().splitlines()) == 4
    counter.with_suffix(".stop").unlink()
    counter.with_suffix(".sent").unlink()

    again = sweep(_counting_builder(counter), {"zeta": ZETAS}, stop_time=2.0, step=0.01, metrics=METRICS,
                  cache=cache, executor="serial", progress=False)
    calls = [float(z) for z in counter.read_text().splitlines()]
    assert calls[4:] == ZETAS[4:]  # only the runs that had not finished
    assert [r["cached"] for r in again.rows] == [True] * 4 + [False] * 8
    assert not again.interrupted and again.summary() == "12 runs: 12 ok"

    fresh = sweep(second_order.system, {"zeta": ZETAS}, stop_time=2.0, step=0.01, metrics=METRICS,
                  executor="serial", progress=False)
    for a, b in zip(again.rows, fresh.rows):
        assert (a["overshoot:plant.y"], a["final:plant.y"]) == (b["overshoot:plant.y"], b["final:plant.y"])
    assert again.result(0).data.tobytes() == fresh.result(0).data.tobytes()


def test_cache_key_holds_the_options_and_metrics_are_recomputed_from_stored_results(tmp_path):
    counter, cache = tmp_path / "calls.txt", tmp_path / "cache"
    sweep(_counting_builder(counter), {"zeta": ZETAS[:2]}, stop_time=1.0, step=0.01, cache=cache,
          executor="serial", progress=False)
    # a new metric on the same runs: nothing simulated again
    s = sweep(_counting_builder(counter), {"zeta": ZETAS[:2]}, stop_time=1.0, step=0.01, cache=cache,
              metrics=["max:plant.y"], executor="serial", progress=False)
    assert len(counter.read_text().splitlines()) == 2 and all(r["cached"] for r in s.rows)
    assert s.rows[0]["max:plant.y"] == s.result(0)["plant.y"].max()
    # another stop time is another run
    sweep(_counting_builder(counter), {"zeta": ZETAS[:2]}, stop_time=1.5, step=0.01, cache=cache,
          executor="serial", progress=False)
    assert len(counter.read_text().splitlines()) == 4


def test_ctrl_c_during_a_study_on_local_workers_keeps_finished_runs_and_resume_redoes_only_the_others(tmp_path):
    counter, cache = tmp_path / "calls.txt", tmp_path / "cache"
    counter.with_suffix(".stop").write_text("x" * 5)  # the 5th run, in a worker process, presses Ctrl-C for us
    build = _counting_builder(counter, pid=os.getpid())
    with pytest.warns(UserWarning, match="interrupted"):
        first = sweep(build, {"zeta": ZETAS}, stop_time=1.0, step=0.01, metrics=METRICS, cache=cache,
                      executor="local", workers=2, progress=False)
    status = [r["status"] for r in first.rows]
    assert first.interrupted and 1 <= status.count("ok") < 12 and set(status) == {"ok", "cancelled"}
    counter.with_suffix(".stop").unlink()
    counter.with_suffix(".sent").unlink()
    before = len(counter.read_text().splitlines())
    again = sweep(build, {"zeta": ZETAS}, stop_time=1.0, step=0.01, metrics=METRICS, cache=cache,
                  executor="local", workers=2, progress=False)
    redone = sorted(float(z) for z in counter.read_text().splitlines()[before:])
    assert redone == sorted(z for z, s in zip(ZETAS, status) if s != "ok")
    assert again.summary() == "12 runs: 12 ok"
    assert [r["cached"] for r in again.rows] == [s == "ok" for s in status]
