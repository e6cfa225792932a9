/*
 * Exact tangents of the sphere-plane contacts and ground-anchored cables
 * (the laws of mb_contact_force and mb_cable_force, algorithms.c: the one
 * implementation the Python plant and the FMU evaluate), forward mode, for
 * dirder.c. Both laws are piecewise smooth: a contact is off when apart
 * (depth <= 0) or when its normal force would pull (fn <= 0), its damping
 * fades in linearly over the ramp (depth < ramp), and a cable is off when
 * slack or when its tension would be compressive, with the same ramp on the
 * stretch. Within each piece the law is smooth (the regularized friction
 * -mu fn vt / sqrt(|vt|^2 + eps^2) everywhere); the tangent is the active
 * piece's, chosen by the same tests as the force (strict inequalities as
 * there), so on a switching surface it is the one-sided derivative of the
 * piece the force evaluates (exact off the surfaces).
 *
 * Tangents along a direction with body-frame configuration twists z and
 * velocity tangents dv: a body point rB fixed in body b moves by
 * dx = R (z_ang x rB + z_lin) and its velocity V = R (w x rB + v_lin) by
 * dV = R (z_ang x u + dw x rB + dv_lin), u = w x rB + v_lin; the body-frame
 * image R^T F of a world force has tangent R^T dF - z_ang x R^T F. A
 * contact's force point rB = c - r R^T n moves in the body:
 * drB = r (z_ang x R^T n).
 */
#include <math.h>

#include "contact_dirder.h"
#include "spatial.h"

#define B6(p, i) ((p) + 6 * (i))
#define B9(p, i) ((p) + 9 * (i))
#define B3(p, i) ((p) + 3 * (i))

static double ramp_of(double x, double ramp, double dx, double *dr) {
    double r = x / ramp;
    if (r < 1.0) { *dr = dx / ramp; return r; }
    *dr = 0.0;
    return 1.0;
}

/* world position x, velocity V and tangents dx, dV of the body point rB of
 * body b with the point's own body-frame tangent drB (NULL: fixed) */
static void motion(mb_data *ws, const double *z, const double *dv, int b, const double *rB, const double *drB,
                   double *x, double *dx, double *V, double *dV) {
    const double *R = B9(ws->RW, b), *zb = B6(z, b), *v = B6(ws->v, b), *dvb = B6(dv, b);
    double t[3], u[3], e[3];
    mv3(R, rB, t);
    for (int k = 0; k < 3; ++k) x[k] = ws->pW[3 * b + k] + t[k];
    cross3(zb, rB, t);
    for (int k = 0; k < 3; ++k) t[k] += zb[3 + k] + (drB ? drB[k] : 0.0);
    mv3(R, t, dx);
    cross3(v, rB, u);
    for (int k = 0; k < 3; ++k) u[k] += v[3 + k];
    mv3(R, u, V);
    cross3(zb, u, e);
    cross3(dvb, rB, t);
    for (int k = 0; k < 3; ++k) e[k] += t[k] + dvb[3 + k];
    if (drB) {
        cross3(v, drB, t);
        for (int k = 0; k < 3; ++k) e[k] += t[k];
    }
    mv3(R, e, dV);
}

/* fx += the body-frame force of the world force F at rB of body b, dfx += its tangent
 * (drB: the tangent of rB in the body, NULL: fixed) */
static void add_force(mb_data *ws, const double *z, int b, const double *rB, const double *drB, const double *F,
                      const double *dF, double *fx, double *dfx) {
    if (b <= 0) return;
    const double *R = B9(ws->RW, b), *zb = B6(z, b);
    double f[3], df[3], t[3], n[3];
    double *fe = B6(fx, b), *dfe = B6(dfx, b);
    mtv3(R, F, f);
    mtv3(R, dF, df);
    cross3(zb, f, t);
    for (int k = 0; k < 3; ++k) df[k] -= t[k];
    cross3(rB, f, n);
    for (int k = 0; k < 3; ++k) { fe[k] += n[k]; fe[3 + k] += f[k]; }
    cross3(rB, df, n);
    for (int k = 0; k < 3; ++k) { dfe[k] += n[k]; dfe[3 + k] += df[k]; }
    if (drB) {
        cross3(drB, f, n);
        for (int k = 0; k < 3; ++k) dfe[k] += n[k];
    }
}

/* contact k: the point rB and its tangent, the depth and its tangent, the
 * point's motion; returns the depth */
static double contact_point(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k, double *rB, double *drB,
                            double *dd, double *V, double *dV) {
    const double *P = m->contacts + CT_N * k, *n = P + CT_NX;
    int b = (int)P[CT_BODY];
    double nB[3], t[3], xc[3], dxc[3], Vc[3], dVc[3], x[3], dx[3];
    motion(ws, z, dv, b, P + CT_CX, NULL, xc, dxc, Vc, dVc);
    double depth = P[CT_R] - (dot3(n, xc) - P[CT_OFF]);
    *dd = -dot3(n, dxc);
    mtv3(B9(ws->RW, b), n, nB);
    cross3(B6(z, b), nB, t);
    for (int j = 0; j < 3; ++j) { rB[j] = P[CT_CX + j] - nB[j] * P[CT_R]; drB[j] = P[CT_R] * t[j]; }
    motion(ws, z, dv, b, rB, drB, x, dx, V, dV);
    return depth;
}

static void contact(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k, double *fx, double *dfx) {
    const double *P = m->contacts + CT_N * k, *n = P + CT_NX;
    double rB[3], drB[3], dd, v[3], dvw[3], dr;
    double depth = contact_point(m, ws, z, dv, k, rB, drB, &dd, v, dvw);
    if (depth <= 0) return;
    double vn = dot3(n, v), dvn = dot3(n, dvw);
    double r = ramp_of(depth, P[CT_RAMP], dd, &dr);
    double fn = P[CT_K] * depth - P[CT_D] * r * vn;
    if (fn <= 0) return;
    double dfn = P[CT_K] * dd - P[CT_D] * (dr * vn + r * dvn);
    double vt[3], dvt[3], F[3], dF[3];
    for (int j = 0; j < 3; ++j) { vt[j] = v[j] - vn * n[j]; dvt[j] = dvw[j] - dvn * n[j]; }
    double s = sqrt(dot3(vt, vt) + P[CT_EPS] * P[CT_EPS]);
    double mu = P[CT_MU] * fn / s, dmu = P[CT_MU] * (dfn - fn * dot3(vt, dvt) / (s * s)) / s;
    for (int j = 0; j < 3; ++j) {
        F[j] = fn * n[j] - mu * vt[j];
        dF[j] = dfn * n[j] - dmu * vt[j] - mu * dvt[j];
    }
    add_force(ws, z, (int)P[CT_BODY], rB, drB, F, dF, fx, dfx);
}

/* cable k: d = anchor - x (body point to anchor), L = |d|; returns L, with dL */
static double cable_geometry(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k, double *u, double *du,
                             double *dL, double *V, double *dV) {
    const double *P = m->cables + CB_N * k;
    double x[3], dx[3], d[3];
    motion(ws, z, dv, (int)P[CB_BODY], P + CB_PX, NULL, x, dx, V, dV);
    for (int j = 0; j < 3; ++j) d[j] = P[CB_AX + j] - x[j];
    double L = sqrt(dot3(d, d));
    *dL = 0.0;
    if (L < 1e-12) return L;
    for (int j = 0; j < 3; ++j) u[j] = d[j] / L;
    *dL = -dot3(u, dx);
    for (int j = 0; j < 3; ++j) du[j] = (-dx[j] - u[j] * *dL) / L;
    return L;
}

/* cable k's tension T (N, returned; 0 when slack or compressive, as
 * mb_cable_force) with its tangent dT, the unit direction u to the anchor
 * and its tangent du */
static double cable_tension(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k, double *dT, double *u,
                            double *du) {
    const double *P = m->cables + CB_N * k;
    double dL, v[3], dvw[3], dr;
    double L = cable_geometry(m, ws, z, dv, k, u, du, &dL, v, dvw);
    double s = L - P[CB_L0];
    *dT = 0.0;
    if (s <= 0 || L < 1e-12) return 0.0;
    double r = ramp_of(s, P[CB_RAMP], dL, &dr), uv = dot3(u, v);
    double T = P[CB_K] * s - P[CB_D] * r * uv;
    if (T <= 0) return 0.0;
    *dT = P[CB_K] * dL - P[CB_D] * (dr * uv + r * (dot3(du, v) + dot3(u, dvw)));
    return T;
}

double mbn_cable_tension_tangent(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k) {
    double dT, u[3], du[3];
    cable_tension(m, ws, z, dv, k, &dT, u, du);
    return dT;
}

static void cable(const mb_model *m, mb_data *ws, const double *z, const double *dv, int k, double *fx, double *dfx) {
    const double *P = m->cables + CB_N * k;
    double u[3], du[3], dT;
    double T = cable_tension(m, ws, z, dv, k, &dT, u, du);
    if (T <= 0) return;
    double F[3], dF[3];
    for (int j = 0; j < 3; ++j) { F[j] = T * u[j]; dF[j] = dT * u[j] + T * du[j]; }
    add_force(ws, z, (int)P[CB_BODY], P + CB_PX, NULL, F, dF, fx, dfx);
}

void mbn_contact_tangents(const mb_model *m, mb_data *ws, const double *z, const double *dv, double *fx, double *dfx) {
    for (int k = 0; k < m->nct; ++k) contact(m, ws, z, dv, k, fx, dfx);
    for (int k = 0; k < m->ncb; ++k) cable(m, ws, z, dv, k, fx, dfx);
}

double mbn_contact_energy_tangent(const mb_model *m, mb_data *ws, const double *z) {
    double de = 0.0;
    for (int k = 0; k < m->nct; ++k) {
        const double *P = m->contacts + CT_N * k;
        double x[3], dx[3], t[3];
        int b = (int)P[CT_BODY];
        mb_point_position(m, ws, b, P + CT_CX, x);
        cross3(B6(z, b), P + CT_CX, t);
        for (int j = 0; j < 3; ++j) t[j] += B6(z, b)[3 + j];
        mv3(B9(ws->RW, b), t, dx);
        double d = P[CT_R] - (dot3(P + CT_NX, x) - P[CT_OFF]);
        if (d > 0) de -= P[CT_K] * d * dot3(P + CT_NX, dx);
    }
    for (int k = 0; k < m->ncb; ++k) {
        const double *P = m->cables + CB_N * k;
        int b = (int)P[CB_BODY];
        double x[3], dx[3], d[3], t[3];
        mb_point_position(m, ws, b, P + CB_PX, x);
        cross3(B6(z, b), P + CB_PX, t);
        for (int j = 0; j < 3; ++j) t[j] += B6(z, b)[3 + j];
        mv3(B9(ws->RW, b), t, dx);
        for (int j = 0; j < 3; ++j) d[j] = P[CB_AX + j] - x[j];
        double L = sqrt(dot3(d, d)), s = L - P[CB_L0];
        if (s > 0 && L >= 1e-12) de -= P[CB_K] * s * dot3(d, dx) / L;
    }
    return de;
}
