"""Fixtures of the native-runtime tests: native FMUs built once per session."""
from __future__ import annotations

import numpy as np
import pytest

from mbfmu.plant.library import load_plant
from tooling import has_tool

from .fmi_loop import Loaded
from .platform_hosts import aarch64, hosts  # noqa: F401 (fixtures of this folder's tests)
from .python_free import hidden_python_works  # noqa: F401 (a fixture of this folder's tests)

# the library plants the native runtime exports, with inputs that excite every input
NATIVE_PLANTS = {
    "rigid_arm": {"tau[1]": 2.0, "tau[2]": -5.0, "tau[3]": 3.0},
    "canonical_2body": {"omega_0": 3.0, "external_torque": 0.5},
    "satellite": {"wheel_torque[1]": 0.02, "wheel_torque[2]": -0.01, "wheel_torque[3]": 0.03},
    "crash_occupant": {"sled_acceleration": -30.0},  # added to the built-in 20 g pulse
    # torque steps: the links' bending modes ring (tip deflections of mm at 6-11 Hz)
    "flexible_arm": {"tau[1]": 2.0, "tau[2]": -1.0},
}

# counts change the model's structure: fixed in the native FMU (rebuild it), declared Integer
COUNTS = {"satellite": {"panels_per_wing", "panel_segments"},
          "flexible_arm": {"n_modes", "n_segments", "tip_shapes"}}
# stop times of the runs that compare the FMI 2.0 and 3.0 FMUs, s
STOPS = {"rigid_arm": 0.5, "canonical_2body": 0.5, "flexible_arm": 0.3, "satellite": 2.0, "crash_occupant": 0.1}


def input_table(name: str, fmi: int) -> np.ndarray:
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


def platforms() -> tuple[str, ...]:
    """The platforms this machine can build (win64 where mingw-w64 is installed;
    the tests of the win64 binary skip by name where it is not)."""
    return ("linux64", "win64") if has_tool("x86_64-w64-mingw32-gcc") else ("linux64",)


@pytest.fixture(scope="session")
def native_fmu(native_fmus):
    """``native_fmu(name)``: path of the native FMU of library plant ``name``."""
    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = native_fmus(name, platforms=platforms())
        return cache[name]
    return get


@pytest.fixture(scope="session")
def native_fmu3(native_fmus):
    """``native_fmu3(name)``: path of the FMI 3.0 native FMU of library plant ``name``."""
    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = native_fmus(name, platforms=platforms(), fmi_version=3)
        return cache[name]
    return get


def plant_run(name: str, inputs: dict, n: int, parameters=None):
    """(outputs (n+1, ny), output names, step) of the Python plant with constant inputs."""
    plant = load_plant(name, **(parameters or {}))
    u = plant.default_inputs()
    for k, s in enumerate(plant.inputs):
        u[k] = inputs.get(s.name, u[k])
    _, _, Y = plant.simulate(stop_time=n * plant.default_step, step=plant.default_step, u=u)
    return Y, [s.name for s in plant.outputs], plant.default_step


def assert_same(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-12, floor: float = 1e-300) -> None:
    """Equal to ``rtol`` relative to each column's largest magnitude, at least ``floor``
    (for a column that is zero up to round-off, such as a conserved zero momentum)."""
    scale = np.maximum(np.abs(expected).max(axis=0), floor)
    err = np.abs(actual - expected) / scale
    assert err.max() <= rtol, f"max relative deviation {err.max():.3g} in column {int(err.max(axis=0).argmax())}"


@pytest.fixture
def loaded(native_fmu):
    """``loaded(name)``: the native FMU of library plant ``name``, extracted and
    instantiated with fmpy (:class:`~tests.native.fmi_loop.Loaded`), closed after the test."""
    opened = []

    def get(name: str) -> Loaded:
        opened.append(Loaded(native_fmu(name)))
        return opened[-1]
    yield get
    for L in opened:
        L.close()
