"""Joint rates are ``v[i]`` on every plant (library plants called them
``qd[i]`` before mbfmu 0.1.0); the old name is accepted with a warning until mbfmu 0.2."""
from __future__ import annotations

import numpy as np
import pytest

import mbfmu
from mbfmu.cosim import FunctionUnit, System, simulate
from mbfmu.errors import UnknownNameError
from mbfmu.plant.signals import current_name


@pytest.mark.parametrize("plant", ["rigid_arm", "flexible_arm", "canonical_2body"])
def test_library_plants_name_rates_like_urdf_robots(plant):
    names = [s.name for s in mbfmu.load_plant(plant).outputs]
    assert "v[1]" in names and not any(n.startswith("qd[") for n in names)


def test_old_rate_names_resolve_with_a_deprecation_warning():
    plant = mbfmu.load_plant("rigid_arm")
    with pytest.warns(DeprecationWarning, match=r"'qd\[2\]' is called 'v\[2\]'"):
        assert plant.output_index("qd[2]") == plant.output_index("v[2]")
    with pytest.warns(DeprecationWarning):
        assert current_name("arm.qd[3]", {"arm.v[3]"}) == "arm.v[3]"
    with pytest.warns(DeprecationWarning):
        assert current_name("qd", {"v[1]", "v[2]"}) == "v"
    # a name that is neither current nor renamed is still refused by name
    with pytest.raises(UnknownNameError, match="unknown output 'qdd\\[1\\]'"):
        plant.output_index("qdd[1]")
    assert current_name("qd[1]", {"q[1]"}) == "qd[1]"  # nothing to rename to: left for the caller to refuse


def test_old_names_work_in_systems_and_results():
    """A system written against the old names still connects and reads its result."""
    system = System()
    system.add(FunctionUnit("arm", lambda t, u: [np.sin(t), 2 * np.sin(t)], outputs=["v[1]", "v[2]"]))
    system.add(FunctionUnit("gain", lambda t, u: 3 * u, inputs=["u[1]", "u[2]"], outputs=["y[1]", "y[2]"]))
    with pytest.warns(DeprecationWarning):
        system.connect("arm.qd", "gain.u")  # the whole vector, by its old name
    assert [(c.src_var, c.dst_var) for c in system.connections] == [("v[1]", "u[1]"), ("v[2]", "u[2]")]
    result = simulate(system, stop_time=0.5, step=0.1)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_allclose(result["arm.qd[2]"], 2 * np.sin(result.time))


def test_the_deprecation_names_no_version_before_this_one_as_its_future():
    """mbfmu is 0.1.0: a rename cannot have happened "since mbfmu 0.2"; the old name is
    accepted until a version after this one."""
    import re
    from importlib.metadata import version
    current = tuple(int(x) for x in version("mbfmu").split(".")[:2])
    with pytest.warns(DeprecationWarning) as rec:
        assert current_name("arm.qd[2]", {"arm.v[2]"}) == "arm.v[2]"
    (message,) = [str(w.message) for w in rec]
    assert "since" not in message, message
    until = [tuple(map(int, v)) for v in re.findall(r"until mbfmu (\d+)\.(\d+)", message)]
    assert until and all(v > current for v in until), message
