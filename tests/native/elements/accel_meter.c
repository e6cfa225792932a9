/* A test-only plug-in element (mbfmu/dynamics/csrc/element.h) with no force:
 * an accelerometer at a body point that integrates the x and z components of
 * the specific force A it reads (world axes, m/s^2: the point's acceleration
 * minus gravity) into its two states (m/s). Their rates are (A_x, A_z), their
 * tangent (dA_x, dA_z). */
#include "element.h"

static void meter_rate(const double *par, double t, const double *x, const double *V, const double *A, const double *s,
                       double *sdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)V;
    (void)s;
    sdot[0] += A[0];
    sdot[1] += A[2];
}

static void meter_rate_tangent(const double *par, double t, const double *x, const double *V, const double *A,
                               const double *s, const double *dx, const double *dV, const double *dA,
                               const double *ds, double *dsdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)V;
    (void)A;
    (void)s;
    (void)dx;
    (void)dV;
    (void)ds;
    dsdot[0] += dA[0];
    dsdot[1] += dA[2];
}

const mbn_element_class test_accel_meter = {
    .name = "accelerometer",
    .nstate = 2,
    .accel_rate = meter_rate,
    .accel_rate_tangent = meter_rate_tangent,
};
