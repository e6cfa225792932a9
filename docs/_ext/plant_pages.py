"""Sphinx extension: one page per library plant, written at build start.

Each page holds the plant's description, its ports and parameters with units
and defaults (from the plant's own signal lists, so the page cannot drift
from the code), a still picture, a free-response figure and an HTML replay of
a short run, and a validation figure (``_ext/plant_validation.py``). Pages
go to ``docs/plants/`` (not committed).
"""
from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mbfmu.control.linearization import METHOD_MEANINGS, linearize  # noqa: E402
from mbfmu.plant.library import list_plants, load_plant  # noqa: E402
from mbfmu.plant.signals import Signal  # noqa: E402
from plant_validation import validation_figure  # noqa: E402

#: Length of the short free run shown on each page, s.
RUN_TIME = 2.0


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or " "


def _table(signals: tuple[Signal, ...], title: str, with_range: bool = False) -> str:
    if not signals:
        return f"*No {title.lower()}.*\n"
    head = ["name", "unit", "start / default", "description"] + (["range"] if with_range else [])
    rows = []
    for s in signals:
        row = [f"``{s.name}``", _cell(s.unit), _cell(f"{s.start:g}"), _cell(s.description)]
        if with_range:
            lo = "-inf" if s.min is None else f"{s.min:g}"
            hi = "inf" if s.max is None else f"{s.max:g}"
            left = "(" if s.min is None or s.min_open else "["  # an open end: the bound itself is refused
            right = ")" if s.max is None or s.max_open else "]"
            row.append(_cell(f"{left}{lo}, {hi}{right}" if (s.min is not None or s.max is not None) else ""))
        rows.append(row)
    out = [".. list-table::", "   :header-rows: 1", "   :widths: auto", ""]
    for row in [head] + rows:
        out.append("   * - " + row[0])
        out.extend(f"     - {c}" for c in row[1:])
    return "\n".join(out) + "\n"


#: constant inputs for the response shown on a plant's page, where the start
#: values would show nothing (the flexible arm moves in a horizontal plane:
#: with zero torque it stays at rest)
EXCITE = {"flexible_arm": {"tau[1]": 2.0, "tau[2]": -1.0}}


def _inputs(plant) -> np.ndarray:
    u = plant.default_inputs()
    for name, value in EXCITE.get(plant.name, {}).items():
        u[plant.input_index(name)] = value
    return u


def _inputs_text(plant) -> str:
    given = EXCITE.get(plant.name)
    if not given:
        return "the inputs at their start values"
    units = {s.name: s.unit for s in plant.inputs}
    return "constant inputs " + ", ".join(f"{k} = {v:g} {units[k]}" for k, v in given.items())


def _free_run(plant):
    step = plant.default_step
    n = max(1, int(round(RUN_TIME / step)))
    return plant.simulate(stop_time=n * step, step=step, u=_inputs(plant))


def _response_figure(plant, time, X, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    units: dict[str, list[int]] = {}
    for i, s in enumerate(plant.states):
        units.setdefault(s.unit, []).append(i)
    unit, idx = max(units.items(), key=lambda kv: len(kv[1]))
    for i in idx[:8]:
        ax.plot(time, X[:, i], label=plant.states[i].name)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(f"state [{unit}]")
    ax.set_title(f"{plant.name}: response from the initial state, {_inputs_text(plant)}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncols=4, loc="best")
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _recording(plant, time, X):
    from mbfmu.viewer import Recording

    dtype = [("time", float)] + [(s.name, float) for s in plant.states]
    arr = np.zeros(time.size, dtype=dtype)
    arr["time"] = time
    for i, s in enumerate(plant.states):
        arr[s.name] = X[:, i]
    return Recording(arr, plant)


def _linearization_text(plant) -> str:
    """How ``mbfmu linearize`` gets this plant's Jacobians, found by linearizing
    it at its initial state (so the page says what the code does)."""
    how = linearize(plant).linearization
    return (f"``mbfmu linearize {plant.name}`` (and :func:`mbfmu.control.linearize`) obtains A and B by "
            f"{how.method}: {METHOD_MEANINGS[how.method]}; C and D by {how.output_method}: "
            f"{METHOD_MEANINGS[how.output_method]}.")


def write_plant_page(name: str, out: Path, static: Path) -> None:
    """Write ``out/<name>.rst`` with its figures and replay."""
    from mbfmu.viewer import save_still, write_html

    plant = load_plant(name)
    time, X, _ = _free_run(plant)
    img = out / "_images"
    img.mkdir(parents=True, exist_ok=True)
    _response_figure(plant, time, X, img / f"{name}_response.png")
    validation = validation_figure(plant, img / f"{name}_validation.png")
    rec = _recording(plant, time, X)
    save_still(rec, img / f"{name}_still.png", t=0.0, size=(640, 480))
    replays = static / "replays"
    replays.mkdir(parents=True, exist_ok=True)
    write_html(rec, replays / f"{name}.html", max_frames=300, title=f"{name}: response", autoplay=True)

    doc = inspect.getdoc(inspect.getmodule(type(plant))) or ""
    title = f"``{name}``"
    text = f"""{title}
{'=' * len(title)}

{plant.description}

.. image:: _images/{name}_still.png
   :alt: {name} at t = 0 s
   :width: 480px

Defaults: communication step {plant.default_step:g} s, stop time {plant.default_stop_time:g} s.
Build its FMU with ``mbfmu build {name}``; list its ports with ``mbfmu list``.

{doc}

Inputs
------

{_table(plant.inputs, 'Inputs', with_range=True)}
Outputs
-------

{_table(plant.outputs, 'Outputs')}
Parameters
----------

Set with ``load_plant("{name}", name=value)``, ``mbfmu build {name} --param name=value`` or as FMU
start values.

{_table(plant.parameters, 'Parameters', with_range=True)}
States
------

{_table(plant.states, 'States')}
Linearization
-------------

{_linearization_text(plant)}

Response
--------

{RUN_TIME:g} s from the initial state with {_inputs_text(plant)}, computed by the
plant's own integrator while this page was built:

.. image:: _images/{name}_response.png
   :alt: response of {name}

.. raw:: html

   <iframe src="../_static/replays/{name}.html" width="100%" height="480" style="border:0"
           title="replay of {name}"></iframe>

The replay above is a standalone page: `open it on its own <../_static/replays/{name}.html>`__.

Validation
----------

Computed while this page was built:

.. image:: _images/{name}_validation.png
   :alt: validation of {name}

{validation}

The validation of each plant against published references and other implementations is in
the test suite (``tests/plants/``) and in :doc:`../concepts/engine`.
"""
    (out / f"{name}.rst").write_text(text)


def write_index(names: list[str], out: Path) -> None:
    lines = ["The plant library", "=================", "",
             "Every plant has named inputs, outputs and parameters in SI units, its own integrator, "
             "and geometry for the viewer. ``mbfmu list`` prints the same tables.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {n}" for n in names]
    (out / "index.rst").write_text("\n".join(lines) + "\n")


def generate(app, config=None) -> None:
    src = Path(app.srcdir)
    out = src / "plants"
    out.mkdir(exist_ok=True)
    names = list_plants()
    write_index(names, out)
    for name in names:
        write_plant_page(name, out, src / "_static")


def setup(app):
    app.connect("config-inited", generate)
    return {"parallel_read_safe": True, "version": "1"}
