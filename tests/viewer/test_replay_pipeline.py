"""``mbfmu simulate plant.fmu -o run.csv`` then ``mbfmu view run.csv -o
run.html`` works for a user's plant without ``--model``: the plant comes from
the FMU named in the result's metadata, the poses from the recorded outputs
that fix the configuration; and the HTML page's world axes, grid scale,
trails box, per-unit signal axes and Jupyter view."""
from __future__ import annotations

import base64
import html as _html
import re

import numpy as np
import pytest
from PIL import Image
from headless_page import H, W, chromium, page_data
from viewer_toys import record

from mbfmu.cli import main
from mbfmu.viewer import Recording, write_html
from mbfmu.viewer.camera import Camera

USER_MODEL = '''"""A user's arm: the library's rigid arm, longer links."""
from mbfmu.models.rigid_arm import RigidArm


class LongArm(RigidArm):
    name = "long_arm"

    def __init__(self, link_length: float = 1.4, **kw):
        super().__init__(link_length=link_length, **kw)


PLANT = LongArm
'''


def frames(data, key, shape):
    return np.frombuffer(base64.b64decode(data[key]), "<f4").reshape(shape)


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """A user's model file built to an FMU and simulated from the command line (outputs only)."""
    d = tmp_path_factory.mktemp("user")
    (d / "long_arm.py").write_text(USER_MODEL)
    assert main(["build", str(d / "long_arm.py"), "-o", str(d / "fmus")]) == 0
    assert main(["simulate", str(d / "fmus" / "long_arm.fmu"), "--stop-time", "0.5", "--step", "0.01",
                 "--no-progress", "-o", str(d / "run.csv")]) == 0
    return d


def test_user_plant_result_replays_without_model_from_its_outputs(user_run, capsys):
    d = user_run
    head = (d / "run.csv").read_text()[:20000]
    assert "states.q[1]" not in head and "long_arm.q[1]" in head  # only the outputs were recorded
    (d / "long_arm.py").unlink()  # the model file is gone: the FMU holds the plant
    assert main(["view", str(d / "run.csv"), "-o", str(d / "run.html")]) == 0, capsys.readouterr().err
    data = page_data(d / "run.html")
    # the page's poses are the plant's forward kinematics of the recorded q (velocities do not matter)
    from mbfmu.cosim.recording.result import load_result
    res = load_result(d / "run.csv")
    import importlib.util
    (d / "again.py").write_text(USER_MODEL)
    spec = importlib.util.spec_from_file_location("again_long_arm", d / "again.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    plant = mod.LongArm()
    k = 30
    q = np.array([res[f"long_arm.q[{i}]"][k] for i in (1, 2, 3)])
    R, p = plant.poses(np.concatenate([q, np.zeros(3)]))
    ns = len(data["shapes"])
    P = frames(data, "p", (-1, ns, 3))
    for i, s in enumerate(plant.geometry):
        np.testing.assert_allclose(P[k, i], R[s.body] @ s.p + p[s.body], atol=1e-5)
    assert data["title"] == "long_arm"


def test_a_result_with_nothing_to_place_the_bodies_says_what_to_record(user_run, tmp_path, capsys):
    from mbfmu.cosim.recording.result import load_result
    res = load_result(user_run / "run.csv")
    keep = [n for n in res.names if not re.search(r"\.q\[", n)]
    res.data = res.data[keep]
    res.save(tmp_path / "partial.csv")
    import shutil
    shutil.copytree(user_run / "fmus", tmp_path / "fmus")
    assert main(["view", str(tmp_path / "partial.csv"), "-o", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err
    assert "q[1], q[2], q[3]" in err and "record" in err


def test_view_angle_with_a_negative_azimuth_is_accepted(user_run, tmp_path):
    out = tmp_path / "v.html"
    assert main(["view", str(user_run / "run.csv"), "-o", str(out), "--view", "-60,25"]) == 0
    cam = page_data(out)["camera"]
    assert cam["azimuth"] == pytest.approx(np.radians(-60)) and cam["elevation"] == pytest.approx(np.radians(25))
    assert main(["view", str(user_run / "run.csv"), "-o", str(out), "--view", "-30.5,-10"]) == 0
    assert page_data(out)["camera"]["elevation"] == pytest.approx(np.radians(-10))


def _shot(path, fragment):
    shot = path.with_suffix(f".{abs(hash(fragment))}.png")
    out = chromium(f"--screenshot={shot}", f"--window-size={W},{H}", path.as_uri() + fragment)
    assert shot.is_file(), out.stderr[-2000:]
    return np.asarray(Image.open(shot).convert("RGB")).astype(int)


def _hue(img, rgb, tol=0.97):
    """Mask of pixels of the hue ``rgb`` (lit shades of it)."""
    ref = np.asarray(rgb, float) / np.linalg.norm(rgb)
    n = np.linalg.norm(img, axis=2) + 1e-9
    return ((img @ ref) / n > tol) & (img.max(2) - img.min(2) > 60)


def test_world_axes_are_drawn_at_the_origin_with_a_stated_grid_scale(tmp_path, pendulum_rec):
    path = write_html(pendulum_rec, tmp_path / "axes.html", autoplay=False)
    data = page_data(path)
    g = data["grid"]
    assert g["label"] == f"{g['step']:g} m" and g["step"] in (0.1, 0.2, 0.5, 1.0, 2.0)
    assert g["n"] * g["step"] == pytest.approx(2 * g["half"])
    cam = Camera(**{k: (tuple(v) if k == "target" else v) for k, v in data["camera"].items()})
    img = _shot(path, "#t=0")
    for axis, rgb in ((0, (0.839, 0.153, 0.157)), (1, (0.173, 0.627, 0.173))):
        tip = np.zeros(3)
        tip[axis] = 0.9 * g["step"]
        u, v, _ = cam.project(tip, W, H)
        c, r = int(round(u)), int(round(v))
        patch = img[r - 6:r + 7, c - 6:c + 7]
        assert _hue(patch, rgb).any(), f"axis {axis} not drawn near pixel {(c, r)}"


def test_trails_box_traces_the_tips_without_an_export_flag(tmp_path, pendulum):
    from viewer_toys import pendulum_run
    t, X = pendulum_run()
    rec = Recording(record(pendulum, t, X), pendulum)  # no trails asked for
    path = write_html(rec, tmp_path / "trails.html", autoplay=False)
    data = page_data(path)
    assert data["ntrails"] >= 1 and data["trails_on"] is False
    red = (0.839, 0.153, 0.157)
    off, on = _shot(path, "#t=1.9"), _shot(path, "#t=1.9&trails=1")
    assert _hue(on, red).sum() > 30 + _hue(off, red).sum()


def test_signal_overlay_has_one_axis_per_unit(tmp_path, pendulum_rec):
    path = write_html(pendulum_rec, tmp_path / "sig.html", signals=["q[1]", "q[2]", "v[1]"], autoplay=False)
    data = page_data(path)
    assert [(s["name"], s["unit"]) for s in data["signals"]] == [("q[1]", "rad"), ("q[2]", "rad"),
                                                                 ("v[1]", "rad/s")]
    out = chromium("--dump-dom", path.as_uri() + "#t=1")
    canvas = re.search(r'<canvas id="mbfmu-plot"[^>]*>', out.stdout).group(0)
    assert 'height="262"' in canvas  # two panels of 120 px and the time axis


def test_recording_shows_inline_in_jupyter(tmp_path, pendulum_rec):
    frag = pendulum_rec._repr_html_()
    assert frag.startswith("<iframe srcdoc=")
    inner = _html.unescape(re.search(r'srcdoc="(.*?)"', frag, re.S).group(1))
    assert 'id="mbfmu-data"' in inner and "<script>" in inner
    page = tmp_path / "notebook.html"
    page.write_text(f"<!DOCTYPE html><html><body style='margin:0'>{frag}</body></html>")
    from matplotlib.colors import to_rgb
    colours = [s.color for s in pendulum_rec.shapes]
    drawn = False
    for _ in range(3):  # a headless shot of a page inside an iframe sometimes lands before its first frame
        box = _shot(page, "")[:470, :W]
        drawn = any(_hue(box, to_rgb(c)).sum() > 20 for c in colours)
        if drawn:
            break
    assert drawn, "the replay is not drawn inside the iframe"
