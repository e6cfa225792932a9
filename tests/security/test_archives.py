"""Issue 26.9: archive expansion is bounded, checked before extracting.

A 1.5 MB FMU expanded to 1.43 GB, and on a full disk the partial folder
stayed. Now every archive (FMU, SSP) goes through
:mod:`mbfmu.untrusted.archive`: declared sizes and compression ratios are
checked first, the total is bounded (default 2 GiB, ``MBFMU_MAX_EXPAND_BYTES``
or :func:`~mbfmu.untrusted.limits.set_limits`), and the folder is removed on
every failure. The bombs only declare their sizes in the zip headers.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from tooling import reference_fmu

from mbfmu.cosim import FmuUnit, read_ssp
from mbfmu.untrusted import archive

from .attacks import declare_size, scratch_folders, ssd_with_sources


def _bomb_fmu(tmp_path, declared=int(1.43e9)):
    fmu = tmp_path / "bomb.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    with zipfile.ZipFile(fmu, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("resources/padding.bin", b"\0" * 1500)
    declare_size(fmu, "resources/padding.bin", declared)
    return fmu


def test_fmu_declaring_a_huge_member_is_refused_before_extracting(scratch_root, tmp_path):
    fmu = _bomb_fmu(tmp_path)
    assert fmu.stat().st_size < 100_000
    with pytest.raises(ValueError) as e:
        FmuUnit(fmu)
    msg = str(e.value)
    assert "resources/padding.bin" in msg and "1.33 GiB" in msg and "limit 200:1" in msg and "zip bomb" in msg
    assert scratch_folders(scratch_root) == set()


def test_total_is_bounded_and_the_bound_is_configurable(scratch_root, tmp_path, limits):
    fmu = tmp_path / "d.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)  # 110 kB of members
    limits(max_expand_bytes=50_000)
    with pytest.raises(ValueError, match=r"above the limit of 48.8 kiB \(MBFMU_MAX_EXPAND_BYTES\)"):
        FmuUnit(fmu)
    assert scratch_folders(scratch_root) == set()
    limits(max_expand_bytes=200_000)
    assert FmuUnit(fmu).name == "Dahlquist"
    env = dict(os.environ, MBFMU_MAX_EXPAND_BYTES="50000")
    code = f"from mbfmu.cosim import FmuUnit\ntry:\n    FmuUnit({str(fmu)!r})\nexcept ValueError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "above the limit of 48.8 kiB" in out


def test_ssp_bomb_is_refused_and_leaves_nothing(scratch_root, tmp_path):
    path = tmp_path / "bomb.ssp"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("SystemStructure.ssd", ssd_with_sources("resources/d.fmu"))
        z.write(reference_fmu("fmi2", "Dahlquist"), "resources/d.fmu")
        z.writestr("resources/padding.bin", b"\0" * 1500)
    declare_size(path, "resources/padding.bin", 3 * 2**30)
    with pytest.raises(ValueError, match="'resources/padding.bin' declares 3 GiB"):
        read_ssp(path)
    assert scratch_folders(scratch_root) == set()


@pytest.mark.parametrize("name", ["../escape.txt", "/abs.txt", "resources/../../escape.txt"])
def test_members_leaving_the_archive_are_refused(scratch_root, tmp_path, name):
    fmu = tmp_path / "x.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    with zipfile.ZipFile(fmu, "a") as z:
        z.writestr(zipfile.ZipInfo(name), b"planted")
    with pytest.raises(ValueError, match="refused"):
        FmuUnit(fmu)
    assert not (scratch_root / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert scratch_folders(scratch_root) == set()


def test_symbolic_link_member_is_refused(scratch_root, tmp_path):
    fmu = tmp_path / "x.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    link = zipfile.ZipInfo("resources/passwd")
    link.external_attr = (0o120777 << 16)
    with zipfile.ZipFile(fmu, "a") as z:
        z.writestr(link, "/etc/passwd")
    with pytest.raises(ValueError, match="is a symbolic link; refused"):
        FmuUnit(fmu)


def test_an_archive_larger_than_the_free_disk_is_refused_up_front(scratch_root, tmp_path, monkeypatch):
    fmu = tmp_path / "d.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    free = shutil.disk_usage(scratch_root)._replace(free=10_000)
    monkeypatch.setattr(archive.shutil, "disk_usage", lambda p: free)
    with pytest.raises(ValueError, match=r"expands to 107 kiB; the disk holding .* has 9.77 kiB free"):
        FmuUnit(fmu)
    assert scratch_folders(scratch_root) == set()


def test_a_disk_filling_up_while_extracting_leaves_no_partial_folder(scratch_root, tmp_path, monkeypatch):
    fmu = tmp_path / "d.fmu"
    shutil.copy(reference_fmu("fmi2", "Dahlquist"), fmu)
    calls = []
    real = archive.shutil.copyfileobj

    def full_after_two(src, dst, length=0):
        calls.append(1)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, length)
    monkeypatch.setattr(archive.shutil, "copyfileobj", full_after_two)
    with pytest.raises(ValueError, match="cannot extract FMU .*: No space left on device"):
        FmuUnit(fmu)
    assert len(calls) == 3  # it did start writing
    assert scratch_folders(scratch_root) == set()
