"""The native FMU's ``sources/`` folder: every file needed to compile it.

The folder is flat: the engine's kernels (``mbfmu/dynamics/csrc`` without the
CPython binding), the runtime (``csrc``) and the plant's generated
``model_data.c``, with their headers, and the FMI 2.0 and 3.0 standard's own
headers (``fmi_headers``, unchanged, with their BSD-2-Clause license
``fmi-headers-LICENSE.txt``), which give the runtime its FMI types and
function signatures. The compilation units
are listed in the model description's ``<SourceFiles>`` (FMI 2.0, in
``<CoSimulation>`` and ``<ModelExchange>``) or in
``sources/buildDescription.xml`` (FMI 3.0). Any C99 compiler builds the binary
from them::

    cc -shared -fPIC -O2 -ffp-contract=off -o <id>.so sources/*.c -lm

and so does ``fmpy.build.build_platform_binary``, whose CMake project links no
library: there ``csrc/libm_link.c`` finds the C math library when the binary
is loaded, so the binary runs in hosts without libm too (the builder passes
``-lm -DMB_LINKS_LIBM`` and leaves it out). The FMU's own binaries are
compiled from this folder, so they are what a user builds from it.
"""
from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping

from ...errors import ModelError
from .toolchain import runtime_files

DATA_FILE = "model_data.c"
BUILD_DESCRIPTION = "buildDescription.xml"
LANGUAGE = "C99"
# no fused multiply-add, so that a build on a target with FMA (aarch64) gives the shipped numbers;
# the sources also say it (glibc_baseline.h), for builds that ignore these options (fmpy's CMake build)
COMPILER_OPTIONS = "-ffp-contract=off"


def stage(folder: Path, generated: Mapping[str, str]) -> list[str]:
    """Write the sources of one FMU into ``folder``; the names of its compilation units.

    Parameters
    ----------
    folder : Path
        The FMU's ``sources`` folder (created).
    generated : mapping of str to str
        File name -> C text of the files generated for this plant
        (``{"model_data.c": ...}``, :func:`.build.data_source`).

    Returns
    -------
    list of str
        The ``.c`` files, relative to ``folder``, in compilation order (the
        runtime's, then the generated ones).
    """
    folder.mkdir(parents=True, exist_ok=True)
    units = []
    for path in runtime_files():
        if path.name in generated or (folder / path.name).exists():
            raise ModelError(f"two native FMU sources are named {path.name!r}: the FMU's sources folder is flat")
        shutil.copyfile(path, folder / path.name)
        if path.suffix == ".c":
            units.append(path.name)
    for name, text in generated.items():
        (folder / name).write_text(text)
        if name.endswith(".c"):
            units.append(name)
    return units


def add_source_files(root: ET.Element, units: list[str]) -> None:
    """FMI 2.0: list ``units`` as ``<SourceFiles>`` of every interface element of ``root``."""
    for tag in ("ModelExchange", "CoSimulation"):
        element = root.find(tag)
        if element is None:
            continue
        files = ET.SubElement(element, "SourceFiles")
        for name in units:
            ET.SubElement(files, "File", name=name)


def build_description(model_identifier: str, units: list[str]) -> bytes:
    """FMI 3.0: the text of ``sources/buildDescription.xml`` compiling ``units`` into
    ``model_identifier`` (C99 without fused multiply-add, linked with the C math library)."""
    root = ET.Element("fmiBuildDescription", fmiVersion="3.0")
    config = ET.SubElement(root, "BuildConfiguration", modelIdentifier=model_identifier)
    fileset = ET.SubElement(config, "SourceFileSet", language=LANGUAGE, compilerOptions=COMPILER_OPTIONS)
    for name in units:
        ET.SubElement(fileset, "SourceFile", name=name)
    ET.SubElement(config, "Library", name="m", external="true", description="the C math library (libm; -lm)")
    ET.indent(root, "  ")
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"
