/* A test-only plug-in element (mbfmu/dynamics/csrc/element.h): a linear
 * damper between a body point and the ground, F = -c V (N; c in N s/m, V
 * the point's world velocity, m/s), with one continuous state, the energy
 * it has dissipated, E (J), of rate c |V|^2 (W), and one output, that
 * rate, the power it dissipates P = c |V|^2 (W). Its tangent is dF = -c dV,
 * dEdot = dP = 2 c V . dV. */
#include "element.h"

static void damper_force(const double *par, double t, const double *x, const double *V, const double *s, double *F,
                         double *sdot) {
    (void)t;
    (void)x;
    (void)s;
    for (int k = 0; k < 3; ++k) F[k] = -par[0] * V[k];
    sdot[0] = par[0] * (V[0] * V[0] + V[1] * V[1] + V[2] * V[2]);
}

static void damper_tangent(const double *par, double t, const double *x, const double *V, const double *s,
                           const double *dx, const double *dV, const double *ds, double *dF, double *dsdot) {
    (void)t;
    (void)x;
    (void)s;
    (void)dx;
    (void)ds;
    for (int k = 0; k < 3; ++k) dF[k] = -par[0] * dV[k];
    dsdot[0] = 2.0 * par[0] * (V[0] * dV[0] + V[1] * dV[1] + V[2] * dV[2]);
}

static double damper_power(const double *par, double t, const double *x, const double *V, const double *s, int k) {
    (void)t;
    (void)x;
    (void)s;
    (void)k;
    return par[0] * (V[0] * V[0] + V[1] * V[1] + V[2] * V[2]);
}

static double damper_power_tangent(const double *par, double t, const double *x, const double *V, const double *s,
                                   int k, const double *dx, const double *dV, const double *ds) {
    (void)t;
    (void)x;
    (void)s;
    (void)k;
    (void)dx;
    (void)ds;
    return 2.0 * par[0] * (V[0] * dV[0] + V[1] * dV[1] + V[2] * dV[2]);
}

const mbn_element_class test_point_damper = {"point damper", 1, 1, damper_force, damper_tangent,
                                             1, damper_power, damper_power_tangent};
