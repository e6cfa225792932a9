/* Output sensors (see sensors.h and mbfmu/dynamics/sensors.py). */
#include <string.h>

#include "sensors.h"

/* 1/2 sum_i v_i^T I_i v_i over the bodies (needs mb_kinematics(q, v)) */
static double kinetic_energy(const mb_model *m) {
    double e = 0.0;
    for (int i = 1; i < m->nb; ++i) {
        const double *I = m->Ibody + 36 * i, *vi = m->v + 6 * i;
        for (int r = 0; r < 6; ++r) {
            double t = 0.0;
            for (int c = 0; c < 6; ++c) t += I[6 * r + c] * vi[c];
            e += vi[r] * t;
        }
    }
    return 0.5 * e;
}

/* gravity (zero at the world origin) plus the force elements' elastic energy */
static double potential_energy(mb_model *m, const mb_mass_props *mp, const double *q) {
    double e = 0.0, elastic = mb_passive_energy(m, q); /* runs mb_kinematics(q): poses below */
    for (int i = 1; i < m->nb; ++i) {
        double c[3];
        mb_point_position(m, i, mp->com + 3 * i, c);
        e += mp->mass[i] * (c[0] * m->g[0] + c[1] * m->g[1] + c[2] * m->g[2]);
    }
    return -e + elastic;
}

void mb_sensors_eval(mb_model *m, const mb_mass_props *mp, int n, const mb_sensor *s,
                     const double *x, const double *v, const double *u, int nu, double *out) {
    const double *q = x;
    int have_pos = 0, have_vel = 0;
    double ke = 0.0, pe = 0.0;
    int have_ke = 0, have_pe = 0;
    for (int k = 0; k < n; ++k) {
        const mb_sensor *sk = s + k;
        switch (sk->kind) {
        case MB_SENS_STATE: out[k] = x[sk->index]; break;
        case MB_SENS_VELOCITY: out[k] = v[sk->index]; break;
        case MB_SENS_POINT: {
            double p[3];
            if (!have_pos) { mb_kinematics(m, q, NULL); have_pos = 1; have_vel = 0; }
            mb_point_position(m, sk->index, sk->par, p);
            out[k] = p[sk->axis];
            break;
        }
        case MB_SENS_KINETIC:
            if (!have_ke) {
                if (!have_vel) { mb_kinematics(m, q, v); have_vel = have_pos = 1; }
                ke = kinetic_energy(m);
                have_ke = 1;
            }
            out[k] = ke;
            break;
        case MB_SENS_POTENTIAL:
            if (!have_pe) { pe = potential_energy(m, mp, q); have_pe = 1; have_pos = 1; have_vel = 0; }
            out[k] = pe;
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
