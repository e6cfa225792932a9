"""The command block of README.md (the first fenced block under "## Command
line"): the commands a user types, in order, each split as a shell would."""
from __future__ import annotations

import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def command_block(readme: Path = REPO / "README.md") -> list[list[str]]:
    """The commands of the block, continuation lines joined and comments dropped."""
    section = readme.read_text(encoding="utf-8").split("\n## Command line\n", 1)[1]
    block = section.split("```", 2)[1]
    commands, pending = [], ""
    for line in block.splitlines():
        pending += line
        if pending.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1] + " "
            continue
        words = shlex.split(pending, comments=True)
        if words:
            commands.append(words)
        pending = ""
    return commands


def readme_command(*prefix: str) -> list[str]:
    """The one command of the block that starts with the words ``prefix``."""
    hits = [c for c in command_block() if c[:len(prefix)] == list(prefix)]
    assert len(hits) == 1, f"README.md's command block has {len(hits)} commands starting {' '.join(prefix)!r}"
    return hits[0]
