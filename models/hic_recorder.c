/* The head injury criterion (HIC15) recorder of the crash occupant plant
 * (crash_occupant.py), a plug-in element (mbfmu/dynamics/csrc/element.h) with no
 * force: an accelerometer at a point of the head that keeps, over the run,
 *   - its continuous state I, the integral of |A| / unit (g.s with unit =
 *     9.80665 m/s^2; A the specific force the point reads, m/s^2), of rate |A| / unit;
 *   - its discrete states [hist (HIC_NH); max]: I at the last HIC_NH instants of
 *     its grid of spacing T (s), oldest first, and the running maximum over every
 *     window of up to (HIC_NH - 1) T ending at a grid instant t2 (from each earlier
 *     instant t1 of hist) of  (t2 - t1) [(I(t2) - I(t1)) / (t2 - t1)]^2.5  (time in s).
 * Parameters: T (s), unit (m/s^2). HIC15 on a 0.5 ms grid: HIC_NH = 31. */
#include <math.h>

#include "element.h"

#define HIC_NH 31

static void hic_rate(const double *par, double t, const double *x, const double *V, const double *A, const double *s,
                     double *sdot) {
    (void)t;
    (void)x;
    (void)V;
    (void)s;
    sdot[0] += sqrt(A[0] * A[0] + A[1] * A[1] + A[2] * A[2]) / par[1];
}

/* the tangent of |A| / unit: A . dA / (|A| unit) (|A| is smooth off A = 0, where 0 is returned) */
static void hic_rate_tangent(const double *par, double t, const double *x, const double *V, const double *A,
                             const double *s, const double *dx, const double *dV, const double *dA, const double *ds,
                             double *dsdot) {
    (void)t;
    (void)x;
    (void)V;
    (void)s;
    (void)dx;
    (void)dV;
    (void)ds;
    double n = sqrt(A[0] * A[0] + A[1] * A[1] + A[2] * A[2]);
    dsdot[0] += n > 0 ? (A[0] * dA[0] + A[1] * dA[1] + A[2] * dA[2]) / (n * par[1]) : 0.0;
}

static double hic_period(const double *par) { return par[0]; }

/* at a grid instant: shift hist, append I, update max */
static void hic_sample(const double *par, double t, const double *s, double *z) {
    (void)t;
    double *hist = z, T = par[0], best = z[HIC_NH];
    for (int k = 0; k + 1 < HIC_NH; ++k) hist[k] = hist[k + 1];
    hist[HIC_NH - 1] = s[0];
    for (int k = 0; k + 1 < HIC_NH; ++k) {
        double dt = T * (double)(HIC_NH - 1 - k);
        double dI = fmax(hist[HIC_NH - 1] - hist[k], 0.0);
        double val = dt * pow(dI / dt, 2.5);
        if (val > best) best = val;
    }
    z[HIC_NH] = best;
}

const mbn_element_class hic15_recorder = {
    .name = "HIC15 recorder",
    .npar = 2,
    .nstate = 1,
    .accel_rate = hic_rate,
    .accel_rate_tangent = hic_rate_tangent,
    .ndisc = HIC_NH + 1,
    .period = hic_period,
    .sample = hic_sample,
};
