/* Clock unit: keeps its own time by summing the step sizes it is given
 * (acc += h, as FMUs that integrate time do) and checks it against every
 * currentCommunicationPoint: `drift` is the largest |t - acc| seen [s] and
 * `missed` counts (a Real, so the compiled loop runs it) the steps where they differ in any bit. `y = u` passes an
 * input through so the unit can be wired into a system.
 * `z` integrates u (z' = u). restore_error makes fmi2SetFMUstate restore z only
 * to that relative error (as FMUs whose restore is inexact do).
 * hang_time makes doStep sleep forever once a step would end past it (a unit
 * stuck inside a step, for the tests of --timeout and signals). */
#define NR 10
#define NI 0
#define NX 0
#include <math.h>
#include <time.h>
enum { FAIL, HANG, U, Y, ACC, DRIFT, LAST_T, MISSED, Z, RESTORE_ERR };
#define VR_FAIL_TIME FAIL
#define MODEL_STEP_HOOK
#define MODEL_RESTORE_HOOK
static const double R_START[NR] = {1e300, 1e300, 0, 0, 0, 0, 0, 0, 0, 0};
static const int IS_INPUT[NR] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
#include "frame.h"

static void model_init(Inst *m) { m->r[ACC] = m->time; m->r[LAST_T] = m->time; model_outputs(m); }
static void model_outputs(Inst *m) { m->r[Y] = m->r[U]; }
__attribute__((unused)) static void model_derivs(Inst *m, double tau, const double *x, double *dx) { (void)m; (void)tau; (void)x; (void)dx; }

static void model_step(Inst *m, double t, double h) {
    double err = fabs(t - m->r[ACC]);
    if (err > m->r[DRIFT]) m->r[DRIFT] = err;
    if (t != m->r[ACC]) m->r[MISSED] += 1;
    m->r[ACC] += h;
    m->r[Z] += m->r[U] * h;
    m->r[LAST_T] = t + h;
    if (t + h > m->r[HANG]) {
        struct timespec ts = {1000, 0};
        for (;;) nanosleep(&ts, NULL);  /* stuck: signals wake it, it sleeps again */
    }
}

static void model_restore(Inst *m) { m->r[Z] *= 1.0 + m->r[RESTORE_ERR]; }
