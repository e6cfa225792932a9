"""The names ``mbfmu.control`` exports stay the functions they are, whatever
was imported before (a submodule named like its function replaced it)."""
from __future__ import annotations

import pkgutil
import subprocess
import sys
import types

import mbfmu.control


def test_no_submodule_has_the_name_of_an_exported_function():
    submodules = {m.name for m in pkgutil.iter_modules(mbfmu.control.__path__)}
    assert not submodules & set(mbfmu.control.__all__), submodules & set(mbfmu.control.__all__)


def test_exports_survive_importing_every_submodule_first():
    code = ("import importlib, pkgutil, types, mbfmu.control as c\n"
            "for m in pkgutil.iter_modules(c.__path__): importlib.import_module('mbfmu.control.' + m.name)\n"
            "bad = [n for n in c.__all__ if isinstance(getattr(c, n), types.ModuleType)]\n"
            "print(bad); raise SystemExit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]


def test_controller_fmus_exported_before_the_rename_still_rebuild():
    from mbfmu.control.system_plant import rebuild
    old = rebuild("mbfmu.control.pid:pid", dict(Kp=2.0, Ki=1.0, dt=0.01))
    new = mbfmu.control.pid(Kp=2.0, Ki=1.0, dt=0.01)
    assert not isinstance(old, types.ModuleType)
    assert old.linear().A.tolist() == new.linear().A.tolist()
