/*
 * Error-controlled integration of an mb_ode over one interval: embedded
 * explicit Runge-Kutta pairs with step-size control, plain C (no Python
 * objects), shared by the Python plants (binding.c) and the native FMU runtime.
 *
 * Error per component i of x = [q; y]: the embedded estimate e_i must satisfy
 * sqrt(mean_i (e_i / (atol + rtol max(|x0_i|, |x1_i|)))^2) <= 1 on every
 * accepted step (Hairer, Norsett & Wanner, Solving ODEs I, II.4).
 */
#ifndef MBFMU_ADAPTIVE_H
#define MBFMU_ADAPTIVE_H

#include "mb.h"

/* embedded pairs */
enum mb_adapt_method {
    MB_BS32 = 0, /* Bogacki & Shampine 3(2), FSAL: 3 new evaluations per step */
    MB_DP54 = 1  /* Dormand & Prince 5(4), FSAL: 6 new evaluations per step */
};

/* status codes of mb_adapt_advance */
enum mb_adapt_status {
    MB_ADAPT_OK = 0,
    MB_ADAPT_RHS_ERROR = 1,  /* the right-hand side returned a nonzero code (stats.rhs_error) */
    MB_ADAPT_MAX_STEPS = 2,  /* max_steps attempted steps did not reach the end */
    MB_ADAPT_STEP_TOO_SMALL = 3, /* the tolerance needs a step below h_min */
    MB_ADAPT_BAD_OPTIONS = 4,    /* tolerances, limits or the interval are not valid */
    MB_ADAPT_NO_MEMORY = 5,
    MB_ADAPT_BAD_GRID = 6        /* a plug-in element's sampling period is not positive and finite (element.h) */
};

typedef struct {
    double rtol;     /* relative tolerance (1) */
    double atol;     /* absolute tolerance, in the units of each state component */
    double h_init;   /* first trial step, s; <= 0: the whole interval (capped by h_max) */
    double h_max;    /* largest step, s; <= 0: no limit but the interval */
    double h_min;    /* smallest step, s, before giving up; <= 0: 1e-12 times the interval */
    long max_steps;  /* attempted steps (accepted + rejected) per call; <= 0: 100000 */
    int method;      /* enum mb_adapt_method */
} mb_adapt_options;

typedef struct {
    long accepted, rejected, evaluations;
    double t_reached; /* time reached from the start of the interval, s */
    double h_last;    /* last step tried, s */
    double h_next;    /* step the controller proposes next, s */
    double err_norm;  /* error norm of the last step tried (<= 1 accepted) */
    int rhs_error;    /* the right-hand side's code when status is MB_ADAPT_RHS_ERROR */
} mb_adapt_stats;

/* defaults: rtol = atol = 1e-6, DP54, no step limits beyond the interval */
void mb_adapt_defaults(mb_adapt_options *opt);

/* Integrate x = [q; y] over span (s) with tau and fext held, quaternions
 * renormalized after every accepted step. On MB_ADAPT_OK, (q, y) hold the
 * state at the end; otherwise the last accepted state (at stats.t_reached).
 * stats may be NULL. ode->work is not used (the stages are allocated here),
 * so f may use all of it. */
int mb_adapt_advance(const mb_ode *ode, double *q, double *y, const double *tau, const double *fext,
                     double span, const mb_adapt_options *opt, mb_adapt_stats *stats);

/* one-line description of a status code (static text) */
const char *mb_adapt_message(int status);

/* the mb_ode of a rigid tree in (q, v) and in canonical variables (q, p),
 * with the model's force elements (the right-hand sides of mb_rk4 and
 * mb_rk4_canonical) */
void mb_rigid_ode(const mb_model *m, mb_data *d, mb_ode *ode);
void mb_canonical_ode(const mb_model *m, mb_data *d, mb_ode *ode);

#endif
