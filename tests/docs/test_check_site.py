"""``docs/check_site.py`` catches a tutorial page that lost its figures (tutorial 5
showed ``<Figure size 1000x420 with 4 Axes>`` where its plots should be)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
import check_site  # noqa: E402

SCRIPT = '''"""
A tutorial
==========
"""
# %%
# Text only, and a figure in words: plt.subplots() is mentioned, not called.
import numpy as np
x = np.linspace(0, 1)

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot(x, x)

# %%
study.plot()
'''
IMAGE = '<img src="../_images/a.png" alt="fig" class = "sphx-glr-single-img"/>'


def _site(tmp_path, body: str) -> tuple[Path, Path]:
    tutorials, site = tmp_path / "tutorials", tmp_path / "site"
    tutorials.mkdir()
    (site / "auto_tutorials").mkdir(parents=True)
    (tutorials / "tutorial_9_x.py").write_text(SCRIPT)
    (site / "auto_tutorials" / "tutorial_9_x.html").write_text(f"<html><body>{body}</body></html>")
    return site, tutorials


def test_the_scripts_figure_cells_are_counted():
    assert check_site.figure_cells(ROOT / "docs" / "tutorials" / "tutorial_5_study.py") >= 2


def test_a_page_with_all_its_figures_passes(tmp_path):
    assert check_site.missing_figures(*_site(tmp_path, IMAGE * 2)) == []


def test_a_page_missing_a_figure_or_printing_one_fails(tmp_path):
    problems = check_site.missing_figures(*_site(tmp_path, IMAGE + "<pre>&lt;Figure size 1000x420 with 4 Axes&gt;</pre>"))
    assert any("1 figures shown, 2 code cells draw one" in p for p in problems), problems
    assert any("prints a figure object" in p for p in problems), problems


def test_a_page_echoing_a_return_value_fails(tmp_path):
    body = IMAGE * 2 + '<div class="sphx-glr-script-out"><pre>Text(0.5, 1.0, &#39;title&#39;)</pre></div>'
    problems = check_site.missing_figures(*_site(tmp_path, body))
    assert any("prints the value of its last expression" in p for p in problems), problems
