"""The glibc symbol versions a binary imports (``objdump -T``), against the 2.17 baseline
that RHEL/CentOS 7 ships."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tooling import need_tool


BASELINE = (2, 17)


GLIBC_SYMBOL = re.compile(r"\bGLIBC_(\d+)\.(\d+)(?:\.(\d+))?\b")


def glibc_versions(binary: Path) -> dict[str, tuple[int, ...]]:
    """Symbol -> the glibc version it binds to, of every glibc symbol ``binary`` imports."""
    objdump = need_tool("objdump", why="the glibc symbol versions a binary needs")
    dump = subprocess.run([objdump, "-T", str(binary)], capture_output=True, text=True, check=True).stdout
    out = {}
    for line in dump.splitlines():
        m = GLIBC_SYMBOL.search(line)
        if m and "*UND*" in line:
            out[line.split()[-1]] = tuple(int(g) for g in m.groups() if g is not None)
    return out


def too_new(binary: Path) -> dict[str, str]:
    """Symbol -> version of each glibc symbol ``binary`` needs newer than the baseline."""
    return {sym: ".".join(map(str, v)) for sym, v in glibc_versions(binary).items() if v[:2] > BASELINE}
