"""One model, many threads: the kernels release the GIL and each handle owns
its workspace (mb_data), so threads stepping plants of one model give the
serial results bit for bit."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from mbfmu.dynamics import JointForce, ModelBuilder, Revolute, _kernels
from mbfmu.errors import ModelError

from trees import random_state, random_tree

STEPS = 1000


def _model_with_elements():
    """A random floating tree with joint springs, a contact and a cable: every workspace array is used."""
    rng = np.random.default_rng(7)
    model = random_tree(rng, 6, floating=True)
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("link", 0, Revolute([0, 0, 1]), 1.0, [0.3, 0, 0], np.eye(3) * 0.05)
    b.add_contact_sphere_plane("link", [0.3, 0, 0], 0.05, [0, 0, 1], 0.0, 1e4, 50.0)
    b.add_cable([0.0, 0.0, 1.0], "link", [0.3, 0, 0], 0.5, 1e3, 5.0)
    return model, b.build(), rng


def _trajectory(model, q, v, steps=STEPS, dt=1e-3):
    """``steps`` RK4 steps of ``dt`` s, one kernel call each; the states along the way."""
    tau = np.zeros(model.nv)
    out = np.empty((steps, model.nq + model.nv))
    for k in range(steps):
        q, v = _kernels.rk4(model._h, q, v, tau, dt, 1)
        out[k, :model.nq], out[k, model.nq:] = q, v
    return out


@pytest.mark.parametrize("which", [0, 1])
def test_two_threads_on_one_model_equal_serial_runs_bit_for_bit(which):
    tree, elements, rng = _model_with_elements()
    model = (tree, elements)[which]
    starts = [random_state(rng, model) for _ in range(2)]
    serial = [_trajectory(model, q, v) for q, v in starts]
    assert not np.array_equal(serial[0], serial[1])  # two different runs, or the check below is empty
    twins = [model.for_thread(), model.for_thread()]
    results = [None, None]
    barrier = threading.Barrier(2)

    def run(k):
        barrier.wait()
        results[k] = _trajectory(twins[k], *starts[k])
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(2):
        np.testing.assert_array_equal(results[k], serial[k])


def _wide_tree():
    """A wide random tree with joint springs: forward dynamics and mb_rhs take the sparse route."""
    rng = np.random.default_rng(11)
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    for k in range(1, 201):
        b.add_body(f"b{k}", int(rng.integers(0, k)), Revolute(tuple(rng.normal(size=3))), 1.0 + rng.random(),
                   rng.uniform(-0.1, 0.1, 3), np.eye(3) * 0.02, p_PJ=rng.uniform(-0.3, 0.3, 3))
        b.add_joint_force(f"b{k}", JointForce(stiffness=2.0, damping=0.3))
    model = b.build()
    assert _kernels.sparsity(model._h)[1] == 1  # the route the test is about
    return model, rng


def _sparse_calls(model, q, v, calls=40):
    """RK4 steps (mb_rhs on the sparse route; 10 per call, so the threads
    overlap inside the kernels), forward dynamics and crba_pattern along the
    way: every kernel that works in the data's Hs."""
    tau = np.zeros(model.nv)
    out = []
    for _ in range(calls):
        q, v = _kernels.rk4(model._h, q, v, tau, 1e-4, 10)
        out.append(np.concatenate([q, v, _kernels.forward_dynamics(model._h, q, v, tau, None, True, 1),
                                   _kernels.crba_pattern(model._h, q)]))
    return np.array(out)


def test_threads_on_the_sparse_route_each_use_their_own_factor():
    """The sparse route factors H in the workspace (mb_data.Hs), not in the
    shared model: two threads on one model equal the serial runs bit for bit."""
    model, rng = _wide_tree()
    starts = [random_state(rng, model) for _ in range(2)]
    serial = [_sparse_calls(model, q, v) for q, v in starts]
    assert not np.array_equal(serial[0], serial[1])
    twins = [model.for_thread(), model.for_thread()]
    results = [None, None]
    barrier = threading.Barrier(2)

    def run(k):
        barrier.wait()
        results[k] = _sparse_calls(twins[k], *starts[k])
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(2):
        np.testing.assert_array_equal(results[k], serial[k])


def test_two_threads_on_one_handle_take_turns():
    """Two threads on the same handle share one workspace: the lock makes them take turns."""
    tree, _, rng = _model_with_elements()
    starts = [random_state(rng, tree) for _ in range(2)]
    serial = [_trajectory(tree, q, v, steps=300) for q, v in starts]
    results = [None, None]
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, _trajectory(tree, *starts[k], steps=300)))
               for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(2):
        np.testing.assert_array_equal(results[k], serial[k])


def test_a_shared_model_is_read_only():
    tree, _, _ = _model_with_elements()
    twin = tree.for_thread()
    for h in (tree._h, twin._h):
        with pytest.raises(ModelError, match="read-only"):
            _kernels.set_gravity(h, [0.0, 0.0, -1.0])
    # the twin outlives its original: the description stays alive with it
    q, v = random_state(np.random.default_rng(1), tree)
    expected = _kernels.aba(tree._h, q, v, np.zeros(tree.nv))
    del tree
    np.testing.assert_array_equal(_kernels.aba(twin._h, q, v, np.zeros(twin.nv)), expected)


ALLOCATION_SCRIPT = """
import resource, numpy as np
from mbfmu.dynamics import ModelBuilder, Revolute, aba
b = ModelBuilder()
for k in range(20000):
    b.add_body(f"b{k}", k, Revolute([0, 0, 1]), 1.0, [0.1, 0, 0], np.eye(3) * 0.01, p_PJ=[0.2, 0, 0])
model = b.build()
pages = int(open("/proc/self/statm").read().split()[0])
resource.setrlimit(resource.RLIMIT_AS, (pages * resource.getpagesize() + (8 << 20), resource.RLIM_INFINITY))
try:
    model.for_thread()  # a workspace of some 40 MB: more than the 8 MB left
    print("allocated")
except MemoryError:
    print("MemoryError")
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
twin = model.for_thread()  # with the memory back, the same call succeeds
q = np.zeros(model.nq)
assert np.all(np.isfinite(aba(twin, q, q, q)))
print("alive")
"""


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="needs Linux (RLIMIT_AS, /proc)")
def test_a_failed_workspace_allocation_is_a_memory_error_not_a_crash():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", ALLOCATION_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["MemoryError", "alive"]
