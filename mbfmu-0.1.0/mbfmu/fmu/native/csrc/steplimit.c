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
 * (the internal step, and the integrator's first and largest steps); M^-1 comes column by column
 * from the flexible ABA (unit generalized forces), K and D from the packed
 * tables, the eigenvalues from balancing, reduction to Hessenberg form and
 * the shifted QR algorithm (as LAPACK's dgeev does; the steps of Press et
 * al., Numerical Recipes in C, 2nd ed., 1992, sections 11.5-11.6).
 */
#include "glibc_baseline.h" /* before any libm use: see there */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"

#define A_(i, j) a[(size_t)((i) - 1) * (size_t)n + (size_t)((j) - 1)] /* 1-based, as in the reference */

static void balance(double *a, int n) {
    const double radix = 2.0, sqrdx = 4.0;
    int last = 0;
    while (!last) {
        last = 1;
        for (int i = 1; i <= n; ++i) {
            double r = 0.0, c = 0.0;
            for (int j = 1; j <= n; ++j)
                if (j != i) {
                    c += fabs(A_(j, i));
                    r += fabs(A_(i, j));
                }
            if (c != 0.0 && r != 0.0) {
                double g = r / radix, f = 1.0, s = c + r;
                while (c < g) { f *= radix; c *= sqrdx; }
                g = r * radix;
                while (c > g) { f /= radix; c /= sqrdx; }
                if ((c + r) / f < 0.95 * s) {
                    last = 0;
                    g = 1.0 / f;
                    for (int j = 1; j <= n; ++j) A_(i, j) *= g;
                    for (int j = 1; j <= n; ++j) A_(j, i) *= f;
                }
            }
        }
    }
}

static void hessenberg(double *a, int n) {
    for (int m = 2; m < n; ++m) {
        double x = 0.0;
        int i = m;
        for (int j = m; j <= n; ++j)
            if (fabs(A_(j, m - 1)) > fabs(x)) { x = A_(j, m - 1); i = j; }
        if (i != m) {
            for (int j = m - 1; j <= n; ++j) { double y = A_(i, j); A_(i, j) = A_(m, j); A_(m, j) = y; }
            for (int j = 1; j <= n; ++j) { double y = A_(j, i); A_(j, i) = A_(j, m); A_(j, m) = y; }
        }
        if (x != 0.0)
            for (i = m + 1; i <= n; ++i) {
                double y = A_(i, m - 1);
                if (y != 0.0) {
                    y /= x;
                    A_(i, m - 1) = y;
                    for (int j = m; j <= n; ++j) A_(i, j) -= y * A_(m, j);
                    for (int j = 1; j <= n; ++j) A_(j, m) += y * A_(j, i);
                }
            }
    }
    for (int i = 3; i <= n; ++i) /* the multipliers left below the subdiagonal */
        for (int j = 1; j < i - 1; ++j) A_(i, j) = 0.0;
}

/* eigenvalues (wr, wi) of the upper Hessenberg a (destroyed): 0, or -1 if the QR iteration does not converge */
static int hessenberg_qr(double *a, int n, double *wr, double *wi) {
    int nn, m, l, k, its, i, mmin;
    double z = 0, y, x, w, v, u, t, s, r = 0, q = 0, p = 0, anorm = 0.0;
    for (i = 1; i <= n; ++i)
        for (int j = i > 1 ? i - 1 : 1; j <= n; ++j) anorm += fabs(A_(i, j));
    nn = n;
    t = 0.0;
    while (nn >= 1) {
        its = 0;
        do {
            for (l = nn; l >= 2; --l) {
                s = fabs(A_(l - 1, l - 1)) + fabs(A_(l, l));
                if (s == 0.0) s = anorm;
                if (fabs(A_(l, l - 1)) + s == s) { A_(l, l - 1) = 0.0; break; }
            }
            x = A_(nn, nn);
            if (l == nn) {
                wr[nn - 1] = x + t;
                wi[nn - 1] = 0.0;
                nn--;
            } else {
                y = A_(nn - 1, nn - 1);
                w = A_(nn, nn - 1) * A_(nn - 1, nn);
                if (l == nn - 1) {
                    p = 0.5 * (y - x);
                    q = p * p + w;
                    z = sqrt(fabs(q));
                    x += t;
                    if (q >= 0.0) {
                        z = p + (p >= 0 ? fabs(z) : -fabs(z));
                        wr[nn - 2] = wr[nn - 1] = x + z;
                        if (z != 0.0) wr[nn - 1] = x - w / z;
                        wi[nn - 2] = wi[nn - 1] = 0.0;
                    } else {
                        wr[nn - 2] = wr[nn - 1] = x + p;
                        wi[nn - 1] = z;
                        wi[nn - 2] = -z;
                    }
                    nn -= 2;
                } else {
                    if (its == 60) return -1;
                    if (its == 10 || its == 20) { /* exceptional shift */
                        t += x;
                        for (i = 1; i <= nn; ++i) A_(i, i) -= x;
                        s = fabs(A_(nn, nn - 1)) + fabs(A_(nn - 1, nn - 2));
                        y = x = 0.75 * s;
                        w = -0.4375 * s * s;
                    }
                    ++its;
                    for (m = nn - 2; m >= l; --m) {
                        z = A_(m, m);
                        r = x - z;
                        s = y - z;
                        p = (r * s - w) / A_(m + 1, m) + A_(m, m + 1);
                        q = A_(m + 1, m + 1) - z - r - s;
                        r = A_(m + 2, m + 1);
                        s = fabs(p) + fabs(q) + fabs(r);
                        p /= s;
                        q /= s;
                        r /= s;
                        if (m == l) break;
                        u = fabs(A_(m, m - 1)) * (fabs(q) + fabs(r));
                        v = fabs(p) * (fabs(A_(m - 1, m - 1)) + fabs(z) + fabs(A_(m + 1, m + 1)));
                        if (u + v == v) break;
                    }
                    for (i = m + 2; i <= nn; ++i) {
                        A_(i, i - 2) = 0.0;
                        if (i != m + 2) A_(i, i - 3) = 0.0;
                    }
                    for (k = m; k <= nn - 1; ++k) {
                        if (k != m) {
                            p = A_(k, k - 1);
                            q = A_(k + 1, k - 1);
                            r = 0.0;
                            if (k != nn - 1) r = A_(k + 2, k - 1);
                            if ((x = fabs(p) + fabs(q) + fabs(r)) != 0.0) { p /= x; q /= x; r /= x; }
                        }
                        s = sqrt(p * p + q * q + r * r);
                        if (p < 0) s = -s;
                        if (s != 0.0) {
                            if (k == m) {
                                if (l != m) A_(k, k - 1) = -A_(k, k - 1);
                            } else {
                                A_(k, k - 1) = -s * x;
                            }
                            p += s;
                            x = p / s;
                            y = q / s;
                            z = r / s;
                            q /= p;
                            r /= p;
                            for (int j = k; j <= nn; ++j) {
                                p = A_(k, j) + q * A_(k + 1, j);
                                if (k != nn - 1) {
                                    p += r * A_(k + 2, j);
                                    A_(k + 2, j) -= p * z;
                                }
                                A_(k + 1, j) -= p * y;
                                A_(k, j) -= p * x;
                            }
                            mmin = nn < k + 3 ? nn : k + 3;
                            for (i = l; i <= mmin; ++i) {
                                p = x * A_(i, k) + y * A_(i, k + 1);
                                if (k != nn - 1) {
                                    p += z * A_(i, k + 2);
                                    A_(i, k + 2) -= p * r;
                                }
                                A_(i, k + 1) -= p * q;
                                A_(i, k) -= p;
                            }
                        }
                    }
                }
            }
        } while (l < nn - 1);
    }
    return 0;
}
#undef A_

int mbn_eig_radius(double *a, int n, double *radius) {
    double *w = malloc(sizeof(double) * (size_t)(2 * n > 0 ? 2 * n : 1));
    if (!w) return -1;
    balance(a, n);
    hessenberg(a, n);
    int err = hessenberg_qr(a, n, w, w + n);
    double rho = 0.0;
    for (int k = 0; k < n && !err; ++k) {
        double e = hypot(w[k], w[n + k]);
        if (!(e <= rho)) rho = e;
    }
    free(w);
    *radius = rho;
    return err;
}

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
    if (!err) err = mbn_eig_radius(J, n2, radius);
    free(buf);
    return err ? -1 : 0;
}
