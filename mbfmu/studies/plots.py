"""The pictures of a study: metric vs parameter, heat map, histograms and scatter matrix, time histories.

:func:`plot_study` picks by the study's shape: a 1-D grid gives each metric
against the parameter; a 2-D grid, a heat map per metric; Monte Carlo (or any
other run list), histograms of the metrics and a scatter matrix of the
sampled parameters against the metrics. :func:`plot_histories` draws the
family of time histories of one variable, one line per run, coloured by a
parameter. Failed runs are left out (a gap, or a blank cell).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError


def _figure(nrows: int, ncols: int, size: tuple[float, float]):
    """A pyplot figure, as :meth:`mbfmu.cosim.Result.plot` makes (so ``plt.show()``
    and notebooks show it; close it with ``plt.close(fig)``)."""
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=size)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _finish(fig, path: str | Path | None):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _metrics(study, metrics: Sequence[str] | None) -> list[str]:
    names = list(metrics) if metrics is not None else list(study.metrics)
    bad = [m for m in names if m not in study.metrics]
    if bad:
        raise InputError(f"no metric {', '.join(map(repr, bad))} in the study; it has: {', '.join(study.metrics) or 'none'}")
    if not names:
        raise InputError("the study has no metrics to plot (give metrics=..., or plot_histories)")
    return names


def plot_study(study, path: str | Path | None = None, metrics: Sequence[str] | None = None):
    """The usual pictures of ``study`` (see the module docstring); saved to ``path`` when given.

    Parameters
    ----------
    study : StudyResult
        A finished study (:func:`~mbfmu.studies.sweep`).
    path : str or Path, optional
        Save the figure there (format by suffix).
    metrics : sequence of str, optional
        Metric columns to draw (default: all of them).

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = _metrics(study, metrics)
    grid = {p: v for p, v in study.grid.items() if len(v) > 1}
    if len(grid) == 1:
        return _finish(_line(study, next(iter(grid)), names), path)
    if len(grid) == 2:
        return _finish(_heatmap(study, *grid, names), path)
    return _finish(_monte_carlo(study, names), path)


def _ok_values(study, column: str) -> np.ndarray:
    """``column`` of every row as floats, NaN where the run did not succeed."""
    return np.array([r.get(column) if r["status"] == "ok" else np.nan for r in study.rows], dtype=float)


def _line(study, param: str, names: list[str]):
    fig, axes = _figure(len(names), 1, (6.0, 2.6 * len(names)))
    x = np.array([r[param] for r in study.rows], dtype=float)
    order = np.argsort(x, kind="stable")
    for ax, m in zip(axes[:, 0], names):
        ax.plot(x[order], _ok_values(study, m)[order], "o-")
        ax.set_ylabel(study.label(m))
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel(study.label(param))
    return fig


def _heatmap(study, p1: str, p2: str, names: list[str]):
    v1, v2 = study.grid[p1], study.grid[p2]
    fig, axes = _figure(1, len(names), (5.0 * len(names), 4.2))
    for ax, m in zip(axes[0], names):
        z = np.full((len(v2), len(v1)), np.nan)
        vals = _ok_values(study, m)
        for r, val in zip(study.rows, vals):
            z[v2.index(r[p2]), v1.index(r[p1])] = val
        im = ax.imshow(z, origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(v1)), [f"{v:g}" for v in v1], rotation=45)
        ax.set_yticks(range(len(v2)), [f"{v:g}" for v in v2])
        ax.set_xlabel(study.label(p1))
        ax.set_ylabel(study.label(p2))
        ax.set_title(study.label(m))
        fig.colorbar(im, ax=ax)
    return fig


def _monte_carlo(study, names: list[str]):
    """Histograms of the metrics (top row) and the scatter matrix of parameters and metrics."""
    cols = [*(study.sampled or study.parameters), *names]
    n = len(cols)
    fig, axes = _figure(n, n, (2.2 * n + 1, 2.2 * n + 1))
    data = {c: _ok_values(study, c) for c in cols}
    for i, ci in enumerate(cols):
        for j, cj in enumerate(cols):
            ax = axes[i, j]
            if i == j:
                x = data[ci][np.isfinite(data[ci])]
                ax.hist(x, bins=max(5, int(np.sqrt(len(x)))) if len(x) else 5, color="#4c72b0")
            else:
                ax.plot(data[cj], data[ci], ".", ms=3, color="#4c72b0")
            if i == n - 1:
                ax.set_xlabel(study.label(cj))
            if j == 0:
                ax.set_ylabel(study.label(ci))
    return fig


def plot_histories(study, variable: str, path: str | Path | None = None, color_by: str | None = None,
                   max_runs: int = 200):
    """The family of time histories of ``variable`` (one line per successful run).

    Parameters
    ----------
    study : StudyResult
        A finished study (:func:`~mbfmu.studies.sweep`).
    variable : str
        A recorded column (``"plant.y"``, or ``"y"`` when unique).
    path : str or Path, optional
        Save the figure there (format by suffix).
    color_by : str, optional
        Parameter colouring the lines (default: the first parameter).
    max_runs : int
        Draw at most this many runs (the first ones).
    """
    from matplotlib import cm, colormaps, colors
    from .metrics import column

    ok = [i for i, r in enumerate(study.rows) if r["status"] == "ok"][:max_runs]
    if not ok:
        raise InputError("no successful run to plot")
    key = color_by or (study.parameters[0] if study.parameters else None)
    vals = np.array([float(study.rows[i][key]) for i in ok]) if key else np.zeros(len(ok))
    norm = colors.Normalize(vals.min(), vals.max() if vals.max() > vals.min() else vals.min() + 1)
    fig, axes = _figure(1, 1, (7.0, 4.0))
    ax = axes[0, 0]
    for i, v in zip(ok, vals):
        res = study.result(i)
        ax.plot(res.time, column(res, variable), color=colormaps["viridis"](norm(v)), lw=1)
    first = study.result(ok[0])
    col = variable if variable in first.names else next(
        (n for n in first.names if n.split(".", 1)[-1] == variable), variable)
    unit = first.units.get(col, "")
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"{variable} [{unit}]" if unit else variable)
    ax.grid(True, alpha=0.3)
    if key:
        fig.colorbar(cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, label=study.label(key))
    return _finish(fig, path)
