"""A study on threads: the plants of its runs step in parallel in this process (the
kernels release the GIL, each plant has its own workspace) and give the same
table and bit-identical results as the study on worker processes."""
from __future__ import annotations

import pytest

from mbfmu.errors import InputError
from mbfmu.studies import sweep
from mbfmu.studies.executors import ThreadExecutor, make_executor

GRID = {"arm_mass": [10.0, 20.0, 30.0], "theta2_0": [0.5, 1.1]}  # 6 runs
METRICS = ["final:q[2]", "max:kinetic_energy", "rms:v[3]"]
SAME = ("run", "arm_mass", "theta2_0", "status", "error", *METRICS, "key")


def _study(executor, **kw):
    return sweep("rigid_arm", GRID, stop_time=0.3, step=0.01, metrics=METRICS, executor=executor, progress=False,
                 **kw)


def test_a_study_on_two_threads_equals_the_study_on_two_processes():
    threads = _study("threads", workers=2)
    processes = _study("local", workers=2)
    assert processes.summary() == "6 runs: 6 ok"
    assert [[r[c] for c in SAME] for r in threads.rows] == [[r[c] for c in SAME] for r in processes.rows]
    for i in range(6):
        a, b = threads.result(i).data, processes.result(i).data
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()  # bit-identical
    # the runs differ, so the comparison above compares something
    assert len(set(threads["final:q[2]"].tolist())) == 6


def test_the_thread_executor_takes_its_worker_count_and_bad_names_are_refused():
    ex = make_executor("threads", 3, 10)
    try:
        assert isinstance(ex, ThreadExecutor) and ex.workers == 3
    finally:
        ex.close()
    with pytest.raises(InputError, match="'threads'"):
        make_executor("thread", None, 2)


def test_the_command_line_runs_a_study_on_threads(tmp_path):
    import csv

    from mbfmu.cli import main
    out = tmp_path / "threads.csv"
    assert main(["sweep", "rigid_arm", "--param", "arm_mass=10,30", "--stop-time", "0.3", "--step", "0.01",
                 "--metric", "final:q[2]", "--threads", "2", "--no-progress", "-o", str(out)]) == 0
    serial = sweep("rigid_arm", {"arm_mass": [10.0, 30.0]}, stop_time=0.3, step=0.01, metrics=["final:q[2]"],
                   executor="serial", progress=False)
    assert [float(r["final:q[2]"]) for r in csv.DictReader(open(out))] == serial["final:q[2]"].tolist()
