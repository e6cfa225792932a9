"""FMUs that travel: user code embedded, no build paths, the Python search order.

Run in this environment (mbfmu installed editable); the fresh virtual
environments built from the wheel are in ``test_clean_venv.py`` (slow).
"""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from fmpy import read_model_description

from mbfmu import __version__
from mbfmu.errors import ModelError
from mbfmu.fmu.builder import build_fmu
from hide_tools import path_without
from tooling import FMU_CHECK, need_tool

from .conftest import REPO
from .travel import (STEP, TAU, assert_matches_reference, build_user_fmus, clean_env, plant_source,
                     run_c_host, simulate_elsewhere, build_machine_paths)

# resources/mbfmu_python.txt without a python hint, after the GUID: the version, and the source
# distribution carried
RECORD = f"mbfmu={__version__}\nmbfmu_sdist=mbfmu-{__version__}.tar.gz\n"


@pytest.fixture(scope="session")
def user_fmus(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("user_fmus")
    return build_user_fmus(base / "src", base / "fmus")


@pytest.mark.parametrize("kind", ["module", "script", "inline"])
def test_user_plant_runs_from_another_folder_after_its_source_is_gone(user_fmus, kind, tmp_path):
    """A plant from a user module, from a script run as __main__ and from
    ``python -c`` (like a notebook) each run where neither the source nor the
    build folder is, and follow the pendulum equation."""
    rows = simulate_elsewhere(sys.executable, user_fmus[kind], tmp_path / "elsewhere", clean_env())
    assert_matches_reference(rows)


def test_user_module_travels_as_source_with_what_it_imports(user_fmus):
    with zipfile.ZipFile(user_fmus["module"]) as z:
        names = set(z.namelist())
    assert {"resources/user_pendulums.py", "resources/tests/fmu/plants.py"} <= names
    assert not any(n.endswith(".pkl") for n in names)


def test_no_path_of_the_build_machine_is_inside_the_fmu(user_fmus):
    """Every file of the FMU is free of the build's folders (repository,
    virtual environment, standard library, temporary folders, home)."""
    needles = build_machine_paths([str(REPO), str(user_fmus["module"].parent)])
    for fmu in user_fmus.values():
        with zipfile.ZipFile(fmu) as z:
            for name in z.namelist():
                if name.startswith("binaries/"):
                    continue  # pythonfmu's and the shim's code
                data = z.read(name)
                if name.endswith(".tar.gz"):  # mbfmu's source distribution: its files, not their compression
                    data = gzip.decompress(data)
                text = data.decode("latin-1")
                found = [n for n in needles if n and n in text]
                assert not found, f"{fmu.name}:{name} contains {found}"
        with zipfile.ZipFile(fmu) as z:
            guid = read_model_description(str(fmu)).guid
            assert z.read("resources/mbfmu_python.txt").decode() == f"guid={guid}\n" + RECORD


def test_debian_system_python_prefix_is_not_a_leak_but_its_library_is():
    """With Debian's own Python (``sys.base_prefix == "/usr"``) the README's
    ``/usr/lib/wine`` is not a build path; the interpreter's library folder,
    the virtual environment, home and temp are."""
    needles = build_machine_paths(["/home/u/mbfmu"], prefix="/home/u/mbfmu/.venv", base_prefix="/usr",
                                  stdlib="/usr/lib/python3.11", home="/home/u", tmp="/tmp")
    readme = (REPO / "README.md").read_text()
    assert "/usr/lib/wine" in readme
    assert not [n for n in needles if n in readme]
    for leak in ("/usr/lib/python3.11/site.py", "/home/u/mbfmu/.venv/lib", "/home/u/.cache/x", "/tmp/pytest-1/x"):
        assert any(n in leak for n in needles), leak


def test_python_hint_is_recorded_only_when_asked(tmp_path):
    fmu = build_fmu(f"{REPO}/tests/fmu/plants.py:DampedPendulum", tmp_path / "p.fmu", platforms=["linux64"],
                    python_hint=True)
    with zipfile.ZipFile(fmu) as z:
        assert f"python_hint={sys.executable}\n" in z.read("resources/mbfmu_python.txt").decode()


def test_class_that_cannot_be_pickled_is_refused_at_build_time(tmp_path):
    src = plant_source("LockedPendulum", "locked_pendulum") + textwrap.dedent('''
        import sys, threading
        LOCK = threading.Lock()
        class LockedPendulum(LockedPendulum):
            def derivatives(self, t, x, u):
                with LOCK:
                    return super().derivatives(t, x, u)
        from mbfmu.fmu import build_fmu
        build_fmu(LockedPendulum, sys.argv[1], platforms=["linux64"])
    ''')
    res = subprocess.run([sys.executable, "-c", src, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                         env={**clean_env(), "PYTHONPATH": str(REPO)}, timeout=300)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert "ModelError" in last and "cannot be embedded" in last and "lock" in last, last


def test_user_code_needing_a_file_that_does_not_travel_is_refused_at_build_time(tmp_path, monkeypatch):
    (tmp_path / "gains.json").write_text("[0.3]")
    (tmp_path / "file_reading_plant.py").write_text(plant_source("Reader", "reader").replace(
        "DAMPING = ", "import json, pathlib\nDAMPING = json.loads(pathlib.Path(__file__).with_name('gains.json')"
        ".read_text())[0] or ") + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModelError, match=r"cannot be embedded.*gains\.json"):
        build_fmu("file_reading_plant:Reader", tmp_path / "out", platforms=["linux64"])


def test_two_fmus_carrying_different_modules_of_one_name_refuse_the_second(tmp_path, monkeypatch):
    """Two FMUs embed a module ``twin_plant`` with other contents; in one
    process the second cannot import its own copy and says so instead of
    running the first one's code."""
    from .fmurun import instantiate, open_fmu

    fmus = []
    for k, damping in enumerate((0.1, 0.2)):
        folder = tmp_path / f"v{k}"
        folder.mkdir()
        (folder / "twin_plant.py").write_text(plant_source("Twin", "twin").replace("DAMPING = 0.3", f"DAMPING = {damping}"))
        monkeypatch.syspath_prepend(str(folder))
        fmus.append(build_fmu("twin_plant:Twin", tmp_path / f"twin{k}.fmu", platforms=["linux64"]))
        sys.modules.pop("twin_plant")
        monkeypatch.undo()
    first, second = open_fmu(fmus[0]), open_fmu(fmus[1])
    fmu = instantiate(first)
    with pytest.raises(Exception, match="Failed to instantiate"):
        instantiate(second)
    assert any("module 'twin_plant' is already imported" in m and "rename one" in m for _, _, m in second.messages)
    fmu.freeInstance()
    sys.modules.pop("twin_plant", None)
    first.close()
    second.close()


# ---- the Python search order, seen from a C host (dlopen RTLD_LOCAL, no libpython)

@pytest.fixture(scope="session")
def bare_venv(tmp_path_factory) -> Path:
    """A virtual environment without mbfmu (nor pip: it is not needed)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    return venv


@pytest.fixture(scope="session")
def pendulum_dirs(tmp_path_factory) -> dict[str, Path]:
    """The test pendulum's FMU extracted twice: without and with a python hint
    (this interpreter)."""
    base = tmp_path_factory.mktemp("search")
    out = {}
    for key, hint in (("plain", False), ("hint", True)):
        fmu = build_fmu(f"{REPO}/tests/fmu/plants.py:DampedPendulum", base / f"{key}.fmu", platforms=["linux64"],
                        python_hint=hint)
        with zipfile.ZipFile(fmu) as z:
            z.extractall(base / key)
        out[key] = base / key
    return out


def _path_with(*dirs: Path) -> str:
    """A PATH of just ``dirs`` (the shim needs nothing else on it)."""
    return os.pathsep.join(str(d) for d in dirs)


def test_search_order_mbfmu_python_comes_first(c_host, pendulum_dirs, bare_venv):
    """MBFMU_PYTHON names a Python without mbfmu: it is used (and named),
    although PATH has one with mbfmu."""
    env = clean_env(MBFMU_PYTHON=str(bare_venv / "bin" / "python"), PATH=_path_with(Path(sys.executable).parent))
    res = run_c_host(c_host, pendulum_dirs["plain"], env)
    assert res.returncode != 0
    py = bare_venv / "bin" / "python"
    assert (f"mbfmu {__version__} is not installed in {py}: run {py} -m pip install "
            in res.stderr), res.stderr[-2000:]
    assert f"mbfmu-{__version__}.tar.gz (mbfmu's source distribution, carried by this FMU" in res.stderr


def test_search_order_then_the_python_on_path(c_host, pendulum_dirs):
    res = run_c_host(c_host, pendulum_dirs["plain"], clean_env(PATH=_path_with(Path(sys.executable).parent)))
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(res.stdout.splitlines()) == 3


def test_search_order_path_python_without_mbfmu_is_named(c_host, pendulum_dirs, bare_venv):
    res = run_c_host(c_host, pendulum_dirs["plain"], clean_env(PATH=_path_with(bare_venv / "bin")))
    assert res.returncode != 0
    assert f"mbfmu {__version__} is not installed in {bare_venv / 'bin' / 'python3'}" in res.stderr, res.stderr[-2000:]


def test_search_order_the_build_hint_comes_last(c_host, pendulum_dirs, bare_venv):
    """PATH's Python lacks mbfmu; the recorded build interpreter has it and is used."""
    res = run_c_host(c_host, pendulum_dirs["hint"], clean_env(PATH=_path_with(bare_venv / "bin")))
    assert res.returncode == 0, res.stderr[-2000:]


def test_a_wrong_guid_is_refused_before_python_starts(c_host, pendulum_dirs, tmp_path):
    """fmi2Instantiate with another FMU's GUID fails naming both, as the native FMU does (FMI 2.0
    section 2.1.5), and starts no Python: no Python on PATH, yet the message is about the GUID."""
    unzipped = pendulum_dirs["plain"]
    md = read_model_description(str(unzipped / "modelDescription.xml"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    wrong = "{00000000-0000-0000-0000-000000000000}"
    res = subprocess.run([str(c_host), str(unzipped), md.coSimulation.modelIdentifier, wrong, repr(STEP), "3",
                          f"{vr['tau']}={TAU!r}", str(vr["theta"])], capture_output=True, text=True,
                         env=clean_env(PATH=str(tmp_path)), timeout=300, cwd=unzipped.parent)
    assert res.returncode != 0
    assert f"GUID {wrong} does not match this FMU's {md.guid}" in res.stderr, res.stderr[-2000:]
    assert "no usable Python" not in res.stderr
    # the right one is taken
    ok = run_c_host(c_host, pendulum_dirs["plain"], clean_env(PATH=_path_with(Path(sys.executable).parent)))
    assert ok.returncode == 0, ok.stderr[-2000:]


def _venv_with_build_tools(folder: Path) -> Path:
    """A virtual environment without mbfmu that sees this environment's other packages
    (setuptools >= 68 among them) through a .pth file: the interpreter of a recipient who has
    mbfmu's dependencies and build tools but not mbfmu."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    import setuptools
    site = Path(setuptools.__file__).resolve().parents[1]
    (next(folder.glob("lib/python3*/site-packages")) / "mbfmu_test_deps.pth").write_text(f"{site}\n")
    return folder / "bin" / "python"


def test_the_install_command_builds_offline_where_setuptools_is_installed(c_host, pendulum_dirs,
                                                                          tmp_path):
    """Where the interpreter has setuptools >= 68 the command is pip's --no-build-isolation one,
    which needs no network (pip would otherwise fetch setuptools into an isolated build)."""
    py = _venv_with_build_tools(tmp_path / "venv")
    res = run_c_host(c_host, pendulum_dirs["plain"], clean_env(MBFMU_PYTHON=str(py)))
    assert res.returncode != 0
    assert f": run {py} -m pip install --no-build-isolation " in res.stderr, res.stderr[-2000:]
    assert "so no network is needed" in res.stderr


@pytest.mark.slow
def test_the_offered_install_command_works_offline(c_host, pendulum_dirs, tmp_path):
    """The command, run as written with pip kept off every index (PIP_NO_INDEX), installs mbfmu
    from the FMU's source distribution, and the FMU then runs in that interpreter."""
    import re
    import shlex
    py = _venv_with_build_tools(tmp_path / "venv")
    first = run_c_host(c_host, pendulum_dirs["plain"], clean_env(MBFMU_PYTHON=str(py)))
    found = re.search(r": run (.+?) \(mbfmu's source distribution", first.stderr)
    assert found, first.stderr[-2000:]
    command = shlex.split(found.group(1))
    assert command[:5] == [str(py), "-m", "pip", "install", "--no-build-isolation"], command
    install = subprocess.run(command, cwd=tmp_path, env=clean_env(PIP_NO_INDEX="1"), capture_output=True,
                             text=True, timeout=1800)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    second = run_c_host(c_host, pendulum_dirs["plain"], clean_env(MBFMU_PYTHON=str(py)))
    assert second.returncode == 0 and len(second.stdout.splitlines()) == 3, second.stderr[-2000:]


def test_an_externally_managed_python_is_told_to_make_a_venv(c_host, pendulum_dirs):
    """A system Python whose stdlib holds EXTERNALLY-MANAGED (PEP 668: Debian's) refuses pip
    installs: the message names the virtual environment to create and MBFMU_PYTHON to set."""
    import glob
    system = Path("/usr/bin/python3")
    probe = subprocess.run([str(system), "-c", "import os, sys, sysconfig; print(os.path.isfile(os.path.join("
                            "sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')) and sys.prefix == sys.base_prefix "
                            "and bool(sysconfig.get_config_var('Py_ENABLE_SHARED')))"],
                           capture_output=True, text=True) if system.exists() else None
    if probe is None or probe.stdout.strip() != "True" or not glob.glob("/usr/lib/*/libpython3*.so*"):
        pytest.skip("needs an externally managed system Python with a shared libpython (Debian: python3, libpython3-dev)")
    res = run_c_host(c_host, pendulum_dirs["plain"], clean_env(MBFMU_PYTHON=str(system)))
    assert res.returncode != 0
    assert "is an externally managed system Python" in res.stderr, res.stderr[-2000:]
    assert "-m venv $HOME/mbfmu-venv && $HOME/mbfmu-venv/bin/python -m pip install " in res.stderr
    assert "then set MBFMU_PYTHON to $HOME/mbfmu-venv/bin/python" in res.stderr


def test_no_python_anywhere_is_a_clear_message(c_host, pendulum_dirs, tmp_path):
    res = run_c_host(c_host, pendulum_dirs["plain"], clean_env(PATH=str(tmp_path)))
    assert res.returncode != 0
    assert "no usable Python found (tried python3: not found; python: not found)" in res.stderr, res.stderr[-2000:]
    assert "MBFMU_PYTHON" in res.stderr


# ---- controllers exported by reference

FACTORY = textwrap.dedent('''
    import control

    def integrator(gain, dt):
        """y[k] = x[k], x[k+1] = x[k] + dt * gain * u[k]: a discrete integrator."""
        return control.NonlinearIOSystem(lambda t, x, u, p: x + dt * gain * u, lambda t, x, u, p: x,
                                         inputs=["e"], outputs=["y"], states=["x"], dt=dt, name="integrator")
''')

RUN_CONTROLLER = textwrap.dedent('''
    import sys
    from fmpy import simulate_fmu
    r = simulate_fmu(sys.argv[1], stop_time=0.5, step_size=0.01, output_interval=0.01, start_values={"e": 2.0})
    print(repr(float(r["y"][-1])))
''')


def test_controller_exported_by_reference_to_a_user_module_runs_from_another_folder(tmp_path, monkeypatch):
    """The factory's module travels inside the FMU; the FMU integrates as
    the discrete integrator does: y(0.5 s) = 50 steps * 0.01 s * gain * e."""
    from mbfmu.control.export import export_fmu

    src = tmp_path / "src"
    src.mkdir()
    (src / "user_controllers.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(src))
    import user_controllers
    fmu = export_fmu(user_controllers.integrator(1.5, 0.01), tmp_path / "ctrl.fmu",
                     reference=("user_controllers:integrator", {"gain": 1.5, "dt": 0.01}))
    sys.modules.pop("user_controllers")
    monkeypatch.undo()
    (src / "user_controllers.py").unlink()
    with zipfile.ZipFile(fmu) as z:
        assert "resources/user_controllers.py" in z.namelist()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = subprocess.run([sys.executable, "-c", RUN_CONTROLLER, str(fmu)], cwd=elsewhere, env=clean_env(),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert float(res.stdout.split()[-1]) == pytest.approx(50 * 0.01 * 1.5 * 2.0, abs=1e-12)


def test_controller_factory_in_main_is_refused_with_the_reason():
    from mbfmu.control.export import system_spec
    from mbfmu.errors import InputError

    with pytest.raises(InputError, match="defined in __main__.*move it to a module file"):
        system_spec(__import__("control").NonlinearIOSystem(lambda t, x, u, p: x, None, inputs=1, states=1, dt=0.1),
                    reference=("__main__:make", {}))


def test_cli_chooses_platforms_and_the_python_hint(tmp_path):
    from mbfmu.cli import main

    need_tool("x86_64-w64-mingw32-gcc")
    assert main(["build", f"{REPO}/tests/fmu/plants.py:DampedPendulum", "-o", str(tmp_path / "a")]) == 0
    assert main(["build", f"{REPO}/tests/fmu/plants.py:DampedPendulum", "-o", str(tmp_path / "b"),
                 "--platform", "linux64", "--python-hint"]) == 0
    with zipfile.ZipFile(tmp_path / "a" / "damped_pendulum.fmu") as a, \
            zipfile.ZipFile(tmp_path / "b" / "damped_pendulum.fmu") as b:
        assert {"binaries/win64/damped_pendulum.dll", "binaries/linux64/damped_pendulum.so"} <= set(a.namelist())
        assert not any(n.startswith("binaries/win64/") for n in b.namelist())
        guid = read_model_description(str(tmp_path / "a" / "damped_pendulum.fmu")).guid
        assert a.read("resources/mbfmu_python.txt").decode() == f"guid={guid}\n" + RECORD
        assert f"python_hint={sys.executable}" in b.read("resources/mbfmu_python.txt").decode()


@pytest.mark.parametrize("kind", ["module", "script"])
def test_fmu_compliance_checker_runs_the_user_plants_with_mbfmu_python(user_fmus, kind, tmp_path):
    """The FMU Compliance Checker (a C host) finds Python through MBFMU_PYTHON and reports nothing."""
    res = subprocess.run([str(FMU_CHECK), "-h", str(STEP), "-s", "0.1", "-o", str(tmp_path / "out.csv"),
                          str(user_fmus[kind])], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=clean_env(MBFMU_PYTHON=sys.executable))  # the checker needs PATH (rm)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "0 warning(s) and error(s)" in res.stderr and "\t0 Error(s)" in res.stderr, res.stderr[-3000:]


@pytest.mark.parametrize("runtime", ["pythonfmu", "native"])
def test_without_mingw_the_build_makes_linux64_and_says_so_in_one_plain_line(runtime, tmp_path, monkeypatch):
    """A missing cross-compiler is not an error for the default platforms: linux64 is
    built and one line says why there is no win64 binary (no Python warning format)."""
    monkeypatch.delenv("MBFMU_MINGW_CC", raising=False)
    plant = "rigid_arm" if runtime == "native" else f"{REPO}/tests/fmu/plants.py:DampedPendulum"
    res = subprocess.run([sys.executable, "-c", "import sys; from mbfmu.cli import main; sys.exit(main(sys.argv[1:]))",
                          "build", plant, "-o", str(tmp_path), "--runtime", runtime],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PATH": path_without("x86_64-w64-mingw32-*")})
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines == [ln for ln in lines if "win64" in ln] and len(lines) == 1, res.stderr
    assert "Warning" not in res.stderr and "apt-get install gcc-mingw-w64-x86-64" in lines[0]
    (fmu,) = tmp_path.glob("*.fmu")
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
    assert any(n.startswith("binaries/linux64/") for n in names)
    assert not any(n.startswith("binaries/win64/") for n in names)


def test_fmu_carries_the_source_distribution_of_this_mbfmu(user_fmus):
    """#23.4: what the log tells a host without mbfmu to install travels inside (setuptools' sdist)."""
    import io
    import tarfile

    with zipfile.ZipFile(user_fmus["module"]) as z:
        data = z.read(f"resources/mbfmu-{__version__}.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        names = set(t.getnames())
        info = t.extractfile(f"mbfmu-{__version__}/PKG-INFO").read().decode()
    assert f"\nVersion: {__version__}\n" in info and "\nName: mbfmu\n" in info
    root = f"mbfmu-{__version__}"
    assert {f"{root}/pyproject.toml", f"{root}/setup.py", f"{root}/mbfmu/fmu/slave.py",
            f"{root}/mbfmu/dynamics/csrc/sensors.c", f"{root}/models/rigid_arm.py"} <= names
