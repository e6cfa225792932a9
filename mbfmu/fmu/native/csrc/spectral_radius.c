/*
 * The spectral radius rho(A) of a real n x n matrix from the growth of its powers
 * (steplimit.c: the radius of a flexible plant linearized at rest).
 *
 * No eigenvalue is computed. The derivation:
 *
 * 1. Bound. Let ||.|| be the maximum absolute row sum, a norm with
 *    ||A B|| <= ||A|| ||B||. If A x = lambda x (x != 0, complex), then
 *    A^k x = lambda^k x, so |lambda|^k ||x|| = ||A^k x|| <= ||A^k|| ||x||
 *    (the row-sum norm of a vector being its largest |entry|), hence
 *    rho(A) <= ||A^k||^(1/k) for every k >= 1.
 * 2. Convergence. With the Jordan form A = V (Lambda + N) V^-1 (N nilpotent,
 *    blocks of size at most p), ||A^k|| <= c(V) k^(p-1) rho^k for k >= p
 *    when rho > 0 (binomial expansion of (lambda + N)^k), so
 *    rho <= ||A^k||^(1/k) <= rho (c(V) k^(p-1))^(1/k): the relative
 *    excess is about (ln c(V) + (p-1) ln k) / k. It needs no gap between
 *    the largest |eigenvalues|: complex pairs, equal moduli and defective
 *    eigenvalues all give the same 1/k rate.
 * 3. Monotone. ||A^(2k)|| <= ||A^k||^2, so r_m = ||A^(2^m)||^(2^-m) never
 *    increases with m: each squaring keeps an upper bound and tightens it.
 * 4. Scaled squaring. B_0 = A / ||A||, B_(m+1) = B_m^2 / nu_m with
 *    nu_m = ||B_m^2||, so that ||B_m|| = 1 and no power over- or underflows.
 *    By induction A^(2^m) = c_m B_m with c_0 = ||A||, c_(m+1) = c_m^2 nu_m,
 *    and ||A^(2^m)|| = c_m; with L_m = 2^-m ln c_m,
 *        L_0 = ln ||A||,   L_(m+1) = L_m + 2^-(m+1) ln nu_m,
 *    and r_m = exp(L_m). After m = 64 squarings k = 2^64, and the excess of
 *    step 2 is below 1e-17 for any c(V) up to 1e100: below double precision.
 *    nu_m = 0 means A^(2^(m+1)) = 0: A is nilpotent and rho = 0 (for J: K = D = 0).
 * 5. Rounding. A perturbation of relative size e in B_m moves the dominant
 *    eigenvalue of A^(2^m) by a relative e kappa (kappa its condition
 *    number), which is a relative 2^-m e kappa of rho: the rounding of the
 *    first products dominates, as it would in any backward-stable method.
 *    A defective (or nearly defective) dominant eigenvalue is ill-conditioned
 *    (a perturbation e moves it by about e^(1/p)): there the radius is good
 *    to that, with a larger error than a QR eigensolver's (a critically
 *    damped mode: 2e-6 relative, LAPACK 1e-8).
 *
 * The cost is 64 products of 2n x 2n matrices, once per parameter change.
 */
#include "glibc_baseline.h" /* before any libm use: see there */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spectral_radius.h"

#define SQUARINGS 64

/* the maximum absolute row sum of the n x n row-major a; NaN if an entry is NaN */
static double row_sum_norm(const double *a, int n) {
    double norm = 0.0;
    for (int i = 0; i < n; ++i) {
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += fabs(a[(size_t)i * (size_t)n + (size_t)j]);
        if (isnan(s)) return s;
        if (s > norm) norm = s;
    }
    return norm;
}

int mbn_spectral_radius(const double *a, int n, double *radius) {
    size_t nn = (size_t)n * (size_t)n;
    *radius = 0.0;
    if (n <= 0) return 0;
    double *b = malloc(sizeof(double) * 2 * nn);
    if (!b) return -1;
    double *sq = b + nn;
    double norm = row_sum_norm(a, n);
    int err = isfinite(norm) ? 0 : -1;
    double log_r = norm > 0.0 ? log(norm) : 0.0;
    if (!err && norm > 0.0)
        for (size_t k = 0; k < nn; ++k) b[k] = a[k] / norm;
    for (int m = 0; m < SQUARINGS && !err && norm > 0.0; ++m) {
        for (int i = 0; i < n; ++i) { /* sq = b b */
            double *row = sq + (size_t)i * (size_t)n;
            memset(row, 0, sizeof(double) * (size_t)n);
            for (int k = 0; k < n; ++k) {
                double f = b[(size_t)i * (size_t)n + (size_t)k];
                if (f == 0.0) continue;
                const double *bk = b + (size_t)k * (size_t)n;
                for (int j = 0; j < n; ++j) row[j] += f * bk[j];
            }
        }
        double nu = row_sum_norm(sq, n);
        if (!isfinite(nu)) { err = -1; break; }
        if (nu == 0.0) { norm = 0.0; break; } /* nilpotent */
        log_r += ldexp(log(nu), -(m + 1));
        for (size_t k = 0; k < nn; ++k) b[k] = sq[k] / nu;
    }
    free(b);
    if (err) return -1;
    *radius = norm > 0.0 ? exp(log_r) : 0.0;
    return 0;
}
