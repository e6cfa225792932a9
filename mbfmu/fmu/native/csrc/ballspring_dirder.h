/*
 * Tangents of the spherical joints' springs, dampers and range limits (the
 * rotation-vector law of mb_passive_forces, algorithms.c) for the directional
 * derivatives of dirder.c. See ballspring_dirder.c.
 */
#ifndef MBFMU_BALLSPRING_DIRDER_H
#define MBFMU_BALLSPRING_DIRDER_H

#include "mb.h"

/* dtau (+)= the tangent of the spherical joints' spring, damper and limit
 * torques at (q, vel) along (dq, dvel), dq the projected configuration seed */
void mbn_ballspring_tangents(const mb_model *m, mb_data *ws, const double *q, const double *vel, const double *dq,
                             const double *dvel, double *dtau);

/* tangent (J) of their elastic energy along dq */
double mbn_ballspring_energy_tangent(const mb_model *m, mb_data *ws, const double *q, const double *dq);

/* Tangent of one coordinate's spring-damper with its range limit (the law of mb.h's dof_force
 * entries P): at deflection d and rate wv, seeded with dd and dw. The limit's piece counts only
 * where its force pushes back (as the kernel evaluates it): one-sided at the limits. Shared by the
 * ball-joint and the scalar-joint tangents. */
static inline double mbn_dof_force_tangent(const double *P, double d, double wv, double dd, double dw) {
    double t = -P[DF_K] * dd - P[DF_D] * dw;
    if (d < P[DF_LO]) {
        if (P[DF_KLIM] * (P[DF_LO] - d) - P[DF_DLIM] * wv > 0) t += -P[DF_KLIM] * dd - P[DF_DLIM] * dw;
    } else if (d > P[DF_HI]) {
        if (P[DF_KLIM] * (d - P[DF_HI]) + P[DF_DLIM] * wv > 0) t -= P[DF_KLIM] * dd + P[DF_DLIM] * dw;
    }
    return t;
}

#endif
