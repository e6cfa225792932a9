/* A test-only plug-in element (mbfmu/fmu/native/csrc/element.h): a linear
 * damper between a body point and the ground, F = -c V (N; c in N s/m, V
 * the point's world velocity, m/s). Its tangent is dF = -c dV. */
#include "element.h"

static void damper_force(const double *par, double t, const double *x, const double *V, double *F) {
    (void)t;
    (void)x;
    for (int k = 0; k < 3; ++k) F[k] = -par[0] * V[k];
}

static void damper_tangent(const double *par, double t, const double *x, const double *V, const double *dx,
                           const double *dV, double *dF) {
    (void)t;
    (void)x;
    (void)V;
    (void)dx;
    for (int k = 0; k < 3; ++k) dF[k] = -par[0] * dV[k];
}

const mbn_element_class test_point_damper = {"point damper", 1, damper_force, damper_tangent};
