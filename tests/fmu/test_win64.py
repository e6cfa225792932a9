"""The win64 binary of the pythonfmu FMUs: pythonfmu's own win64 DLL behind
the loader shim cross-compiled with mingw-w64, run under wine.

No Windows CPython (nor a Windows build of mbfmu's kernels) exists on the
test machine, so under wine the shim is driven as far as Python: a C host
(``c_host.c`` cross-compiled) loads ``binaries/win64/<id>.dll``, the shim
looks for Python (MBFMU_PYTHON, PATH, pyvenv.cfg's home) and, with the
stand-in ``fake_python3.c`` as python3.dll, starts it and reports what to
install into which interpreter.
"""
from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from fmpy import read_model_description

from mbfmu import __version__
from mbfmu.fmu.builder import BACKEND_STEM, MINGW_CC, build_fmu
from tooling import need_tool

from .conftest import HERE, REPO

SYSTEM_DLLS = {"kernel32.dll", "msvcrt.dll"}


def _tool(name: str) -> str:
    return need_tool(name)


def _wine() -> str:
    return need_tool("wine64")


@pytest.fixture(scope="session")
def win_fmu(tmp_path_factory) -> Path:
    need_tool(MINGW_CC)
    base = tmp_path_factory.mktemp("win64")
    fmu = build_fmu(f"{REPO}/tests/fmu/plants.py:DampedPendulum", base / "pendulum.fmu",
                    platforms=["linux64", "win64"])
    with zipfile.ZipFile(fmu) as z:
        z.extractall(base / "x")
    return base / "x"


def _objdump(dll: Path) -> str:
    objdump = _tool(MINGW_CC.replace("gcc", "objdump"))
    return subprocess.run([objdump, "-p", str(dll)], capture_output=True, text=True, check=True).stdout


def test_win64_shim_exports_fmi2_and_needs_only_system_dlls(win_fmu):
    md = read_model_description(str(win_fmu / "modelDescription.xml"))
    bins = win_fmu / "binaries" / "win64"
    shim = bins / f"{md.coSimulation.modelIdentifier}.dll"
    dump = _objdump(shim)
    needed = {m.lower() for m in re.findall(r"DLL Name: (\S+)", dump)}
    assert needed <= SYSTEM_DLLS, needed
    exported = set(re.findall(r"\b(fmi2\w+)\b", dump))
    linux = subprocess.run(["nm", "-D", "--defined-only", str(win_fmu / "binaries" / "linux64" /
                                                                f"{md.coSimulation.modelIdentifier}.so")],
                           capture_output=True, text=True, check=True).stdout
    assert exported == set(re.findall(r"\b(fmi2\w+)\b", linux)) and len(exported) == 34
    # pythonfmu's own win64 library is what the shim forwards to; it links python3.dll (stable ABI)
    backend = _objdump(bins / f"{BACKEND_STEM}.dll")
    assert "python3.dll" in backend


# ---- under wine (slow: the first run creates a wine prefix)

@pytest.fixture(scope="session")
def wine_env(tmp_path_factory) -> dict[str, str]:
    prefix = tmp_path_factory.mktemp("wineprefix")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MBFMU_")}
    env.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    return env


@pytest.fixture(scope="session")
def win_tools(tmp_path_factory) -> dict[str, Path]:
    """c_host.exe and a fake Python installation: base/python3.dll,
    venv/Scripts/python.exe with venv/pyvenv.cfg pointing to base."""
    cc = _tool(MINGW_CC)
    base = tmp_path_factory.mktemp("winpy")
    host = base / "c_host.exe"
    subprocess.run([cc, "-O1", "-o", str(host), str(HERE / "c_host.c")], check=True)
    (base / "base").mkdir()
    subprocess.run([cc, "-shared", "-O1", "-o", str(base / "base" / "python3.dll"), str(HERE / "fake_python3.c")],
                   check=True)
    scripts = base / "venv" / "Scripts"
    scripts.mkdir(parents=True)
    (scripts / "python.exe").write_bytes(b"MZ")  # the shim only locates it; it never runs it on Windows
    (base / "venv" / "pyvenv.cfg").write_text(f"home = {_win(base / 'base')}\ninclude-system-site-packages = false\n")
    return {"host": host, "scripts": scripts, "base": base}


def _win(path: Path) -> str:
    return "Z:" + str(path).replace("/", "\\")


def _run(win_fmu: Path, tools, env) -> subprocess.CompletedProcess:
    md = read_model_description(str(win_fmu / "modelDescription.xml"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    args = [_wine(), str(tools["host"]), _win(win_fmu), md.coSimulation.modelIdentifier, md.guid, "0.01", "3", "-",
            str(vr["theta"])]
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_win64_shim_without_python_says_what_it_tried(win_fmu, win_tools, wine_env):
    res = _run(win_fmu, win_tools, wine_env)
    assert res.returncode != 0
    assert "no usable Python found (tried python.exe: not found)" in res.stderr, res.stderr[-2000:]
    assert "MBFMU_PYTHON" in res.stderr


@pytest.mark.slow
def test_win64_shim_finds_python3_dll_of_a_venv_named_by_mbfmu_python(win_fmu, win_tools, wine_env):
    python = _win(win_tools["scripts"] / "python.exe")
    res = _run(win_fmu, win_tools, {**wine_env, "MBFMU_PYTHON": python})
    assert res.returncode != 0
    assert (f"mbfmu {__version__} is not installed in {python}: run {python} -m pip install "
            in res.stderr), res.stderr[-2000:]
    assert f"mbfmu-{__version__}.tar.gz (mbfmu's source distribution, carried by this FMU" in res.stderr


@pytest.mark.slow
def test_win64_shim_finds_python_on_path(win_fmu, win_tools, wine_env):
    res = _run(win_fmu, win_tools, {**wine_env, "WINEPATH": _win(win_tools["scripts"])})
    assert res.returncode != 0
    python = _win(win_tools["scripts"] / "python.exe")
    assert f"mbfmu {__version__} is not installed in {python}" in res.stderr, res.stderr[-2000:]
