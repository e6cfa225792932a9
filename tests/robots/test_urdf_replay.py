"""The URDF's visual meshes are what the HTML replay draws: headless Chromium
screenshots with and without the meshes differ where the camera projects
the mesh vertices, and the page stays small."""
from __future__ import annotations

import base64
import json
import re
import subprocess

import numpy as np
from PIL import Image

from mbfmu.plant.urdf import plant_from_urdf
from mbfmu.viewer import Recording, write_html
from mbfmu.viewer.camera import Camera
from tooling import need_tool

W, H = 640, 480


def screenshot(page, fragment, out):
    exe = need_tool("chromium")
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    "--virtual-time-budget=3000", f"--screenshot={out}", f"--window-size={W},{H}",
                    page.as_uri() + fragment], capture_output=True, timeout=120)
    assert out.is_file(), f"no screenshot of {page}"
    return np.asarray(Image.open(out).convert("RGB")).astype(int)


def page_json(path):
    m = re.search(r'<script type="application/json" id="mbfmu-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def recording_of(plant, stop=0.3, step=0.01):
    t, X, _ = plant.simulate(stop, step)
    res = np.zeros(len(t), dtype=[("time", float)] + [(s.name, float) for s in plant.states])
    res["time"] = t
    for i, s in enumerate(plant.states):
        res[s.name] = X[:, i]
    return Recording(res, plant)


def test_html_replay_draws_the_urdf_meshes(robot, tmp_path):
    name, path, floating, _ = robot
    plant = plant_from_urdf(path, floating_base=floating)
    meshes = [i for i, s in enumerate(plant.geometry) if s.kind == "mesh"]
    assert meshes, f"{name}: no mesh visuals read"
    assert sum(len(plant.geometry[i].mesh[1]) for i in meshes) <= 1.05 * plant.mesh_faces
    page = write_html(recording_of(plant), tmp_path / f"{name}.html", autoplay=False)
    assert page.stat().st_size < 1_500_000  # decimated: the page carries the meshes
    data = page_json(page)
    bare = tmp_path / f"{name}_bare.html"
    stripped = dict(data, shapes=[dict(s, F="") if s["kind"] == "mesh" else s for s in data["shapes"]])
    text = page.read_text()
    m = re.search(r'(<script type="application/json" id="mbfmu-data">)(.*?)(</script>)', text, re.S)
    bare.write_text(text[:m.start(2)] + json.dumps(stripped).replace("</", "<\\/") + text[m.end(2):])
    t = 0.2
    with_meshes = screenshot(page, f"#t={t}", tmp_path / "a.png")
    without = screenshot(bare, f"#t={t}", tmp_path / "b.png")
    changed = np.abs(with_meshes - without).sum(axis=2) > 24
    assert changed.mean() > 0.01, f"{name}: the meshes change {changed.mean():.2%} of the picture"
    # the changed pixels are where the camera projects the meshes' vertices at t
    cam = Camera(**{k: (tuple(v) if k == "target" else v) for k, v in data["camera"].items()})
    frame_t = np.frombuffer(base64.b64decode(data["time"]), "<f8")
    k = int(np.argmin(np.abs(frame_t - t)))
    ns = len(data["shapes"])
    R = np.frombuffer(base64.b64decode(data["R"]), "<f4").reshape(-1, ns, 3, 3)[k]
    P = np.frombuffer(base64.b64decode(data["p"]), "<f4").reshape(-1, ns, 3)[k]
    rng = np.random.default_rng(0)
    hits = total = 0
    for i in meshes:
        V = plant.geometry[i].mesh[0]
        Vw = V[rng.choice(len(V), min(len(V), 20), replace=False)] @ R[i].T + P[i]
        u, v, z = cam.project(Vw, W, H)
        for c, r in zip(np.round(u).astype(int), np.round(v).astype(int)):
            if 2 <= c < W - 2 and 2 <= r < H - 40:  # not under the control bar
                total += 1
                hits += bool(changed[r - 2:r + 3, c - 2:c + 3].any())
    assert total > 50 and hits / total > 0.9, f"{name}: {hits}/{total} projected mesh vertices are drawn"
    # outside the robot's projected box nothing changed
    lo = np.array([W, H]); hi = np.array([0, 0])
    for i in meshes:
        u, v, _ = cam.project(plant.geometry[i].mesh[0] @ R[i].T + P[i], W, H)
        lo = np.minimum(lo, [u.min(), v.min()]); hi = np.maximum(hi, [u.max(), v.max()])
    outside = changed.copy()
    c0, r0 = np.clip(np.floor(lo).astype(int) - 3, 0, None)
    c1, r1 = np.ceil(hi).astype(int) + 3
    outside[r0:r1, c0:c1] = False
    assert outside.sum() < 0.002 * W * H
