"""The one way mbfmu opens an FMU file: checked, then extracted once per process.

:func:`read_checked` bounds and contains the archive
(:func:`mbfmu.untrusted.archive.check_file`) before fmpy reads its model
description, and checks that description (:mod:`.md_check`: a
``modelIdentifier`` with ``../`` would load a library from outside the FMU)
before anything is extracted or loaded. :func:`extract_shared` extracts the
FMU into a private folder (:mod:`mbfmu.untrusted.scratch`) once per process
and content: units made from the same FMU bytes (an SSP repeating one FMU
across components, a study making the unit anew for every run) share the
folder, so repeating an FMU does not multiply the expansion bound.
"""
from __future__ import annotations

import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...untrusted.archive import check_file, extract, file_digest
from .md_check import check_model_description

_shared: dict[tuple[str, str], tuple[str, int]] = {}  # (sha256 of the FMU, temp folder) -> (folder, bytes)
_lock = threading.Lock()


def _what(path: Any) -> str:
    return f"FMU {str(path)!r}"


def read_checked(path: Any) -> Any:
    """fmpy's model description of the FMU at ``path``, checked.

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file.

    Returns
    -------
    fmpy.model_description.ModelDescription

    Raises
    ------
    InputError
        One line: the archive passes a limit or escapes, is not a readable
        FMU, or its description is invalid (named by variable or element).
    """
    from fmpy import read_model_description

    check_file(path, _what(path), "FMU")
    try:
        md = read_model_description(str(path), validate=False)
    except Exception as exc:  # fmpy raises plain Exception for bad archives
        raise InputError(f"{str(path)!r} is not a readable FMU: {exc}") from None
    check_model_description(md, str(path))
    return md


def expanded_bytes(path: Any) -> int:
    """The bytes the FMU at ``path`` declares it expands to (its members' sizes)."""
    with zipfile.ZipFile(path) as z:
        return sum(i.file_size for i in z.infolist())


def extract_private(path: Any, kind: str = "fmu") -> Path:
    """The FMU at ``path`` extracted into a new private folder ``mbfmu-<kind>-*``
    (:func:`mbfmu.untrusted.scratch.release` removes it); call :func:`read_checked` first."""
    return extract(path, _what(path), kind, noun="FMU")


def extract_shared(path: Any, share: bool = True) -> tuple[str, int]:
    """The folder holding the FMU at ``path`` extracted, shared by every unit of
    this process made from the same bytes, and the bytes it expands to.

    The folder lives until the process exits (pythonfmu FMUs import their
    modules from it while they run). Call :func:`read_checked` first.

    Parameters
    ----------
    path : str or Path
        The ``.fmu`` file.
    share : bool
        ``False`` for an FMU that can be instantiated only once per process
        (``canBeInstantiatedOnlyOncePerProcess``): a folder of its own, so that
        each unit loads its own copy of the library.

    Returns
    -------
    folder : str
    size : int
        Bytes [B] the FMU's members declare.
    """
    if not share:
        return str(extract_private(path)), expanded_bytes(path)
    key = (file_digest(path), tempfile.gettempdir())  # a new temp folder (TMPDIR changed) gets its own copy
    with _lock:
        hit = _shared.get(key)
        if hit is not None and Path(hit[0]).is_dir():
            return hit
        folder = str(extract_private(path))
        _shared[key] = hit = (folder, expanded_bytes(path))
    return hit
