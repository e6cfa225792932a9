"""Bad input gets a clear exception naming what is wrong, never a crash."""
import numpy as np
import pytest

from mbfmu import load_urdf
from mbfmu.dynamics import (JointForce, ModelBuilder, Prismatic, Revolute, aba, crba,
                            make_joint, rnea)
from mbfmu.dynamics.model import Body, Model
from mbfmu.errors import InputError, ModelError, UnknownNameError


def two_link():
    b = ModelBuilder()
    b.add_body("upper", 0, Revolute(axis=(0, 1, 0)), 1.0, (0, 0, -0.5), np.eye(3) * 0.1, joint_name="shoulder")
    b.add_body("lower", 1, Revolute(axis=(0, 1, 0)), 1.0, (0, 0, -0.5), np.eye(3) * 0.1, p_PJ=(0, 0, -1),
               joint_name="elbow")
    return b.build()


def test_wrong_array_sizes_are_named():
    m = two_link()
    with pytest.raises(InputError, match=r"q has 3 values, expected 2"):
        aba(m, np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(InputError, match=r"tau has 1 values"):
        aba(m, np.zeros(2), np.zeros(2), np.zeros(1))
    with pytest.raises(InputError, match=r"f_ext"):
        aba(m, np.zeros(2), np.zeros(2), np.zeros(2), np.zeros((2, 6)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_name_the_joint(bad):
    m = two_link()
    v = np.array([0.0, bad])
    with pytest.raises(InputError, match=r"v\[2\] \(elbow\) is (nan|inf|-inf)"):
        rnea(m, np.zeros(2), v, np.zeros(2))
    with pytest.raises(InputError, match=r"q\[1\] \(shoulder\)"):
        crba(m, np.array([bad, 0.0]))


def test_parent_array_that_is_not_a_tree():
    j = Revolute()
    bodies = [Body("a", 0, j, "a", np.eye(3), np.zeros(3), 1.0, np.zeros(3), np.eye(3)),
              Body("b", 3, j, "b", np.eye(3), np.zeros(3), 1.0, np.zeros(3), np.eye(3)),
              Body("c", 2, j, "c", np.eye(3), np.zeros(3), 1.0, np.zeros(3), np.eye(3))]
    with pytest.raises(ModelError, match=r"body 2 \('b'\): parent 3 must be an earlier body"):
        Model(bodies, (0, 0, -9.81))


@pytest.mark.parametrize("mass,inertia,match", [
    (-1.0, np.eye(3), "negative"),
    (1.0, np.diag([1.0, 1.0, 3.0]), "triangle inequality"),
    (1.0, np.diag([1.0, -1.0, 1.0]), "positive semi-definite"),
    (1.0, np.array([[1, 0.5, 0], [0, 1, 0], [0, 0, 1.0]]), "not symmetric"),
    (np.nan, np.eye(3), "finite"),
])
def test_non_physical_inertia_is_refused_naming_the_body(mass, inertia, match):
    b = ModelBuilder()
    with pytest.raises(ModelError, match=rf"body 'arm'.*{match}"):
        b.add_body("arm", 0, Revolute(), mass, (0, 0, 0), inertia)


def test_unknown_joint_type_and_unknown_parent():
    with pytest.raises(ModelError, match="unknown joint type 'helical'"):
        make_joint("helical")
    b = ModelBuilder()
    with pytest.raises(UnknownNameError, match="unknown body 'nope'"):
        b.add_body("x", "nope", Revolute(), 1.0)


def test_massless_moving_subtree_is_refused():
    b = ModelBuilder()
    b.add_body("ghost", 0, Prismatic(), 0.0)
    with pytest.raises(ModelError, match="moves no mass"):
        b.build()


def test_singular_articulated_inertia_raises_simulation_error_not_a_crash():
    """A point mass on a revolute axis through it: the joint moves mass but no
    inertia about its axis, so D = 0 inside aba."""
    from mbfmu.errors import SimulationError
    b = ModelBuilder()
    b.add_body("spin", 0, Revolute(axis=(0, 0, 1)), 1.0, (0, 0, 0), np.zeros((3, 3)))
    m = b.build()
    with pytest.raises(SimulationError, match=r"body 1 \(spin\) is singular"):
        aba(m, [0.0], [0.0], [1.0])


def test_bad_joint_force_parameters():
    b = ModelBuilder()
    b.add_body("a", 0, Revolute(), 1.0, (0.1, 0, 0), np.eye(3))
    b.add_joint_force("a", JointForce(stiffness=-1.0))
    with pytest.raises(ModelError, match="joint force on body 'a'"):
        b.build()


@pytest.mark.parametrize("text,match", [
    ("<robot><link name='a'/>", "malformed URDF"),
    ("<robot><link name='a'/><link name='b'/><joint name='j' type='helical'><parent link='a'/>"
     "<child link='b'/></joint></robot>", "unsupported type 'helical'"),
    ("<robot><link name='a'/><joint name='j' type='revolute'><parent link='a'/><child link='zz'/>"
     "</joint></robot>", "unknown link 'zz'"),
    ("<robot><link name='a'><inertial><mass value='abc'/></inertial></link></robot>", "mass"),
    ("<robot><link name='a'/><link name='b'/></robot>", "exactly one root"),
    ("<model/>", "expected <robot>"),
])
def test_malformed_urdf_is_refused_with_the_element_named(text, match):
    with pytest.raises(ModelError, match=match):
        load_urdf(text)


def test_missing_urdf_file():
    with pytest.raises(ModelError, match="does not exist"):
        load_urdf("/nonexistent/robot.urdf")
