/* Joint drives (see drives.h): one implementation for the Python plant and
 * the native FMU. */
#include <math.h>

#include "drives.h"

static double clip(double f, double limit) {
    return f > limit ? limit : (f < -limit ? -limit : f);
}

void mb_drive_forces(const mb_model *m, const double *q, const double *qd, double *tau) {
    for (int k = 0; k < m->ndr; ++k) {
        const double *P = m->drives + DR_N * k;
        int iv = (int)P[DR_IV], mode = (int)P[DR_MODE];
        double w = qd[iv], f = tau[iv];
        if (mode == DRIVE_POSITION)
            f = clip(P[DR_KP] * (f - q[(int)P[DR_IQ]]) - P[DR_KD] * w, P[DR_LIM]);
        else if (mode == DRIVE_VELOCITY)
            f = clip(P[DR_KD] * (f - w), P[DR_LIM]);
        if (P[DR_FC] != 0.0) f -= P[DR_FC] * tanh(w / P[DR_VS]);
        tau[iv] = f;
    }
}

int mb_drives_have_servo(const mb_model *m) {
    for (int k = 0; k < m->ndr; ++k)
        if ((int)m->drives[DR_N * k + DR_MODE] != DRIVE_TORQUE) return 1;
    return 0;
}

/* the body whose joint owns velocity coordinate iv, or -1 */
static int body_of(const mb_model *m, int iv) {
    for (int i = 1; i < m->nb; ++i)
        if (m->nvi[i] > 0 && iv >= m->iv[i] && iv < m->iv[i] + m->nvi[i]) return i;
    return -1;
}

int mb_drives_check(const mb_model *m, int n, const double *drives) {
    for (int k = 0; k < n; ++k) {
        const double *P = drives + DR_N * k;
        for (int c = 0; c < DR_N; ++c)
            if (!isfinite(P[c])) return 1 + k;
        int iv = (int)P[DR_IV], b = (P[DR_IV] == iv && iv >= 0 && iv < m->nv) ? body_of(m, iv) : -1;
        if (b < 0 || (m->jtype[b] != MB_REVOLUTE && m->jtype[b] != MB_PRISMATIC)) return 1 + k;
        if (P[DR_IQ] != m->iq[b]) return 1 + k;
        if (P[DR_MODE] != DRIVE_TORQUE && P[DR_MODE] != DRIVE_POSITION && P[DR_MODE] != DRIVE_VELOCITY)
            return 1 + k;
        if (P[DR_KP] < 0 || P[DR_KD] < 0 || P[DR_LIM] < 0 || P[DR_FC] < 0 || !(P[DR_VS] > 0)) return 1 + k;
        for (int j = 0; j < k; ++j)
            if (drives[DR_N * j + DR_IV] == P[DR_IV]) return 1 + k;
    }
    return 0;
}
