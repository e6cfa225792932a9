/*
 * Exact tangents of a spherical joint's spring, damper and range limits
 * (mb_passive_forces, algorithms.c): on each component k of the rotation
 * vector phi = log(e) of the joint quaternion e (shortest rotation),
 * tau_k = -K (phi_k - q0_k) - D w_k, plus the one-sided limit outside
 * [lo, hi] (never pulling), w the joint's angular velocity.
 *
 * The runtime reads e projected to unit norm and dirder.c seeds its
 * projected tangent de, so log is differentiated at e / |e|: with
 * s = |vec e|, a = 2 atan2(s, |w0|), phi = sign(w0) (a / s) vec e,
 * da = 2 (|w0| ds - s sign(w0) dw0) (unit e), ds = vec e . vec de / s,
 * dphi = sign(w0) [(da / s - a ds / s^2) vec e + (a / s) vec de];
 * near the identity (s < 1e-12, as the kernel's branch) phi = 2 sign vec e.
 * Piecewise smooth: at w0 = 0 (a half turn) the shortest rotation flips, and
 * the limits switch; the tangent is that of the piece the torque evaluates
 * (the kernel's tests), one-sided on a switching surface.
 */
#include <math.h>

#include "ballspring_dirder.h"

/* phi (3) and its tangent dphi (3) of the unit quaternion of e along the unit-sphere tangent de */
static void log_tangent(const double *e0, const double *de, double *phi, double *dphi) {
    double n = sqrt(e0[0] * e0[0] + e0[1] * e0[1] + e0[2] * e0[2] + e0[3] * e0[3]);
    double e[4] = {e0[0] / n, e0[1] / n, e0[2] / n, e0[3] / n};
    double w = e[0], s = sqrt(e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    double sign = w < 0 ? -1.0 : 1.0, aw = fabs(w);
    double a = 2.0 * atan2(s, aw);
    if (!(s > 1e-12)) {
        for (int k = 0; k < 3; ++k) { phi[k] = 2.0 * sign * e[1 + k]; dphi[k] = 2.0 * sign * de[1 + k]; }
        return;
    }
    double ds = (e[1] * de[1] + e[2] * de[2] + e[3] * de[3]) / s;
    double da = 2.0 * (aw * ds - s * sign * de[0]) / (s * s + aw * aw);
    double k = sign * a / s, dk = sign * (da / s - a * ds / (s * s));
    for (int j = 0; j < 3; ++j) { phi[j] = k * e[1 + j]; dphi[j] = dk * e[1 + j] + k * de[1 + j]; }
}

void mbn_ballspring_tangents(const mb_model *m, mb_data *ws, const double *q, const double *vel, const double *dq,
                             const double *dvel, double *dtau) {
    if (!m->has_dof_force) return;
    for (int i = 1; i < m->nb; ++i) {
        if (m->jtype[i] != MB_SPHERICAL) continue;
        double phi[3], dphi[3];
        log_tangent(q + m->iq[i], dq + m->iq[i], phi, dphi);
        for (int k = 0; k < 3; ++k) {
            int iv = m->iv[i] + k;
            const double *P = ws->dof_force + DF_N * iv;
            double d = phi[k], wv = vel[iv], dd = dphi[k], dw = dvel[iv];
            dtau[iv] += mbn_dof_force_tangent(P, d, wv, dd, dw);
        }
    }
}

double mbn_ballspring_energy_tangent(const mb_model *m, mb_data *ws, const double *q, const double *dq) {
    double de = 0.0;
    if (!m->has_dof_force) return de;
    for (int i = 1; i < m->nb; ++i) {
        if (m->jtype[i] != MB_SPHERICAL) continue;
        double phi[3], dphi[3];
        log_tangent(q + m->iq[i], dq + m->iq[i], phi, dphi);
        for (int k = 0; k < 3; ++k) {
            const double *P = ws->dof_force + DF_N * (m->iv[i] + k);
            double d = phi[k], pen = d < P[DF_LO] ? d - P[DF_LO] : (d > P[DF_HI] ? d - P[DF_HI] : 0.0);
            de += (P[DF_K] * (d - P[DF_Q0]) + P[DF_KLIM] * pen) * dphi[k];
        }
    }
    return de;
}
