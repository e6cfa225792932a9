/* Mass unit: m*a = -k*x - d*v + F - kc*(x - xin) - dc*(v - vin).
 * Outputs x, v (no direct feedthrough) and the coupling force on the other body
 * Fc = kc*(x - xin) + dc*(v - vin) (direct feedthrough from xin, vin). */
#define NR 14
#define NI 1
#define NX 2
enum { M, K, D, KC, DC, X0, V0, FAIL, F, XIN, VIN, X, V, FC };
#define VR_FAIL_TIME FAIL
static const double R_START[NR] = {1, 0, 0, 0, 0, 0, 0, 1e300, 0, 0, 0, 0, 0, 0};
static const int I_START[NI] = {20};
static const int IS_INPUT[NR] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0};
static const int STATE_VR[NX] = {X, V};
#include "frame.h"

static void model_init(Inst *m) { m->r[X] = m->r[X0]; m->r[V] = m->r[V0]; }
static void model_outputs(Inst *m) {
    m->r[FC] = m->r[KC] * (m->r[X] - m->r[XIN]) + m->r[DC] * (m->r[V] - m->r[VIN]);
}
static void model_derivs(Inst *m, double tau, const double *x, double *dx) {
    const double *r = m->r;
    double f = input_at(m, F, tau), xin = input_at(m, XIN, tau), vin = input_at(m, VIN, tau);
    dx[0] = x[1];
    dx[1] = (-r[K] * x[0] - r[D] * x[1] + f - r[KC] * (x[0] - xin) - r[DC] * (x[1] - vin)) / r[M];
}
