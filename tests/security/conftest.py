"""Fixtures of the security tests."""
from __future__ import annotations

import dataclasses

import pytest

from mbfmu.untrusted import limits as _limits


@pytest.fixture
def limits():
    """:func:`mbfmu.untrusted.limits.set_limits`, the limits in force restored afterwards."""
    saved = _limits.limits()
    yield _limits.set_limits
    _limits.set_limits(**dataclasses.asdict(saved))
