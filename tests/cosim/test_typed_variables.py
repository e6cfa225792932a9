"""Integer, Boolean, String and Enumeration variables are set, connected and
recorded with their own types (issue 14 defect 3), on the Reference FMUs'
``Feedthrough`` (every output equals its input)."""
from __future__ import annotations


import numpy as np
import pytest

from mbfmu.cosim import load_result, simulate
from mbfmu.cosim.fmi.fmu_unit import FmuUnit
from mbfmu.cosim.system import System
from mbfmu.cosim.units import Unit, Variable
from tooling import REFERENCE_FMUS

REF = REFERENCE_FMUS
TYPED = {"Int32": 7, "Boolean": True, "String": 'text, with "quotes"', "Enumeration": 2}


def _chain(version: str) -> System:
    """Feedthrough ``a`` with typed inputs set, driving Feedthrough ``b`` through every typed output."""
    a = FmuUnit(REF / version / "Feedthrough.fmu", "a")
    b = FmuUnit(REF / version / "Feedthrough.fmu", "b")
    s = System([a, b])
    for typ, value in TYPED.items():
        s.set(f"a.{typ}_input", value)
        s.connect(f"a.{typ}_output", f"b.{typ}_input")
    return s


@pytest.mark.parametrize("version", ["fmi2", "fmi3"])
@pytest.mark.parametrize("algorithm", ["jacobi", "gauss-seidel"])
def test_typed_values_travel_through_connections(version, algorithm):
    r = simulate(_chain(version), 1.0, 0.25, algorithm=algorithm, progress=False)
    for typ, value in TYPED.items():
        col = r[f"b.{typ}_output"]
        assert col[-1] == value, typ
        assert col.dtype == {"Int32": np.int64, "Enumeration": np.int64, "Boolean": bool}.get(typ, col.dtype)
    assert r["b.String_output"].dtype.kind == "U"
    assert r.meta["types"]["b.String_output"] == "String"


def test_typed_results_round_trip_csv_as_text_and_npz_as_str(tmp_path):
    r = simulate(_chain("fmi2"), 1.0, 0.25, extrapolation=1, progress=False)
    csv = r.save(tmp_path / "r.csv")
    assert 'text, with ""quotes""' in csv.read_text()  # a CSV text field, quoted as RFC 4180 says
    npz = r.save(tmp_path / "r.npz")
    for path in (csv, npz):
        back = load_result(path)
        assert back.names == r.names
        for n in r.names:
            assert back[n].dtype.kind == r[n].dtype.kind, (path.suffix, n)
            assert list(back[n]) == list(r[n]), (path.suffix, n)
    with np.load(npz, allow_pickle=False) as z:  # str fields, no pickled objects
        assert z["data"]["b.String_output"][-1] == TYPED["String"]


class _IntegerProbe(Unit):
    """A unit with one Integer input that keeps the value it steps with."""

    def __init__(self) -> None:
        super().__init__("probe", [Variable("n", "input", "Integer", None, 0.0)], {})
        self.seen: list[float] = []

    def setup(self, t0: float, stop_time: float, step: float) -> None:
        self.seen.clear()

    def pull(self) -> None:
        pass

    def do_step(self, t: float, h: float) -> None:
        self.seen.append(self.u[0])


@pytest.mark.parametrize("order", [1, 2])
def test_integer_signals_are_held_not_extrapolated(order):
    """Stair's counter (an Integer that steps by 1 each second) under input
    extrapolation reaches its consumer as the exchanged integer, never as a
    polynomial through past values."""
    probe = _IntegerProbe()
    s = System([FmuUnit(REF / "fmi2" / "Stair.fmu", "stair"), probe], [("stair.counter", "probe.n")])
    r = simulate(s, 5.0, 0.2, extrapolation=order, progress=False)
    assert probe.seen == [float(c) for c in r["stair.counter"][:-1]]
    assert len(set(probe.seen)) > 3


def test_string_columns_are_decoded_as_string_text_decodes_each_code():
    """The column look-up (typed.string_texts) gives what string_text gives per value:
    known codes, codes off the grid (rounded), unknown, negative and NaN codes ("")."""
    from mbfmu.cosim.typed import string_code, string_text, string_texts
    a, b = string_code("a \u00e9 #1"), string_code("longer text")
    codes = np.array([a, b, b + 0.4, a - 0.4, -1.0, 1e9, np.nan, string_code("")])
    assert list(string_texts(codes)) == [string_text(c) for c in codes]
    assert string_texts(codes).dtype == np.dtype("U11") and string_texts(np.zeros(0)).shape == (0,)
