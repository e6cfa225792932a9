/* Output sensors of a flexible system (see flexsensors.h). */
#include <math.h>
#include <stddef.h>

#include "flexsensors.h"

double mb_flex_strain_energy(const mb_flex *fx, const double *q) {
    double e = 0.0;
    for (int b = 0; b < fx->nbeam; ++b) {
        int nm = fx->bnm[b];
        const double *K = fx->kd + fx->kdoff[b], *eta = q + fx->bq[b];
        for (int i = 0; i < nm; ++i) {
            double t = 0.0;
            for (int j = 0; j < nm; ++j) t += K[nm * i + j] * eta[j];
            e += eta[i] * t;
        }
    }
    return 0.5 * e;
}

/* a sensor of the virtual tree (evaluated by mb_sensors_eval on c, c_dot) */
static int on_tree(int kind) {
    return kind == MB_SENS_POINT || kind == MB_SENS_KINETIC || kind == MB_SENS_POTENTIAL;
}

void mb_flex_sensors_eval(mb_flex *fx, const mb_mass_props *mp, int n, const mb_sensor *s,
                          const double *x, const double *u, int nu, double *out) {
    const double *v = x + fx->nq;
    int nx = fx->nq + fx->nv, k = 0;
    mb_flex_virtual_state(fx, x, v);
    while (k < n) {
        const mb_sensor *sk = s + k;
        if (on_tree(sk->kind)) {
            /* a run of tree sensors shares one kinematics pass */
            int r = k;
            while (r < n && on_tree(s[r].kind)) ++r;
            mb_sensors_eval(fx->m, fx->d, mp, r - k, sk, fx->c, fx->cd, u, nu, out + k);
            for (int j = k; j < r; ++j)
                if (s[j].kind == MB_SENS_POTENTIAL) out[j] += mb_flex_strain_energy(fx, x);
            k = r;
            continue;
        }
        if (sk->kind == MB_SENS_STATE) out[k] = x[sk->index];
        else if (sk->kind == MB_SENS_VELOCITY) out[k] = v[sk->index];
        else if (sk->kind == MB_SENS_RELATIVE) {
            int f = sk->axis / 3;
            double p[3], d[3];
            const double *R = fx->d->RW + 9 * f;
            mb_kinematics(fx->m, fx->d, fx->c, NULL);
            mb_point_position(fx->m, fx->d, sk->index, sk->par, p);
            for (int r = 0; r < 3; ++r) d[r] = p[r] - fx->d->pW[3 * f + r];
            /* R maps frame f to world: R^T d */
            int a = sk->axis % 3;
            out[k] = R[a] * d[0] + R[3 + a] * d[1] + R[6 + a] * d[2];
        } else if (sk->kind == MB_SENS_COMBINATION) {
            double acc = 0.0;
            for (int j = 0; j < nx; ++j)
                if (sk->par[j] != 0.0) acc += sk->par[j] * x[j];
            out[k] = acc;
        } else out[k] = NAN;
        ++k;
    }
}
