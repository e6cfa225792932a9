"""Fixtures of the study tests: a library plant FMU and a real Dask cluster on localhost."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def arm_fmu(tmp_path_factory):
    """The rigid_arm library plant as an FMU (pythonfmu), built once per session."""
    from mbfmu.fmu import build_fmu
    return build_fmu("rigid_arm", tmp_path_factory.mktemp("studies_fmu"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_command() -> list[str]:
    exe = Path(sys.executable).with_name("dask")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dask"]


def _stop(procs: list[subprocess.Popen]) -> None:
    """Workers first, then the scheduler: SIGTERM, and SIGKILL after a grace period."""
    for group in (procs[1:], procs[:1]):
        for p in group:
            if p.poll() is None:
                p.terminate()
        for p in group:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


@pytest.fixture
def dask_cluster(request, tmp_path):
    """``dask scheduler`` and two single-threaded ``dask worker`` processes on
    127.0.0.1 (free ports); yields the scheduler address ``dask://HOST:PORT``
    and stops every process in the finalizer, whatever the test did."""
    import distributed
    port = _free_port()
    procs: list[subprocess.Popen] = []
    request.addfinalizer(lambda: _stop(procs))
    log = open(tmp_path / "dask.log", "w")
    request.addfinalizer(log.close)
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    cmd = _dask_command()
    procs.append(subprocess.Popen([*cmd, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, env=env))
    address = f"tcp://127.0.0.1:{port}"
    for _ in range(2):
        procs.append(subprocess.Popen([*cmd, "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                                       "--nworkers", "1", "--no-dashboard", "--no-nanny"],
                                      stdout=log, stderr=subprocess.STDOUT, env=env))
    deadline = time.monotonic() + 90
    while True:
        try:
            with distributed.Client(address, timeout=5) as client:
                client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
            break
        except (OSError, TimeoutError):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                log.flush()
                pytest.fail("the Dask cluster did not start:\n" + (tmp_path / "dask.log").read_text()[-3000:])
            time.sleep(0.5)
    yield f"dask://127.0.0.1:{port}"
