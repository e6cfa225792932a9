/* A test-only plug-in element (mbfmu/dynamics/csrc/element.h) with no force:
 * an accelerometer at a body point that integrates the x and z components of
 * the specific force A it reads (world axes, m/s^2: the point's acceleration
 * minus gravity) into its two states (m/s). Their rates are (A_x, A_z), their
 * tangent (dA_x, dA_z). */
#include "element.h"

static void meter_force(const double *par, double t, const double *x, const double *V, const double *s, double *F,
                        double *sdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)V;
    (void)s;
    F[0] = F[1] = F[2] = 0.0;
    sdot[0] = sdot[1] = 0.0;
}

static void meter_tangent(const double *par, double t, const double *x, const double *V, const double *s,
                          const double *dx, const double *dV, const double *ds, double *dF, double *dsdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)V;
    (void)s;
    (void)dx;
    (void)dV;
    (void)ds;
    dF[0] = dF[1] = dF[2] = 0.0;
    dsdot[0] = dsdot[1] = 0.0;
}

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

const mbn_element_class test_accel_meter = {"accelerometer", 0, 2, meter_force, meter_tangent, 0, NULL, NULL,
                                            meter_rate, meter_rate_tangent};
