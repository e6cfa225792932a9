"""Sphinx extension: the API reference pages, written from each package's ``__all__``.

The list of documented names is the packages' own public list, so a name
added to ``__all__`` appears in the reference without editing the docs, and
``tests/test_docstrings.py`` walks the same list (:data:`PACKAGES`).
"""
from __future__ import annotations

import importlib
from pathlib import Path

#: Public packages and what each is for (the order of the reference).
PACKAGES = {
    "mbfmu": "Top-level shortcuts: the plant contract, the library, linearization.",
    "mbfmu.plant": "The plant contract: signals, plants on the engine, URDF robots, the plant library.",
    "mbfmu.dynamics": "The multibody engine: model building, joints, the recursive algorithms.",
    "mbfmu.dynamics.flexible": "Flexible beams: finite segments, assumed modes in a floating frame, chained sub-beams.",
    "mbfmu.fmu": "FMU export of plants.",
    "mbfmu.cosim": "The co-simulation master: units, systems, algorithms, SSP, results.",
    "mbfmu.control": "Linearization and controllers that speak python-control.",
    "mbfmu.viewer": "Replays of recorded runs: matplotlib, video, standalone HTML.",
    "mbfmu.studies": "Parameter sweeps and Monte Carlo studies.",
    "mbfmu.untrusted": "The limits on what files from others can make mbfmu do (see the Security model).",
}


def public_names(package: str) -> list[str]:
    """The names a package exports (its ``__all__``), sorted."""
    mod = importlib.import_module(package)
    return sorted(getattr(mod, "__all__", []))


def available_packages() -> list[str]:
    """The entries of :data:`PACKAGES` that this installation has."""
    out = []
    for name in PACKAGES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        out.append(name)
    return out


def _page(package: str, documented: dict[int, str] | None = None) -> str:
    """The reference page of ``package``; a name whose object an earlier page
    documents (``documented``: id -> full name, updated) is only pointed to."""
    documented = {} if documented is None else documented
    title = f"``{package}``"
    lines = [title, "=" * len(title), "", PACKAGES[package], "",
             f".. automodule:: {package}", "   :no-members:", "   :no-index:", "",
             f".. currentmodule:: {package}", "",
             ".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
    mod = importlib.import_module(package)
    also = []
    for name in public_names(package):
        obj = getattr(mod, name)
        if isinstance(obj, type(mod)):
            continue  # submodules are listed by their own page or module docstring
        if id(obj) in documented:
            also.append(f":obj:`{name} <{documented[id(obj)]}>`")
            continue
        documented[id(obj)] = f"{package}.{name}"
        lines.append(f"   {name}")
    if also:
        lines += ["", f"Also here, documented above: {', '.join(also)}."]
    return "\n".join(lines) + "\n"


def _models_page() -> str:
    from mbfmu.plant.library import list_plants

    lines = ["``mbfmu.models``", "================", "",
             "The plant library: one module per plant. See :doc:`../plants/index` for the ports and "
             "parameters of each.", "",
             ".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
    lines += [f"   mbfmu.models.{name}" for name in list_plants()]
    return "\n".join(lines) + "\n"


def generate(app, config=None) -> None:
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    pages = []
    documented: dict[int, str] = {}
    for package in available_packages():
        stem = package.replace(".", "_")
        (out / f"{stem}.rst").write_text(_page(package, documented))
        pages.append(stem)
    (out / "mbfmu_models.rst").write_text(_models_page())
    pages.append("mbfmu_models")
    index = ["API reference", "=============", "",
             "Generated from the docstrings (numpydoc). Units are SI and stated with each parameter; "
             "spatial vectors are [angular; linear] and quaternions scalar first throughout.", "",
             ".. toctree::", "   :maxdepth: 1", ""] + [f"   {p}" for p in pages]
    (out / "index.rst").write_text("\n".join(index) + "\n")


def setup(app):
    app.connect("config-inited", generate)
    return {"parallel_read_safe": True, "version": "1"}
