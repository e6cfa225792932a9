"""Fixtures of the security tests."""
from __future__ import annotations

import dataclasses
import zipfile

import pytest
from fmpy import read_model_description

from mbfmu.untrusted import limits as _limits

from .ctypes_hosts import CS, Host, Host3


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


def _rigid_arm_binary(tmp_path_factory, native_fmus, fmi_version: int):
    """(binary path, model description) of the native rigid_arm FMU for Linux on x86-64, unzipped."""
    d = tmp_path_factory.mktemp(f"native_calls{fmi_version}")
    version = {"fmi_version": 3} if fmi_version == 3 else {}  # FMI 2 as the other tests build it: one cache entry
    path = native_fmus("rigid_arm", platforms=("linux64",), **version)
    with zipfile.ZipFile(path) as z:
        z.extractall(d / "x")
    platform = "linux64" if fmi_version == 2 else "x86_64-linux"
    return d / "x" / "binaries" / platform / "rigid_arm.so", read_model_description(str(path))


def _instances(make_one):
    """A fixture's factory of instances made by ``make_one(*args)``, and a closer for them all."""
    made = []

    def make(*args):
        made.append(make_one(*args))
        return made[-1]
    return make, lambda: [h.close() for h in made]


@pytest.fixture(scope="module")
def fmu(tmp_path_factory, native_fmus):
    """(binary path, model description) of the native rigid_arm FMU (FMI 2.0)."""
    return _rigid_arm_binary(tmp_path_factory, native_fmus, 2)


@pytest.fixture
def host(fmu):
    """``host(kind=CS)``: an instance, freed after the test."""
    make, close = _instances(lambda kind=CS: Host(fmu, kind))
    yield make
    close()


@pytest.fixture(scope="module")
def fmu3(tmp_path_factory, native_fmus):
    """(binary path, model description) of the native FMI 3.0 rigid_arm FMU."""
    return _rigid_arm_binary(tmp_path_factory, native_fmus, 3)


@pytest.fixture
def host3(fmu3):
    """``host3()``: an FMI 3 co-simulation instance, freed after the test."""
    make, close = _instances(lambda: Host3(fmu3))
    yield make
    close()
