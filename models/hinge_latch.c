/* The deployment latch of one hinge of the satellite plant (satellite.py), a plug-in
 * element (mbfmu/dynamics/csrc/element.h) on the hinge's joint coordinate (its joint
 * row: q the hinge angle from the deployed stop, rad; v its rate, rad/s).
 *
 * The hinge travels past its deployed stop by d = sign q (sign = +-1, par[0]). Its latch
 * engages (its discrete state z: 0 -> 1, never back) at the instant d first reaches 0,
 * and from then on adds the stiffness k (N m/rad, par[1]) and the damping c (N m s/rad,
 * par[2]) about the deployed angle (q = 0) to the hinge's own spring and damper:
 *     tau = -z (k q + c v)   (N m),
 * storing the elastic energy 1/2 z k q^2 (J). Its one event indicator is d (rad) while
 * free and +1 once engaged; at an event it engages when d >= -1e-12 rad (the located
 * instant is on the reached side to 1e-13 rad; a hinge within round-off of its stop at
 * another hinge's event engages with it). */
#include "element.h"

static void latch_force(const double *par, double t, const double *qj, const double *vj, const double *s,
                        const double *z, double *tauj) {
    (void)t;
    (void)s;
    tauj[0] = z[0] > 0.5 ? -(par[1] * qj[0] + par[2] * vj[0]) : 0.0;
}

static void latch_tangent(const double *par, double t, const double *qj, const double *vj, const double *s,
                          const double *z, const double *dqj, const double *dvj, const double *ds, double *dtauj) {
    (void)t;
    (void)qj;
    (void)vj;
    (void)s;
    (void)ds;
    dtauj[0] = z[0] > 0.5 ? -(par[1] * dqj[0] + par[2] * dvj[0]) : 0.0;
}

static void latch_event(const double *par, double t, const double *qj, const double *vj, const double *s,
                        const double *z, double *g) {
    (void)t;
    (void)vj;
    (void)s;
    g[0] = z[0] > 0.5 ? 1.0 : par[0] * qj[0];
}

static void latch_on_event(const double *par, double t, const double *qj, const double *vj, const double *s,
                           double *z) {
    (void)t;
    (void)vj;
    (void)s;
    if (z[0] < 0.5 && par[0] * qj[0] >= -1e-12) z[0] = 1.0;
}

static double latch_energy(const double *par, const double *qj, const double *vj, const double *s,
                           const double *z) {
    (void)vj;
    (void)s;
    return z[0] > 0.5 ? 0.5 * par[1] * qj[0] * qj[0] : 0.0;
}

static double latch_energy_tangent(const double *par, const double *qj, const double *vj, const double *s,
                                   const double *z, const double *dqj, const double *dvj, const double *ds) {
    (void)vj;
    (void)s;
    (void)dvj;
    (void)ds;
    return z[0] > 0.5 ? par[1] * qj[0] * dqj[0] : 0.0;
}

const mbn_element_class hinge_latch = {
    .name = "hinge latch",
    .npar = 3,
    .ndisc = 1,
    .njoint = 1,
    .joint_force = latch_force,
    .joint_tangent = latch_tangent,
    .nevent = 1,
    .event = latch_event,
    .on_event = latch_on_event,
    .energy = latch_energy,
    .energy_tangent = latch_energy_tangent,
};
