"""Sphinx configuration of the mbfmu documentation (``make docs``).

The build runs the tutorials (sphinx-gallery), writes one page per library
plant (``_ext/plant_pages.py``) and the API reference from the docstrings
(autosummary + numpydoc). ``-W`` turns every warning into an error.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import mbfmu  # noqa: E402

project = "mbfmu"
author = "the mbfmu developers"
copyright = "2026, the mbfmu developers"
release = version = mbfmu.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "plant_pages",
    "api_pages",
]

exclude_patterns = ["_build", "tutorials", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_theme = "pydata_sphinx_theme"
html_title = f"mbfmu {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_context = {"default_mode": "light"}
html_last_updated_fmt = None


autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": False}
autodoc_typehints = "none"       # numpydoc documents the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

sphinx_gallery_conf = {
    "examples_dirs": ["tutorials"],
    "gallery_dirs": ["auto_tutorials"],
    "filename_pattern": r"/tutorial_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "line_numbers": False,
    "reference_url": {"mbfmu": None},
    "show_signature": False,
}

suppress_warnings = ["config.cache"]


def _publish_replays(app, exception) -> None:
    """The tutorials write their HTML replays next to themselves (the working
    folder sphinx-gallery runs them in, as a user's would be); the site serves
    them from ``_static/replays``, where the tutorial pages' frames point."""
    if exception is not None or app.builder.format != "html":
        return
    import shutil
    dest = Path(app.outdir) / "_static" / "replays"
    dest.mkdir(parents=True, exist_ok=True)
    for page in (HERE / "tutorials").glob("*.html"):
        shutil.copy2(page, dest / page.name)


def setup(app):
    app.connect("build-finished", _publish_replays)
