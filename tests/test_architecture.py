"""The layers of ARCHITECTURE.md hold: each package module imports only what
its layer may import (parsed from the source, so a violation in an unexercised
code path is caught too)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mbfmu"

THIRD_PARTY_HEAVY = {"fmpy", "pythonfmu", "control", "matplotlib"}

# layer prefix -> (allowed mbfmu prefixes, forbidden third-party top-level names)
RULES = {
    "mbfmu.errors": ((), THIRD_PARTY_HEAVY | {"numpy", "scipy"}),
    "mbfmu._lazy": ((), THIRD_PARTY_HEAVY | {"numpy", "scipy"}),
    # reading files from others (limits, archives, private temp folders): every layer uses it
    "mbfmu.untrusted": (("mbfmu.errors", "mbfmu.untrusted"), THIRD_PARTY_HEAVY | {"numpy", "scipy"}),
    "mbfmu.dynamics": (("mbfmu.errors", "mbfmu.dynamics"), THIRD_PARTY_HEAVY),
    # the plant contract: signals first, then plants on the engine
    "mbfmu.plant.signals": (("mbfmu.errors",), THIRD_PARTY_HEAVY),
    "mbfmu.plant": (("mbfmu.errors", "mbfmu.plant", "mbfmu.dynamics"), THIRD_PARTY_HEAVY),
    # the library finds the plant files of mbfmu.models by name
    "mbfmu.plant.library": (("mbfmu.errors", "mbfmu.plant", "mbfmu.dynamics", "mbfmu.models"), THIRD_PARTY_HEAVY),
    "mbfmu.fmu": (("mbfmu.errors", "mbfmu.plant", "mbfmu.fmu", "mbfmu.models"), {"fmpy", "control", "matplotlib"}),
    # the native runtime compiles the engine's packed model, so it reads it (and the sensors)
    "mbfmu.fmu.native": (("mbfmu.errors", "mbfmu.plant", "mbfmu.fmu", "mbfmu.models", "mbfmu.dynamics"),
                         {"fmpy", "control", "matplotlib"}),
    "mbfmu.cosim": (("mbfmu.errors", "mbfmu.plant.signals", "mbfmu.cosim"), {"pythonfmu", "matplotlib"}),
}

# the parts of mbfmu.cosim, each above the ones it may import: the units and systems at its
# root <- the FMU units (fmi) <- SSP files, isolated FMUs ; recording <- the master
_COSIM_BASE = ("mbfmu.errors", "mbfmu.plant.signals")
_COSIM_CORE = tuple(f"mbfmu.cosim.{m}" for m in ("units", "system", "blocks", "sources", "typed", "signal_names"))
_COSIM_PARTS = {
    "fmi": ("fmi",),
    "ssp": ("fmi", "ssp"),
    "isolation": ("fmi", "isolation"),
    "recording": ("recording",),
    "master": ("fmi", "isolation", "recording", "master"),
}
for _core in _COSIM_CORE:
    RULES[_core] = (_COSIM_BASE + _COSIM_CORE, {"pythonfmu", "matplotlib", "fmpy"})
for _part, _below in _COSIM_PARTS.items():
    RULES[f"mbfmu.cosim.{_part}"] = (_COSIM_BASE + _COSIM_CORE + tuple(f"mbfmu.cosim.{b}" for b in _below),
                                     {"pythonfmu", "matplotlib"})
# the FMU units face fmpy only: the algorithms on top of their calls (Jacobians, their check,
# ERA) are analyses, in mbfmu.control
RULES["mbfmu.cosim.fmi"] = (RULES["mbfmu.cosim.fmi"][0], {"pythonfmu", "matplotlib", "control", "scipy"})
RULES["mbfmu.cosim.recording"] = (_COSIM_BASE + ("mbfmu.cosim.typed", "mbfmu.cosim.recording"),
                                  {"pythonfmu", "matplotlib", "fmpy"})


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:
                    found.update(f"{name}.{a.name}" for a in node.names)
                else:
                    found.add(name)
            else:
                found.add(node.module)
    return found


def _imports_of_nodes(nodes, module: str) -> set[str]:
    """Absolute names imported by the top-level statements ``nodes`` of ``module``."""
    package = module.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            found.add(".".join(base + ([node.module] if node.module else [])))
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def _rule_for(module: str):
    best = None
    for prefix in RULES:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))

# (module, import) pairs allowed against the layers, each imported inside one
# function only: ``Result.plot`` hands the drawing to the viewer at call time.
LAZY_UPWARD = {("mbfmu.cosim.recording.result", "mbfmu.viewer.result_plot")}


def test_lazy_upward_imports_are_inside_functions():
    """Each allowed upward import is made in a function body, never at module level."""
    for module, name in LAZY_UPWARD:
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())
        top = _imports_of_nodes(tree.body, module)
        assert name not in top, f"{module} imports {name} at module level"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_imports_respect_its_layer(path):
    module = _module_name(path)
    rule = _rule_for(module)
    if rule is None:
        return  # cli, demo, control, viewer, studies: may import any layer below them
    allowed, forbidden = RULES[rule]
    bad = []
    for name in _imports(path, module):
        top = name.split(".")[0]
        if top == "mbfmu":
            if name.rpartition(".")[2].startswith("__"):
                continue  # package metadata such as mbfmu.__version__
            if name == "mbfmu._lazy" or name == "mbfmu.untrusted" or name.startswith("mbfmu.untrusted."):
                continue  # stdlib-only helpers that serve every layer
            if (module, name) in LAZY_UPWARD:
                continue
            if name != "mbfmu" and not any(name == a or name.startswith(a + ".") for a in allowed):
                bad.append(name)
        elif top in forbidden:
            bad.append(name)
    assert not bad, f"{module} ({rule} layer) imports {sorted(bad)}"


def test_only_the_cosim_layer_imports_fmpy():
    offenders = []
    for path in MODULES:
        module = _module_name(path)
        if module.startswith("mbfmu.cosim"):
            continue
        if any(n.split(".")[0] == "fmpy" for n in _imports(path, module)):
            offenders.append(module)
    assert not offenders, f"fmpy imported outside mbfmu.cosim: {offenders}"


def test_rules_see_every_layer():
    """The walk really parses the package (a renamed folder would silently
    make the rules vacuous)."""
    names = {_module_name(p) for p in MODULES}
    assert {"mbfmu.dynamics.algorithms", "mbfmu.plant", "mbfmu.plant.contract", "mbfmu.cosim.master.run"} <= names
    for part in _COSIM_PARTS:
        assert any(n.startswith(f"mbfmu.cosim.{part}.") for n in names), part


def test_the_package_root_shows_the_layers():
    """The package root holds the layers and the few cross-layer modules (CLI,
    demo, errors), not the plant contract's pieces (they live in mbfmu.plant)."""
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert set(loose) <= {"__main__", "cli", "demo", "demo_steps", "errors", "example_cli", "_lazy"}, loose


def _runs_at_import(node: ast.AST) -> bool:
    """Whether ``node`` runs when its module is imported (not a function body)."""
    return not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))


def _import_edges(module_level_only: bool) -> dict[str, set[str]]:
    """``module -> mbfmu modules it imports`` for every module of the package
    (``from pkg import sub`` names the submodule ``pkg.sub`` when there is one)."""
    names = {_module_name(p): p for p in MODULES}
    edges: dict[str, set[str]] = {}
    for module, path in names.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        todo = list(ast.parse(path.read_text()).body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue  # never runs
            if module_level_only and not _runs_at_import(node):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
            todo.extend(ast.iter_child_nodes(node))
        # a package the module is in is imported before it (``from . import sub``)
        edges[module] = {n for n in found if n in names and n != module and not module.startswith(n + ".")}
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``edges`` (its modules in order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circle():
    """No module of mbfmu imports, at module level, a module that imports it back
    (directly or through others)."""
    cycle = _cycle(_import_edges(module_level_only=True))
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_check_sees_a_circle():
    """The check itself finds a circle (it would otherwise pass vacuously)."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    edges = _import_edges(module_level_only=True)
    assert "mbfmu.cosim.fmi.fmu_unit" in edges["mbfmu.cosim.fmi.fmu_open"]


PACKAGES = sorted(_module_name(p.parent) for p in PACKAGE.glob("*/__init__.py"))


def _package_edges(layer: str, edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges of ``edges`` between modules of the package ``layer``."""
    return {m: {n for n in e if n.startswith(layer + ".")} for m, e in edges.items() if m.startswith(layer + ".")}


@pytest.mark.parametrize("layer", PACKAGES)
def test_no_import_circle_even_in_functions(layer):
    """Inside each package not even an import made inside a function closes a
    circle (the FMU classes do not pick their subclasses, :mod:`mbfmu.cosim.fmi.fmu_open`
    does; the linear analyses share their port names through
    :mod:`mbfmu.control.system_ports`)."""
    cycle = _cycle(_package_edges(layer, _import_edges(module_level_only=False)))
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_function_level_check_sees_every_package_and_lazy_imports():
    """The packages the check walks are the package's own (a renamed folder would drop one),
    and an import inside a function body is an edge of the graph it checks."""
    assert {"mbfmu.control", "mbfmu.cosim", "mbfmu.viewer", "mbfmu.studies", "mbfmu.fmu"} <= set(PACKAGES)
    lazy = _import_edges(module_level_only=False)
    top = _import_edges(module_level_only=True)
    # export builds native FMUs through native_export, imported inside a function only
    assert "mbfmu.control.native_export" in lazy["mbfmu.control.export"]
    assert "mbfmu.control.native_export" not in top["mbfmu.control.export"]
    assert _cycle(_package_edges("p", {"p.a": {"p.b", "q.x"}, "p.b": {"p.a"}, "q.x": {"p.a"}})) == ["p.a", "p.b", "p.a"]


def test_the_parts_of_cosim_have_their_own_rules():
    """Each part of mbfmu.cosim is judged by its own rule, which refuses the parts above it."""
    assert _rule_for("mbfmu.cosim.fmi.fmu_unit") == "mbfmu.cosim.fmi"
    allowed, _ = RULES["mbfmu.cosim.fmi"]
    assert not any("mbfmu.cosim.master.run".startswith(a) for a in allowed)
    allowed, _ = RULES["mbfmu.cosim.units"]
    assert not any("mbfmu.cosim.fmi.fmu_unit".startswith(a) for a in allowed)
