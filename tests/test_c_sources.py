"""The C sources are the project's own (#33 §6): no transcribed reference code,
and the FMI types and signatures come from the FMI standard's own headers,
shipped with their license, not from declarations written here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tooling import FMI_STANDARD_HEADERS, assert_standard_fmi_headers

ROOT = Path(__file__).resolve().parents[1]
HEADERS = ROOT / "mbfmu" / "fmu" / "native" / "fmi_headers"


def c_files() -> list[Path]:
    """Every C source and header of the package except the standard's headers."""
    files = [p for p in (ROOT / "mbfmu").rglob("*") if p.suffix in (".c", ".h") and HEADERS not in p.parents]
    assert len(files) > 40  # the kernels, runtimes, loop and shim are all seen
    return sorted(files)


# what a transcription carries: the book named as the code's source, its 1-based indexing kept
# through a macro, or its loops over 1..n
TRANSCRIBED = [re.compile(p) for p in (
    r"(?i)numerical\s+recipes", r"(?i)press\s+et\s+al", r"(?i)as in the reference", r"(?i)1-based",
    r"(?i)\bnrutil\b", r"\bNRANSI\b", r"\[\s*\(?\s*\w+\s*\)?\s*-\s*1\s*\)?\s*\*",  # a[(i - 1) * n ...]
    r"for\s*\(\s*(?:int\s+)?\w+\s*=\s*1\s*;\s*\w+\s*<=\s*n\s*;")]


@pytest.mark.parametrize("path", c_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_transcribed_reference_code(path):
    text = path.read_text()
    found = [m.group(0) for rx in TRANSCRIBED for m in [rx.search(text)] if m]
    assert not found, f"{path.name}: {found}"


def test_the_detector_finds_a_transcription():
    """The patterns catch the code steplimit.c used to hold (Numerical Recipes' balancing)."""
    sample = ("#define A_(i, j) a[(size_t)((i) - 1) * (size_t)n + (size_t)((j) - 1)] /* 1-based, as in the "
              "reference */\nfor (int i = 1; i <= n; ++i) {}\n")
    assert sum(bool(rx.search(sample)) for rx in TRANSCRIBED) >= 3


def test_the_shipped_fmi_headers_are_the_standards():
    """Byte for byte fmpy's copy of the FMI 2.0 and 3.0 headers, with the license they carry."""
    assert_standard_fmi_headers(HEADERS)
    assert sorted(p.name for p in HEADERS.iterdir() if p.suffix == ".h") == sorted(FMI_STANDARD_HEADERS)
    for name in FMI_STANDARD_HEADERS:
        assert "2-Clause BSD License" in (HEADERS / name).read_text(), name


# a type or enumeration of the standard declared in a source file
HAND_DECLARED = re.compile(r"typedef[^;{]*\b(fmi[23]\w+)\s*;|typedef\s+enum\s*\{[^}]*\b(fmi[23]OK)\b"
                           r"|typedef\s+struct\s*\{[^}]*\}\s*(fmi[23]\w+)\s*;|\(\s*\*\s*(fmi[23]\w+)\s*\)\s*\(")


@pytest.mark.parametrize("path", c_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_source_declares_the_fmi_types_by_hand(path):
    text = path.read_text()
    m = HAND_DECLARED.search(text)
    assert m is None, f"{path.name} declares {next(g for g in m.groups() if g)} itself"
    if re.search(r"\bfmi[23](Status|Component|Instance)\b", text):
        assert re.search(r'#include\s+"fmi[23]Function(s|Types)\.h"', text), path.name


@pytest.mark.parametrize("runtime, include", [("csrc/fmi3.c", ("csrc", "../../dynamics/csrc")),
                                              ("ctrl/ctrl_fmi3.c", ("ctrl", "csrc", "../../dynamics/csrc"))])
def test_fmi3_sources_compiled_with_a_function_prefix_define_only_prefixed_functions(runtime, include, tmp_path):
    """FMI3_FUNCTION_PREFIX (a source FMU linked statically with others): every function the
    runtime defines is the standard's name with the prefix, as fmi3Functions.h makes it."""
    import shutil
    import subprocess
    from mbfmu.fmu.native import toolchain
    native = ROOT / "mbfmu" / "fmu" / "native"
    obj = tmp_path / "fmi3.o"
    flags = [f"-I{native / d}" for d in (*include, "fmi_headers", "fmi_common")]
    subprocess.run([toolchain.compiler("linux64"), "-c", "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                    "-DFMI3_FUNCTION_PREFIX=plant_", *flags, "-o", str(obj), str(native / runtime)],
                   check=True, capture_output=True)
    nm = shutil.which("nm")
    assert nm, "nm (binutils) lists the object's symbols"
    defined = [line.split()[-1] for line in subprocess.run([nm, "-g", "--defined-only", str(obj)], check=True,
                                                           capture_output=True, text=True).stdout.splitlines()]
    assert len(defined) > 60
    assert all(name.startswith("plant_fmi3") for name in defined), [n for n in defined if "plant_" not in n]
