"""README.md's command block runs top to bottom on a fresh clone: every
command, in order, in an empty folder holding only what the clone ships
(``examples/``), exits 0; every file a command reads ships or is written by
an earlier command; no two commands write the same file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from readme_commands import REPO, command_block

OUTPUT_FLAGS = ("-o", "--output")
FILE_SUFFIXES = (".fmu", ".ssp", ".npz", ".csv", ".mat", ".html", ".png", ".py")


def _files(command: list[str]) -> tuple[list[str], list[str]]:
    """``(read, written)``: the files a command names (``FILE.py:FUNCTION`` reads FILE.py),
    an ``-o`` value being written (``mbfmu build NAME -o DIR`` writes ``DIR/NAME.fmu``)."""
    read, written = [], []
    for k, word in enumerate(command[2:], start=2):
        path = word.split(":", 1)[0] if ".py:" in word else word
        if command[k - 1] in OUTPUT_FLAGS:
            written.append(f"{word}/{command[2]}.fmu" if command[1] == "build" else word)
        elif path.endswith(FILE_SUFFIXES) and command[k - 1] not in OUTPUT_FLAGS:
            read.append(path)
    if command[1] == "linearize" and not any(f in command for f in OUTPUT_FLAGS):
        written.append(f"{command[2]}_linear.npz")  # its default output
    return read, written


def _shipped() -> set[str]:
    """The files of the repository a clone has (git's tracked files; the working tree without git)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True, timeout=60)
        return set(out.stdout.decode().split("\0")) - {""}
    except (OSError, subprocess.SubprocessError):
        return {p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file()}


def test_every_file_a_command_reads_ships_or_is_written_before_and_no_output_is_written_twice():
    commands = command_block()
    shipped = _shipped()
    assert [c[:2] for c in commands][:2] == [["mbfmu", "list"], ["mbfmu", "build"]], commands
    written: list[str] = []
    for command in commands:
        read, out = _files(command)
        for path in read:
            assert path in shipped or path in written, f"{' '.join(command)}: {path} neither ships nor is " \
                                                               "written by an earlier command"
        twice = [p for p in out if p in written]
        assert not twice, f"{' '.join(command)} writes {twice}, which an earlier command wrote"
        written += out
    assert "examples/loop.py" in {p for c in commands for p in _files(c)[0]}


def test_the_command_block_runs_top_to_bottom_in_a_fresh_folder(tmp_path):
    for path in (p for p in _shipped() if p.startswith("examples/")):  # what a fresh clone has of examples/
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    mbfmu = Path(sys.executable).with_name("mbfmu")
    env = dict(os.environ, MPLBACKEND="Agg")
    for command in command_block():
        assert command[0] == "mbfmu"
        run = subprocess.run([str(mbfmu), *command[1:]], cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=600)
        assert run.returncode == 0, f"{' '.join(command)} exited {run.returncode}:\n{run.stdout[-2000:]}\n" \
                                    f"{run.stderr[-2000:]}"
    for path in ("fmus/rigid_arm.fmu", "run.npz", "run.html", "rigid_arm_linear.npz", "rigid_arm_held.npz",
                 "results.csv"):
        assert (tmp_path / path).stat().st_size > 0, path
