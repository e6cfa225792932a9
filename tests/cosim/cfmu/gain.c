/* Gain unit without state: y = k*u + w + b (direct feedthrough from u and w).
 * Integer input `mode` is unused (it exists to test type checks). */
#define NR 6
#define NI 1
#define NX 0
enum { K, B, FAIL, U, W, Y };
#define VR_FAIL_TIME FAIL
static const double R_START[NR] = {1, 0, 1e300, 0, 0, 0};
static const int I_START[NI] = {0};
static const int IS_INPUT[NR] = {0, 0, 0, 1, 1, 0};
#include "frame.h"

static void model_init(Inst *m) { model_outputs(m); }
static void model_outputs(Inst *m) { m->r[Y] = m->r[K] * m->r[U] + m->r[W] + m->r[B]; }
__attribute__((unused)) static void model_derivs(Inst *m, double tau, const double *x, double *dx) { (void)m; (void)tau; (void)x; (void)dx; }
