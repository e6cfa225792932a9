"""Tests share helpers from one place: helper modules and ``conftest.py`` files
next to them. No test module imports another test module, at module level or
inside a function (parsed from the source, so an import in a skipped test
counts too)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_test_modules(source: str) -> list[str]:
    """Names of test modules (``test_*``) that ``source`` imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module or ''}.{a.name}" for a in node.names]
        else:
            continue
        found += [n for n in names if any(part.startswith("test_") for part in n.split(".") if part)]
    return sorted(set(found))


def test_no_test_module_imports_another():
    offenders = {str(p.relative_to(TESTS)): names for p in sorted(TESTS.rglob("*.py"))
                 if (names := _imported_test_modules(p.read_text()))}
    assert not offenders, f"move these helpers to a helper module or conftest.py: {offenders}"


def test_the_check_sees_each_form_of_import():
    """The check itself finds a test-module import in each form (it would otherwise pass vacuously)."""
    assert _imported_test_modules("from .test_ssp import two_mass") == ["test_ssp", "test_ssp.two_mass"]
    assert _imported_test_modules("def f():\n    from native.test_hosts import x") == [
        "native.test_hosts", "native.test_hosts.x"]
    assert _imported_test_modules("import test_conservation") == ["test_conservation"]
    assert _imported_test_modules("from . import test_ssp") == [".test_ssp"]
    assert _imported_test_modules("from .ssp_text import with_units\nimport pytest") == []
