/*
 * Head injury criterion bookkeeping: a sensor with state (the HIC15 of the
 * crash-sled occupant plant).
 *
 * The recorder reads the specific force a (m/s^2, sled axes) of a point on a
 * body (an accelerometer, sled.h) and keeps, after the plant's [q; v], the
 * states z = [I; hist (nh); max]:
 *   - I, the integral of |a| / unit (g.s with unit = 9.80665 m/s^2), an ODE
 *     state of rate |a| / unit;
 *   - hist, the values of I at the last nh instants of a grid of spacing
 *     sample (s), oldest first (nh = window / sample + 1);
 *   - max, the running maximum over every window of up to (nh - 1) sample
 *     ending at a grid instant t2 (from each earlier instant t1 of hist) of
 *         (t2 - t1) [(I(t2) - I(t1)) / (t2 - t1)]^2.5      (HIC, time in s).
 * hist and max are discrete states (zero rate), updated by mb_hic_record at
 * each grid instant; the integration stops there (mb_sled_advance).
 */
#ifndef MBFMU_HIC_H
#define MBFMU_HIC_H

#include "glibc_baseline.h"

/* columns of the recorder's parameters: point (body frame, m), grid
 * spacing (s), unit of the integrand (m/s^2 per unit, g) */
enum { HC_PX = 0, HC_PY, HC_PZ, HC_SAMPLE, HC_UNIT, HC_N };

typedef struct {
    int body;          /* body of the accelerometer */
    int nh;            /* history length (grid instants of the window, both ends) */
    const double *par; /* (HC_N) */
} mb_hic;

/* states after [q; v]: nh + 2 */
int mb_hic_size(const mb_hic *h);

/* rate of I for the specific force acc (3, m/s^2) */
double mb_hic_rate(const mb_hic *h, const double *acc);

/* first grid instant after t (s; t itself counts as passed when within
 * 1e-6 sample of it) */
double mb_hic_next_instant(const mb_hic *h, double t);

/* at a grid instant: shift hist, append I, update max (z in place) */
void mb_hic_record(const mb_hic *h, double *z);

#endif
