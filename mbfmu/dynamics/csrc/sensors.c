/* Output sensors (see sensors.h and mbfmu/dynamics/sensors.py). */
#include <math.h>
#include <string.h>

#include "sensors.h"

/* 1/2 sum_i v_i^T I_i v_i over the bodies (needs mb_kinematics(q, v)) */
static double kinetic_energy(const mb_model *m, const mb_data *d) {
    double e = 0.0;
    for (int i = 1; i < m->nb; ++i) {
        const double *I = m->Ibody + 36 * i, *vi = d->v + 6 * i;
        for (int r = 0; r < 6; ++r) {
            double t = 0.0;
            for (int c = 0; c < 6; ++c) t += I[6 * r + c] * vi[c];
            e += vi[r] * t;
        }
    }
    return 0.5 * e;
}

/* gravity (zero at the world origin) plus the force elements' elastic energy
 * (needs the world poses of mb_kinematics(q)) */
static double potential_energy(const mb_model *m, mb_data *d, const mb_mass_props *mp, const double *q) {
    double e = 0.0, elastic = mb_passive_energy_posed(m, d, q);
    for (int i = 1; i < m->nb; ++i) {
        double c[3];
        mb_point_position(m, d, i, mp->com + 3 * i, c);
        e += mp->mass[i] * (c[0] * d->g[0] + c[1] * d->g[1] + c[2] * d->g[2]);
    }
    return -e + elastic;
}

/* total momentum [H (about the world origin); L], world axes (needs
 * mb_kinematics(q, v)); the steps of mbfmu.dynamics.algorithms.momentum */
static void momenta(const mb_model *m, const mb_data *d, const mb_mass_props *mp, double *HL) {
    memset(HL, 0, 6 * sizeof(double));
    for (int i = 1; i < m->nb; ++i) {
        const double *R = d->RW + 9 * i, *w = d->v + 6 * i, *vl = w + 3, *c = mp->com + 3 * i;
        const double *I = mp->Ic + 9 * i, mi = mp->mass[i];
        double wW[3], cW[3], vc[3], t[3], RI[9], h[3];
        double wc[3] = {w[1] * c[2] - w[2] * c[1], w[2] * c[0] - w[0] * c[2], w[0] * c[1] - w[1] * c[0]};
        for (int r = 0; r < 3; ++r) t[r] = vl[r] + wc[r];
        for (int r = 0; r < 3; ++r) {
            wW[r] = R[3 * r] * w[0] + R[3 * r + 1] * w[1] + R[3 * r + 2] * w[2];
            cW[r] = d->pW[3 * i + r] + (R[3 * r] * c[0] + R[3 * r + 1] * c[1] + R[3 * r + 2] * c[2]);
            vc[r] = R[3 * r] * t[0] + R[3 * r + 1] * t[1] + R[3 * r + 2] * t[2];
        }
        /* (R I R^T) wW */
        for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 3; ++k) RI[3 * r + k] = R[3 * r] * I[k] + R[3 * r + 1] * I[3 + k] + R[3 * r + 2] * I[6 + k];
        for (int r = 0; r < 3; ++r) {
            double s = 0.0;
            for (int k = 0; k < 3; ++k) {
                double RIRt = RI[3 * r] * R[3 * k] + RI[3 * r + 1] * R[3 * k + 1] + RI[3 * r + 2] * R[3 * k + 2];
                s += RIRt * wW[k];
            }
            h[r] = s;
        }
        double cx[3] = {cW[1] * vc[2] - cW[2] * vc[1], cW[2] * vc[0] - cW[0] * vc[2], cW[0] * vc[1] - cW[1] * vc[0]};
        for (int r = 0; r < 3; ++r) {
            HL[r] += h[r] + mi * cx[r];
            HL[3 + r] += mi * vc[r];
        }
    }
}

void mb_momenta(const mb_model *m, mb_data *d, const mb_mass_props *mp, const double *q, const double *v, double *HL) {
    mb_kinematics(m, d, q, v);
    momenta(m, d, mp, HL);
}

void mb_body_quaternion(const mb_model *m, const mb_data *d, int b, double *e) {
    (void)m; /* the uniform (model, data) signature: this one reads the data only */
    const double *R = d->RW + 9 * b;
    double tr = R[0] + R[4] + R[8], s;
    if (tr >= fmax(R[0], fmax(R[4], R[8]))) {
        s = 2.0 * sqrt(1.0 + tr);
        e[0] = s / 4.0; e[1] = (R[7] - R[5]) / s; e[2] = (R[2] - R[6]) / s; e[3] = (R[3] - R[1]) / s;
    } else if (R[0] >= R[4] && R[0] >= R[8]) {
        s = 2.0 * sqrt(1.0 + R[0] - R[4] - R[8]);
        e[0] = (R[7] - R[5]) / s; e[1] = s / 4.0; e[2] = (R[1] + R[3]) / s; e[3] = (R[2] + R[6]) / s;
    } else if (R[4] >= R[8]) {
        s = 2.0 * sqrt(1.0 + R[4] - R[0] - R[8]);
        e[0] = (R[2] - R[6]) / s; e[1] = (R[1] + R[3]) / s; e[2] = s / 4.0; e[3] = (R[5] + R[7]) / s;
    } else {
        s = 2.0 * sqrt(1.0 + R[8] - R[0] - R[4]);
        e[0] = (R[3] - R[1]) / s; e[1] = (R[2] + R[6]) / s; e[2] = (R[5] + R[7]) / s; e[3] = s / 4.0;
    }
    double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    if (e[0] < 0) n = -n;
    for (int k = 0; k < 4; ++k) e[k] /= n;
}

void mb_body_twist(const mb_model *m, const mb_data *d, int b, double *tw) {
    (void)m; /* the uniform (model, data) signature: this one reads the data only */
    const double *R = d->RW + 9 * b, *vb = d->v + 6 * b;
    for (int r = 0; r < 3; ++r) {
        tw[r] = R[3 * r] * vb[0] + R[3 * r + 1] * vb[1] + R[3 * r + 2] * vb[2];
        tw[3 + r] = R[3 * r] * vb[3] + R[3 * r + 1] * vb[4] + R[3 * r + 2] * vb[5];
    }
}

/* the kinematics the sensors need, run once: world poses (returns 1), with
 * the body velocities when a sensor reads them (returns 2); 0: none */
static int sensor_kinematics(const mb_model *m, mb_data *d, int n, const mb_sensor *s, const double *q, const double *v) {
    int need = 0;
    for (int k = 0; k < n; ++k) {
        int kind = s[k].kind;
        if (kind == MB_SENS_KINETIC || kind == MB_SENS_MOMENTUM || kind == MB_SENS_BODY_TWIST) need = 2;
        else if ((kind == MB_SENS_POINT || kind == MB_SENS_POTENTIAL || kind == MB_SENS_BODY_QUATERNION) &&
                 need == 0)
            need = 1;
    }
    if (need) mb_kinematics(m, d, q, need == 2 ? v : NULL);
    return need;
}

void mb_sensors_eval(const mb_model *m, mb_data *d, const mb_mass_props *mp, int n, const mb_sensor *s,
                     const double *x, const double *v, const double *u, int nu, double *out) {
    const double *q = x;
    int need = sensor_kinematics(m, d, n, s, q, v);
    int have_pos = need > 0, have_vel = need == 2;
    double ke = 0.0, pe = 0.0;
    int have_ke = 0, have_pe = 0, have_hl = 0;
    double hl[6], frame[6];
    int frame_body = -1, frame_kind = 0; /* the body frame sensor last computed (four or six in a row) */
    for (int k = 0; k < n; ++k) {
        const mb_sensor *sk = s + k;
        switch (sk->kind) {
        case MB_SENS_STATE: out[k] = x[sk->index]; break;
        case MB_SENS_VELOCITY: out[k] = v[sk->index]; break;
        case MB_SENS_POINT: {
            double p[3];
            if (!have_pos) { mb_kinematics(m, d, q, NULL); have_pos = 1; have_vel = 0; }
            mb_point_position(m, d, sk->index, sk->par, p);
            out[k] = p[sk->axis];
            break;
        }
        case MB_SENS_KINETIC:
            if (!have_ke) {
                if (!have_vel) { mb_kinematics(m, d, q, v); have_vel = have_pos = 1; }
                ke = kinetic_energy(m, d);
                have_ke = 1;
            }
            out[k] = ke;
            break;
        case MB_SENS_POTENTIAL:
            if (!have_pos) { mb_kinematics(m, d, q, NULL); have_pos = 1; }
            if (!have_pe) { pe = potential_energy(m, d, mp, q); have_pe = 1; }
            out[k] = pe; /* the plug-in elements' energy (index 1) is the caller's to add */
            break;
        case MB_SENS_QUATERNION: {
            const double *e = q + sk->index;
            out[k] = e[sk->axis] / sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
            break;
        }
        case MB_SENS_MOMENTUM:
            if (!have_hl) {
                if (!have_vel) { mb_kinematics(m, d, q, v); have_vel = have_pos = 1; }
                momenta(m, d, mp, hl);
                have_hl = 1;
            }
            out[k] = hl[sk->axis];
            break;
        case MB_SENS_BODY_QUATERNION:
        case MB_SENS_BODY_TWIST:
            if (frame_body != sk->index || frame_kind != sk->kind) {
                if (sk->kind == MB_SENS_BODY_TWIST && !have_vel) { mb_kinematics(m, d, q, v); have_vel = have_pos = 1; }
                else if (!have_pos) { mb_kinematics(m, d, q, NULL); have_pos = 1; }
                if (sk->kind == MB_SENS_BODY_TWIST) mb_body_twist(m, d, sk->index, frame);
                else mb_body_quaternion(m, d, sk->index, frame);
                frame_body = sk->index;
                frame_kind = sk->kind;
            }
            out[k] = frame[sk->axis];
            break;
        case MB_SENS_LINEAR: {
            double acc = 0.0;
            const double *w = sk->par + 1;
            for (int j = 0; j < m->nv + nu; ++j)
                if (w[j] != 0.0) acc += w[j] * (j < m->nv ? v[j] : u[j - m->nv]);
            out[k] = sk->par[0] * acc;
            break;
        }
        default: out[k] = 0.0 / 0.0;
        }
    }
}
