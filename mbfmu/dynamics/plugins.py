"""Plug-in elements in the Python plant: the element's own C, run by the kernels.

A plug-in element (``csrc/element.h``) is written once in C. The native FMU
compiles it with its runtime; the Python plant compiles the same file once per
process into a small shared library (the kernels' optimization flags, so that
it computes what the FMU computes), finds its ``mbn_element_class`` there and
hands the kernels (``element_adapt``, ``element_rhs``, ``element_outputs``)
its address, so both run one implementation. An element's C may use its
arguments and the C math library only (nothing of the kernels).
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from pathlib import Path

from ..errors import ModelError
from ..untrusted.scratch import private_dir

#: The folder of ``element.h`` (and ``mb.h``, which it includes).
CSRC = Path(__file__).with_name("csrc")
# the kernels' flags (setup.py), position-independent and shared
_FLAGS = ["-shared", "-fPIC", "-O3", "-std=c99", "-fno-math-errno", "-fno-wrapv", "-Wall", "-Wno-unused-function"]
_LIBS: dict[str, ctypes.CDLL] = {}  # by the digest of the C text: loaded once per process, kept loaded


def class_address(c_text: str, symbol: str, what: str) -> int:
    """The address of the ``const mbn_element_class`` ``symbol`` of the element C ``c_text``.

    Parameters
    ----------
    c_text : str
        The element's C source.
    symbol : str
        The name of its class.
    what : str
        The element, for messages.

    Returns
    -------
    int
        The class's address in the loaded library (for the kernels' element calls).

    Raises
    ------
    ModelError
        When no C compiler is found, the C does not compile (its first error), or it
        defines no ``symbol``.
    """
    key = hashlib.sha256(c_text.encode()).hexdigest()
    lib = _LIBS.get(key)
    if lib is None:
        lib = _LIBS[key] = _compile(c_text, what)
    try:
        return ctypes.addressof(ctypes.c_char.in_dll(lib, symbol))
    except ValueError:
        raise ModelError(f"{what}: its C file defines no {symbol}") from None


def _compile(c_text: str, what: str) -> ctypes.CDLL:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise ModelError(f"{what}: the Python plant compiles its C, and no C compiler (gcc, cc) is on the PATH")
    folder = private_dir("element")
    src, lib = folder / "element.c", folder / "element.so"
    src.write_text(c_text)
    res = subprocess.run([cc, *_FLAGS, "-I", str(CSRC), "-o", str(lib), str(src), "-lm"],
                         capture_output=True, text=True, timeout=120)
    if res.returncode:
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr.strip()[:200])
        raise ModelError(f"{what}: its C does not compile: {first.split('element.c:', 1)[-1].strip()}")
    return ctypes.CDLL(str(lib))
