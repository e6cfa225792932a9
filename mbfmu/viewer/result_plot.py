"""Plots of co-simulation results (:class:`mbfmu.cosim.Result`).

Lives in the viewer layer because the co-simulation layer does not import
matplotlib (``tests/test_architecture.py``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import unknown_name


def plot_result(result: Any, names: Sequence[str] | None = None, *, figure: Any = None) -> Any:
    """Plot a result's columns against time: ``result.plot(names, figure=figure)``, drawn here.

    Parameters
    ----------
    result : mbfmu.cosim.Result
        A run's result (any of the formats :func:`mbfmu.cosim.load_result` reads).
    names, figure
        As :meth:`mbfmu.cosim.Result.plot` takes them (the columns, the figure drawn into).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    cols = [n for n in result.names if n != "time"]
    if names is not None:
        chosen = []
        for n in names:
            match = [c for c in cols if c == n or c.startswith(n + ".")]
            if not match:
                raise unknown_name(f"no recorded column {n!r}", n, cols, "recorded")
            chosen += [c for c in match if c not in chosen]
        cols = chosen
    groups: dict[str, list[str]] = {}
    for c in cols:
        groups.setdefault(c.split(".", 1)[0], []).append(c)
    fig = figure if figure is not None else plt.figure(figsize=(8, 2.2 * max(len(groups), 1) + 0.6))
    axes = fig.subplots(max(len(groups), 1), 1, sharex=True, squeeze=False)[:, 0]
    units = result.units
    for ax, (unit, group) in zip(axes, groups.items()):
        for c in group:
            ax.plot(result.time, result.data[c], label=c.split(".", 1)[1] + (f" [{units[c]}]" if units[c] else ""))
        symbols = list(dict.fromkeys(units[c] or "-" for c in group))
        ax.set_ylabel(f"{unit} [{', '.join(symbols)}]")
        ax.legend(loc="best", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    return fig
