"""The standalone HTML replay in headless Chromium: loads offline without
errors, opens at the linked time, and draws the bodies where the camera
projects their forward-kinematics positions."""
from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image
from viewer_toys import DoublePendulum, SpinningBox, record, rot_z
from headless_page import H, W, chromium, page_data

from mbfmu.viewer import Recording, write_html
from mbfmu.viewer.camera import Camera



def dom(path, fragment=""):
    out = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", path.as_uri() + fragment)
    status = re.search(r'<div id="mbfmu-status"([^>]*)>', out.stdout)
    errors = re.search(r'<pre id="mbfmu-errors"[^>]*>(.*?)</pre>', out.stdout, re.S)
    assert status and errors is not None, f"page did not render:\n{out.stdout[:500]}\n{out.stderr[-2000:]}"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', status.group(1)))
    console = [line for line in out.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    return attrs, errors.group(1).strip(), console


@pytest.mark.parametrize("which", ["pendulum_rec", "arm_rec"])
def test_html_replay_loads_offline_without_errors_at_the_linked_time(tmp_path, request, which):
    rec = request.getfixturevalue(which)
    path = write_html(rec, tmp_path / "run.html", signals=[rec.signal_names()[0]])
    attrs, errors, console = dom(path, "#t=1.5")
    assert errors == "" and console == []
    assert attrs["ready"] == "1"
    assert float(attrs["t"]) == pytest.approx(1.5)


def test_html_without_a_link_opens_at_its_start_time(tmp_path, pendulum_rec):
    path = write_html(pendulum_rec, tmp_path / "start.html", start=0.25, autoplay=False)
    attrs, _, _ = dom(path)  # without a link the page opens at its start time
    assert float(attrs["t"]) == pytest.approx(0.25)


def test_error_marker_reports_a_failing_page(tmp_path, pendulum_rec):
    """The check above can fail: a page whose script throws is reported."""
    path = write_html(pendulum_rec, tmp_path / "bad.html")
    path.write_text(path.read_text().replace('"use strict";', '"use strict"; throw new Error("boom42");', 1))
    attrs, errors, _ = dom(path, "#t=1.5")
    assert "boom42" in errors and attrs.get("ready") != "1"


def test_html_is_self_contained(tmp_path, pendulum_rec):
    text = write_html(pendulum_rec, tmp_path / "run.html").read_text()
    assert not re.search(r"https?://|//cdn|\bsrc\s*=|<link\b|import\s*\(|fetch\(|XMLHttpRequest", text)


def _colour_ok(px, rgb):
    """The pixel has the shape's hue (lit shades of it), not grey or white."""
    px = np.asarray(px[:3], dtype=float)
    ref = np.asarray(rgb, dtype=float) * 255
    if px.max() - px.min() < 40:
        return False
    a, b = px / np.linalg.norm(px), ref / np.linalg.norm(ref)
    return float(a @ b) > 0.97


def test_screenshot_shows_bodies_where_the_projection_says(tmp_path, pendulum_rec):
    path = write_html(pendulum_rec, tmp_path / "run.html")
    data = page_data(path)
    cam = Camera(**{k: (tuple(v) if k == "target" else v) for k, v in data["camera"].items()})
    shot = tmp_path / "shot.png"
    t, other = 1.5, 0.5
    out = chromium(f"--screenshot={shot}", f"--window-size={W},{H}", path.as_uri() + f"#t={t}")
    assert shot.is_file(), out.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape == (H, W, 3)
    _, p_now, _, _ = pendulum_rec.scene_at(t)
    _, p_then, _, _ = pendulum_rec.scene_at(other)
    colours = {i: s["rgb"] for i, s in enumerate(data["shapes"])}
    u, v, _ = cam.project(p_now, W, H)
    for i in (1, 3):  # the sphere (mass 1) and the box (mass 2)
        c, r = int(round(u[i])), int(round(v[i]))
        patch = img[r - 1:r + 2, c - 1:c + 2].reshape(-1, 3)
        assert any(_colour_ok(px, colours[i]) for px in patch), \
            f"shape {i} not drawn at pixel {(c, r)}: {patch.tolist()}"
    # where the sphere was at t = 0.5 s there is no sphere now
    u2, v2, _ = cam.project(p_then, W, H)
    c2, r2 = int(round(u2[1])), int(round(v2[1]))
    assert np.hypot(c2 - u[1], r2 - v[1]) > 25
    assert not _colour_ok(img[r2, c2], colours[1])
    # most of the picture is background: the scene is not smeared over it
    assert (np.abs(img.astype(int) - 255).sum(axis=2) < 10).mean() > 0.5


def test_html_of_a_long_run_stores_only_the_decimated_frames(tmp_path):
    p = DoublePendulum()
    sizes = []
    for n in (2_000, 200_000):
        t = np.linspace(0, 20, n)
        X = np.stack([np.cos(t), np.sin(t), -np.sin(t), np.cos(t)], 1)
        path = write_html(Recording(record(p, t, X), p), tmp_path / f"r{n}.html", max_frames=500)
        sizes.append(path.stat().st_size)
        data = page_data(path)
        assert len(np.frombuffer(__import__("base64").b64decode(data["time"]), "<f8")) == 500
    assert sizes[1] < 1.05 * sizes[0]


def test_signal_panel_data_are_the_recorded_values_at_the_frames(pendulum_rec):
    import base64

    from mbfmu.viewer.html import scene_data
    data = scene_data(pendulum_rec, max_frames=50, signals=["q[2]"])
    times = np.frombuffer(base64.b64decode(data["time"]), "<f8")
    at = np.frombuffer(base64.b64decode(data["signals"][0]["at_frames"]), "<f8")
    np.testing.assert_allclose(at, [pendulum_rec.state_at(t)[1] for t in times], atol=1e-12)
    assert data["signals"][0]["name"] == "q[2]"


def _colour_mask(img, rgb):
    """:func:`_colour_ok` over a whole image."""
    px = img.astype(float)
    ref = np.asarray(rgb, dtype=float) / np.linalg.norm(rgb)
    cos = (px @ ref) / np.maximum(np.linalg.norm(px, axis=2), 1e-9)
    return (px.max(axis=2) - px.min(axis=2) >= 40) & (cos > 0.97)


def test_html_slerps_a_fast_spin_between_stored_frames(tmp_path):
    """Two stored frames 90 deg apart: at mid-interval the box is drawn at
    45 deg and at full size (an element-wise blend of the two matrices would
    draw it at 0.71 of its size, half its area)."""
    from matplotlib.path import Path as Polygon

    plant = SpinningBox()
    rec = Recording(record(plant, np.array([0.0, 1.0]), np.array([[0.0], [np.pi / 2]])), plant)
    cam = Camera(target=(0.0, 0.0, 0.0), distance=3.0, azimuth=-np.pi / 2, elevation=np.pi / 2)  # looking down z
    path = write_html(rec, tmp_path / "spin.html", autoplay=False, camera=cam)
    rgb = page_data(path)["shapes"][0]["rgb"]
    lx, ly, lz = plant.geometry[0].size
    corners = np.array([[sx * lx / 2, sy * ly / 2, lz / 2] for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1))])
    rows, cols = np.mgrid[0:H, 0:W]
    centres = np.stack([cols.ravel() + 0.5, rows.ravel() + 0.5], 1)
    drawn, expected = {}, {}
    for t in (0.0, 0.5):
        shot = tmp_path / f"spin{t}.png"
        out = chromium(f"--screenshot={shot}", f"--window-size={W},{H}", path.as_uri() + f"#t={t}")
        assert shot.is_file(), out.stderr[-2000:]
        drawn[t] = _colour_mask(np.asarray(Image.open(shot).convert("RGB")), rgb)
        u, v, _ = cam.project(corners @ rot_z(np.pi / 2 * t).T, W, H)  # the exact pose at t
        expected[t] = Polygon(np.stack([u, v], 1)).contains_points(centres).reshape(H, W)
    n0, n_mid = int(drawn[0.0].sum()), int(drawn[0.5].sum())
    assert n0 == pytest.approx(expected[0.0].sum(), rel=0.05)  # the stored frame is drawn where expected
    assert n_mid == pytest.approx(n0, rel=0.03), f"extent at mid-interval {n_mid} px, at a stored frame {n0} px"
    for t in (0.0, 0.5):  # and where the rotated corners project
        iou = (drawn[t] & expected[t]).sum() / (drawn[t] | expected[t]).sum()
        assert iou > 0.9, f"t = {t}: drawn box overlaps the exact projected box by {iou:.2f} only"
