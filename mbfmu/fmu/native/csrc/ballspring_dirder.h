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
void mbn_ballspring_tangents(const mb_model *m, const double *q, const double *vel, const double *dq,
                             const double *dvel, double *dtau);

/* tangent (J) of their elastic energy along dq */
double mbn_ballspring_energy_tangent(const mb_model *m, const double *q, const double *dq);

#endif
