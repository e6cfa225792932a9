/* A test-only frame element (mbfmu/dynamics/csrc/element.h, the block "frame
 * elements"): the plant moves in a frame whose acceleration steps, at t_on (s),
 * from zero to
 *   a(t, u) = (a0 + u[input]) axis   (m/s^2; t >= t_on),
 * a0 (m/s^2) constant and u[input] a plant input (m/s^2; input -1: none). Its
 * tangent along du is du[input] axis from t_on on (zero before), and t_on is
 * its one kink in time (a Model Exchange time event). No force, no states.
 * Parameters: axis (3, unit), a0 (m/s^2), t_on (s), input (a whole number). */
#include <math.h>

#include "element.h"

enum { FS_AX = 0, FS_A0 = 3, FS_TON, FS_INPUT, FS_N };

/* the input's index, -1 for none, -2 when it names no input of the nu */
static int step_input(const double *par, int nu) {
    double k = par[FS_INPUT];
    if (k < 0) return -1;
    return k < nu && k == floor(k) ? (int)k : -2;
}

static void step_accel(const double *par, double t, const double *u, int nu, double *a) {
    int k = step_input(par, nu);
    double s = t >= par[FS_TON] ? par[FS_A0] + (k >= 0 ? u[k] : 0.0) : 0.0;
    if (k == -2) s = NAN;
    for (int r = 0; r < 3; ++r) a[r] = s * par[FS_AX + r];
}

static void step_accel_tangent(const double *par, double t, const double *u, int nu, const double *du, double *da) {
    (void)u;
    int k = step_input(par, nu);
    double d = t >= par[FS_TON] && k >= 0 ? du[k] : 0.0;
    if (k == -2) d = NAN;
    for (int r = 0; r < 3; ++r) da[r] = d * par[FS_AX + r];
}

static double step_next_kink(const double *par, double t) {
    return par[FS_TON] > t + 1e-12 * fmax(1.0, fabs(t)) ? par[FS_TON] : INFINITY;
}

const mbn_element_class test_frame_step = {
    .name = "test frame step",
    .npar = FS_N,
    .frame_accel = step_accel,
    .frame_accel_tangent = step_accel_tangent,
    .frame_next_kink = step_next_kink,
};
