/*
 * The controller evaluator (controller.h). The order of the floating-point
 * operations follows mbfmu.cosim.units.ControlUnit and
 * mbfmu.control.discrete_pid.pid, so the results agree with them to the
 * rounding of the matrix-vector sums (numpy's may group them differently).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"

enum { P_KP, P_KI, P_KD, P_TF, P_TT, P_UMIN, P_UMAX };

size_t mbc_expm_work(int n) {
    return (size_t)7 * (size_t)n * (size_t)n;
}

static int nmat(const mbc_desc *d) {
    return d->kind == MBC_LTI ? d->nx + d->nu : 0;
}

static int net_new(mbc_ctrl *c);

mbc_ctrl *mbc_new(const mbc_desc *d) {
    mbc_ctrl *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->d = d;
    int nx = d->nx, nu = d->nu, ny = d->ny, n = nmat(d);
    /* one block: x, u, y, p, Ad, Bd, xn, work (every count at least 1) */
    size_t work = d->kind == MBC_LTI && d->dt == 0.0 ? mbc_expm_work(n) + (size_t)2 * n * n : 0;
    if (d->kind == MBC_TAPE) work = 1 + (size_t)nx + (size_t)nu + (size_t)d->tape->nn;
    size_t total = (size_t)nx + nu + ny + d->np + (size_t)nx * nx + (size_t)nx * nu + nx + work + 8;
    double *b = calloc(total, sizeof *b);
    if (!b) {
        free(c);
        return NULL;
    }
    c->mem = c->x = b;
    c->u = c->x + nx;
    c->y = c->u + nu;
    c->p = c->y + ny;
    c->Ad = c->p + d->np;
    c->Bd = c->Ad + (size_t)nx * nx;
    c->xn = c->Bd + (size_t)nx * nu;
    c->work = work ? c->xn + nx : NULL;
    c->guard = -1;
    if (d->kind == MBC_TAPE) {
        c->leaf = c->work;
        c->node = c->leaf + 1 + nx + nu;
    }
    if (d->np) memcpy(c->p, d->p0, (size_t)d->np * sizeof *c->p);
    if (d->kind == MBC_NET && net_new(c)) {
        mbc_free(c);
        return NULL;
    }
    mbc_reset(c, NULL);
    return c;
}

void mbc_free(mbc_ctrl *c) {
    if (!c) return;
    if (c->sub)
        for (int i = 0; i < c->d->nsub; ++i) mbc_free(c->sub[i]);
    free(c->sub);
    free(c->mem);
    free(c);
}

/* the sub-units of a net, their states and parameters moved into the net's, and
 * where each reads its inputs and the net its outputs: 0, or -1 out of memory */
static int net_new(mbc_ctrl *c) {
    const mbc_desc *d = c->d;
    size_t n_in = 0, n_out = 0;
    for (int i = 0; i < d->nsub; ++i) {
        n_in += (size_t)d->sub[i]->nu;
        n_out += (size_t)d->sub[i]->ny;
    }
    /* one block: the sub-units, then the input and output pointers */
    size_t head = ((size_t)d->nsub * sizeof(mbc_ctrl *) + sizeof(double *) - 1) / sizeof(double *);
    void **b = calloc(head + n_in + (size_t)d->ny + 1, sizeof(double *));
    if (!b) return -1;
    c->sub = (mbc_ctrl **)b;
    c->in = (const double **)(b + head);
    c->out = c->in + n_in;
    const double **outputs = malloc((n_out + 1) * sizeof *outputs);
    if (!outputs) return -1;
    int xo = 0, po = 0;
    size_t o = 0;
    for (int i = 0; i < d->nsub; ++i) {
        mbc_ctrl *s = c->sub[i] = mbc_new(d->sub[i]);
        if (!s) {
            free(outputs);
            return -1;
        }
        s->x = c->x + xo;
        s->p = c->p + po;
        xo += d->sub[i]->nx;
        po += d->sub[i]->np;
        for (int j = 0; j < d->sub[i]->ny; ++j) outputs[o++] = s->y + j;
    }
    for (size_t j = 0; j < n_in; ++j)
        c->in[j] = d->src[j] < 0 ? d->su0 + j : d->src[j] < d->nu ? c->u + d->src[j] : outputs[d->src[j] - d->nu];
    for (int j = 0; j < d->ny; ++j)
        c->out[j] = d->out[j] < d->nu ? c->u + d->out[j] : outputs[d->out[j] - d->nu];
    free(outputs);
    return 0;
}

/* a net's sub-unit i reads its inputs; the first of them is in[base] */
static size_t net_gather(mbc_ctrl *c, int i, size_t base) {
    mbc_ctrl *s = c->sub[i];
    for (int j = 0; j < s->d->nu; ++j) s->u[j] = *c->in[base + j];
    return base + (size_t)s->d->nu;
}

/* whether a step of h (s) is a whole number n >= 1 of samples of dt (s), within 1e-12 */
static int whole_samples(double dt, double h, double *n) {
    *n = nearbyint(h / dt);
    return *n >= 1.0 && fabs(h - *n * dt) <= 1e-12 * *n * dt && *n <= 1e9;
}

void mbc_reset(mbc_ctrl *c, const double *x0) {
    const mbc_desc *d = c->d;
    if (d->nx) memcpy(c->x, x0 ? x0 : d->x0, (size_t)d->nx * sizeof *c->x);
}

int mbc_check_parameters(const mbc_desc *d, const double *p, const char **why) {
    for (int j = 0; j < d->np; ++j)
        if (isnan(p[j])) {
            *why = "is not a number";
            return 1 + j;
        }
    if (d->kind == MBC_BLOCK || d->kind == MBC_TAPE) return 0;
    if (d->kind == MBC_NET) {
        int off = 0;
        for (int i = 0; i < d->nsub; ++i) {
            int bad = mbc_check_parameters(d->sub[i], p + off, why);
            if (bad) return off + bad;
            off += d->sub[i]->np;
        }
        return 0;
    }
    if (d->kind != MBC_PID) {
        if (!isfinite(p[0])) {
            *why = "must be finite";
            return 1;
        }
        return 0;
    }
    for (int j = P_KP; j <= P_KD; ++j)
        if (!isfinite(p[j])) {
            *why = "must be finite";
            return 1 + j;
        }
    if (!(p[P_TF] >= 0.0) || isinf(p[P_TF])) {
        *why = "must be finite and >= 0 s";
        return 1 + P_TF;
    }
    if (!(p[P_TT] > 0.0)) {
        *why = "must be > 0 s";
        return 1 + P_TT;
    }
    if (!(p[P_UMIN] < p[P_UMAX])) {
        *why = "must be below u_max";
        return 1 + P_UMIN;
    }
    return 0;
}

/* the PID's pieces (discrete_pid.parts): e, s, D, v, saturated u */
typedef struct {
    double e, s, D, v, us;
} pid_parts;

static pid_parts pid_eval(const mbc_ctrl *c) {
    const double *p = c->p, *x = c->x, *u = c->u;
    double dt = c->d->dt;
    double a = p[P_TF] / (p[P_TF] + dt), b = p[P_KD] / (p[P_TF] + dt);
    pid_parts r;
    r.e = u[0] - u[1];
    r.s = c->d->on_error ? r.e : -u[1];
    r.D = a * x[1] + b * (r.s - x[2]);
    r.v = p[P_KP] * r.e + x[0] + r.D;
    double lo = r.v < p[P_UMIN] ? p[P_UMIN] : r.v; /* Python's max(v, u_min), min(., u_max) */
    r.us = lo > p[P_UMAX] ? p[P_UMAX] : lo;
    return r;
}

/* the scheduled law (scheduling.ScheduledLaw.output): the interpolation
 * weight as _interpolate computes it (numpy's searchsorted, then clip), each
 * gain (1 - w) K[k] + w K[k + 1], the row's products summed in sequence */
static void sched_outputs(mbc_ctrl *c) {
    const mbc_desc *d = c->d;
    const int ng = d->ng, nk = d->nk, ny = d->ny;
    const double *g = d->grid, *u = c->u;
    int k = 0;
    double w = 0.0;
    if (ng > 1) {
        double s = d->sidx >= 0 ? u[d->sidx] : 0.0;
        /* np.searchsorted(grid, s) (side left): grid values below s; NaN sorts last */
        int below = 0;
        if (isnan(s)) below = ng;
        else
            while (below < ng && g[below] < s) ++below;
        k = below - 1;
        if (k < 0) k = 0;
        if (k > ng - 2) k = ng - 2;
        w = (s - g[k]) / (g[k + 1] - g[k]);
        w = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w); /* np.clip: NaN stays NaN */
    }
    const size_t plane = (size_t)ny * nk;
    const double *K0 = d->K + (size_t)k * plane, *K1 = ng > 1 ? K0 + plane : K0;
    for (int i = 0; i < ny; ++i) {
        double acc = 0.0;
        for (int j = 0; j < nk; ++j) {
            size_t e = (size_t)i * nk + j;
            double kij = ng > 1 ? (1.0 - w) * K0[e] + w * K1[e] : K0[e];
            acc += kij * (u[j] - d->xr[j]);
        }
        c->y[i] = d->ur[i] - (c->p[0] == 1.0 ? acc : c->p[0] * acc);
    }
}

void mbc_block(int op, int nu, int ny, const double *k, const double *k2, const double *u, double *y) {
    switch (op) {
    case MBC_B_GAIN: for (int j = 0; j < ny; j++) y[j] = k[j] * u[j]; break;
    case MBC_B_MATRIX:
        for (int r = 0; r < ny; r++) {
            double v = 0.0;
            for (int j = 0; j < nu; j++) v += k[(size_t)r * (size_t)nu + (size_t)j] * u[j];
            y[r] = v;
        }
        break;
    case MBC_B_OFFSET: for (int j = 0; j < ny; j++) y[j] = u[j] + k[j]; break;
    case MBC_B_SAT: /* np.clip: NaN stays NaN */
        for (int j = 0; j < ny; j++) y[j] = isnan(u[j]) ? u[j] : (u[j] < k[j] ? k[j] : (u[j] > k2[j] ? k2[j] : u[j]));
        break;
    case MBC_B_SUM: {
        const int groups = ny > 0 ? nu / ny : 0;
        for (int j = 0; j < ny; j++) {
            double v = 0.0;
            for (int g = 0; g < groups; g++) v += k[g] * u[(size_t)g * (size_t)ny + (size_t)j];
            y[j] = v;
        }
        break;
    }
    default: for (int j = 0; j < ny; j++) y[j] = u[j]; break;
    }
}

/* the tape's values at (t = 0, x, u): 0, or 1 when a guard fails (c->guard) */
static int tape_eval(mbc_ctrl *c) {
    const mbc_desc *d = c->d;
    c->leaf[0] = 0.0;
    if (d->nx) memcpy(c->leaf + 1, c->x, (size_t)d->nx * sizeof *c->x);
    if (d->nu) memcpy(c->leaf + 1 + d->nx, c->u, (size_t)d->nu * sizeof *c->u);
    mbn_tape_eval(d->tape, c->leaf, c->node);
    c->guard = mbn_tape_failed_guard(d->tape, c->node);
    return c->guard >= 0;
}

void mbc_outputs(mbc_ctrl *c) {
    const mbc_desc *d = c->d;
    if (d->kind == MBC_TAPE) {
        int bad = tape_eval(c);
        for (int i = 0; i < d->ny; ++i) c->y[i] = bad ? NAN : c->node[d->tout[d->nx + i]];
        return;
    }
    if (d->kind == MBC_BLOCK) {
        mbc_block(d->op, d->nu, d->ny, d->k, d->k2, c->u, c->y);
        return;
    }
    if (d->kind == MBC_NET) {
        size_t base = 0;
        for (int i = 0; i < d->nsub; ++i) {
            base = net_gather(c, i, base);
            mbc_outputs(c->sub[i]);
        }
        for (int j = 0; j < d->ny; ++j) c->y[j] = *c->out[j];
        return;
    }
    if (d->kind == MBC_PID) {
        c->y[0] = pid_eval(c).us;
        return;
    }
    if (d->kind == MBC_SCHED) {
        sched_outputs(c);
        return;
    }
    /* y = g (C x + D u): the two products apart, then added, as numpy does */
    for (int i = 0; i < d->ny; ++i) {
        double cx = 0.0, du = 0.0;
        for (int j = 0; j < d->nx; ++j) cx += d->C[(size_t)i * d->nx + j] * c->x[j];
        for (int j = 0; j < d->nu; ++j) du += d->D[(size_t)i * d->nu + j] * c->u[j];
        double s = cx + du;
        c->y[i] = c->p[0] == 1.0 ? s : c->p[0] * s;
    }
}

/* Ad, Bd for the step h (continuous LTI) */
static int zoh(mbc_ctrl *c, double h) {
    const mbc_desc *d = c->d;
    int nx = d->nx, nu = d->nu, n = nx + nu;
    if (d->h0 > 0.0 && h == d->h0 && d->Ad0) {
        memcpy(c->Ad, d->Ad0, (size_t)nx * nx * sizeof *c->Ad);
        if (nu) memcpy(c->Bd, d->Bd0, (size_t)nx * nu * sizeof *c->Bd);
        c->h = h;
        return 0;
    }
    double *m = c->work, *e = m + (size_t)n * n, *w = e + (size_t)n * n;
    memset(m, 0, (size_t)n * n * sizeof *m);
    for (int i = 0; i < nx; ++i) {
        for (int j = 0; j < nx; ++j) m[(size_t)i * n + j] = h * d->A[(size_t)i * nx + j];
        for (int j = 0; j < nu; ++j) m[(size_t)i * n + nx + j] = h * d->B[(size_t)i * nu + j];
    }
    if (mbc_expm(n, m, e, w)) return MBC_E_EXPM;
    for (int i = 0; i < nx; ++i) {
        for (int j = 0; j < nx; ++j) c->Ad[(size_t)i * nx + j] = e[(size_t)i * n + j];
        for (int j = 0; j < nu; ++j) c->Bd[(size_t)i * nu + j] = e[(size_t)i * n + nx + j];
    }
    c->h = h;
    return 0;
}

/* a net's step: its outputs, then every sub-unit's with its inputs held */
static int net_step(mbc_ctrl *c, double h) {
    const mbc_desc *d = c->d;
    double n;
    for (int i = 0; i < d->nsub; ++i)
        if (d->sub[i]->dt > 0.0 && !whole_samples(d->sub[i]->dt, h, &n)) return MBC_E_STEP;
    mbc_outputs(c);
    size_t base = 0;
    for (int i = 0; i < d->nsub; ++i) base = net_gather(c, i, base); /* from units evaluated after it too */
    for (int i = 0; i < d->nsub; ++i) {
        int rc = mbc_step(c->sub[i], h);
        if (rc) return rc;
    }
    return 0;
}

int mbc_step(mbc_ctrl *c, double h) {
    const mbc_desc *d = c->d;
    int nx = d->nx;
    if (d->kind == MBC_BLOCK) return 0;
    if (d->kind == MBC_NET) return net_step(c, h);
    if (d->dt > 0.0) {
        /* a whole number of samples, inputs held (as the master steps a unit of its own step) */
        double n;
        if (!whole_samples(d->dt, h, &n)) return MBC_E_STEP;
        if (n > 1.0) {
            for (long k = 0; k < (long)n; ++k) {
                int rc = mbc_step(c, d->dt);
                if (rc) return rc;
            }
            return 0;
        }
    }
    if (d->kind == MBC_SCHED) return 0; /* memoryless */
    if (d->kind == MBC_TAPE) {
        if (tape_eval(c)) return MBC_E_GUARD;
        for (int i = 0; i < nx; ++i) {
            c->xn[i] = c->node[d->tout[i]];
            if (!isfinite(c->xn[i])) return MBC_E_STATE;
        }
        if (nx) memcpy(c->x, c->xn, (size_t)nx * sizeof *c->x);
        return 0;
    }
    if (d->kind == MBC_PID) {
        pid_parts r = pid_eval(c);
        double kt = c->p[P_TT] >= DBL_MAX ? 0.0 : d->dt / c->p[P_TT];
        double xn0 = c->x[0] + c->p[P_KI] * d->dt * r.e + kt * (r.us - r.v);
        if (!isfinite(xn0) || !isfinite(r.D) || !isfinite(r.s)) return MBC_E_STATE;
        c->x[0] = xn0;
        c->x[1] = r.D;
        c->x[2] = r.s;
        return 0;
    }
    const double *Ad = d->A, *Bd = d->B;
    if (d->dt == 0.0) {
        if (h != c->h) {
            int rc = zoh(c, h);
            if (rc) return rc;
        }
        Ad = c->Ad;
        Bd = c->Bd;
    }
    /* x+ = Ad x + Bd u: the two products apart, then added, as numpy does */
    for (int i = 0; i < nx; ++i) {
        double ax = 0.0, bu = 0.0;
        for (int j = 0; j < nx; ++j) ax += Ad[(size_t)i * nx + j] * c->x[j];
        for (int j = 0; j < d->nu; ++j) bu += Bd[(size_t)i * d->nu + j] * c->u[j];
        c->xn[i] = ax + bu;
        if (!isfinite(c->xn[i])) return MBC_E_STATE;
    }
    if (nx) memcpy(c->x, c->xn, (size_t)nx * sizeof *c->x);
    return 0;
}

/* ---- matrix exponential ------------------------------------------------------------- */

static void matmul(int n, const double *a, const double *b, double *out) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int k = 0; k < n; ++k) acc += a[(size_t)i * n + k] * b[(size_t)k * n + j];
            out[(size_t)i * n + j] = acc;
        }
}

/* solve P X = Q in place (Q becomes X), n x n, Gaussian elimination with
 * partial pivoting; P is destroyed. 0, or -1 if P is singular */
static int solve(int n, double *P, double *Q) {
    for (int k = 0; k < n; ++k) {
        int best = k;
        for (int i = k + 1; i < n; ++i)
            if (fabs(P[(size_t)i * n + k]) > fabs(P[(size_t)best * n + k])) best = i;
        if (P[(size_t)best * n + k] == 0.0) return -1;
        if (best != k)
            for (int j = 0; j < n; ++j) {
                double t = P[(size_t)k * n + j];
                P[(size_t)k * n + j] = P[(size_t)best * n + j];
                P[(size_t)best * n + j] = t;
                t = Q[(size_t)k * n + j];
                Q[(size_t)k * n + j] = Q[(size_t)best * n + j];
                Q[(size_t)best * n + j] = t;
            }
        for (int i = k + 1; i < n; ++i) {
            double f = P[(size_t)i * n + k] / P[(size_t)k * n + k];
            if (f == 0.0) continue;
            for (int j = k; j < n; ++j) P[(size_t)i * n + j] -= f * P[(size_t)k * n + j];
            for (int j = 0; j < n; ++j) Q[(size_t)i * n + j] -= f * Q[(size_t)k * n + j];
        }
    }
    for (int k = n - 1; k >= 0; --k)
        for (int j = 0; j < n; ++j) {
            double acc = Q[(size_t)k * n + j];
            for (int i = k + 1; i < n; ++i) acc -= P[(size_t)k * n + i] * Q[(size_t)i * n + j];
            Q[(size_t)k * n + j] = acc / P[(size_t)k * n + k];
        }
    return 0;
}

int mbc_expm(int n, const double *a, double *e, double *work) {
    /* Higham (2005), Algorithm 2.3 with degree 13 only: scale A by 2^-s so that
     * ||A||_1 <= theta_13, r13 = (V - U)^-1 (V + U), square s times */
    static const double b[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                                 1187353796428800.0,  129060195264000.0,   10559470521600.0,
                                 670442572800.0,      33522128640.0,       1323241920.0,
                                 40840800.0,          960960.0,            16380.0,
                                 182.0,               1.0};
    const double theta13 = 5.371920351148152;
    size_t nn = (size_t)n * n;
    if (n == 0) return 0;
    double *A = work, *A2 = A + nn, *A4 = A2 + nn, *A6 = A4 + nn, *U = A6 + nn, *V = U + nn, *T = V + nn;
    double norm = 0.0;
    for (int j = 0; j < n; ++j) {
        double col = 0.0;
        for (int i = 0; i < n; ++i) col += fabs(a[(size_t)i * n + j]);
        if (col > norm) norm = col;
    }
    if (!isfinite(norm)) return MBC_E_EXPM;
    /* s = ceil(log2(norm / theta13)) from frexp (r = m 2^e, 0.5 <= m < 1): no log2, whose
     * glibc 2.29 symbol version would raise the binary's glibc baseline */
    int s = 0;
    if (norm > theta13) {
        int e;
        double m = frexp(norm / theta13, &e);
        s = m == 0.5 ? e - 1 : e;
    }
    double scale = ldexp(1.0, -s);
    for (size_t k = 0; k < nn; ++k) A[k] = a[k] * scale;
    matmul(n, A, A, A2);
    matmul(n, A2, A2, A4);
    matmul(n, A4, A2, A6);
    /* U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I] */
    for (size_t k = 0; k < nn; ++k) T[k] = b[13] * A6[k] + b[11] * A4[k] + b[9] * A2[k];
    matmul(n, A6, T, U);
    for (size_t k = 0; k < nn; ++k) U[k] += b[7] * A6[k] + b[5] * A4[k] + b[3] * A2[k];
    for (int i = 0; i < n; ++i) U[(size_t)i * n + i] += b[1];
    memcpy(T, U, nn * sizeof *T);
    matmul(n, A, T, U);
    /* V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I */
    for (size_t k = 0; k < nn; ++k) T[k] = b[12] * A6[k] + b[10] * A4[k] + b[8] * A2[k];
    matmul(n, A6, T, V);
    for (size_t k = 0; k < nn; ++k) V[k] += b[6] * A6[k] + b[4] * A4[k] + b[2] * A2[k];
    for (int i = 0; i < n; ++i) V[(size_t)i * n + i] += b[0];
    /* (V - U) X = (V + U) */
    for (size_t k = 0; k < nn; ++k) {
        double u = U[k], v = V[k];
        A2[k] = v - u; /* P */
        e[k] = v + u;  /* Q, then X */
    }
    if (solve(n, A2, e)) return MBC_E_EXPM;
    for (int k = 0; k < s; ++k) {
        memcpy(T, e, nn * sizeof *T);
        matmul(n, T, T, e);
    }
    for (size_t k = 0; k < nn; ++k)
        if (!isfinite(e[k])) return MBC_E_EXPM;
    return 0;
}
