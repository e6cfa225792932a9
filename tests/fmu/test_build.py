"""The built FMU's model description: validity, units, structure, flags."""
from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import zipfile
import xml.etree.ElementTree as ET

import pytest
from fmpy import dump, read_model_description
from fmpy.validation import validate_fmu

from mbfmu.fmu import builder

from .conftest import LIBRARY_NAMES, LIBRARY_REASON, PLANTS, REPO, subprocess_env


def _xml(path):
    with zipfile.ZipFile(path) as z:
        return ET.fromstring(z.read("modelDescription.xml"))


def test_fmu_passes_fmpy_validation(case, build):
    assert validate_fmu(str(build(case))) == []


def _shown(token: str, name: str) -> bool:
    """fmpy's table shows long names as '...' + their tail."""
    return token == name or (token.startswith("...") and name.endswith(token[3:]))


def test_fmpy_info_shows_every_unit(case, build):
    path = build(case)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        dump(str(path))
    text = out.getvalue()
    plant = case.plant()
    for sig in (*plant.inputs, *plant.outputs):
        if sig.unit != "1":
            line = next(l for l in text.splitlines() if l.split() and _shown(l.split()[0], sig.name))
            assert sig.unit in line.split(), line
    md = read_model_description(str(path))
    assert {u.name for u in md.unitDefinitions} == {s.unit for s in (*plant.inputs, *plant.outputs,
                                                                     *plant.parameters, *plant.states)} - {"1"}


def test_variables_follow_the_plant_ports(case, build):
    plant = case.plant()
    md = read_model_description(str(build(case)))
    by_causality = {}
    for v in md.modelVariables:
        by_causality.setdefault(v.causality, []).append(v)
    assert [v.name for v in by_causality["input"]] == [s.name for s in plant.inputs]
    assert [v.name for v in by_causality["output"]] == [s.name for s in plant.outputs]
    params = by_causality.get("parameter", [])
    assert [v.name for v in params] == [s.name for s in plant.parameters]
    assert [float(v.start) for v in params] == [s.start for s in plant.parameters]
    assert all(v.variability == "tunable" for v in params)
    assert [v.name for v in by_causality.get("local", [])] == ["states." + s.name for s in plant.states]
    for v, s in zip(by_causality["input"], plant.inputs):
        assert float(v.start) == s.start and v.description == (s.description or None)
    de = md.defaultExperiment
    assert float(de.stopTime) == plant.default_stop_time and float(de.stepSize) == plant.default_step


def test_model_structure_declares_feedthrough(case, build):
    plant = case.plant()
    root = _xml(build(case))
    names = [sv.get("name") for sv in root.iter("ScalarVariable")]
    outs = root.find("ModelStructure/Outputs")
    deps = {names[int(u.get("index")) - 1]: u.get("dependencies") for u in outs}
    assert list(deps) == [s.name for s in plant.outputs]
    for out_name, dep in deps.items():
        expected = sorted(plant.feedthrough.get(out_name, ()))
        assert sorted(names[int(i) - 1] for i in dep.split()) == expected
    init = [names[int(u.get("index")) - 1] for u in root.find("ModelStructure/InitialUnknowns")]
    assert init == [s.name for s in plant.outputs]


def test_co_simulation_flags_fix_pythonfmu_defaults(case, build):
    cs = _xml(build(case)).find("CoSimulation").attrib
    assert cs["needsExecutionTool"] == "false"
    assert cs["canGetAndSetFMUstate"] == "true" and cs["canSerializeFMUstate"] == "true"
    assert cs["canBeInstantiatedOnlyOncePerProcess"] == "false"


def test_fmu_declares_requirements_for_pythonfmu_deploy(case, build):
    with zipfile.ZipFile(build(case)) as z:
        req = z.read("resources/requirements.txt").decode().split()
        names = set(z.namelist())
    assert f"mbfmu=={builder.__version__}" in req
    ident = read_model_description(str(build(case))).coSimulation.modelIdentifier
    assert f"binaries/linux64/{ident}.so" in names
    assert f"binaries/linux64/{builder.BACKEND_NAME}" in names


def test_fmu_binary_does_not_need_libpython_at_load(case, build, tmp_path):
    """The FMU's binary is the shim: no undefined Py* symbols, no libpython NEEDED."""
    ident = read_model_description(str(build(case))).coSimulation.modelIdentifier
    with zipfile.ZipFile(build(case)) as z:
        z.extract(f"binaries/linux64/{ident}.so", tmp_path)
    so = tmp_path / "binaries" / "linux64" / f"{ident}.so"
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True).stdout
    assert "Py" not in undefined
    dyn = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True).stdout
    assert "libpython" not in dyn


def test_cli_builds_named_plants(tmp_path):
    from mbfmu.cli import main
    rc = main(["build", f"{PLANTS}:DampedPendulum", "-o", str(tmp_path), "-p", "length=2.5"])
    assert rc == 0
    md = read_model_description(str(tmp_path / "damped_pendulum.fmu"))
    assert {v.name: v.start for v in md.modelVariables}["length"] == "2.5"


def test_cli_builds_every_library_plant_by_default(tmp_path):
    assert not LIBRARY_REASON, LIBRARY_REASON
    res = subprocess.run([sys.executable, "-m", "mbfmu", "build", "-o", str(tmp_path / "fmus")], cwd=REPO,
                         env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "fmus").iterdir()) == sorted(f"{n}.fmu" for n in LIBRARY_NAMES)


def test_cli_reports_bad_plant_readably(tmp_path, capsys):
    from mbfmu.cli import main
    assert main(["build", str(tmp_path / "missing.py"), "-o", str(tmp_path)]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_build_refuses_parameters_the_plant_refuses(tmp_path):
    from mbfmu.errors import ModelError
    with pytest.raises(ModelError, match="cannot build plant.*length -1.0 m"):
        builder.build_fmu(f"{PLANTS}:DampedPendulum", tmp_path, parameters={"length": -1.0})
    assert not list(tmp_path.iterdir())


def test_library_plants_are_covered():
    """Says loudly when the library plants are not (yet) among the cases."""
    assert not LIBRARY_REASON, f"only the test plants are covered: {LIBRARY_REASON}"


def test_slave_scripts_of_another_format_get_another_module_name(tmp_path, monkeypatch):
    """pythonfmu imports the slave module by name: an FMU built by an mbfmu whose
    script format differs must not meet the other's module in one process (it
    lacked the name the newer shim asks for)."""
    import zipfile
    from mbfmu.fmu import builder

    def module_of(folder):
        path = builder.build_fmu("rigid_arm", tmp_path / folder)
        with zipfile.ZipFile(path) as z:
            return z.read("resources/slavemodule.txt").decode()

    first = module_of("a")
    assert module_of("b") == first  # the same build, the same name
    monkeypatch.setattr(builder, "SLAVE_TEMPLATE", builder.SLAVE_TEMPLATE + "# another format\n")
    assert module_of("c") != first


def test_build_refuses_to_overwrite_an_fmu_without_force(tmp_path, capsys):
    """A second build to the same file is refused by name (``overwrite=True``,
    ``mbfmu build --force`` replace it): the first FMU is never lost silently."""
    from mbfmu.cli import main
    from mbfmu.errors import InputError
    first = builder.build_fmu(f"{PLANTS}:DampedPendulum", tmp_path)
    before = first.read_bytes()
    with pytest.raises(InputError, match=r"damped_pendulum\.fmu exists.*overwrite=True"):
        builder.build_fmu(f"{PLANTS}:DampedPendulum", tmp_path, parameters={"length": 2.5})
    assert first.read_bytes() == before
    assert main(["build", f"{PLANTS}:DampedPendulum", "-o", str(tmp_path), "-p", "length=2.5"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--force" in err, err
    assert main(["build", f"{PLANTS}:DampedPendulum", "-o", str(tmp_path), "-p", "length=2.5", "--force"]) == 0
    md = read_model_description(str(first))
    assert {v.name: v.start for v in md.modelVariables}["length"] == "2.5"


def test_readme_robot_builds_write_two_files():
    """The README's pythonfmu and native builds of one robot name two files."""
    import re
    readme = (REPO / "README.md").read_text()
    robot = readme.split("## Your robot", 1)[1].split("\n## ", 1)[0]
    dests = re.findall(r'build_fmu\(ur5, "([^"]+)"', robot)
    assert len(dests) == 2 and len(set(dests)) == 2, dests


def test_an_old_setuptools_refusing_the_license_is_named_in_one_line(tmp_path, monkeypatch, caplog):
    """setuptools 66 (Debian 12's) refuses pyproject.toml's ``license = "MIT"``
    and ends its message with ``required: ['text']``; the build's warning
    names setuptools, the license and the upgrade instead (its stderr as
    captured, ``tests/fixtures/setuptools66_license_stderr.txt``)."""
    import logging
    from mbfmu.fmu import sdist
    stderr = (REPO / "tests" / "fixtures" / "setuptools66_license_stderr.txt").read_text()
    assert stderr.rstrip().splitlines()[-1].strip() == "required: ['text']"
    import types
    refused = types.SimpleNamespace(run=lambda *a, **k: subprocess.CompletedProcess(a, 1, stdout="", stderr=stderr))
    monkeypatch.setattr(sdist, "subprocess", refused)  # setuptools' run only, not the build's compilers
    monkeypatch.setattr(sdist, "source_distribution", sdist.source_distribution.__wrapped__)
    with caplog.at_level(logging.WARNING, logger="mbfmu.fmu"):
        fmu = builder.build_fmu(f"{PLANTS}:DampedPendulum", tmp_path)
    [warning] = [r.getMessage() for r in caplog.records if "carries no copy" in r.getMessage()]
    assert "\n" not in warning and "required" not in warning, warning
    assert "setuptools" in warning and "license" in warning and "setuptools>=77" in warning, warning
    assert validate_fmu(str(fmu)) == []


def test_processes_making_the_source_distribution_at_once_all_get_it():
    """setuptools assembles the distribution in mbfmu-<version>/ of the source tree and
    deletes it after: three processes making it at once (xdist workers, a build beside
    a demo) deleted each other's files ("No such file or directory:
    'mbfmu-0.1.0/mbfmu/errors.py'") and their FMUs carried no copy of mbfmu."""
    code = ("from mbfmu.fmu import sdist; import tarfile; p = sdist.source_distribution(); "
            "print(len(tarfile.open(p).getnames()))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=subprocess_env()) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    counts = {int(out.strip()) for out, _ in outs}
    assert len(counts) == 1 and counts.pop() > 100, outs


def test_a_python_without_setuptools_is_named_with_the_install_command():
    """A venv of Python 3.12 or newer has no setuptools: the FMU then carries no copy of
    mbfmu, and the warning says how to get one instead of a bare ModuleNotFoundError."""
    from mbfmu.fmu import sdist
    stderr = ('Traceback (most recent call last):\n  File "/src/setup.py", line 6, in <module>\n'
              "    from setuptools import Extension, find_namespace_packages, setup\n"
              "ModuleNotFoundError: No module named 'setuptools'\n")
    reason = sdist.failure_reason(stderr)
    assert "\n" not in reason and reason.endswith("python -m pip install setuptools"), reason
