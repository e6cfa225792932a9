"""Where an FMU is written: ``<folder>/<name>.fmu`` or the ``.fmu`` given,
never over an existing FMU unless asked."""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError


def fmu_destination(dest: str | Path, name: str, overwrite: bool) -> Path:
    """The FMU file to write for plant ``name``; its folder is created.

    Parameters
    ----------
    dest : str or Path
        Folder for ``<name>.fmu``, or the ``.fmu`` file itself.
    name : str
        The plant's name.
    overwrite : bool
        Replace an existing file (``mbfmu build --force``).

    Returns
    -------
    Path
        The FMU file.

    Raises
    ------
    InputError
        The file exists and ``overwrite`` is false.
    """
    dest = Path(dest)
    path = dest if dest.suffix == ".fmu" else dest / f"{name}.fmu"
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; give another file name, or overwrite=True (mbfmu build --force) "
                         "to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
