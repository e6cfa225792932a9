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


@pytest.fixture
def scratch_root(tmp_path, monkeypatch):
    """A temp folder of the test's own (``tempfile.gettempdir()`` and ``TMPDIR``
    point there), so counting mbfmu's folders is not disturbed by other runs."""
    import tempfile

    from mbfmu.untrusted import scratch
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(scratch, "_cleaned_in", None)
    return root
