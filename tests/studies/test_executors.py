"""The same sweep serially, through local worker processes and through a real Dask cluster."""
from __future__ import annotations

import csv

import numpy as np

from mbfmu import load_plant
from mbfmu.cli import main
from mbfmu.studies import sweep

GRID = {"arm_mass": [10.0, 20.0, 30.0, 40.0], "theta2_0": [0.5, 0.8, 1.1]}  # 12 runs
SAME = ("run", "arm_mass", "theta2_0", "status", "error", "final:q[2]", "max:kinetic_energy", "rms:v[3]", "key")


def _study(fmu, executor, **kw):
    return sweep(fmu, GRID, stop_time=0.2, step=0.01, metrics=["final:q[2]", "max:kinetic_energy", "rms:v[3]"],
                 executor=executor, progress=False, **kw)


def test_serial_local_and_dask_cluster_sweeps_give_identical_tables_and_results(arm_fmu, dask_cluster, tmp_path):
    serial = _study(arm_fmu, "serial")
    local = _study(arm_fmu, "local", workers=2)
    cluster = _study(arm_fmu, dask_cluster)
    # the FMU travelled once per worker: each worker built the target once, for all its runs
    import distributed
    from mbfmu.studies import targets
    with distributed.Client(dask_cluster.replace("dask://", "tcp://")) as client:
        built = client.run(lambda: sorted(k[0] for k in targets._RUNNERS))
    assert sorted(map(len, built.values())) == [1, 1] and {v[0] for v in built.values()} == {
        targets.resolve(arm_fmu).digest}
    assert serial.summary() == "12 runs: 12 ok"
    for other in (local, cluster):
        assert [[r[c] for c in SAME] for r in other.rows] == [[r[c] for c in SAME] for r in serial.rows]
        for i in range(12):
            a, b = serial.result(i).data, other.result(i).data
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()  # bit-identical
    # the command line sends the same study to the cluster with --scheduler HOST:PORT
    out = tmp_path / "cli.csv"
    assert main(["sweep", str(arm_fmu), "--param", "arm_mass=10:40:4", "--param", "theta2_0=0.5,0.8,1.1",
                 "--stop-time", "0.2", "--step", "0.01", "--metric", "final:q[2]", "--no-progress",
                 "--scheduler", dask_cluster[len("dask://"):], "-o", str(out)]) == 0
    assert [float(r["final:q[2]"]) for r in csv.DictReader(open(out))] == serial["final:q[2]"].tolist()
    # and the FMU's runs are the plant's own dynamics: the same plant simulated in Python
    for i in (0, 7, 11):
        row = serial.rows[i]
        plant = load_plant("rigid_arm", arm_mass=row["arm_mass"], theta2_0=row["theta2_0"])
        t, X, Y = plant.simulate(0.2, 0.01)
        np.testing.assert_allclose(serial.result(i)["rigid_arm.q[2]"], Y[:, plant.output_index("q[2]")],
                                   rtol=0, atol=1e-12)
