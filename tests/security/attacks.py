"""Crafting malicious inputs for the security tests (see the package docstring)."""
from __future__ import annotations

import os
import struct
import tempfile
import zipfile
from pathlib import Path

from tooling import reference_fmu

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


def ssd_with_sources(fmu_source: str, ssv_source: str | None = None) -> str:
    """An SSD of one component whose FMU (and parameter values, if given) come from these sources."""
    binding = (f'<ssd:ParameterBindings><ssd:ParameterBinding source="{ssv_source}"/></ssd:ParameterBindings>'
               if ssv_source else "")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="s"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
  <ssd:System name="s">
    <ssd:Elements>
      <ssd:Component name="d" type="application/x-fmu-sharedlibrary" source="{fmu_source}">
        <ssd:Connectors><ssd:Connector name="x" kind="output"><ssc:Real/></ssd:Connector></ssd:Connectors>
        {binding}
      </ssd:Component>
    </ssd:Elements>
  </ssd:System>
</ssd:SystemStructureDescription>
"""


def patched_dahlquist(tmp_path, version="fmi2", *replacements, extra=None):
    """The Dahlquist Reference FMU with text replaced in its modelDescription.xml."""
    src = reference_fmu(version, "Dahlquist")
    out = tmp_path / f"patched_{version}.fmu"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "modelDescription.xml":
                text = data.decode()
                for old, new in replacements:
                    assert old in text, old
                    text = text.replace(old, new)
                data = text.encode()
            zout.writestr(info, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)
    return out
