"""Issues 26.10 and 26.5 (temp folders): extracted folders do not leak and
cannot be planted.

Folders leaked after failed extractions, crashes, kills and sweep workers
ended by a timeout; shared folders with predictable names
(``mbfmu_studies/<digest>``, ``mbfmu-view-<digest>``) ran a planted FMU. Now
every folder is a private ``mkdtemp`` marked with its owner process
(:mod:`mbfmu.untrusted.scratch`), removed on failure and at exit, and the
folders of dead processes are removed by the next process and after every
pool of sweep workers. Counted in a temp folder of the test's own.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tooling import reference_fmu

from mbfmu.untrusted import scratch

from .attacks import scratch_folders

DAHLQUIST = str(reference_fmu("fmi2", "Dahlquist"))


def _python(code: str, **kw):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kw)


def test_killed_process_leaves_a_folder_that_the_next_one_removes(scratch_root):
    victim = _python(f"from mbfmu.cosim import FmuUnit\nu = FmuUnit({DAHLQUIST!r})\nprint(u._unzipdir, flush=True)\n"
                     "import time\ntime.sleep(60)")
    folder = victim.stdout.readline().strip()
    assert folder.startswith(str(scratch_root)) and os.path.isdir(folder)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    assert os.path.basename(folder) in scratch_folders(scratch_root)  # a kill cannot clean up
    nxt = _python(f"from mbfmu.cosim import FmuUnit\nFmuUnit({DAHLQUIST!r})")
    assert nxt.wait(120) == 0
    assert scratch_folders(scratch_root) == set()  # the dead one's and its own (at exit)


def test_a_live_owners_folder_is_kept(scratch_root):
    mine = scratch.private_dir("test")
    assert scratch.clean_stale(scratch_root) == 0 and mine.is_dir()
    scratch.release(mine)
    assert scratch_folders(scratch_root) == set()


def test_a_reused_pid_does_not_keep_a_dead_owners_folder(scratch_root):
    folder = scratch_root / "mbfmu-fmu-planted"
    folder.mkdir()
    # this process's parent is alive, but started at another time than recorded
    (folder / scratch.OWNER).write_text(f'{{"pid": {os.getppid()}, "start": "1"}}')
    assert scratch.clean_stale(scratch_root) == 1 and not folder.exists()


def _hang_system():
    """A Reference FMU and a unit that hangs inside its step (past any timeout)."""
    from mbfmu.cosim import FmuUnit, FunctionUnit, System

    def hang(t, u):
        time.sleep(600)
        return ()
    return System([FmuUnit(DAHLQUIST, "d"), FunctionUnit("hang", hang, outputs=())])


def test_sweep_workers_ended_by_the_timeout_leave_no_folder(scratch_root):
    from mbfmu.studies import sweep
    study = sweep(lambda k=1.0: _hang_system(), {"k": [1.0]}, stop_time=0.2, step=0.1, executor="local", workers=1,
                  timeout=0.3, progress=False)
    assert study.rows[0]["status"] == "failed" and "died" in study.rows[0]["error"]
    assert scratch_folders(scratch_root) == set()


def test_sweep_targets_are_written_to_private_folders(scratch_root, tmp_path):
    """The target FMU is written to a private folder, never to the shared
    ``mbfmu_studies/<digest>`` where another user could plant a file first."""
    import shutil
    import uuid
    import zipfile

    from mbfmu.studies import sweep
    fmu = tmp_path / "unique.fmu"  # bytes of its own: no runner of an earlier test is reused
    shutil.copy(DAHLQUIST, fmu)
    with zipfile.ZipFile(fmu, "a") as z:
        z.writestr("extra/id.txt", uuid.uuid4().hex)
    study = sweep(str(fmu), {"k": [1.0, 2.0]}, stop_time=0.2, step=0.1, executor="serial", progress=False)
    assert [r["status"] for r in study.rows] == ["ok", "ok"]
    assert not (scratch_root / "mbfmu_studies").exists()
    folders = scratch_folders(scratch_root)
    assert folders and all(os.stat(scratch_root / f).st_mode & 0o077 == 0 for f in folders)  # mode 0700


def test_a_planted_study_folder_is_not_used(scratch_root, tmp_path):
    """An FMU planted where the study used to write its copy is never run."""
    import hashlib
    import shutil

    from mbfmu.studies import sweep
    from mbfmu.studies.targets import resolve
    fmu = tmp_path / "Dahlquist.fmu"
    shutil.copy(DAHLQUIST, fmu)
    with open(fmu, "ab") as f:
        f.write(hashlib.sha256(str(tmp_path).encode()).digest())  # bytes of its own, still a valid zip
    planted = scratch_root / "mbfmu_studies" / resolve(str(fmu)).digest[:16]
    planted.mkdir(parents=True)
    shutil.copy(reference_fmu("fmi2", "BouncingBall"), planted / "Dahlquist.fmu")
    study = sweep(str(fmu), {"k": [1.0]}, stop_time=0.2, step=0.1, executor="serial", progress=False)
    assert study.rows[0]["status"] == "ok"
    assert "Dahlquist.x" in study.result(0).names and not any(n.endswith(".h") for n in study.result(0).names)


def test_a_planted_view_folder_is_not_used(scratch_root, tmp_path):
    """The replay rebuilds the plant from the FMU's own resources, extracted
    privately, not from a planted ``mbfmu-view-<digest>`` folder."""
    import hashlib
    import shutil
    import zipfile
    from pathlib import Path

    import numpy as np

    from mbfmu.cosim import Result
    from mbfmu.viewer import open_recording

    from .attacks import code_marker
    toys = Path(__file__).resolve().parents[1] / "viewer" / "viewer_toys.py"
    fmu = tmp_path / "arm.fmu"
    shutil.copy(DAHLQUIST, fmu)
    with zipfile.ZipFile(fmu, "a") as z:
        z.write(toys, "resources/model.py")
        z.writestr("resources/mbfmu_plant.json", '{"kind": "file", "target": "model.py", '
                                                 '"class_name": "DoublePendulum", "parameters": {"l1": 1.25}}')
    planted = scratch_root / f"mbfmu-view-{hashlib.sha256(fmu.read_bytes()).hexdigest()[:16]}"
    (planted / "resources").mkdir(parents=True)
    py, marker = code_marker(planted / "resources", "model")
    (planted / ".complete").write_text(str(fmu))
    t = np.linspace(0.0, 1.0, 11)
    data = np.zeros(t.size, dtype=[("time", float), ("arm.q[1]", float), ("arm.q[2]", float),
                                   ("arm.v[1]", float), ("arm.v[2]", float)])
    data["time"], data["arm.q[1]"] = t, 0.3 * t
    meta = {"plants": {"arm": {"kind": "file", "target": "model.py", "class_name": "DoublePendulum"}},
            "components": {"arm": {"type": "FmuUnit", "source": str(fmu)}}}
    rec = open_recording(Result(data, meta=meta).save(tmp_path / "run.csv"))
    assert not marker.exists()
    assert rec.plant.l1 == 1.25 and type(rec.plant).__name__ == "DoublePendulum"  # the FMU's own plant
    q1 = 0.3 * t[5]
    np.testing.assert_allclose(rec.scene_at(t[5])[1][1], [-1.25 * np.sin(q1), 0, -1.25 * np.cos(q1)], atol=1e-9)


def test_a_failed_linearization_leaves_no_folder(scratch_root, tmp_path):
    """Issue 37.12: ``mbfmu_jac_*`` (and ``mbfmu_t0_*``) were plain ``mkdtemp``
    folders, left behind when the FMU failed; now they are private folders."""
    import zipfile
    broken = tmp_path / "nobinary.fmu"  # extracts, then cannot load its library
    with zipfile.ZipFile(DAHLQUIST) as src, zipfile.ZipFile(broken, "w") as dst:
        for info in src.infolist():
            if not info.filename.startswith("binaries/"):
                dst.writestr(info, src.read(info))
    code = ("from mbfmu.control.fmu_jacobians import ModelExchangeInstance\n"
            f"try:\n    ModelExchangeInstance({str(broken)!r})\nexcept Exception as exc:\n    print('failed', exc)\n")
    proc = _python(code, env=dict(os.environ, TMPDIR=str(scratch_root)))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.startswith("failed"), out
    assert os.listdir(scratch_root) == []


HOST_WITHOUT_MBFMU = """
import os, sys
from fmpy import simulate_fmu
log = []
for k in range(3):  # three failed instantiations, each from its own extraction of the FMU
    try:
        simulate_fmu(sys.argv[1], stop_time=0.01, logger=lambda *a: log.append(a[-1].decode()))
    except Exception:
        pass
print(os.getpid())
print("\\n".join(m for m in log if "is not installed" in m))
"""


def test_the_pythonfmu_install_copy_is_one_marked_folder_per_host(scratch_root, tmp_path):
    """Issue 37.12: each failed instantiation of a pythonfmu FMU where mbfmu is
    missing left an unmarked ``mbfmu-install-*`` folder (600 kB) for good. Now
    there is one per host process, marked: kept a day for the command the log
    offers, then removed by ``clean_stale``."""
    import json
    import sysconfig

    from mbfmu.fmu.builder import build_fmu
    fmu = build_fmu("rigid_arm", tmp_path / "rigid_arm.fmu", platforms=["linux64"])
    # -S: no .pth files, so the editable mbfmu is not importable; fmpy still is
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"], TMPDIR=str(scratch_root))
    res = subprocess.run([sys.executable, "-S", "-c", HOST_WITHOUT_MBFMU, str(fmu)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    pid, *messages = res.stdout.strip().splitlines()
    (folder,) = [p for p in scratch_root.iterdir() if p.name.startswith("mbfmu-install-")]
    assert len(messages) == 3 and all(f" {folder}/mbfmu-" in m for m in messages), messages
    owner = json.loads((folder / scratch.OWNER).read_text())
    assert owner["pid"] == int(pid) and owner["keep_until"] > time.time() + 3600
    assert scratch.clean_stale(scratch_root) == 0 and folder.is_dir()  # its host is gone, the day is not
    (folder / scratch.OWNER).write_text(json.dumps(dict(owner, keep_until=time.time() - 1)))
    assert scratch.clean_stale(scratch_root) == 1 and not folder.exists()
