/* A test-only plug-in element (mbfmu/dynamics/csrc/element.h) with no force and
 * discrete states on a time grid: it integrates the speed |V| (m/s) of its point
 * into its continuous state s = [path] (m) and, at each instant k T of its grid
 * (T = par[0], s), samples z = [path at the instant (m), the number of instants,
 * the largest growth of path between two consecutive instants (m)] (the running
 * maximum over a sliding window that the HIC recorder keeps, in its simplest form). */
#include <math.h>

#include "element.h"

static void sampler_force(const double *par, double t, const double *x, const double *V, const double *s, double *F,
                          double *sdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)s;
    F[0] = F[1] = F[2] = 0.0;
    sdot[0] = sqrt(V[0] * V[0] + V[1] * V[1] + V[2] * V[2]);
}

static void sampler_tangent(const double *par, double t, const double *x, const double *V, const double *s,
                            const double *dx, const double *dV, const double *ds, double *dF, double *dsdot) {
    (void)par;
    (void)t;
    (void)x;
    (void)s;
    (void)dx;
    (void)ds;
    double n = sqrt(V[0] * V[0] + V[1] * V[1] + V[2] * V[2]);
    dF[0] = dF[1] = dF[2] = 0.0;
    dsdot[0] = n > 0 ? (V[0] * dV[0] + V[1] * dV[1] + V[2] * dV[2]) / n : 0.0;
}

static double sampler_period(const double *par) { return par[0]; }

static void sampler_sample(const double *par, double t, const double *s, double *z) {
    (void)par;
    (void)t;
    double growth = s[0] - z[0];
    z[0] = s[0];
    z[1] += 1.0;
    if (growth > z[2]) z[2] = growth;
}

const mbn_element_class test_grid_sampler = {
    .name = "grid sampler",
    .npar = 1,
    .nstate = 1,
    .force = sampler_force,
    .tangent = sampler_tangent,
    .ndisc = 3,
    .period = sampler_period,
    .sample = sampler_sample,
};
