"""Unit strings -> FMI BaseUnit exponents (independent hand-derived values)."""
import math

import pytest

from mbfmu.fmu.units import parse_unit


@pytest.mark.parametrize("unit, expected", [
    ("N.m", {"kg": "1", "m": "2", "s": "-2"}),
    ("m/s2", {"m": "1", "s": "-2"}),
    ("rad/s", {"s": "-1", "rad": "1"}),
    ("kg.m2", {"kg": "1", "m": "2"}),
    ("N.m.s/rad", {"kg": "1", "m": "2", "s": "-1", "rad": "-1"}),
    ("N/m", {"kg": "1", "s": "-2"}),
    ("W", {"kg": "1", "m": "2", "s": "-3"}),
    ("1", {}),
])
def test_base_unit_exponents_match_si_derivation(unit, expected):
    assert parse_unit(unit).base_unit_attributes() == expected


def test_degree_has_factor_pi_over_180():
    attrs = parse_unit("deg/s").base_unit_attributes()
    assert math.isclose(float(attrs.pop("factor")), math.pi / 180)
    assert attrs == {"s": "-1", "rad": "1"}


def test_unknown_unit_is_declared_by_name_only():
    u = parse_unit("furlong/fortnight")
    assert u.name == "furlong/fortnight" and u.base_unit_attributes() is None
