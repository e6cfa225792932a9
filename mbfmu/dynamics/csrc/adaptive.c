/*
 * Embedded Runge-Kutta pairs with error control over one interval (adaptive.h).
 *
 * Both pairs are FSAL (the last stage is evaluated at the new solution, so it
 * is the first stage of the next step) and advance with the higher-order
 * solution (local extrapolation). Step control after an accepted step:
 * h_new = h min(5, max(0.2, 0.9 err^(-1/(p+1) + 0.75 beta) err_prev^(-beta)))
 * (PI control, beta = 0.04), after a rejected one h_new = h max(0.2, 0.9
 * err^(-1/(p+1))), with p the order of the embedded estimate; a step whose
 * stages leave the finite numbers is rejected and retried at a fifth.
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "adaptive.h"

#define MAXS 7
#define PI_BETA 0.04

typedef struct {
    int stages;
    int est_order; /* order of the embedded (error) solution */
    double c[MAXS];
    double a[MAXS][MAXS];
    double e[MAXS]; /* b - b_hat: error weights */
} tableau;

/* Bogacki & Shampine (1989), Appl. Math. Lett. 2(4) 321-325 */
static const tableau BS32 = {
    4, 2,
    {0.0, 0.5, 0.75, 1.0},
    {{0}, {0.5}, {0.0, 0.75}, {2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0}},
    {2.0 / 9.0 - 7.0 / 24.0, 1.0 / 3.0 - 0.25, 4.0 / 9.0 - 1.0 / 3.0, -0.125}};

/* Dormand & Prince (1980); Hairer, Norsett & Wanner, Table II.5.2 */
static const tableau DP54 = {
    7, 4,
    {0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0},
    {{0},
     {0.2},
     {3.0 / 40.0, 9.0 / 40.0},
     {44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0},
     {19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0},
     {9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0},
     {35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0}},
    {35.0 / 384.0 - 5179.0 / 57600.0, 0.0, 500.0 / 1113.0 - 7571.0 / 16695.0,
     125.0 / 192.0 - 393.0 / 640.0, -2187.0 / 6784.0 + 92097.0 / 339200.0,
     11.0 / 84.0 - 187.0 / 2100.0, -1.0 / 40.0}};

void mb_adapt_defaults(mb_adapt_options *opt) {
    opt->rtol = 1e-6;
    opt->atol = 1e-6;
    opt->h_init = 0.0;
    opt->h_max = 0.0;
    opt->h_min = 0.0;
    opt->max_steps = 100000;
    opt->method = MB_DP54;
}

const char *mb_adapt_message(int status) {
    switch (status) {
    case MB_ADAPT_OK: return "ok";
    case MB_ADAPT_RHS_ERROR: return "the right-hand side failed";
    case MB_ADAPT_MAX_STEPS: return "the tolerance needs more steps than the step limit allows";
    case MB_ADAPT_STEP_TOO_SMALL: return "the tolerance needs a step below the smallest step allowed";
    case MB_ADAPT_BAD_OPTIONS: return "invalid tolerance, step limits or interval";
    case MB_ADAPT_NO_MEMORY: return "out of memory";
    case MB_ADAPT_BAD_GRID: return "a plug-in element's sampling period is not a positive finite time";
    default: return "unknown status";
    }
}

static int all_finite(const double *x, int n) {
    for (int k = 0; k < n; ++k)
        if (!isfinite(x[k])) return 0;
    return 1;
}

static int eval(const mb_ode *ode, double t, const double *x, const double *tau, const double *fext,
                double *k, mb_adapt_stats *st) {
    if (ode->t_stage) *ode->t_stage = t;
    st->evaluations++;
    return ode->f(ode->ctx, x, x + ode->nq, tau, fext, k, k + ode->nq);
}

int mb_adapt_advance(const mb_ode *ode, double *q, double *y, const double *tau, const double *fext,
                     double span, const mb_adapt_options *opt, mb_adapt_stats *stats) {
    mb_adapt_stats local;
    mb_adapt_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    const tableau *T = opt->method == MB_DP54 ? &DP54 : &BS32;
    if (!(opt->rtol >= 0 && opt->atol >= 0 && opt->rtol + opt->atol > 0 && isfinite(opt->rtol) &&
          isfinite(opt->atol) && span >= 0 && isfinite(span) && isfinite(opt->h_max) &&
          isfinite(opt->h_min) && isfinite(opt->h_init) &&
          (opt->method == MB_BS32 || opt->method == MB_DP54)))
        return MB_ADAPT_BAD_OPTIONS;
    if (span == 0.0) return MB_ADAPT_OK;
    int nq = ode->nq, n = ode->nq + ode->ny, S = T->stages;
    long max_steps = opt->max_steps > 0 ? opt->max_steps : 100000;
    double h_min = opt->h_min > 0 ? opt->h_min : 1e-12 * span;
    double h_max = opt->h_max > 0 ? fmin(opt->h_max, span) : span;
    double expo = -1.0 / (T->est_order + 1);
    double *buf = malloc(sizeof(double) * (size_t)(S + 2) * (size_t)(n > 0 ? n : 1));
    if (!buf) return MB_ADAPT_NO_MEMORY;
    double *k[MAXS];
    for (int s = 0; s < S; ++s) k[s] = buf + (size_t)s * n;
    double *x = buf + (size_t)S * n, *xs = x + n;
    memcpy(x, q, sizeof(double) * (size_t)nq);
    memcpy(x + nq, y, sizeof(double) * (size_t)ode->ny);
    int status = MB_ADAPT_OK, rc;
    double err_old = 1e-4;
    double t = 0.0, h = opt->h_init > 0 ? fmin(opt->h_init, h_max) : h_max;
    if ((rc = eval(ode, 0.0, x, tau, fext, k[0], st))) {
        st->rhs_error = rc;
        status = MB_ADAPT_RHS_ERROR;
        goto done;
    }
    while (t < span) {
        if (st->accepted + st->rejected >= max_steps) { status = MB_ADAPT_MAX_STEPS; break; }
        int last = t + h >= span * (1.0 - 1e-12);
        double hs = last ? span - t : h;
        double en = INFINITY;
        int finite = 1;
        for (int s = 1; s < S && finite; ++s) {
            for (int i = 0; i < n; ++i) {
                double acc = 0.0;
                for (int j = 0; j < s; ++j) acc += T->a[s][j] * k[j][i];
                xs[i] = x[i] + hs * acc;
            }
            finite = all_finite(xs, n);
            if (finite && (rc = eval(ode, t + T->c[s] * hs, xs, tau, fext, k[s], st))) {
                st->rhs_error = rc;
                status = MB_ADAPT_RHS_ERROR;
                goto done;
            }
            finite = finite && all_finite(k[s], n);
        }
        if (finite) { /* xs is the new solution (FSAL: the last stage's argument) */
            double sum = 0.0;
            for (int i = 0; i < n; ++i) {
                double e = 0.0;
                for (int j = 0; j < S; ++j) e += T->e[j] * k[j][i];
                double sc = opt->atol + opt->rtol * fmax(fabs(x[i]), fabs(xs[i]));
                double r = hs * e / sc;
                sum += r * r;
            }
            en = sqrt(sum / (n > 0 ? n : 1));
        }
        st->h_last = hs;
        st->err_norm = en;
        if (en <= 1.0) {
            st->accepted++;
            t = last ? span : t + hs;
            memcpy(x, xs, sizeof(double) * (size_t)n);
            if (ode->normalize) ode->normalize(ode->ctx, x);
            double *tmp = k[0]; k[0] = k[S - 1]; k[S - 1] = tmp; /* FSAL */
            /* PI control (Gustafsson; Hairer & Wanner's DOPRI5, beta = 0.04): steadier
             * steps where stability, not accuracy, limits them */
            double fac = 0.9 * pow(fmax(en, 1e-10), expo - 0.75 * PI_BETA) * pow(err_old, -PI_BETA);
            err_old = fmax(en, 1e-4);
            double h_new = fmin(hs * fmin(5.0, fmax(0.2, fac)), h_max);
            h = last ? fmax(h, h_new) : h_new;
            h = fmin(h, h_max);
        } else {
            st->rejected++;
            double fac = isfinite(en) ? fmax(0.2, 0.9 * pow(en, expo)) : 0.2;
            h = hs * fac;
            if (h < h_min) { status = MB_ADAPT_STEP_TOO_SMALL; break; }
        }
    }
done:
    st->t_reached = t;
    st->h_next = h;
    memcpy(q, x, sizeof(double) * (size_t)nq);
    memcpy(y, x + nq, sizeof(double) * (size_t)ode->ny);
    free(buf);
    return status;
}
