"""Preemptive scheduling of FMI 3.0 Scheduled Execution partitions (#36.2).

Checked against the Reference FMUs' threaded importer ``examples/scs_threaded.c``
on ``Clocks`` (its call logs are fixtures; tests/fixtures/README.md says what of
them is deterministic), against the fixed-priority response-time recurrence
(Joseph and Pandya 1986) for the time a preempted partition finishes, against
what ``Clocks/model.c`` does before and inside its critical section, and for
mutual exclusion of the FMU's lockPreemption/unlockPreemption sections."""
from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

from mbfmu.cosim import FmuUnit, System, simulate
from mbfmu.cosim.fmi.clocks import Clock
from mbfmu.cosim.fmi.se_preemptive import PreemptiveProcessor
from mbfmu.errors import InputError

from .clocks_reference import CLOCKS, SCS, BooleanPulses
from tooling import FIXTURES

THREADED = FIXTURES / "reference-fmus" / "scs_threaded"
OUTPUTS = {1001: ("inClock1Ticks", "totalInClockTicks"),  # what scs_threaded.c reads after each partition
           1002: ("inClock2Ticks", "totalInClockTicks", "result2")}


def _threaded_calls(log: str) -> list[tuple[int, float, dict[str, float]]]:
    """(clock value reference, activation time, outputs read by the same thread) of each activation in a log."""
    lines = (THREADED / log).read_text().splitlines()
    calls, active = [], {}
    for line in lines:
        thread, call = re.match(r"\[([\w-]+)\] (.*)", line).groups()
        m = re.match(r"fmi3ActivateModelPartition\(clockReference=(\d+), activationTime=([0-9.e+-]+)\) -> 0", call)
        if m:
            active[thread] = (int(m[1]), float(m[2]))
            continue
        m = re.match(r"fmi3GetInt32\(valueReferences=\{[\d, ]+\}, nValueReferences=\d, values=\{([\d, -]+)\}", call)
        if m and thread in active:
            vr, t = active.pop(thread)
            calls.append((vr, t, dict(zip(OUTPUTS[vr], (float(v) for v in m[1].split(", "))))))
    return calls


def _run(execution_time: dict[str, float], stop: float, triggers: list[float]):
    unit = FmuUnit(CLOCKS, "clocks", scheduling="preemptive", execution_time=execution_time)
    system = System([unit, BooleanPulses("trigger", triggers)], [("trigger.y", "clocks.inClock2")])
    return unit, simulate(system, stop, 1.0)


@pytest.mark.parametrize("execution_time", [{}, {"inClock1": 0.25, "inClock2": 0.5}])
def test_preemptive_run_equals_scs_threaded_where_it_is_deterministic(execution_time):
    a, b = _threaded_calls("scs_threaded_log_a.txt"), _threaded_calls("scs_threaded_log_b.txt")
    assert len(a) == len(b) == 5  # the fixture is what its README says: 1001 at 0, 1, 2 s and 1002 at 0, 1 s
    assert [c[:2] for c in a] != [c[:2] for c in b]  # the two runs ran the partitions of 0 s in either order
    # scs_threaded.c runs Clocks to its DEFAULT_STOP_TIME (3 s), activating at 0, 1 and 2 s; this run
    # goes on to 3 s so that the partitions of 2 s finish when they take time, and is compared up to 2 s
    unit, res = _run(execution_time, 3.0, [0.0, 1.0])
    by_name = {c.name: c.vr for c in unit.clocks.values()}
    ours = [(by_name[c], t, values) for c in ("inClock1", "inClock2")
            for t, values in unit.partition_outputs[c] if t <= 2.0]
    priority = {c.vr: c.priority for c in unit.clocks.values()}
    ours.sort(key=lambda call: (call[1], priority[call[0]]))
    # deterministic in every run of the importer: which partitions run when, each one's own results,
    # and the tick total once all partitions of an instant have run
    for run in (a, b):
        own = {(vr, t, tuple(v for k, v in values.items() if k != "totalInClockTicks")) for vr, t, values in run}
        assert {(vr, t, tuple(v for k, v in values.items() if k != "totalInClockTicks"))
                for vr, t, values in ours} == own
        last = [max(v["totalInClockTicks"] for _, t, v in run if t == ti) for ti in (0.0, 1.0, 2.0)]
        assert [max(v["totalInClockTicks"] for _, t, v in ours if t == ti) for ti in (0.0, 1.0, 2.0)] == last
    # in the clock priorities' order (inClock1 first) the whole log agrees, totals included
    assert ours == a
    assert [c for c, t in unit.activations if t <= 2.0] == ["inClock1", "inClock2", "inClock1", "inClock2", "inClock1"]
    # the importer saw the output clock tick once, in the callback of the activation at 2 s
    log_a = (THREADED / "scs_threaded_log_a.txt").read_text()
    assert log_a.count("values={1}") == 1
    assert res["clocks.outClock"].tolist()[:3] == [0.0, 0.0, 1.0]


def _response_time(c: float, interferers: list[tuple[float, float]]) -> float:
    """Worst-case response time of a task of execution time ``c`` [s] under higher-priority
    periodic tasks ``(execution time, period)`` [s], released together: R = c + sum ceil(R/T) C."""
    r = c
    while True:
        nxt = c + sum(math.ceil(r / t) * ci for ci, t in interferers)
        if nxt == r:
            return r
        r = nxt


def test_a_higher_priority_partition_preempts_a_running_one():
    """inClock1 (priority 0, every 1 s, 0.25 s of work) preempts inClock3's partition (priority 2,
    released at 4 s by inClock1's, 2.6 s of work), which finishes where response-time analysis says."""
    c1, c3 = 0.25, 2.6
    unit, res = _run({"inClock1": c1, "inClock3": c3}, 8.0, [0.0, 1.0])
    done = {(c, t): (s, f, at) for c, t, s, f, at in unit.schedule}
    start3, finish3, where = done[("inClock3", 4.0)]
    assert start3 == 4.0 + c1  # it waits for the partition that released it (higher priority)
    assert finish3 == pytest.approx(4.0 + _response_time(c3, [(c1, 1.0)]), abs=1e-12)  # 7.6 s
    for k in range(5, 8):  # the partitions of higher priority are never delayed by it
        assert done[("inClock1", float(k))][:2] == (float(k), k + c1)
    # Clocks/model.c: partition 3 counts its tick, burns time, then adds to the total inside
    # lockPreemption/unlockPreemption; so it was preempted at lockPreemption, its tick shows
    # from the first communication point after it started, its total only after it finished
    assert where == "lockPreemption"
    assert res["clocks.inClock3Ticks"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    with open(SCS / "scs_synchronous_out.csv", newline="") as f:
        synchronous = [int(r["totalInClockTicks"]) for r in csv.DictReader(f)][:9]
    # (with inClock2 at 0 and 1 s only, as in this run, the synchronous totals apply up to 7 s); at 0
    # and 1 s inClock2's partition has not run yet at the communication point: it waits for inClock1's
    waiting2 = [1 if t in (0, 1) else 0 for t in range(9)]
    preempted = [s - waiting2[t] - (1 if 4 <= t < finish3 else 0) for t, s in enumerate(synchronous)]
    np.testing.assert_array_equal(res["clocks.totalInClockTicks"][:8], preempted[:8])
    assert unit.partition_outputs["inClock3"][0] == (4.0, {"totalInClockTicks": 11.0, "output3": 1000.0})
    assert unit.ticks["inClock3"] == (1, 4.0)


def test_no_partition_runs_inside_another_ones_critical_section():
    """A low-priority job waits at its lockPreemption; a high-priority job released meanwhile takes
    the lock and is itself preempted by a third: the critical sections never interleave, and the
    times follow fixed-priority preemption."""
    events: list[str] = []
    proc: PreemptiveProcessor

    def activate(clock: Clock, t: float) -> int:
        events.append(f"{clock.name} begins")
        proc.lock()
        events.append(f"{clock.name} locked")
        proc.clock_update()  # inside the lock: must not be a preemption point
        events.append(f"{clock.name} unlocks")
        proc.unlock()
        events.append(f"{clock.name} ends")
        return 0

    clocks = [Clock(n, k, "input", "triggered", p, None, 0.0) for k, (n, p) in enumerate(
        [("low", 2), ("mid", 1), ("high", 0)])]
    proc = PreemptiveProcessor(activate, lambda job: None, {"low": 1.0, "mid": 0.5, "high": 0.25}, 1e-12)
    proc.reset(0.0)
    for t, clock in ((0.0, clocks[0]), (0.25, clocks[1]), (0.5, clocks[2])):
        proc.advance(t)
        proc.release(clock, clock.vr, t)
        proc.advance(t)
    proc.advance(3.0)
    sections = [e.split()[0] for e in events if e.endswith(("locked", "unlocks"))]
    assert sections == ["high", "high", "mid", "mid", "low", "low"]  # one section at a time, by priority
    assert all(events.index(f"{n} begins") < events.index(f"{n} locked") for n in ("low", "mid", "high"))
    times = {j.clock.name: (j.start, j.finish, j.preempted_at) for j in proc.finished}
    assert times == {"high": (0.5, 0.75, "lockPreemption"), "mid": (0.25, 1.0, "lockPreemption"),
                     "low": (0.0, 1.75, "lockPreemption")}
    assert proc.lock_depth == 0


@pytest.mark.parametrize("kwargs, match", [
    ({"scheduling": "threaded"}, r"scheduling 'threaded' is not one of synchronous, preemptive"),
    ({"scheduling": "preemptive", "execution_time": {"outClock": 1.0}}, r"'outClock', which is not an input clock"),
    ({"scheduling": "preemptive", "execution_time": {"inClock1": -1}}, r"must be finite and >= 0 s, got -1.0"),
    ({"scheduling": "preemptive", "execution_time": {"inClock1": float("nan")}}, r"must be finite"),
    ({"scheduling": "preemptive", "execution_time": {"inClock1": "fast"}}, r"is not a number: 'fast'"),
    ({"execution_time": {"inClock1": 0.1}}, r"execution_time needs scheduling='preemptive'"),
])
def test_bad_scheduling_options_are_refused_in_one_line(kwargs, match):
    with pytest.raises(InputError, match=match) as err:
        FmuUnit(CLOCKS, "clocks", **kwargs)
    assert "\n" not in str(err.value)


def test_the_hand_over_between_partitions_is_deterministic():
    """Worker threads hand over by the schedule only: twenty runs give the same calls in the same order."""
    def run() -> tuple[list[str], list[tuple]]:
        events: list[str] = []

        def activate(clock: Clock, t: float) -> int:
            events.append(f"{clock.name}@{t} begins")
            proc.clock_update()
            proc.lock()
            events.append(f"{clock.name}@{t} critical")
            proc.unlock()
            return 0

        clocks = [Clock(n, k, "input", "triggered", p, None, 0.0) for k, (n, p) in enumerate([("a", 0), ("b", 1)])]
        proc = PreemptiveProcessor(activate, lambda job: None, {"a": 0.3, "b": 0.7}, 1e-12)
        proc.reset(0.0)
        for k in range(6):
            t = 0.5 * k
            proc.advance(t)
            proc.release(clocks[k % 2], k % 2, t)
            proc.advance(t)
        proc.advance(10.0)
        return events, [(j.clock.name, j.release, j.start, j.finish) for j in proc.finished]

    first = run()
    assert all(run() == first for _ in range(20))
    # a runs at 0, 1, 2 s for 0.3 s; b, released at 0.5, 1.5, 2.5 s, needs 0.7 s: each b is preempted by
    # the next a and finishes 0.3 s later than it would alone
    expected = [("a", 0.0, 0.0, 0.3), ("a", 1.0, 1.0, 1.3), ("b", 0.5, 0.5, 1.5), ("a", 2.0, 2.0, 2.3),
                ("b", 1.5, 1.5, 2.5), ("b", 2.5, 2.5, 3.2)]
    assert [j[0] for j in first[1]] == [e[0] for e in expected]
    np.testing.assert_allclose([j[1:] for j in first[1]], [e[1:] for e in expected], rtol=0, atol=1e-12)
    # b begins at 0.5 s and waits at its clockUpdate while a (released at 1 s) preempts it
    assert first[0][:4] == ["a@0.0 begins", "a@0.0 critical", "b@0.5 begins", "a@1.0 begins"]


def test_a_failing_partition_fails_the_run_in_one_line_and_leaves_no_thread_inside_the_fmu():
    import threading

    from mbfmu.errors import CosimError

    unit = FmuUnit(CLOCKS, "clocks", scheduling="preemptive", execution_time={"inClock1": 0.5, "inClock3": 0.5})
    call = unit._call_partition  # fault injection: inClock3's partition reports fmi3Error
    unit._call_partition = lambda c, t: 3 if c.name == "inClock3" else call(c, t)
    before = threading.active_count()
    with pytest.raises(CosimError, match=r"fmi3ActivateModelPartition of clock 'inClock3'.*4\.0") as err:
        simulate(System([unit]), 6.0, 1.0)
    assert "\n" not in str(err.value)
    assert threading.active_count() == before  # the partitions still running were let finish before terminate


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    """cfmu/ticker3.c as Scheduled Execution: a periodic partition (0.5 s) that sets a countdown
    clock ``delay`` (0.25 s) ahead."""
    from .fmu_build import build_ticker3
    return build_ticker3(tmp_path_factory.mktemp("sampler3p"), scheduled=True)


def test_countdown_ticks_keep_their_times_when_partitions_take_time(sampler):
    """The periodic partition sets the countdown in its clock-update callback, where it waits while
    it runs: the countdown partition still ticks 0.25 s after it, and each takes its 0.1 s."""
    unit = FmuUnit(sampler, "s", scheduling="preemptive", execution_time={"sample": 0.1, "later": 0.1})
    res = simulate(System([unit]), 2.0, 0.25)
    sample = [0.5 * i for i in range(5)]
    later = [t + 0.25 for t in sample[:-1]]
    assert sorted(unit.activations, key=lambda a: a[1]) == sorted(
        [("sample", t) for t in sample] + [("later", t) for t in later], key=lambda a: a[1])
    done = [(c, t, s, f, at) for c, t, s, f, at in unit.schedule]
    assert [(c, t, s) for c, t, s, _, _ in done] == [(c, t, t) for c, t in sorted(
        [("sample", t) for t in sample[:-1]] + [("later", t) for t in later], key=lambda a: a[1])]
    np.testing.assert_allclose([f - s for _, _, s, f, _ in done], 0.1, rtol=0, atol=1e-12)
    assert {at for c, _, _, _, at in done if c == "sample"} == {"clockUpdate"}
    assert [v["kick_time"] for _, v in unit.partition_outputs["later"]] == later
    # at each communication point the countdown partition's result is that of its last tick
    assert res["s.kick_time"].tolist() == [0.0] + [max([t for t in later if t <= g], default=0.0)
                                                   for g in res["time"][1:]]


def test_without_execution_times_the_preemptive_run_is_the_synchronous_one(sampler):
    runs = []
    for kwargs in ({}, {"scheduling": "preemptive"}):
        unit = FmuUnit(sampler, "s", **kwargs)
        res = simulate(System([unit]), 2.0, 0.25)
        runs.append((list(unit.activations), {k: res[k].tolist() for k in res.names}))
    assert runs[0] == runs[1]
    assert len(runs[0][0]) == 9  # sample at 0, 0.5, ..., 2 s and later 0.25 s after each but the last


def test_a_countdown_set_after_its_tick_fails_the_run_by_name(sampler):
    """A partition that opens with a critical section waits there while it runs, so it sets its
    countdown (0.25 s ahead) only when it finishes, after 0.3 s: past the tick, said in one line."""
    from mbfmu.errors import CosimError

    unit = FmuUnit(sampler, "s", scheduling="preemptive", execution_time={"sample": 0.3})
    call = unit._call_partition

    def critical_section_first(clock, t):  # fault injection: as an FMU whose partition locks first
        unit._processor.lock()
        unit._processor.unlock()
        return call(clock, t)

    unit._call_partition = critical_section_first
    with pytest.raises(CosimError, match=r"clock 'later': the countdown tick at t = 0.25 s was set by a partition "
                                         r"ticking at 0.0 s that ran until after it \(at 0.3 s\)") as err:
        simulate(System([unit]), 1.0, 0.25)
    assert "\n" not in str(err.value)
    assert [(c, t, at) for c, t, _, _, at in unit.schedule] == [("sample", 0.0, "lockPreemption")]


@pytest.mark.slow  # Clocks' partition 3 burns 10^9 loop iterations on the worker thread (seconds)
def test_a_partition_preempted_past_the_end_reads_like_scs_threaded_to_10_s():
    """The importer built to run Clocks to 10 s (fixture README): partition 3, started at 4 s, had not
    returned by the end, and the partitions of inClock1 and inClock2 read totals without its
    increment. A preemptive run in which inClock3's partition takes longer than the run reads the
    same values in every partition, in the same order."""
    log = _threaded_calls("scs_threaded_10s_log.txt")
    assert len(log) == 14 and "starting thread for input clock 3" in (
        THREADED / "scs_threaded_10s_stdout.txt").read_text()
    unit, res = _run({"inClock3": 6.0}, 9.0, [0.0, 1.0, 8.0, 9.0])
    by_name = {c.name: c.vr for c in unit.clocks.values()}
    ours = sorted([(by_name[c], t, values) for c in ("inClock1", "inClock2") for t, values in
                   unit.partition_outputs[c]], key=lambda call: (call[1], call[0]))
    assert ours == log
    assert ("inClock3", 4.0) in unit.activations and not unit.partition_outputs["inClock3"]  # started, not done
    assert res["clocks.result2"].tolist() == [0] * 10


def test_a_preemptive_unit_keeps_the_python_loop_and_says_why(sampler):
    unit = FmuUnit(sampler, "s", scheduling="preemptive")
    res = simulate(System([unit]), 0.5, 0.25)
    assert "unit 's' runs FMI 3.0 Scheduled Execution: the master schedules its partitions preemptively" \
        in res.meta["python_loop"]
