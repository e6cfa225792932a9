/* A test-only plug-in element on one joint coordinate (element.h's joint rows, state
 * events and energy): a one-sided stop that catches the joint. Free, the joint moves on
 * its own; at the instant its travel past the stop, d = sign (q - q_stop), first reaches 0
 * the stop engages (its discrete state z: 0 -> 1, never back) and from then on holds the
 * joint with a two-sided spring-damper about q_stop:
 *     tau = -z (k (q - q_stop) + c v)       (N m, or N on a prismatic joint)
 * storing the elastic energy 1/2 z k (q - q_stop)^2 (J). Its one event indicator is d
 * while free (rad or m) and +1 once engaged. Parameters: q_stop (rad or m), sign (+-1),
 * k (N m/rad or N/m), c (N m s/rad or N s/m). */
#include "element.h"

static void stop_force(const double *par, double t, const double *qj, const double *vj, const double *s,
                       const double *z, double *tauj) {
    (void)t;
    (void)s;
    tauj[0] = z[0] > 0.5 ? -(par[2] * (qj[0] - par[0]) + par[3] * vj[0]) : 0.0;
}

static void stop_tangent(const double *par, double t, const double *qj, const double *vj, const double *s,
                         const double *z, const double *dqj, const double *dvj, const double *ds, double *dtauj) {
    (void)t;
    (void)qj;
    (void)vj;
    (void)s;
    (void)ds;
    dtauj[0] = z[0] > 0.5 ? -(par[2] * dqj[0] + par[3] * dvj[0]) : 0.0;
}

static void stop_event(const double *par, double t, const double *qj, const double *vj, const double *s,
                       const double *z, double *g) {
    (void)t;
    (void)vj;
    (void)s;
    g[0] = z[0] > 0.5 ? 1.0 : par[1] * (qj[0] - par[0]);
}

/* engaged at a located event: the travel reached (to round-off of the location) */
static void stop_on_event(const double *par, double t, const double *qj, const double *vj, const double *s,
                          double *z) {
    (void)t;
    (void)vj;
    (void)s;
    if (z[0] < 0.5 && par[1] * (qj[0] - par[0]) >= -1e-12) z[0] = 1.0;
}

static double stop_energy(const double *par, const double *qj, const double *vj, const double *s, const double *z) {
    (void)vj;
    (void)s;
    double d = qj[0] - par[0];
    return z[0] > 0.5 ? 0.5 * par[2] * d * d : 0.0;
}

static double stop_energy_tangent(const double *par, const double *qj, const double *vj, const double *s,
                                  const double *z, const double *dqj, const double *dvj, const double *ds) {
    (void)vj;
    (void)s;
    (void)dvj;
    (void)ds;
    return z[0] > 0.5 ? par[2] * (qj[0] - par[0]) * dqj[0] : 0.0;
}

const mbn_element_class test_joint_stop = {
    .name = "joint stop",
    .npar = 4,
    .ndisc = 1,
    .njoint = 1,
    .joint_force = stop_force,
    .joint_tangent = stop_tangent,
    .nevent = 1,
    .event = stop_event,
    .on_event = stop_on_event,
    .energy = stop_energy,
    .energy_tangent = stop_energy_tangent,
};
