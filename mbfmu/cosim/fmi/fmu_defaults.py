"""What an FMU file declares for a linearization run: its real inputs with their
start values, and its default communication step (read through fmpy, the
archive checked and bounded first)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...errors import InputError


def real_signals(unit: Any, names: Sequence[str] | None, causality: str) -> list[str]:
    """The real inputs or outputs of an FMU unit, all or the ``names`` asked for.

    Parameters
    ----------
    unit : FmuUnit
        The open FMU.
    names : sequence of str or None
        The signals wanted (None: every real one, in declaration order).
    causality : {"input", "output"}
        Which side.

    Returns
    -------
    list of str
        The names.

    Raises
    ------
    InputError
        A name that is not a real signal of that side.
    """
    pool = [n for n in (unit.inputs if causality == "input" else unit.outputs) if unit.variables[n].type == "Real"]
    if names is None:
        return pool
    unknown = [n for n in names if n not in pool]
    if unknown:
        raise InputError(f"FMU {unit.name!r} has no real {causality}s {unknown}; known: {sorted(pool)}")
    return list(names)


def input_start_values(path: str | Path) -> dict[str, float]:
    """Real inputs of an FMU, in declaration order (the elements of an FMI 3
    array input each by name, ``u[1]``...), with their start values (0 where
    none is declared): the inputs ERA pulses."""
    from .fmu_open import open_fmu

    from ...untrusted.archive import check_file
    check_file(path, f"FMU {str(path)!r}", "FMU")  # bounded before fmpy reads it
    unit = open_fmu(Path(path), "inputs")
    return {n: float(unit.variables[n].start or 0.0) for n in real_signals(unit, None, "input")}


def default_step(path: str | Path) -> float:
    """The FMU's default experiment step size, else 1e-2 s.

    Parameters
    ----------
    path : str or Path
        The FMU.

    Returns
    -------
    float
        Communication step, s.
    """
    from .fmu_files import read_checked
    de = read_checked(path).defaultExperiment  # bounded and checked before fmpy reads it
    return float(de.stepSize) if de is not None and de.stepSize else 1e-2
