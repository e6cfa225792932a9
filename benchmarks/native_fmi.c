/* Timing host of benchmarks/fmu.py for the Model Exchange and FMI 3.0
 * interfaces of native FMUs (C, no Python).
 *
 * usage: native_fmi LIB2 GUID LIB3 STEP NSTEPS NEVAL NY3 VR3...
 *
 * Built with the kernel sources, the runtime and the FMI 2 FMU's own
 * sources/model_data.c (for the bare kernel on the same packed model).
 * Prints one JSON line, ns per call, best of 5 interleaved rounds:
 *   me_ns     fmi2SetTime + fmi2SetContinuousStates + fmi2GetDerivatives (an
 *             integrator's evaluation) of the dlopen'ed FMI 2 binary LIB2;
 *   aba_ns    the bare kernel mb_aba at the same state (rigid tree);
 *   rhs_ns    mbn_rhs, the right-hand side the co-simulation step integrates
 *             (ABA with the force elements, latches, sled);
 *   cs2_ns    fmi2DoStep + fmi2GetReal of all outputs (LIB2);
 *   cs3_ns    fmi3DoStep + fmi3GetFloat64 of all outputs (LIB3, FMI 3: the
 *             variables VR3... holding NY3 values).
 * The states evaluated are those of a trajectory (NEVAL states recorded
 * every STEP by mbn_advance), so the kernels do not see one cached point.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "native.h"

typedef void *C;
typedef struct {
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
    void *(*alloc)(size_t, size_t);
    void (*free)(void *);
    void *step_finished;
    void *env;
} Callbacks;
static void logger(void *e, const char *n, int s, const char *c, const char *m, ...) {
    (void)e; (void)n; (void)s; (void)c;
    fprintf(stderr, "%s\n", m);
}
static void logger3(void *e, int s, const char *c, const char *m) { (void)e; (void)s; (void)c; fprintf(stderr, "%s\n", m); }
static Callbacks cb = {logger, calloc, free, NULL, NULL};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define SYM(h, T, name) T name = (T)dlsym(h, #name); if (!name) { fprintf(stderr, "missing %s\n", #name); return 1; }

typedef C (*inst_t)(const char *, int, const char *, const char *, const Callbacks *, int, int);
typedef int (*setup_t)(C, int, double, double, int, double);
typedef int (*c_t)(C);
typedef int (*real_t)(C, double);
typedef int (*arr_t)(C, const double *, size_t);
typedef int (*arrw_t)(C, double *, size_t);
typedef int (*getreal_t)(C, const unsigned *, size_t, double *);
typedef int (*dostep_t)(C, double, double, int);
typedef int (*ev_t)(C, void *);
typedef C (*inst3_t)(const char *, const char *, const char *, bool, bool, bool, bool, const uint32_t *, size_t,
                     void *, void (*)(void *, int, const char *, const char *), void *);
typedef int (*init3_t)(C, bool, double, double, bool, double);
typedef int (*get3_t)(C, const uint32_t *, size_t, double *, size_t);
typedef int (*step3_t)(C, double, double, bool, bool *, bool *, bool *, double *);
typedef int (*getu3_t)(C, const uint32_t *, size_t, uint64_t *, size_t);

int main(int argc, char **argv) {
    if (argc < 9) { fprintf(stderr, "usage: %s LIB2 GUID LIB3 STEP NSTEPS NEVAL NY3 VR3...\n", argv[0]); return 2; }
    void *h2 = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), *h3 = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!h2 || !h3) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    SYM(h2, inst_t, fmi2Instantiate) SYM(h2, setup_t, fmi2SetupExperiment)
    SYM(h2, c_t, fmi2EnterInitializationMode) SYM(h2, c_t, fmi2ExitInitializationMode)
    SYM(h2, c_t, fmi2EnterContinuousTimeMode) SYM(h2, ev_t, fmi2NewDiscreteStates)
    SYM(h2, real_t, fmi2SetTime) SYM(h2, arr_t, fmi2SetContinuousStates) SYM(h2, arrw_t, fmi2GetDerivatives)
    SYM(h2, getreal_t, fmi2GetReal) SYM(h2, dostep_t, fmi2DoStep)
    SYM(h3, inst3_t, fmi3InstantiateCoSimulation) SYM(h3, init3_t, fmi3EnterInitializationMode)
    SYM(h3, c_t, fmi3ExitInitializationMode) SYM(h3, get3_t, fmi3GetFloat64) SYM(h3, step3_t, fmi3DoStep)
    double step = atof(argv[4]);
    int n = atoi(argv[5]), neval = atoi(argv[6]);
    const mbn_data *D = &MBN_DATA;
    int nxc = D->nxc;

    /* a trajectory of states, and the bare kernels on the same packed model */
    mbn_instance *in = mbn_new(D);
    double *X = malloc(sizeof(double) * (size_t)(neval * D->nx)), *dx = malloc(sizeof(double) * (size_t)D->nx);
    double *qdd = malloc(sizeof(double) * (size_t)(D->nv + 1));
    for (int k = 0; k < neval; ++k) {
        memcpy(X + k * D->nx, in->x, sizeof(double) * (size_t)D->nx);
        if (mbn_advance(in, step)) { fprintf(stderr, "advance failed\n"); return 1; }
    }
    mbn_generalized_forces(in);

    /* FMI 2 model exchange instance */
    char ev[64];
    C me = fmi2Instantiate("me", 0, argv[2], "", &cb, 0, 0);
    if (!me || fmi2SetupExperiment(me, 0, 0, 0, 0, 0) || fmi2EnterInitializationMode(me) ||
        fmi2ExitInitializationMode(me) || fmi2NewDiscreteStates(me, ev) || fmi2EnterContinuousTimeMode(me)) {
        fprintf(stderr, "model exchange instance failed\n");
        return 1;
    }
    /* FMI 2 and FMI 3 co-simulation instances, all outputs read after each step */
    C cs2 = fmi2Instantiate("cs", 1, argv[2], "", &cb, 0, 0);
    C cs3 = fmi3InstantiateCoSimulation("cs3", argv[2], "", false, false, false, false, NULL, 0, NULL, logger3, NULL);
    if (!cs2 || !cs3 || fmi2SetupExperiment(cs2, 0, 0, 0, 0, 0) || fmi2EnterInitializationMode(cs2) ||
        fmi2ExitInitializationMode(cs2) || fmi3EnterInitializationMode(cs3, false, 0, 0, false, 0) ||
        fmi3ExitInitializationMode(cs3)) {
        fprintf(stderr, "co-simulation instances failed\n");
        return 1;
    }
    unsigned *vr2 = malloc(sizeof(unsigned) * (size_t)(D->ny + 1));
    size_t ny3 = (size_t)atoi(argv[7]), nvr3 = (size_t)(argc - 8);
    uint32_t *vr3 = malloc(sizeof(uint32_t) * (nvr3 + 1));
    for (size_t k = 0; k < nvr3; ++k) vr3[k] = (uint32_t)atoi(argv[8 + k]);
    double *y = malloc(sizeof(double) * (size_t)(D->ny + ny3 + 1));
    for (int k = 0; k < D->ny; ++k) vr2[k] = (unsigned)(D->nu + D->np + k);

    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9}, t2 = 0.0, t3 = 0.0;
    for (int rep = 0; rep < 5; ++rep) {
        double a = now();
        for (int k = 0; k < n; ++k) {
            const double *x = X + (k % neval) * D->nx;
            fmi2SetTime(me, k * step);
            fmi2SetContinuousStates(me, x, (size_t)nxc);
            fmi2GetDerivatives(me, dx, (size_t)nxc);
        }
        double b = now();
        for (int k = 0; k < n; ++k) {
            const double *x = X + (k % neval) * D->nx;
            if (!D->flex) mb_aba(in->m, in->ws, x, x + D->nq, in->tau, NULL, 1, qdd);
        }
        double c = now();
        for (int k = 0; k < n; ++k) mbn_rhs(in, k * step, X + (k % neval) * D->nx, dx);
        double d = now();
        for (int k = 0; k < n / 10; ++k, t2 += step) { fmi2DoStep(cs2, t2, step, 1); fmi2GetReal(cs2, vr2, (size_t)D->ny, y); }
        double e = now();
        for (int k = 0; k < n / 10; ++k, t3 += step) {
            bool evn, stop, early;
            double last;
            fmi3DoStep(cs3, t3, step, true, &evn, &stop, &early, &last);
            fmi3GetFloat64(cs3, vr3, nvr3, y, ny3);
        }
        double f = now();
        double dt[5] = {b - a, c - b, d - c, (e - d) * 10, (f - e) * 10};
        for (int j = 0; j < 5; ++j)
            if (dt[j] < best[j]) best[j] = dt[j];
    }
    printf("{\"me_ns\": %.1f, \"aba_ns\": %.1f, \"rhs_ns\": %.1f, \"cs2_ns\": %.1f, \"cs3_ns\": %.1f, "
           "\"ny3\": %zu}\n", 1e9 * best[0] / n, D->flex ? -1.0 : 1e9 * best[1] / n, 1e9 * best[2] / n,
           1e9 * best[3] / n, 1e9 * best[4] / n, ny3);
    mbn_free(in);
    return 0;
}
