"""What users read about the library's plants (descriptions, port
descriptions, docstrings, ``mbfmu list``, the FMUs' modelDescription.xml)
describes each plant by what it is and its published source, never by the
project's internal document names ("seed 000"); nor does any comment,
docstring or document of the repository."""
from __future__ import annotations

import inspect
import re
import zipfile
from pathlib import Path

import pytest

from mbfmu.cli import main
from mbfmu.fmu import build_fmu
from mbfmu.plant.library import list_plants, load_plant

REPO = Path(__file__).resolve().parents[1]
INTERNAL_NAME = re.compile(r"(?<![a-z])seeds?[\s_-]*0\d\d", re.IGNORECASE)
PLANTS = list_plants()


def _texts(plant) -> dict[str, str]:
    out = {"description": plant.description or "", "class docstring": type(plant).__doc__ or "",
           "module docstring": inspect.getmodule(type(plant)).__doc__ or ""}
    for group in ("inputs", "outputs", "parameters", "states"):
        for sig in getattr(plant, group, ()):
            out[f"{group} {sig.name}"] = sig.description
    return out


def test_the_check_recognises_internal_names():
    assert all(INTERNAL_NAME.search(t) for t in ("Seed 001's system", "seeds 000 and 002", "(seed 003)",
                                                 "the seed-003 move", "test_seed_003_arm", '"seed003"'))
    assert not INTERNAL_NAME.search("reproducible from (seed, k)")


@pytest.mark.parametrize("name", PLANTS)
def test_plant_texts_name_no_internal_documents(name):
    plant = load_plant(name)
    assert plant.description and len(plant.description) > 40
    bad = {k: INTERNAL_NAME.search(v).group() for k, v in _texts(plant).items() if INTERNAL_NAME.search(v)}
    assert not bad, f"{name}: {bad}"


def test_sources_are_cited_where_published():
    assert "Shimanovsky and Ivanov" in load_plant("canonical_2body").description
    assert "Wang et al." in load_plant("rigid_arm").description


def test_plant_list_names_no_internal_documents(capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in PLANTS) and not INTERNAL_NAME.search(text)


def test_fmu_model_descriptions_name_no_internal_documents(tmp_path):
    for name in PLANTS:
        fmu = build_fmu(name, tmp_path)
        xml = zipfile.ZipFile(fmu).read("modelDescription.xml").decode()
        assert 'description="' in xml
        assert not INTERNAL_NAME.search(xml), f"{name}: {INTERNAL_NAME.search(xml).group()}"


def test_no_source_or_document_of_the_repository_names_internal_documents():
    """Comments, docstrings and documents cite published sources (a reader has no "seed 004")."""
    this = Path(__file__).resolve()
    bad = []
    for folder in ("mbfmu", "models", "tests", "examples", "benchmarks", "docs"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix not in (".py", ".c", ".h", ".md", ".rst", ".txt", ".toml", ".js") or path == this \
                    or "_build" in path.parts:
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if INTERNAL_NAME.search(line):
                    bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    for name in ("README.md", "pyproject.toml", "setup.py", "Makefile"):
        bad += [f"{name}:{n}" for n, line in enumerate((REPO / name).read_text().splitlines(), 1)
                if INTERNAL_NAME.search(line)]
    assert not bad, "\n".join(bad[:20])
