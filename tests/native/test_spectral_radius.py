"""The spectral radius of ``csrc/spectral_radius.c`` (Gelfand's formula, no
eigensolver), which sets a flexible plant's internal step, against LAPACK's
eigenvalues (numpy): the structural Jacobians of the library plants at rest
and random stiff second-order systems, with complex, repeated and defective
dominant eigenvalues."""
from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from mbfmu.fmu.native import toolchain
from mbfmu.plant import list_plants, load_plant


@pytest.fixture(scope="module")
def spectral_radius(tmp_path_factory):
    """``mbn_spectral_radius`` compiled on its own with the FMU's flags: A -> (status, rho)."""
    lib = tmp_path_factory.mktemp("spectral_radius") / "spectral_radius.so"
    cmd = [toolchain.compiler("linux64"), "-shared", *toolchain.CFLAGS, "-fPIC", "-ffp-contract=off",
           f"-I{toolchain.KERNEL_DIR}", "-o", str(lib), str(toolchain.RUNTIME_DIR / "spectral_radius.c"), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True)
    fn = ctypes.CDLL(str(lib)).mbn_spectral_radius
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.POINTER(ctypes.c_double)]

    def call(A):
        A = np.ascontiguousarray(A, dtype=float)
        before = A.copy()
        rho = ctypes.c_double(-1.0)
        status = fn(A.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), A.shape[0], ctypes.byref(rho))
        assert np.array_equal(A, before, equal_nan=True)  # the matrix is left as it was
        return status, rho.value
    return call


def lapack_radius(A: np.ndarray) -> float:
    return float(np.abs(np.linalg.eigvals(A)).max())


def structural_jacobian(M, K, D):
    """``[[0, I], [-M^-1 K, -M^-1 D]]``."""
    n = len(M)
    J = np.zeros((2 * n, 2 * n))
    J[:n, n:] = np.eye(n)
    J[n:, :n] = -np.linalg.solve(M, K)
    J[n:, n:] = -np.linalg.solve(M, D)
    return J


def _library_jacobians():
    from mbfmu.dynamics.flexible import StructuralJacobian
    cases = []
    for name in list_plants():
        plant = load_plant(name)
        system = getattr(plant, "flexible_system", None)
        if system is None or not getattr(system, "beams", ()) or system.nq != system.nv:
            continue
        cases.append(pytest.param(
            StructuralJacobian(system)(0.0, np.concatenate([system.neutral(), np.zeros(system.nv)])), id=name))
    return cases


@pytest.mark.parametrize("J", _library_jacobians())
def test_the_radius_of_each_library_plant_at_rest_is_lapacks(J, spectral_radius):
    status, rho = spectral_radius(J)
    assert status == 0
    assert rho == pytest.approx(lapack_radius(J), rel=1e-13, abs=0)


@pytest.mark.parametrize("kw", [dict(damping_ratio=0.0), dict(damping_ratio=0.1), dict(thickness=0.06),
                                dict(n_modes=5), dict(youngs_modulus=1e11)])
def test_the_flexible_arms_radius_follows_its_parameters(kw, spectral_radius):
    """Undamped (a dominant complex pair), overdamped (a dominant real root) and larger systems."""
    from mbfmu.dynamics.flexible import StructuralJacobian
    plant = load_plant("flexible_arm", **kw)
    system = plant.flexible_system
    J = StructuralJacobian(system)(0.0, np.concatenate([system.neutral(), np.zeros(system.nv)]))
    status, rho = spectral_radius(J)
    assert status == 0
    assert rho == pytest.approx(plant.spectral_radius, rel=1e-12, abs=0)  # the plant's own rule (LAPACK)


def _random_stiff(rng, n, damping):
    """M SPD; K PSD with stiffnesses over eight decades and rigid modes; D per ``damping``."""
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    M = Q @ np.diag(10.0 ** rng.uniform(-2, 2, n)) @ Q.T
    R = np.linalg.qr(rng.standard_normal((n, n)))[0]
    k = 10.0 ** rng.uniform(0, 8, n)
    k[: n // 4] = 0.0  # rigid modes: Jordan blocks at 0
    K = R @ np.diag(k) @ R.T
    if damping == "none":
        D = np.zeros((n, n))
    elif damping == "stiffness":
        D = 1e-3 * K
    else:
        G = rng.standard_normal((n, n))
        D = 10.0 ** rng.uniform(-3, 3) * (G @ G.T) / n
    return structural_jacobian(M, K, D)


@pytest.mark.parametrize("damping", ["none", "stiffness", "general"])
@pytest.mark.parametrize("seed", range(8))
def test_random_stiff_systems(seed, damping, spectral_radius):
    rng = np.random.default_rng(1000 * seed + len(damping))
    J = _random_stiff(rng, int(rng.integers(2, 16)), damping)
    status, rho = spectral_radius(J)
    assert status == 0
    assert rho == pytest.approx(lapack_radius(J), rel=1e-12, abs=0)


@pytest.mark.parametrize("eigenvalues", [(3.0, -3.0, 1.0), (-2.0, 2.0j, -2.0j), (5.0, 5.0, 5.0), (1e-3, 1e-3)],
                         ids=["opposite", "pair-on-the-circle", "triple", "tiny"])
def test_equal_moduli_need_no_gap(eigenvalues, spectral_radius):
    """Distinct eigenvalues of one modulus (power iteration does not converge there)."""
    rng = np.random.default_rng(7)
    lam = np.array(eigenvalues, complex)
    n = len(lam)
    # a real matrix with these eigenvalues: real 2 x 2 blocks for the pairs
    B = np.zeros((n, n))
    k = 0
    while k < n:
        if lam[k].imag != 0:
            B[k:k + 2, k:k + 2] = [[lam[k].real, lam[k].imag], [-lam[k].imag, lam[k].real]]
            k += 2
        else:
            B[k, k] = lam[k].real
            k += 1
    V = rng.standard_normal((n, n)) + 3 * np.eye(n)
    A = V @ B @ np.linalg.inv(V)
    status, rho = spectral_radius(A)
    assert status == 0
    assert rho == pytest.approx(np.abs(lam).max(), rel=1e-13)


def test_a_defective_dominant_eigenvalue(spectral_radius):
    """A Jordan block of size 3 at -4: ||A^k|| grows as k^2 4^k, the root still converges. The
    eigenvalue itself moves by about (rounding)^(1/3) under a perturbation of A (LAPACK's is
    1.6e-6 off here): the radius is that ill-conditioned too. The first squarings round at about
    1e-13 of |A|^2 here, whose cube root is 5e-5 (measured: 8e-5)."""
    J = np.diag([-4.0, -4.0, -4.0, 1.0]) + np.diag([1.0, 1.0, 0.0], 1)
    V = np.array([[1.0, 2, 0, 1], [0, 1, 3, 0], [1, 0, 1, 2], [0, 1, 0, 1]])
    status, rho = spectral_radius(V @ J @ np.linalg.inv(V))
    assert status == 0
    assert rho == pytest.approx(4.0, rel=2e-4)


def test_nilpotent_and_zero_have_radius_zero(spectral_radius):
    n = 3  # K = D = 0: J = [[0, I], [0, 0]]
    assert spectral_radius(structural_jacobian(np.eye(n), np.zeros((n, n)), np.zeros((n, n)))) == (0, 0.0)
    assert spectral_radius(np.zeros((2, 2))) == (0, 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_entries_not_finite_are_refused(bad, spectral_radius):
    A = np.eye(3)
    A[1, 2] = bad
    assert spectral_radius(A)[0] == -1
