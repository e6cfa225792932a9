"""
Your own robot: from a URDF to a computed-torque loop through its FMU
=====================================================================

A Universal Robots UR5 (six revolute joints) is read from its URDF file, as
published in the ``example-robot-data`` package, turned into a plant with
torque inputs, exported as an FMI 2.0 co-simulation FMU that carries the URDF
and its meshes, and driven along a joint trajectory by a computed-torque
controller in the co-simulation master. The replay at the end draws the
robot's own visual meshes.
"""
# %%
# Finding the URDF
# ----------------
# ``example-robot-data`` installs its robots under
# ``share/example-robot-data/robots`` of its install prefix;
# :func:`mbfmu.plant.robots.robot_urdf` finds one by name (``mbfmu list
# --robots`` lists them; ``mbfmu.load_plant("ur5")`` and ``mbfmu build ur5``
# take the name directly).
import tempfile
import time as wallclock
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import mbfmu
from mbfmu.plant.robots import robot_urdf

urdf = robot_urdf("ur5")
print(urdf.name)

# %%
# The plant
# ---------
# :func:`mbfmu.plant_from_urdf` reads the links' masses and inertias, the
# joints and their axes, and the visual meshes. With the default
# ``actuation="torque"`` every joint gets a torque input ``tau[i]`` (N m);
# ``outputs`` are the joint angles ``q[i]`` (rad) and rates ``v[i]``
# (rad/s), and ``poses=["tool0"]`` adds the tool flange's world position (m)
# and orientation (quaternion, scalar first).
robot = mbfmu.plant_from_urdf(urdf, poses=["tool0"], mesh_faces=6000)
from mbfmu.plant.library import describe  # noqa: E402

print(describe(robot))
nv = robot.model.nv

# %%
# The FMU
# -------
# :func:`mbfmu.fmu.build_fmu` writes ``ur5.fmu``; the URDF and its meshes go
# into the FMU's ``resources/``, so it runs where example-robot-data is not
# installed.
from fmpy import read_model_description  # noqa: E402

from mbfmu.fmu import build_fmu  # noqa: E402

work = Path(tempfile.mkdtemp())
fmu = build_fmu(robot, work)
md = read_model_description(str(fmu))
print(fmu.name, f"{fmu.stat().st_size / 1e6:.1f} MB,",
      sum(v.causality == "input" for v in md.modelVariables), "inputs,",
      sum(v.causality == "output" for v in md.modelVariables), "outputs")

# %%
# A computed-torque controller
# ----------------------------
# :func:`mbfmu.control.computed_torque` computes
# ``tau = M(q) (qdd_ref + Kp (q_ref - q) + Kd (qd_ref - qd)) + h(q, qd)`` with the
# recursive Newton-Euler algorithm on the controller's own model of the robot
# (here the same URDF), so the tracking error obeys
# ``e'' + Kd e' + Kp e = 0`` up to the sample-and-hold. Gains for a double
# pole at 2 Hz: ``Kp = w^2``, ``Kd = 2 w``. It is a python-control system,
# sampled at H = 5 ms, and enters the master as a
# :class:`~mbfmu.cosim.ControlUnit`.
from mbfmu.control import computed_torque  # noqa: E402
from mbfmu.cosim import ControlUnit, FmuUnit, FunctionUnit, System, simulate  # noqa: E402

H = 0.005
w = 2 * np.pi * 2.0
ctc = computed_torque(robot.model, Kp=w**2, Kd=2 * w, dt=H, measured=("q", "v"), name="ctc")

# %%
# The reference: every joint moves by ``A`` along a smooth cosine ramp in
# ``T`` seconds, then holds. The source unit outputs the position (rad),
# velocity (rad/s) and acceleration (rad/s^2) of the ramp.
q0 = robot.initial_state()[:nv]
A = np.array([0.8, -0.6, 0.9, -0.5, 0.7, 1.0])
T = 1.5


def reference(t, u):
    """q_ref, qd_ref, qdd_ref of the cosine ramp, rad, rad/s, rad/s^2."""
    s = min(t, T)
    k = np.pi / T
    hold = t < T
    q = q0 + A * 0.5 * (1 - np.cos(k * s))
    qd = A * 0.5 * k * np.sin(k * s) * hold
    qdd = A * 0.5 * k**2 * np.cos(k * s) * hold
    return list(np.concatenate([q, qd, qdd]))


def names(base):
    return [f"{base}[{i}]" for i in range(1, nv + 1)]


ref = FunctionUnit("ref", reference, outputs=names("q_ref") + names("qd_ref") + names("qdd_ref"))
arm = FmuUnit(fmu, name="ur5")
system = System([arm, ControlUnit("ctc", ctc), ref])
for base in ("q_ref", "qd_ref", "qdd_ref"):
    system.connect(f"ref.{base}", f"ctc.{base}")
system.connect("ur5.q", "ctc.q")
system.connect("ur5.v", "ctc.v")
system.connect("ctc.tau", "ur5.tau")

t0 = wallclock.perf_counter()
result = simulate(system, stop_time=2.5, step=H, record="all", progress=False)
print(result.summary, f"({wallclock.perf_counter() - t0:.1f} s wall)")

# %%
# Tracking
# --------
# The joint angles follow the ramp; the error stays at the level the
# sample-and-hold and the discrete-time FMU exchange leave, and decays once the
# reference holds.
q = np.column_stack([result[f"ur5.q[{i}]"] for i in range(1, nv + 1)])
qr = np.column_stack([result[f"ref.q_ref[{i}]"] for i in range(1, nv + 1)])
tau = np.column_stack([result[f"ctc.tau[{i}]"] for i in range(1, nv + 1)])
fig, ax = plt.subplots(3, 1, figsize=(7, 7), sharex=True, layout="constrained")
for i in range(nv):
    ax[0].plot(result.time, q[:, i], label=f"q[{i + 1}]")
    ax[1].plot(result.time, np.degrees(q[:, i] - qr[:, i]))
    ax[2].plot(result.time, tau[:, i])
ax[0].set_ylabel("joint angle [rad]")
ax[1].set_ylabel("error q - q_ref [deg]")
ax[2].set_ylabel("torque [N m]")
ax[2].set_xlabel("time [s]")
ax[0].legend(ncols=3, fontsize=8)
for a in ax:
    a.grid(alpha=0.3)
ax[0].set_title("UR5 FMU under computed torque")
print("largest tracking error [deg]:", round(float(np.degrees(np.abs(q - qr)).max()), 3))
print("final error [deg]:", round(float(np.degrees(np.abs(q[-1] - qr[-1])).max()), 4))

# %%
# The replay
# ----------
# :class:`~mbfmu.viewer.Recording` takes the co-simulation result and the plant
# (for its geometry: the URDF's decimated meshes); the HTML page is standalone.
from mbfmu.viewer import Recording, write_html  # noqa: E402

page = write_html(Recording(result.data, robot, unit="ur5"), "tutorial_2.html",
                  max_frames=250, title="UR5 under computed torque")
print(f"replay: {page.stat().st_size / 1e6:.2f} MB")

# %%
# .. raw:: html
#
#    <iframe src="../_static/replays/tutorial_2.html" width="100%" height="460"
#            style="border:0" title="replay"></iframe>
