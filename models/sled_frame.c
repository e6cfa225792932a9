/* The sled frame of the crash occupant plant (crash_occupant.py), a frame element
 * (mbfmu/dynamics/csrc/element.h): the plant is written in the frame of a sled that
 * translates with the acceleration
 *   a_s(t, u) = u[input] (if input >= 0) - peak sin(pi (t - start) / duration)
 *               on [start, start + duration]   (m/s^2)
 * along its unit axis (world axes): a half-sine deceleration pulse of peak `peak` (m/s^2,
 * none when 0) and duration `duration` (s) from `start` (s), plus the plant input `input`.
 * The frame's acceleration is a = a_s axis (m/s^2); the core runs the dynamics under the
 * gravity g - a. The pulse's start and end are kinks in time (Model Exchange's time events).
 * Parameters: axis (3, unit), peak (m/s^2), duration (s), start (s), input (the 0-based
 * index of the input added, -1: none; a whole number). No force, no states. */
#include <math.h>

#include "element.h"

#define SLED_PI 3.14159265358979323846

enum { SF_AX = 0, SF_PEAK = 3, SF_DUR, SF_START, SF_INPUT, SF_N };

/* the input's index, or -1 for none; -2 when it names no input of the nu */
static int sled_input(const double *par, int nu) {
    double k = par[SF_INPUT];
    if (k < 0) return -1;
    return k < nu && k == floor(k) ? (int)k : -2;
}

static double sled_acceleration(const double *par, double t, const double *u, int nu) {
    int k = sled_input(par, nu);
    if (k == -2) return NAN; /* never a silently wrong frame */
    double a = k >= 0 ? u[k] : 0.0;
    if (par[SF_PEAK] > 0 && par[SF_START] <= t && t <= par[SF_START] + par[SF_DUR])
        a -= par[SF_PEAK] * sin(SLED_PI * (t - par[SF_START]) / par[SF_DUR]);
    return a;
}

static void sled_accel(const double *par, double t, const double *u, int nu, double *a) {
    double a_s = sled_acceleration(par, t, u, nu);
    for (int r = 0; r < 3; ++r) a[r] = a_s * par[SF_AX + r];
}

/* a_s is affine in u[input]: da = du[input] axis */
static void sled_accel_tangent(const double *par, double t, const double *u, int nu, const double *du, double *da) {
    (void)t;
    (void)u;
    int k = sled_input(par, nu);
    double d = k >= 0 ? du[k] : (k == -2 ? NAN : 0.0);
    for (int r = 0; r < 3; ++r) da[r] = d * par[SF_AX + r];
}

/* the pulse's start, then its end, after t (within 1e-12 of t counts as passed) */
static double sled_next_kink(const double *par, double t) {
    double eps = 1e-12 * fmax(1.0, fabs(t));
    if (!(par[SF_PEAK] > 0)) return INFINITY;
    if (par[SF_START] > t + eps) return par[SF_START];
    if (par[SF_START] + par[SF_DUR] > t + eps) return par[SF_START] + par[SF_DUR];
    return INFINITY;
}

const mbn_element_class sled_frame = {
    .name = "sled frame",
    .npar = SF_N,
    .frame_accel = sled_accel,
    .frame_accel_tangent = sled_accel_tangent,
    .frame_next_kink = sled_next_kink,
};
