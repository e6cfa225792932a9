"""The rigid 3-DOF arm under a PD law: a closed loop to tune with ``mbfmu tune``.

``closed_loop(kp, kd)`` builds the co-simulation :class:`mbfmu.cosim.System`
of the rigid_arm plant FMU (``mbfmu build rigid_arm -o fmus`` writes
``fmus/rigid_arm.fmu``) under the law

    tau = tau_hold - kp (q - q_target) - kd v      [N m]

where ``tau_hold`` are the torques that hold the arm at rest at ``q_target``
(:func:`mbfmu.control.trim_inputs`, exact Jacobians). ``q_target`` is the
initial pose with the shoulder raised by ``SHOULDER_STEP`` = 0.3 rad, so
``q[2]`` goes from pi/4 to pi/4 + 0.3 = 1.0854 rad: each run is the step
response of the shoulder. From the folder holding ``fmus/``::

    mbfmu tune examples/loop.py:closed_loop --param kp=10:3000 --param kd=1:300 \\
        --require "overshoot:arm.q[2]:1.0854<5%" --minimize "itae:arm.q[2]:1.0854" --stop-time 2 --step 0.01

Run as a script, it simulates the loop once for given gains and writes the run
(``python examples/loop.py --kp 400 --kd 40 --output DIR``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

#: rad: the step of the shoulder angle q[2] from the initial pose
SHOULDER_STEP = 0.3


def closed_loop(kp: float = 100.0, kd: float = 10.0, fmu: str = "fmus/rigid_arm.fmu"):
    """The rigid_arm FMU under the PD law with gravity hold at the target pose.

    Parameters
    ----------
    kp : float
        Proportional gain, N m/rad (the same on the three joints).
    kd : float
        Derivative gain on the joint rates, N m s/rad.
    fmu : str
        The rigid_arm plant FMU (relative to the working folder).

    Returns
    -------
    mbfmu.cosim.System
        Units ``arm`` (the FMU), ``e`` (q - q_target, rad), ``kp``, ``kd``,
        ``pd`` and ``hold`` (the torques into ``arm.tau``, N m).
    """
    from mbfmu.control import trim_inputs
    from mbfmu.cosim import FmuUnit, System
    from mbfmu.cosim.blocks import Gain, Offset, Sum
    from mbfmu.errors import InputError
    from mbfmu.plant.library import load_plant

    if not Path(fmu).is_file():
        raise InputError(f"closed_loop: no FMU {fmu!r}; build it with `mbfmu build rigid_arm -o fmus`")
    plant = load_plant("rigid_arm")
    q_target = plant.initial_state()[:3]
    q_target[1] += SHOULDER_STEP
    hold = trim_inputs(plant, q=q_target).u
    arm = FmuUnit(fmu, name="arm")
    units = [arm, Offset("e", -q_target), Gain("kp", -kp, n=3), Gain("kd", -kd, n=3), Sum("pd", "++", n=3),
             Offset("hold", hold)]
    velocity = arm.outputs[3][:-3]  # the FMU's name of the joint rates
    return System(units, [("arm.q", "e.u"), ("e.y", "kp.u"), (f"arm.{velocity}", "kd.u"), ("kp.y", "pd.u1"),
                          ("kd.y", "pd.u2"), ("pd.y", "hold.u"), ("hold.y", "arm.tau")])


def main(argv=None) -> Path:
    """Simulate the loop once (2 s at 10 ms) and write ``DIR/loop.csv``; returns its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kp", type=float, default=100.0, help="proportional gain, N m/rad (default 100)")
    parser.add_argument("--kd", type=float, default=10.0, help="derivative gain, N m s/rad (default 10)")
    parser.add_argument("--fmu", default="fmus/rigid_arm.fmu", help="the rigid_arm FMU (default fmus/rigid_arm.fmu)")
    parser.add_argument("-o", "--output", metavar="DIR", default=".", help="folder of loop.csv (default: here)")
    args = parser.parse_args(argv)
    from mbfmu.cosim import simulate
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    result = simulate(closed_loop(args.kp, args.kd, args.fmu), stop_time=2.0, step=0.01,
                      record=["arm.q[2]", "arm.tau[2]"])
    path = result.save(out / "loop.csv")
    print(f"q[2] at 2 s: {result['arm.q[2]'][-1]:.4f} rad; written to {path}")
    return path


if __name__ == "__main__":
    main()
