"""
A study: a parameter sweep and a Monte Carlo run, locally and on a Dask cluster
===============================================================================

:func:`mbfmu.studies.sweep` runs a target (here the rigid 3-DOF arm of the plant
library; an FMU or an SSP file works the same) once per parameter set, on
worker processes of this machine or on a Dask cluster, and returns a table of
the parameters, the status of each run and its metrics. The arm falls under
gravity with zero joint torques; the metrics are the shoulder angle at the end
and the largest kinetic energy.
"""
# %%
# A grid sweep, locally
# ---------------------
# Every combination of the listed values is one run: 4 arm masses (kg) times
# 3 initial shoulder angles (rad). ``executor="local"`` (the default) spreads
# the runs over worker processes; a failing run would be reported in its row
# without stopping the study.
import time

import matplotlib.pyplot as plt
import numpy as np

from mbfmu.studies import Normal, Uniform, plot_histories, sweep

METRICS = ["final:q[2]", "max:kinetic_energy"]
grid = {"arm_mass": [10.0, 20.0, 30.0, 40.0], "theta2_0": [0.5, 0.8, 1.1]}
t0 = time.perf_counter()
local = sweep("rigid_arm", grid, stop_time=1.0, metrics=METRICS, executor="local", workers=2,
              progress=False)
print(local.summary(), f"in {time.perf_counter() - t0:.1f} s")
print(local.to_dataframe()[["arm_mass", "theta2_0", "status", *METRICS]])

# %%
# With two parameters varied the study's plot is a map of each metric over
# the grid. The largest kinetic energy grows in proportion to the arm mass
# and with the height the arm falls from.
local.plot()
plt.show()

# %%
# A Monte Carlo run
# -----------------
# Distributions instead of lists: the arm mass normal around 20 kg (standard
# deviation 2 kg), the initial shoulder angle uniform in [0.6, 1.0) rad; 24
# samples drawn by Latin hypercube with a fixed seed, so the study repeats
# exactly.
mc_params = {"arm_mass": Normal(20.0, 2.0), "theta2_0": Uniform(0.6, 1.0)}
mc = sweep("rigid_arm", mc_params, samples=24, seed=1, sampling="lhs", stop_time=1.0,
           metrics=METRICS, workers=2, progress=False)
print(mc.summary())
for m in METRICS:
    print(f"{m:22s} mean {np.mean(mc[m]):9.4f}  std {np.std(mc[m]):8.4f}")
mc.plot()
plt.show()

# %%
# The family of time histories: one line per run, coloured by the initial
# shoulder angle.
plot_histories(mc, "q[2]", color_by="theta2_0")
plt.show()

# %%
# The same study on a Dask cluster
# --------------------------------
# Here the cluster is started inside this script: a scheduler and two
# single-threaded workers, talking TCP on 127.0.0.1 (the workers are threads
# of this process, so that the script needs no ``if __name__ == "__main__"``
# guard). The study only changes its ``executor`` argument, a
# :class:`distributed.Client`. On a real cluster the
# one line that changes is the executor: ``executor="dask://SCHEDULER_HOST:8786"``
# (with mbfmu installed on the workers; ``mbfmu sweep --scheduler
# SCHEDULER_HOST:8786`` on the command line).
import distributed  # noqa: E402

with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                              host="127.0.0.1", dashboard_address=None) as cluster, \
        distributed.Client(cluster) as client:
    t0 = time.perf_counter()
    on_dask = sweep("rigid_arm", mc_params, samples=24, seed=1, sampling="lhs", stop_time=1.0,
                    metrics=METRICS, executor=client, progress=False)
    print(on_dask.summary(), f"on {len(client.scheduler_info()['workers'])} Dask workers "
          f"in {time.perf_counter() - t0:.1f} s")

# %%
# The runs are the same simulations, so the table is the same to the last bit:
same = all(np.array_equal(mc[m], on_dask[m]) for m in METRICS)
print("Dask table identical to the local one:", same)
assert same

# %%
# With ``cache="some/folder"`` finished runs are kept on disk, and a study
# started again (after an interruption, or with more samples) only simulates
# what is missing. ``mc.result(i)`` gives the full recorded result of run
# ``i`` and ``mc.to_csv(path)`` writes the table.
