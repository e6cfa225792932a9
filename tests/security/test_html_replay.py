"""Issue 26.16: the HTML replay holds any name, and its options are checked.

A variable named ``<!--<script>`` left a blank page (the HTML parser entered
its escaped script states and the data element never ended); ``--speed nan``
wrote a page that could not load; ``--speed 0`` and ``--max-frames 0`` were
accepted. The data is now escaped for the script data state (no ``<`` at
all inside it) and the options are refused by name.
"""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest
from tooling import need_tool

from mbfmu import load_plant
from mbfmu.cli import main
from mbfmu.cosim import Result
from mbfmu.viewer import Recording, write_html

NASTY = ["x<!--<script>", "</script><script>document.title='pwned'</script>", "a&amp;<b>", "<!--", "y\u2028z"]


def _recording():
    plant = load_plant("rigid_arm")
    t = np.linspace(0.0, 1.0, 21)
    data = np.zeros(t.size, dtype=[("time", float)] + [(s.name, float) for s in plant.states]
                    + [(n, float) for n in NASTY])
    data["time"] = t
    data[plant.states[0].name] = np.sin(t)
    for k, n in enumerate(NASTY):
        data[n] = k * t
    return Recording(data, plant), data


def _data_element(text: str) -> str:
    start = text.index('<script type="application/json" id="mbfmu-data">') + len(
        '<script type="application/json" id="mbfmu-data">')
    return text[start:text.index("</script>", start)]


def test_names_that_would_end_the_script_element_are_escaped(tmp_path):
    rec, _ = _recording()
    path = write_html(rec, tmp_path / "r.html", signals=NASTY, title="<!--<script> title")
    text = path.read_text()
    body = _data_element(text)
    assert "<" not in body  # the script data state cannot be left or escaped without a '<'
    data = json.loads(body)
    assert [s["name"] for s in data["signals"]] == NASTY and data["title"] == "<!--<script> title"
    assert "<title>&lt;!--&lt;script&gt; title</title>" in text


def test_the_page_with_those_names_loads_in_a_browser(tmp_path):
    exe = need_tool("chromium")
    rec, _ = _recording()
    path = write_html(rec, tmp_path / "r.html", signals=NASTY)
    out = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--virtual-time-budget=3000", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120)
    status = re.search(r'<div id="mbfmu-status"([^>]*)>', out.stdout)
    errors = re.search(r'<pre id="mbfmu-errors"[^>]*>(.*?)</pre>', out.stdout, re.S)
    assert status and 'data-ready="1"' in status.group(1), out.stdout[:1000]
    assert errors is not None and errors.group(1).strip() == ""
    assert "<title>pwned</title>" not in out.stdout  # the injected script did not run


@pytest.mark.parametrize("option, value, message", [
    ("--speed", "nan", "--speed nan must be a positive finite number"),
    ("--speed", "0", "--speed 0.0 must be a positive finite number"),
    ("--speed", "inf", "--speed inf must be a positive finite number"),
    ("--max-frames", "0", "--max-frames 0 must be at least 2"),
    ("--max-frames", "2.5", "--max-frames 2.5 must be a whole number of frames"),
    ("--fps", "0", "--fps 0.0 must be a positive finite number"),
    ("--time", "nan", "--time nan must be a finite number of seconds"),
    ("--size", "8x8", "width and height must be at least 16 px"),
])
def test_view_options_are_refused_by_name(tmp_path, capsys, option, value, message):
    _, data = _recording()
    path = Result(data, meta={"plant": "rigid_arm"}).save(tmp_path / "r.csv")
    with pytest.raises(SystemExit) as e:
        main(["view", str(path), "-o", str(tmp_path / "r.html"), option, value])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert message in err.strip().splitlines()[-1], err  # argparse prints the usage first
    assert not (tmp_path / "r.html").exists()


def test_the_api_refuses_the_same_options(tmp_path):
    rec, _ = _recording()
    for kw, message in ((dict(speed=float("nan")), "speed nan"), (dict(max_frames=0), "max_frames 0"),
                        (dict(start=float("inf")), "start inf")):
        with pytest.raises(ValueError, match=message):
            write_html(rec, tmp_path / "r.html", **kw)
    assert not (tmp_path / "r.html").exists()
