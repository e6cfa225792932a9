/*
 * The spectral radius of a flexible plant linearized at rest, for the
 * plant's internal-step rule (mbn_data.step_cap, step_k): a plant such as
 * flexible_arm integrates with internal_step = min(step_cap, step_k / rho),
 * rho the largest |eigenvalue| of
 *
 *     J = [[0, I], [-M^-1 K, -M^-1 D]]
 *
 * at the initial configuration with v = 0 (the plant's StructuralJacobian:
 * M the mass matrix, K and D the modal stiffness and damping of the beams).
 * When a parameter is set the runtime applies the rule to its re-packed model
 * (the internal step, and the integrator's first and largest steps). M^-1
 * comes column by column from the flexible ABA (unit generalized forces), K
 * and D from the packed tables.
 *
 * rho comes from mbn_spectral_radius (spectral_radius.c), which needs no
 * eigensolver.
 */
#include "glibc_baseline.h" /* before any libm use: see there */
#include <stdlib.h>
#include <string.h>

#include "native.h"
#include "spectral_radius.h"

int mbn_flex_rest_radius(const mbn_data *D, mb_flex *fx, const double *q0, double *radius) {
    int nq = D->nq, n = D->nv, n2 = 2 * n;
    size_t sz = (size_t)(nq + 4 * n + 2 * n * n) + (size_t)n2 * (size_t)n2;
    double *buf = calloc(sz, sizeof(double));
    if (!buf) return -1;
    double *qd = buf, *v0 = qd + nq, *tau = v0 + n, *a0 = tau + n, *a1 = a0 + n, *Ainv = a1 + n,
           *KD = Ainv + (size_t)n * (size_t)n, *J = KD + (size_t)n * (size_t)n;
    int err = mb_flex_rhs(fx, q0, v0, tau, NULL, qd, a0);
    for (int j = 0; j < n && !err; ++j) { /* column j of M^-1: the acceleration of a unit force */
        tau[j] = 1.0;
        err = mb_flex_rhs(fx, q0, v0, tau, NULL, qd, a1);
        tau[j] = 0.0;
        for (int i = 0; i < n; ++i) Ainv[i * n + j] = a1[i] - a0[i];
    }
    for (int i = 0; i < n; ++i) J[(size_t)i * n2 + n + i] = 1.0;
    for (int part = 0; part < 2 && !err; ++part) { /* part 0: K, 1: D (the beams' blocks of fx->kd) */
        memset(KD, 0, sizeof(double) * (size_t)n * (size_t)n);
        for (int b = 0; b < fx->nbeam; ++b) {
            int nm = fx->bnm[b], o = fx->kdoff[b] + part * nm * nm, v = fx->bv[b];
            for (int r = 0; r < nm; ++r)
                for (int c = 0; c < nm; ++c) KD[(v + r) * n + v + c] = fx->kd[o + r * nm + c];
        }
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                double s = 0.0;
                for (int k = 0; k < n; ++k) s += Ainv[i * n + k] * KD[k * n + j];
                J[(size_t)(n + i) * n2 + (size_t)(part * n + j)] = -s;
            }
    }
    if (!err) err = mbn_spectral_radius(J, n2, radius);
    free(buf);
    return err ? -1 : 0;
}
