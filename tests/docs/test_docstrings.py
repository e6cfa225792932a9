"""Every public function and class documents itself: a one-line summary and
its parameters (numpydoc), walked over the same public names that the API
reference lists (``docs/_ext/api_pages.py``)."""
from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import api_pages  # noqa: E402

SKIP_PARAMS = {"self", "cls", "args", "kwargs"}


def public_objects():
    for package in api_pages.available_packages():
        mod = importlib.import_module(package)
        for name in api_pages.public_names(package):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            yield f"{package}.{name}", obj


def documented_parameters(obj) -> tuple[set[str], set[str]]:
    """(documented names, signature names) of a function or a class's constructor.

    A class may document its constructor's arguments as ``Attributes`` (a
    dataclass's fields are both)."""
    doc = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
    documented = set()
    sections = ("Parameters", "Other Parameters") + (("Attributes",) if inspect.isclass(obj) else ())
    for section in sections:
        for p in doc[section]:
            for name in p.name.replace("*", "").split(","):
                documented.add(name.strip())
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return documented, set()
    wanted = {n for n, p in sig.parameters.items()
              if n not in SKIP_PARAMS and not n.startswith("_") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    if inspect.isclass(obj) and target is object.__init__:
        wanted = set()
    return documented, wanted


OBJECTS = sorted(public_objects(), key=lambda kv: kv[0])

def test_the_public_api_is_not_empty():
    assert len(OBJECTS) > 50


@pytest.mark.parametrize("qualname,obj", OBJECTS, ids=[q for q, _ in OBJECTS])
def test_public_name_has_a_summary_and_documents_its_parameters(qualname, obj):
    doc = inspect.getdoc(obj)
    assert doc and doc.strip(), f"{qualname} has no docstring"
    summary = doc.strip().splitlines()[0].strip()
    assert len(summary) > 10, f"{qualname}: the summary line {summary!r} says too little"
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        return
    documented, wanted = documented_parameters(obj)
    missing = sorted(wanted - documented)
    assert not missing, f"{qualname}: parameters not documented: {', '.join(missing)}"
