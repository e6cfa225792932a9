"""tune: PD gains of the rigid_arm FMU tuned over real co-simulations from a
poor start; the tuned gains meet the requirements in a fresh co-simulation
(checked with python-control's step_info, not the study's metrics), the same
seed gives the same gains on local processes and on a Dask cluster, and a
resumed tune redoes no finished run."""
from __future__ import annotations

import control
import pytest

from mbfmu.cli import main
from mbfmu.cosim import simulate
from mbfmu.errors import InputError
from mbfmu.studies import tune
from mbfmu.studies.tuning import parse_requirement

from .pd_arm_target import make_target

RANGES = {"kp": (10.0, 3000.0), "kd": (1.0, 300.0)}
POOR = {"kp": 20.0, "kd": 2.0}  # too weak to carry the arm up: it sags away from the target


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    from mbfmu.fmu import build_fmu
    fmu = build_fmu("rigid_arm", tmp_path_factory.mktemp("tune_fmu"))
    closed_loop, q_target = make_target(fmu)
    f = repr(float(q_target[1]))
    spec = dict(objective=f"itae:arm.q[2]:{f}",
                constraints=[f"overshoot:arm.q[2]:{f}<5%", f"settling_time:arm.q[2]:{f}<1s"],
                stop_time=2.0, step=0.01, seed=1)
    return closed_loop, float(q_target[1]), spec, fmu


def _fresh_step_figures(closed_loop, q2, gains):
    result = simulate(closed_loop(**gains), stop_time=2.0, step=0.01)
    y, t = result["arm.q[2]"], result.time
    info = control.step_info(y - y[0], t, yfinal=q2 - y[0], SettlingTimeThreshold=0.02)
    return info["Overshoot"], info["SettlingTime"]


def test_tuned_pd_meets_overshoot_and_settling_in_a_fresh_cosimulation(loop):
    closed_loop, q2, spec, _ = loop
    r = tune(closed_loop, RANGES, x0=POOR, executor="serial", max_runs=40, progress=False, **spec)
    assert r.met and r.requirements[1]["met_initial"] is False
    assert r.best_cost < r.initial_cost / 100 and r.improvement > 100
    assert len(r.history) <= 40 and r.history[0]["params"] == POOR
    overshoot, settling = _fresh_step_figures(closed_loop, q2, r.best)
    assert overshoot < 5.0 and settling < 1.0
    # and the poor start indeed missed them: the arm sags and never reaches the target
    result = simulate(closed_loop(**POOR), stop_time=2.0, step=0.01)
    assert abs(result["arm.q[2]"][-1] - q2) > 0.5
    assert "overshoot" in r.table() and "yes" in r.table()


def test_local_processes_and_dask_give_the_same_best_for_the_same_seed(loop, dask_cluster):
    closed_loop, _, spec, _ = loop
    local = tune(closed_loop, RANGES, x0=POOR, executor=2, max_runs=20, progress=False, **spec)
    cluster = tune(closed_loop, RANGES, x0=POOR, executor=dask_cluster, max_runs=20, progress=False, **spec)
    assert local.best == cluster.best and local.best_cost == cluster.best_cost
    assert [h["params"] for h in local.history] == [h["params"] for h in cluster.history]


def test_a_resumed_tune_redoes_no_finished_run(loop, tmp_path):
    closed_loop, _, spec, _ = loop
    first = tune(closed_loop, RANGES, x0=POOR, executor="serial", max_runs=15, cache=tmp_path, progress=False,
                 **spec)
    again = tune(closed_loop, RANGES, x0=POOR, executor="serial", max_runs=15, cache=tmp_path, progress=False,
                 **spec)
    assert first.runs > 0 and again.runs == 0 and all(h["cached"] for h in again.history)
    assert again.best == first.best and again.best_cost == first.best_cost


def test_cli_tune_reports_the_improvement(loop, tmp_path, capsys):
    _, q2, spec, fmu = loop
    script = tmp_path / "loop.py"
    here = __import__("pathlib").Path(__file__).parent
    script.write_text("import sys\nsys.path.insert(0, %r)\nfrom pd_arm_target import make_target\n"
                      "closed_loop, _ = make_target(%r)\n" % (str(here), str(fmu)))
    f = repr(q2)
    png = tmp_path / "history.png"
    rc = main(["tune", f"{script}:closed_loop", "--param", "kp=10:3000", "--param", "kd=1:300",
               "--x0", "kp=20", "--x0", "kd=2", "--require", f"overshoot:arm.q[2]:{f}<5%",
               "--require", f"settling_time:arm.q[2]:{f}<1s", "--minimize", f"itae:arm.q[2]:{f}",
               "--stop-time", "2", "--step", "0.01", "--seed", "1", "--max-runs", "40", "--workers", "2",
               "--plot", str(png), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "improvement: cost" in out and "kp = " in out and png.stat().st_size > 5000


def test_requirements_parse_and_bad_input_is_refused():
    r = parse_requirement("overshoot:arm.q[2]:1.2<5%")
    assert (r.metric.name, r.op, r.bound) == ("overshoot:arm.q[2]:1.2", "<", 5.0)
    assert r.violation(7.5) == pytest.approx(0.5) and r.met(4.0)
    assert parse_requirement(("peak:ctrl.tau[2]", ">=", 10)).violation(5.0) == pytest.approx(0.5)
    with pytest.raises(InputError, match="expected KIND:VARIABLE<BOUND"):
        parse_requirement("overshoot:y about 5")
    with pytest.raises(InputError, match="range"):
        tune(lambda kp: None, {"kp": (5.0, 1.0)}, objective="itae:y", stop_time=1.0)
    with pytest.raises(InputError, match="objective to minimize or requirements"):
        tune(lambda kp: None, {"kp": (1.0, 5.0)}, stop_time=1.0)
