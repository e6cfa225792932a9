"""Stills, GIF and MP4 exports: the right kind of file, frame count, duration
(measured by ffprobe) and pixels where the bodies are."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from PIL import Image
from tooling import need_tool

from mbfmu.viewer import save_video
from mbfmu.viewer.mpl import Viewer


def ffprobe(path):
    exe = need_tool("ffprobe")
    out = subprocess.run([exe, "-v", "error", "-count_frames", "-show_entries",
                          "stream=codec_name,width,height,nb_read_frames:format=duration,format_name",
                          "-of", "json", str(path)], capture_output=True, text=True, check=True, timeout=60)
    info = json.loads(out.stdout)
    return info["streams"][0], info["format"]


@pytest.mark.parametrize("suffix, codec", [(".gif", "gif"), (".mp4", "h264")])
def test_video_has_the_frames_and_duration_of_fps_and_speed(tmp_path, pendulum_rec, suffix, codec):
    if suffix == ".mp4":
        need_tool("ffmpeg")
    out = tmp_path / f"run{suffix}"
    # 2 s run at 2x speed, 10 fps: frames at 0, 0.2, ..., 2.0 s -> 11 frames, 1.1 s
    n = save_video(pendulum_rec, out, fps=10, speed=2.0, size=(320, 240))
    stream, fmt = ffprobe(out)
    assert n == 11
    assert stream["codec_name"] == codec
    assert int(stream["nb_read_frames"]) == 11
    assert (int(stream["width"]), int(stream["height"])) == (320, 240)
    assert float(fmt["duration"]) == pytest.approx(1.1, abs=0.011)


def test_gif_frames_show_the_motion(tmp_path, pendulum_rec):
    out = tmp_path / "run.gif"
    save_video(pendulum_rec, out, fps=5, speed=1.0, size=(200, 150), t0=0.0, t1=1.0)
    with Image.open(out) as im:
        assert im.n_frames == 6
        first = np.asarray(im.convert("RGB"), dtype=int)
        im.seek(3)
        mid = np.asarray(im.convert("RGB"), dtype=int)
    assert np.abs(first - mid).sum(axis=2).astype(bool).mean() > 0.002


def _pixel_of(viewer, point):
    """Pixel (column, row) of a world point in the saved figure (mplot3d's projection)."""
    from mpl_toolkits.mplot3d import proj3d
    x, y, _ = proj3d.proj_transform(*point, viewer.ax.get_proj())
    X, Y = viewer.ax.transData.transform((x, y))
    return int(round(X)), int(round(viewer.fig.bbox.height - Y))


def _is_green(rgb):
    r, g, b = (int(v) for v in rgb[:3])
    return g > r + 40 and g > b + 40


def test_still_image_shows_the_bodies_where_forward_kinematics_puts_them(tmp_path, pendulum_rec):
    v = Viewer(pendulum_rec, size=(400, 300), dpi=100)
    try:
        for t, other in ((0.0, 1.0), (1.0, 0.0)):
            path = v.save_still(tmp_path / f"s{t}.png", t)
            img = np.asarray(Image.open(path).convert("RGB"))
            assert img.shape == (300, 400, 3)
            here = pendulum_rec.scene_at(t)[1][1]      # green sphere (mass 1), world, m
            there = pendulum_rec.scene_at(other)[1][1]
            c, r = _pixel_of(v, here)
            assert _is_green(img[r, c]), f"t={t}: no green sphere at pixel {(c, r)}: {img[r, c]}"
            c2, r2 = _pixel_of(v, there)
            assert np.hypot(c2 - c, r2 - r) > 20
            assert not _is_green(img[r2, c2]), f"t={t}: sphere also drawn at its t={other} place"
    finally:
        v.close()


def test_still_image_with_signal_plot_and_cursor(tmp_path, pendulum_rec):
    v = Viewer(pendulum_rec, signals=["q[1]", "v[2]"], size=(500, 300))
    try:
        v.save_still(tmp_path / "s.png", 1.25)
        assert v.cursor.get_xdata()[0] == pytest.approx(1.25)
        labels = [line.get_label() for line in v.ax_sig.get_lines()[:2]]
        assert labels == ["q[1]", "v[2]"]
    finally:
        v.close()


def test_interactive_widgets_scrub_speed_scale_and_play(pendulum_rec):
    v = Viewer(pendulum_rec, signals=["q[1]"], interactive=True, size=(600, 400))
    v.fig.canvas.draw_idle = lambda: None  # Agg would really draw each time; the logic is under test here
    try:
        v.slider.set_val(1.2)
        assert v.t == pytest.approx(1.2) and v.cursor.get_xdata()[0] == pytest.approx(1.2)
        v.speed_slider.set_val(np.log10(4.0))
        assert v.speed == pytest.approx(4.0)
        half = np.diff(v.ax.get_xlim())[0]
        v.scale_slider.set_val(2.0)
        assert np.diff(v.ax.get_xlim())[0] == pytest.approx(half / 2)
        wall = [100.0]
        v.clock = lambda: wall[0]
        v.toggle()
        assert v.playing
        wall[0] += 0.1  # 0.1 s of wall time at 4x -> 0.4 s of replay
        v._tick()
        assert v.t == pytest.approx(1.6)
        wall[0] += 1.0  # past the end: stops at the last sample
        v._tick()
        assert v.t == pytest.approx(2.0) and not v.playing
        v.toggle()  # playing again from the end restarts at the beginning
        assert v.t == pytest.approx(0.0)
        v.toggle()
        assert not v.playing
    finally:
        v.close()


def test_unknown_video_suffix_is_refused(tmp_path, pendulum_rec):
    from mbfmu.errors import InputError
    with pytest.raises(InputError, match=r"\.avi"):
        save_video(pendulum_rec, tmp_path / "x.avi", size=(100, 80))
