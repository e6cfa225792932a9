"""robustness on a Dask cluster on 127.0.0.1: the same samples and margins as in this process."""
from __future__ import annotations

from mbfmu.control import robustness
from mbfmu.studies import Uniform


def make_loop():
    """A factory, so that the loop function travels to the workers by value."""
    def loop(k: float = 1.0):
        import control as ct

        from mbfmu.cosim import ControlUnit, System, sources
        from mbfmu.cosim.blocks import Sum
        plant = ControlUnit("plant", ct.ss(ct.tf([2.0 * k], [0.1, 1.1, 1.0])))
        ctrl = ControlUnit("ctrl", ct.ss(ct.tf([1.5, 3.0], [1.0, 0.0])))
        return System([sources.step("ref", 1.0, 1.0), Sum("err", "+-", inputs=("r", "m")), ctrl, plant],
                      [("ref.y", "err.r"), ("plant.y[1]", "err.m"), ("err.y", "ctrl.u[1]"),
                       ("ctrl.y[1]", "plant.u[1]")])
    return loop


def test_dask_cluster_gives_the_same_robustness_table(dask_cluster):
    kw = dict(n=6, seed=4, open_at="ctrl.y[1]->plant.u[1]", step=0.01)
    here = robustness(make_loop(), {"k": Uniform(0.5, 3.0)}, **kw)
    there = robustness(make_loop(), {"k": Uniform(0.5, 3.0)}, executor=dask_cluster, **kw)
    for a, b in zip(here.rows, there.rows):
        assert a["k"] == b["k"] and a["phase_margin"] == b["phase_margin"] and a["pole_figure"] == b["pole_figure"]
    assert here.worst("phase_margin")["k"] == there.worst("phase_margin")["k"]
