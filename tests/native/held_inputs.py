"""Stop times [s] of the native plants' runs and fmpy input tables that hold their test inputs."""
from __future__ import annotations

import numpy as np

from .conftest import NATIVE_PLANTS


STOPS = {"rigid_arm": 0.5, "canonical_2body": 0.5, "flexible_arm": 0.3, "satellite": 2.0, "crash_occupant": 0.1}


def held_inputs(name: str, fmi: int) -> np.ndarray:
    """fmpy's input table of NATIVE_PLANTS[name] held: scalars for FMI 2, the
    arrays' element columns for FMI 3."""
    inputs, stop = NATIVE_PLANTS[name], STOPS[name]
    if fmi == 2:
        return np.array([(0.0, *inputs.values()), (stop, *inputs.values())],
                        dtype=[("time", float)] + [(k, float) for k in inputs])
    groups: dict[str, list[float]] = {}
    for k, v in inputs.items():
        groups.setdefault(k.split("[")[0], []).append(v)
    table = np.zeros(2, dtype=[("time", float)] + [(g, float, (len(v),)) if len(v) > 1 else (g, float)
                                                   for g, v in groups.items()])
    table["time"] = [0.0, stop]
    for g, v in groups.items():
        table[g] = v if len(v) > 1 else v[0]
    return table
