/* HIC bookkeeping (see hic.h): one implementation for the Python plant and
 * the native FMU. */
#include <math.h>

#include "hic.h"

int mb_hic_size(const mb_hic *h) { return h->nh + 2; }

double mb_hic_rate(const mb_hic *h, const double *acc) {
    return sqrt(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2]) / h->par[HC_UNIT];
}

double mb_hic_next_instant(const mb_hic *h, double t) {
    double s = h->par[HC_SAMPLE];
    return (floor(t / s + 1e-6) + 1.0) * s;
}

void mb_hic_record(const mb_hic *h, double *z) {
    int nh = h->nh;
    double *hist = z + 1, s = h->par[HC_SAMPLE], best = z[nh + 1];
    for (int k = 0; k + 1 < nh; ++k) hist[k] = hist[k + 1];
    hist[nh - 1] = z[0];
    for (int k = 0; k + 1 < nh; ++k) {
        double dt = s * (double)(nh - 1 - k);
        double dI = fmax(hist[nh - 1] - hist[k], 0.0);
        double val = dt * pow(dI / dt, 2.5);
        if (val > best) best = val;
    }
    z[nh + 1] = best;
}
