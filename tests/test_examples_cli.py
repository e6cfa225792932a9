"""The example scripts and the demo write only where they are told: every
example answers ``--help`` (and writes nothing) and takes ``--output DIR``;
the demo and the studies build their FMUs under their output folder, never
into ``fmus/``."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("[!_]*.py"))
# the project's internal names of its source documents, never shown to users
INTERNAL_NAME = re.compile(r"\bseeds?\s*0\d\d", re.IGNORECASE)


def test_there_are_examples_to_check():
    assert {"rigid_arm_study.py", "flexible_arm_study.py", "satellite_study.py"} <= {p.name for p in EXAMPLES}


# runs each example as a script (its ``__main__`` block) with ``--help``, in one
# interpreter so that the shared imports load once
DRIVER = """
import contextlib, io, json, runpy, sys
out = {}
for path in sys.argv[1:]:
    sys.argv = [path, "--help"]
    buf, code = io.StringIO(), "returned without exiting"
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code
    out[path] = [code, buf.getvalue()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    """``{script name: (exit code, stdout)}`` of ``python SCRIPT --help``, run in an empty folder."""
    cwd = tmp_path_factory.mktemp("help_cwd")
    res = subprocess.run([sys.executable, "-c", DRIVER, *map(str, EXAMPLES)], cwd=cwd, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert list(cwd.iterdir()) == [], f"--help wrote {sorted(p.name for p in cwd.iterdir())}"
    return {Path(k).name: v for k, v in json.loads(res.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("script", [p.name for p in EXAMPLES])
def test_example_help_exits_0_and_writes_nothing(helps, script):
    code, text = helps[script]
    assert code in (0, None), (code, text[-2000:])
    assert text.startswith("usage:"), text[:500]
    assert "--output DIR" in text, text
    assert not INTERNAL_NAME.search(text), INTERNAL_NAME.search(text)


def test_flexible_arm_study_builds_its_fmu_in_its_output_folder(tmp_path, monkeypatch):
    """Its FMU has geared motors (not the library defaults): it must not
    replace a user's fmus/flexible_arm.fmu."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fmus").mkdir()
    (tmp_path / "fmus" / "flexible_arm.fmu").write_text("the user's FMU")
    monkeypatch.syspath_prepend(str(REPO / "examples"))
    import flexible_arm_study
    out = tmp_path / "out"
    summary = flexible_arm_study.run(out, stop_time=0.05, plots=False, replay=False)
    assert summary["plant"] == "native FMU in the co-simulation master"
    assert (out / "flexible_arm.fmu").stat().st_size > 10_000
    assert (tmp_path / "fmus" / "flexible_arm.fmu").read_text() == "the user's FMU"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fmus", "out"]


def test_demo_builds_the_library_fmus_under_its_output_folder(tmp_path, monkeypatch):
    from mbfmu import demo, demo_steps
    seen = []

    def step(out, fmus):
        """record where the demo sends its outputs"""
        seen.append((out, fmus))
    monkeypatch.setattr(demo_steps, "STEPS", [step])
    assert demo.run(argparse.Namespace(output=str(tmp_path / "res"), fmus=None)) == 0
    assert seen == [(tmp_path / "res", tmp_path / "res" / "fmus")]
