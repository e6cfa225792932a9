"""Crafting malicious inputs for the security tests (see the package docstring)."""
from __future__ import annotations

import os
import struct
import tempfile
import zipfile
from pathlib import Path

from mbfmu.untrusted.scratch import OWNER, PREFIX


def code_marker(folder: Path, name: str = "evil") -> tuple[Path, Path]:
    """A Python file that, when imported, writes a marker file; returns ``(file, marker)``."""
    marker = folder / f"{name}.ran"
    py = folder / f"{name}.py"
    py.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('code ran')\n"
                  "class Plant:\n    pass\n")
    return py, marker


def declare_size(archive: Path, member: str, size: int) -> None:
    """Make ``member`` of the zip ``archive`` declare ``size`` uncompressed bytes
    (central directory and local header) without holding them: a zip bomb's
    headers, at the cost of a few bytes on disk. ``size`` < 4 GiB."""
    data = bytearray(archive.read_bytes())
    name = member.encode()
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo(member)
    local = info.header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", data, local + 22, size)
    pos = data.find(b"PK\x01\x02")
    while pos >= 0:
        nlen = struct.unpack_from("<H", data, pos + 28)[0]
        if bytes(data[pos + 46:pos + 46 + nlen]) == name:
            struct.pack_into("<I", data, pos + 24, size)
        pos = data.find(b"PK\x01\x02", pos + 4)
    archive.write_bytes(bytes(data))


def scratch_folders(root: str | os.PathLike | None = None) -> set[str]:
    """mbfmu's marked temporary folders under ``root`` (default: the temp folder)."""
    base = Path(root or tempfile.gettempdir())
    return {p.name for p in base.glob(PREFIX + "*") if (p / OWNER).is_file()}
