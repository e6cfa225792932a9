"""Where runs execute: in this process, in its threads, in local worker processes, or on a Dask cluster.

Every executor runs the same function, :func:`execute`, on the same
:class:`~mbfmu.studies.targets.Target` and parameter values, so a run's
result does not depend on where it ran. Each executor's ``run`` yields
``(index, Outcome)`` as runs finish and stops early when ``stop()`` turns
true (Ctrl-C), after yielding the runs already finished; closing it cancels
what has not finished.

* :class:`SerialExecutor`: one run after the other, here.
* :class:`ThreadExecutor`: ``concurrent.futures.ThreadPoolExecutor`` in
  this process. The compiled dynamics kernels release the GIL and each
  plant has its own workspace, so plants simulated in Python step in
  parallel with no process start-up and nothing pickled. A run is stopped
  at its next step (timeout, Ctrl-C); a run stuck inside one step cannot be
  ended (use processes for FMUs that may hang).
* :class:`LocalExecutor`: ``concurrent.futures.ProcessPoolExecutor``;
  processes are forked where the system can (POSIX: instant start, and a
  script needs no ``if __name__ == "__main__"`` guard), spawned elsewhere;
  the target reaches each worker once, through the pool's initializer. No
  service, no ports. A worker process that dies (a
  crash inside an FMU, or a run stuck inside one step past its timeout,
  which ends the process) is replaced and the runs it took with it are tried
  again, each alone. A worker ends with its parent: on Linux the kernel kills
  it when the parent dies (``PR_SET_PDEATHSIG``, also after a SIGKILL), and
  everywhere it checks its parent before each run, so no worker outlives a
  killed study; the folders of killed workers are removed by the next mbfmu
  process (:func:`mbfmu.untrusted.scratch.clean_stale`). When a study stops
  (Ctrl-C, SIGTERM), each worker is sent SIGTERM: its run stops at the next
  step and the worker exits normally, its folders removed; one still there
  after :data:`STOP_GRACE` seconds (stuck inside a step) is killed.
* :class:`DaskExecutor`: a ``distributed.Client`` (given, or connected to
  ``dask://HOST:PORT``; or a ``LocalCluster`` for ``"dask-local"``); the
  target is scattered to the workers once (``broadcast=True``) and each
  worker builds it once, keyed by its content hash. The timeout is checked at
  every macro step there too, but a run stuck inside one step is not ended
  (the worker is Dask's to restart). ``"dask-local"`` starts its processes
  with ``spawn``: a script using it needs the ``if __name__ == "__main__":``
  guard.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import InputError, RunInterrupted, require_extra
from .targets import Options, RunTimeout, Target

Tasks = Sequence[tuple[int, Mapping[str, Any]]]


@dataclass
class Outcome:
    """What one run produced.

    Attributes
    ----------
    status : {"ok", "failed", "timed out"}
    error : str
        The error message of a failed or timed-out run ("" when ok).
    wall_time : float
        Wall time of the run on its worker [s], set-up included.
    result : mbfmu.cosim.Result or None
        The recorded result (up to the failure for a failed co-simulation).
    """

    status: str
    error: str
    wall_time: float
    result: Any = None


def execute(target: Target, values: Mapping[str, Any], opts: Options) -> Outcome:
    """Run ``target`` once with ``values``; never raises for a failing run."""
    t0 = time.perf_counter()
    try:
        result = target.runner().run(values, opts)
        return Outcome("ok", "", time.perf_counter() - t0, result)
    except RunTimeout as exc:
        return Outcome("timed out", str(exc), time.perf_counter() - t0, getattr(exc, "result", None))
    except RunInterrupted as exc:
        if exc.kind not in ("SIGINT", "SIGTERM"):
            return _failed(exc, t0)
        # the run's own guard took the signal meant for the study: hand it on, so the study stops too
        if threading.current_thread() is threading.main_thread():
            signal.raise_signal(signal.SIGINT if exc.kind == "SIGINT" else signal.SIGTERM)
        return Outcome("cancelled", str(exc), time.perf_counter() - t0)
    except Exception as exc:  # a failing run never stops the study
        return _failed(exc, t0)


def _failed(exc: Exception, t0: float) -> Outcome:
    """The outcome of a run that raised ``exc`` (started at ``time.perf_counter()`` ``t0``)."""
    msg = str(exc) or type(exc).__name__
    return Outcome("failed", msg if isinstance(exc, (ValueError, RuntimeError)) else f"{type(exc).__name__}: {msg}",
                   time.perf_counter() - t0, getattr(exc, "result", None))


class SerialExecutor:
    """Runs one after the other in this process."""

    workers = 1

    def run(self, target: Target, tasks: Tasks, opts: Options, stop: Callable[[], bool]) -> Iterator[tuple[int, Outcome]]:
        for i, values in tasks:
            if stop():
                return
            out = execute(target, values, opts)
            if out.status == "cancelled":
                return
            yield i, out

    def close(self) -> None:
        pass


# -- threads ----------------------------------------------------------------------------------
class ThreadExecutor:
    """Worker threads in this process (``concurrent.futures.ThreadPoolExecutor``).

    Parameters
    ----------
    workers : int
        Number of threads.
    """

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ThreadPoolExecutor
        self.workers = int(workers)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="mbfmu-run")
        self._stopping = threading.Event()

    def run(self, target: Target, tasks: Tasks, opts: Options, stop: Callable[[], bool]) -> Iterator[tuple[int, Outcome]]:
        from concurrent.futures import FIRST_COMPLETED, wait

        def one(values: Mapping[str, Any]) -> Outcome:
            if self._stopping.is_set():
                return Outcome("cancelled", "the study stopped", 0.0)
            return execute(target, values, opts)
        pending = {self._pool.submit(one, values): i for i, values in tasks}
        try:
            while pending:
                done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                if stop():
                    return
                for f in done:
                    i = pending.pop(f)
                    out = f.result()
                    if out.status == "cancelled":
                        return
                    yield i, out
        finally:
            if pending:
                self._stopping.set()
                for f in pending:
                    f.cancel()

    def close(self) -> None:
        self._stopping.set()
        self._pool.shutdown(wait=True, cancel_futures=True)


# -- local processes -----------------------------------------------------------------------
_WORKER_TARGET: Target | None = None
_PARENT: int | None = None
_ENDING = False  # the pool asked this worker to end (SIGTERM): take no new run
STOP_GRACE = 5.0  # s a worker has to end its run at a step (and send it) before it is killed
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux), and end it now if it already has."""
    import sys
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the check before each run remains
    _check_parent()


def _check_parent() -> None:
    """End this worker when the study that started it is gone (its parent changed)."""
    if _PARENT is not None and os.getppid() != _PARENT:
        _end_worker()


def _on_sigterm(signum, frame) -> None:
    """The pool ends this worker: finish what it is doing, take no new run, then exit
    normally (its folders removed). Never exit here: it may be sending a result, and
    a message cut in half would hang the pool's reader."""
    global _ENDING
    _ENDING = True


def _init_worker(target: Target, parent: int | None = None) -> None:
    """Pool initializer: end with the parent, keep the target, build it, leave Ctrl-C to the parent."""
    global _WORKER_TARGET, _PARENT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _PARENT = parent
    if parent is not None:
        _die_with_parent(parent)
    _WORKER_TARGET = target
    try:
        target.runner()
    except Exception:  # reported by each run instead
        pass


def _end_worker() -> None:
    """End this worker process now (a run stuck past its timeout), its temporary folders removed first."""
    from ..untrusted.scratch import release_all
    release_all()
    os._exit(70)


def _run_in_worker(started: str, values: Mapping[str, Any], opts: Options) -> Outcome:
    _check_parent()
    if _ENDING:
        return Outcome("cancelled", "the study was stopped", 0.0)
    Path(started).touch()  # tells the parent this run began, should the process die
    if opts.timeout is None:
        return execute(_WORKER_TARGET, values, opts)
    # the timeout is checked at every macro step; a run stuck inside one step
    # (a hanging FMU) ends its worker process instead, which the pool replaces
    guard = threading.Timer(opts.timeout + max(0.5, 0.5 * opts.timeout), _end_worker)
    guard.daemon = True
    guard.start()
    try:
        return execute(_WORKER_TARGET, values, opts)
    finally:
        guard.cancel()


class LocalExecutor:
    """Worker processes on this machine (``concurrent.futures``; forked on POSIX).

    Parameters
    ----------
    workers : int
        Number of processes.

    Notes
    -----
    When a worker process dies, the pool loses every run in progress. Those
    runs are tried again at the end, each alone in a one-process pool, so a
    run that kills its process is told apart from the runs that were only
    beside it; runs still queued are simply submitted again.
    """

    def __init__(self, workers: int) -> None:
        if int(workers) < 1:
            raise InputError(f"workers = {workers!r} must be at least 1")
        self.workers = int(workers)

    def _pool(self, target: Target, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                   initializer=_init_worker, initargs=(target, os.getpid()))

    def run(self, target: Target, tasks: Tasks, opts: Options, stop: Callable[[], bool]) -> Iterator[tuple[int, Outcome]]:
        values = {i: v for i, v in tasks}
        todo = dict(values)
        suspects: list[int] = []  # runs in progress when a worker process died
        from ..untrusted.scratch import clean_stale, private_dir, release
        marks = private_dir("study-runs")
        try:
            while todo and not stop():
                lost = yield from self._round(target, todo, opts, stop, marks, self.workers)
                suspects += lost
            for i in suspects:  # each alone: a second death is its own
                if stop():
                    return
                lost = yield from self._round(target, {i: values[i]}, opts, stop, marks, 1)
                if lost:
                    why = " or a hang past the timeout" if opts.timeout is not None else ""
                    yield i, Outcome("failed", "the worker process died during this run, also when run alone: "
                                               f"a crash inside the model{why}", 0.0)
        finally:
            release(marks)
            clean_stale()  # the folders of workers that died (a crash, a kill) go with them

    def _round(self, target: Target, todo: dict[int, Mapping[str, Any]], opts: Options, stop: Callable[[], bool],
               marks: Path, workers: int):
        """Submit ``todo`` to a new pool, yield the finished runs (removed from
        ``todo``); returns the runs lost in progress with a dead process."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool
        pool = self._pool(target, workers)
        lost: list[int] = []
        try:
            futures = {pool.submit(_run_in_worker, str(marks / str(i)), v, opts): i for i, v in todo.items()}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                halt = stop()
                if halt:  # keep what finished meanwhile
                    done |= {f for f in pending if f.done()}
                for f in done:
                    i = futures[f]
                    try:
                        out = f.result()
                    except BrokenProcessPool:
                        started = marks / str(i)
                        if started.exists():  # running when the process died
                            started.unlink()
                            lost.append(i)
                            del todo[i]
                        continue  # a queued run stays in todo, for the next pool
                    del todo[i]
                    yield i, out
                if halt:
                    break
        finally:
            self._shutdown(pool)
        return lost

    @staticmethod
    def _shutdown(pool) -> None:
        """End the pool, runs still going included: SIGTERM stops a run at its next step,
        a worker still there after :data:`STOP_GRACE` (stuck inside a step) is killed."""
        procs = list(getattr(pool, "_processes", {}).values())
        for p in procs:
            if p.is_alive():
                p.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + STOP_GRACE
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
        pool.shutdown(wait=True)

    def close(self) -> None:
        pass


# -- Dask ---------------------------------------------------------------------------------
def _run_on_dask(target: Target, values: Mapping[str, Any], opts: Options) -> Outcome:
    return execute(target, values, opts)


class DaskExecutor:
    """Runs on a Dask cluster through a ``distributed.Client``.

    Parameters
    ----------
    client : distributed.Client, optional
        An existing client (not closed here).
    address : str, optional
        Scheduler address ``dask://HOST:PORT`` or ``tcp://HOST:PORT``.
    local_workers : int, optional
        Start a ``distributed.LocalCluster`` of that many single-threaded
        worker processes instead (closed with the executor).
    """

    def __init__(self, client: Any = None, address: str | None = None, local_workers: int | None = None,
                 connect_timeout: float = 10.0) -> None:
        distributed = require_extra("distributed", "the Dask executor")
        self._own: list[Any] = []
        if client is None and local_workers is not None:
            cluster = distributed.LocalCluster(n_workers=int(local_workers), threads_per_worker=1, processes=True,
                                               dashboard_address=None)
            client = distributed.Client(cluster)
            self._own = [client, cluster]
        elif client is None:
            addr = "tcp://" + address[len("dask://"):] if address.startswith("dask://") else address
            try:
                client = distributed.Client(addr, timeout=connect_timeout)
            except (OSError, TimeoutError) as exc:
                raise InputError(f"cannot reach the Dask scheduler at {address!r}: {exc}") from None
            self._own = [client]
        self.client = client
        self.workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))

    def run(self, target: Target, tasks: Tasks, opts: Options, stop: Callable[[], bool]) -> Iterator[tuple[int, Outcome]]:
        distributed = require_extra("distributed", "the Dask executor")
        client = self.client
        shipped = client.scatter(target, broadcast=True, hash=False)  # once per worker, not per run
        tag = uuid.uuid4().hex[:8]
        futures = {client.submit(_run_on_dask, shipped, values, opts, pure=False, key=f"mbfmu-run-{tag}-{i}"): i
                   for i, values in tasks}
        done_ = distributed.as_completed(list(futures))
        left = set(futures)
        try:
            while left:
                halt = stop()
                batch = done_.next_batch(block=False) if done_.has_ready() else []
                if not batch and not halt:
                    time.sleep(0.005)
                    continue
                for f in batch:
                    left.discard(f)
                    try:
                        out = f.result()
                    except Exception as exc:  # the worker died (KilledWorker) or the task was lost
                        out = Outcome("failed", f"{type(exc).__name__}: {exc}", 0.0)
                    yield futures[f], out
                if halt:
                    return
        finally:
            if left:
                client.cancel(list(left))
            client.cancel([shipped])

    def close(self) -> None:
        for obj in self._own:
            obj.close()


def make_executor(executor: Any, workers: int | None, runs: int):
    """The executor for ``executor`` (see :func:`mbfmu.studies.sweep`)."""
    if executor is None or executor == "local":
        n = workers if workers is not None else min(os.cpu_count() or 1, runs)
        return SerialExecutor() if n <= 1 and executor is None else LocalExecutor(max(1, n))
    if executor == "serial":
        return SerialExecutor()
    if executor == "threads":
        return ThreadExecutor(max(1, workers if workers is not None else min(os.cpu_count() or 1, runs)))
    if isinstance(executor, int) and not isinstance(executor, bool):
        return LocalExecutor(executor)
    if executor == "dask-local":
        return DaskExecutor(local_workers=workers or os.cpu_count() or 1)
    if isinstance(executor, str) and (executor.startswith("dask://") or executor.startswith("tcp://")):
        return DaskExecutor(address=executor)
    if type(executor).__name__ == "Client" and hasattr(executor, "submit"):
        return DaskExecutor(client=executor)
    if isinstance(executor, (SerialExecutor, ThreadExecutor, LocalExecutor, DaskExecutor)):
        return executor
    raise InputError(f"executor {executor!r}: use None or 'local' (worker processes here), 'serial', 'threads', a "
                     "number of workers, 'dask://HOST:PORT', 'dask-local' or a distributed.Client")
