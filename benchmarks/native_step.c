/* Timing host of benchmarks/fmu.py for native FMUs (C, no Python).
 *
 * usage: native_step LIB GUID STEP NSTEPS CYCLES
 *
 * Built with the kernel sources, the runtime's runtime.c and the FMU's own
 * sources/model_data.c, so it can also run the bare kernel advance
 * (mbn_advance: the plant's integrator with its plug-in elements, the call
 * Plant.advance makes, without the FMI layer) next to the FMU binary LIB
 * (dlopen'ed): prints one JSON line with
 * ns per step of fmi2DoStep alone, of fmi2DoStep + fmi2GetReal of all
 * outputs, of the bare advance (best of 5 each, interleaved), and the RSS
 * growth (bytes) over CYCLES instantiate/step/free cycles.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
static Callbacks cb = {logger, calloc, free, NULL, NULL};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static long rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

typedef C (*inst_t)(const char *, int, const char *, const char *, const Callbacks *, int, int);
typedef int (*setup_t)(C, int, double, double, int, double);
typedef int (*c_t)(C);
typedef int (*getreal_t)(C, const unsigned *, size_t, double *);
typedef int (*dostep_t)(C, double, double, int);
typedef void (*free_t)(C);

static inst_t inst; static setup_t setup; static c_t enter, leave, term; static getreal_t getreal;
static dostep_t dostep; static free_t freeinst;

static C start(const char *guid) {
    C c = inst("bench", 1, guid, "", &cb, 0, 0);
    if (!c || setup(c, 0, 0.0, 0.0, 0, 0.0) || enter(c) || leave(c)) { fprintf(stderr, "instantiate failed\n"); exit(1); }
    return c;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: %s LIB GUID STEP NSTEPS CYCLES\n", argv[0]); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    inst = (inst_t)dlsym(h, "fmi2Instantiate"); setup = (setup_t)dlsym(h, "fmi2SetupExperiment");
    enter = (c_t)dlsym(h, "fmi2EnterInitializationMode"); leave = (c_t)dlsym(h, "fmi2ExitInitializationMode");
    term = (c_t)dlsym(h, "fmi2Terminate"); getreal = (getreal_t)dlsym(h, "fmi2GetReal");
    dostep = (dostep_t)dlsym(h, "fmi2DoStep"); freeinst = (free_t)dlsym(h, "fmi2FreeInstance");
    double step = atof(argv[3]);
    int n = atoi(argv[4]), cycles = atoi(argv[5]);
    const mbn_data *D = &MBN_DATA;
    unsigned *vr = malloc(sizeof(unsigned) * (size_t)(D->ny + 1));
    double *y = malloc(sizeof(double) * (size_t)(D->ny + 1));
    for (int k = 0; k < D->ny; ++k) vr[k] = (unsigned)(D->nu + D->np + k);

    /* the bare advance on the same packed model, inputs at their start values: the
     * runtime's mbn_advance, the kernel integration fmi2DoStep calls (what Plant.advance
     * runs: the plant's error-controlled integrator, its plug-in elements' events, grids
     * and frame) without the FMI layer */
    mbn_instance *in = mbn_new(D);
    if (!in) { fprintf(stderr, "out of memory\n"); return 1; }
    double hs = in->d[D->o_step];
    int sub = (int)ceil(step / hs - 1e-9); /* first trial steps per interval (reported) */
    if (sub < 1) sub = 1;

    C c = start(argv[2]);
    double best_step = 1e9, best_full = 1e9, best_bare = 1e9, t = 0.0;
    for (int rep = 0; rep < 5; ++rep) {
        double t0 = now();
        for (int k = 0; k < n; ++k, t += step) dostep(c, t, step, 1);
        double t1 = now();
        for (int k = 0; k < n; ++k, t += step) { dostep(c, t, step, 1); getreal(c, vr, (size_t)D->ny, y); }
        double t2 = now();
        for (int k = 0; k < n; ++k)
            if (mbn_advance(in, step)) { fprintf(stderr, "bare advance failed at t = %g s\n", in->t); return 1; }
        double t3 = now();
        if (t1 - t0 < best_step) best_step = t1 - t0;
        if (t2 - t1 < best_full) best_full = t2 - t1;
        if (t3 - t2 < best_bare) best_bare = t3 - t2;
    }
    term(c);
    freeinst(c);
    for (int k = 0; k < 20; ++k) { C w = start(argv[2]); dostep(w, 0.0, step, 1); term(w); freeinst(w); }
    long before = rss_bytes();
    for (int k = 0; k < cycles; ++k) { C w = start(argv[2]); dostep(w, 0.0, step, 1); term(w); freeinst(w); }
    long after = rss_bytes();
    printf("{\"step_ns\": %.1f, \"step_get_ns\": %.1f, \"bare_ns\": %.1f, \"rss_growth\": %ld, \"substeps\": %d}\n",
           1e9 * best_step / n, 1e9 * best_full / n, 1e9 * best_bare / n, after - before, sub);
    mbn_free(in);
    dlclose(h);
    return 0;
}
