"""
A library plant, from simulation to a closed loop through its FMU
=================================================================

The rigid 3-DOF arm of the plant library (a turning base and two pitch joints,
after Wang et al. 2009) is listed, simulated, linearized about a held pose, given
a discrete LQR designed with python-control, and then controlled through its
FMU in the co-simulation master.
"""
# %%
# The plant and its ports
# -----------------------
# Every plant has named inputs, outputs and parameters in SI units.
import control
import matplotlib.pyplot as plt
import numpy as np

import mbfmu

print(mbfmu.list_plants())
arm = mbfmu.load_plant("rigid_arm")
for s in arm.inputs + arm.outputs[:6]:
    print(f"{s.kind:7s} {s.name:8s} [{s.unit}]  {s.description}")

# %%
# Free response
# -------------
# With zero joint torques the arm falls under gravity from its initial pose
# (shoulder at +45 deg, elbow at -45 deg).
time, X, Y = arm.simulate(stop_time=1.0, step=0.01)
fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
for i in range(3):
    ax.plot(time, X[:, i], label=arm.states[i].name)
ax.set(xlabel="time [s]", ylabel="joint angle [rad]", title="rigid_arm, zero torque")
ax.legend()
ax.grid(alpha=0.3)
plt.show()

# %%
# Linearization about a held pose
# -------------------------------
# :func:`~mbfmu.control.trim_inputs` finds the joint torques that hold the
# initial pose at rest (least squares on the state derivatives, with the exact
# Jacobians) and reports the residual it reached.
from mbfmu.control import trim_inputs

x0 = arm.initial_state()
hold = trim_inputs(arm, q=x0[:3])
print(hold.report())
u0 = hold.u
lin = mbfmu.linearize(arm, x0, u0)
print("open-loop poles [1/s]:", np.round(np.linalg.eigvals(lin.A), 3))

# %%
# A discrete LQR
# --------------
# Sampled at H = 10 ms with a zero-order hold; the state weight penalizes the
# joint angles, the input weight the torques.
H = 0.01
sysd = control.c2d(control.ss(lin.A, lin.B, np.eye(6), 0), H, "zoh")
K, _, poles = control.dlqr(sysd.A, sysd.B, np.diag([100, 100, 100, 1, 1, 1]), 0.01 * np.eye(3))
print("closed-loop pole magnitudes:", np.round(np.sort(np.abs(poles)), 3))

# %%
# The closed loop through the plant's FMU
# ---------------------------------------
# The FMU is a standard FMI 2.0 co-simulation unit; the controller is a Python
# function unit that reads the joint angles and rates and holds its torque over
# each step. The target is the initial pose with the base turned by 0.5 rad.
import tempfile
from pathlib import Path

from mbfmu.cosim import FmuUnit, FunctionUnit, System, simulate
from mbfmu.fmu import build_fmu

work = Path(tempfile.mkdtemp())
fmu = build_fmu("rigid_arm", work)
target = x0 + np.array([0.5, 0, 0, 0, 0, 0])
measured = [f"q[{i}]" for i in (1, 2, 3)] + [f"v[{i}]" for i in (1, 2, 3)]


def lqr(t, y):
    """Torque = holding torque - K (x - target), N m."""
    return list(u0 - K @ (np.asarray(y) - target))


plant = FmuUnit(fmu, name="arm")
ctrl = FunctionUnit("lqr", lqr, inputs=measured, outputs=["tau[1]", "tau[2]", "tau[3]"],
                    units={f"tau[{i}]": "N.m" for i in (1, 2, 3)}, feedthrough=True)
connections = [(f"arm.{n}", f"lqr.{n}") for n in measured]
connections += [(f"lqr.tau[{i}]", f"arm.tau[{i}]") for i in (1, 2, 3)]
result = simulate(System([plant, ctrl], connections), stop_time=3.0, step=H, record="all")
print(result.summary)

fig, ax = plt.subplots(2, 1, figsize=(7, 5), sharex=True, layout="constrained")
for i in (1, 2, 3):
    ax[0].plot(result.time, result[f"arm.q[{i}]"], label=f"q[{i}]")
    ax[1].plot(result.time, result[f"lqr.tau[{i}]"], label=f"tau[{i}]")
ax[0].set_ylabel("joint angle [rad]")
ax[1].set_ylabel("torque [N m]")
ax[1].set_xlabel("time [s]")
for a in ax:
    a.grid(alpha=0.3)
    a.legend()
ax[0].set_title("LQR through the rigid_arm FMU")
plt.show()

# %%
# The final base angle is on target, and the replay shows the motion.
print("final base angle [rad]:", round(float(result["arm.q[1]"][-1]), 4))

from mbfmu.viewer import Recording, write_html  # noqa: E402

page = write_html(Recording(result.data, mbfmu.load_plant("rigid_arm"), unit="arm"),
                  "tutorial_1.html", max_frames=300, title="rigid_arm under LQR")
print("replay written to", page.name)  # a standalone page: open it in a browser

# %%
# .. raw:: html
#
#    <iframe src="../_static/replays/tutorial_1.html" width="100%" height="460"
#            style="border:0" title="replay"></iframe>
