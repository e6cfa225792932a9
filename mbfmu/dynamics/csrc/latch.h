/*
 * Hinge latches: a force element with events (the deployment latches of the
 * satellite plant).
 *
 * Hinge j (a 1-DOF joint with configuration index iq[j], velocity index
 * iv[j]) travels past its deployed stop by d_j = sign[j] q[iq[j]]. Its latch
 * engages (z_j: 0 -> 1, never back) at the instant d_j first reaches 0, and
 * from then on adds the stiffness k (N m/rad) and damping c (N m s/rad) about
 * the deployed angle to the hinge's own spring (K0, D0, rest Q0):
 *     K = K0 + k,  D = D0 + c,  rest = K0 Q0 / K.
 * Elastic energy stored in engaged latches: 1/2 k sum_j z_j q[iq[j]]^2.
 */
#ifndef MBFMU_LATCH_H
#define MBFMU_LATCH_H

#include "mb.h"
#include "adaptive.h"

typedef struct {
    int n;               /* hinges */
    const int *iq, *iv;  /* (n) coordinate indices of each hinge */
    const double *sign;  /* (n) +-1: travel past the stop is sign q */
    double k, c;         /* latch stiffness (N m/rad) and damping (N m s/rad) */
} mb_latches;

/* State after dt (s) from (q, v, z) with tau held, error-controlled by
 * mb_adapt_advance with opt between events: an interval in which a free
 * hinge reaches its stop is split at that instant (located by bisection to
 * 1e-13 rad or 2^-60 of the interval, each half integrated anew) and its
 * latch engages, so no integration step sees the switch. The model's joint
 * forces are those of the engaged latches during the call and restored on
 * return. Returns MB_ADAPT_OK or the status of the failing mb_adapt_advance
 * call (stats, which may be NULL, are then that call's; q, v, z the last
 * state reached), MB_ADAPT_NO_MEMORY when the workspace cannot be allocated. */
int mb_latch_advance(const mb_model *m, mb_data *d, const mb_latches *L, double *q, double *v, double *z,
                     const double *tau, double dt, const mb_adapt_options *opt, mb_adapt_stats *stats);

/* dq/dt, dv/dt at (q, v) with the latches z engaged (the right-hand side
 * mb_latch_advance integrates between events; the model's joint forces are
 * restored on return). Returns as mb_rhs, or MB_ADAPT_NO_MEMORY. */
int mb_latch_rhs(const mb_model *m, mb_data *d, const mb_latches *L, const double *q, const double *v, const double *z,
                 const double *tau, double *qdot, double *vdot);

/* elastic energy of the engaged latches at q, J */
double mb_latch_energy(const mb_latches *L, const double *q, const double *z);

#endif
