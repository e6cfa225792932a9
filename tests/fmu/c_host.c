/* A minimal non-Python FMI 2.0 co-simulation host for the FMU tests.
 *
 * usage: c_host UNZIPDIR MODEL_IDENTIFIER GUID STEP NSTEPS INPUTS VR_OUT...
 *
 * dlopen()s UNZIPDIR/binaries/linux64/MODEL_IDENTIFIER.so with RTLD_LOCAL (no
 * LD_PRELOAD, no libpython linked here) -- cross-compiled with mingw-w64, it
 * LoadLibrary()s UNZIPDIR/binaries/win64/MODEL_IDENTIFIER.dll --, instantiates, sets the inputs
 * INPUTS = "vr=value,vr=value,..." ("-" for none) in initialization mode,
 * steps NSTEPS times by STEP seconds and
 * prints "t y..." (%.17g) after every step. Exit code 0 on success, 1 on any
 * FMI status other than fmi2OK.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* the same host cross-compiles for win64 (mingw-w64; run under wine) */
#ifdef _WIN32
#include <windows.h>
#define PLATFORM_DIR "win64"
#define LIB_SUFFIX ".dll"
#define dlopen(path, flags) ((void *)LoadLibraryA(path))
#define dlsym(h, name) ((void *)GetProcAddress((HMODULE)(h), name))
#define dlclose(h) FreeLibrary((HMODULE)(h))
#define dlerror() "LoadLibrary failed"
#else
#include <dlfcn.h>
#ifndef PLATFORM_DIR /* -DPLATFORM_DIR='"aarch64-linux"' for a cross-built host */
#define PLATFORM_DIR "linux64"
#endif
#define LIB_SUFFIX ".so"
#endif

typedef void *C;
typedef struct {
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
    void *(*alloc)(size_t, size_t);
    void (*free)(void *);
    void *step_finished;
    void *env;
} Callbacks;

static void logger(void *env, const char *name, int status, const char *cat, const char *msg, ...)
{
    va_list ap;
    (void)env;
    va_start(ap, msg);
    fprintf(stderr, "[%s status=%d %s] ", name, status, cat ? cat : "");
    vfprintf(stderr, msg, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define LOAD(name) name##_t name = (name##_t)dlsym(h, #name); if (!name) { fprintf(stderr, "missing %s\n", #name); return 1; }
#define CHECK(call) do { int st_ = (call); if (st_ != 0) { fprintf(stderr, "%s -> status %d\n", #call, st_); return 1; } } while (0)

typedef C (*fmi2Instantiate_t)(const char *, int, const char *, const char *, const Callbacks *, int, int);
typedef int (*fmi2SetupExperiment_t)(C, int, double, double, int, double);
typedef int (*fmi2EnterInitializationMode_t)(C);
typedef int (*fmi2ExitInitializationMode_t)(C);
typedef int (*fmi2SetReal_t)(C, const unsigned *, size_t, const double *);
typedef int (*fmi2GetReal_t)(C, const unsigned *, size_t, double *);
typedef int (*fmi2DoStep_t)(C, double, double, int);
typedef int (*fmi2Terminate_t)(C);
typedef void (*fmi2FreeInstance_t)(C);

int main(int argc, char **argv)
{
    if (argc < 8) { fprintf(stderr, "usage: %s UNZIPDIR ID GUID STEP NSTEPS INPUTS VR_OUT...\n", argv[0]); return 2; }
    char lib[4096], res[4096];
    snprintf(lib, sizeof lib, "%s/binaries/" PLATFORM_DIR "/%s" LIB_SUFFIX, argv[1], argv[2]);
    snprintf(res, sizeof res, "file://%s/resources", argv[1]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    LOAD(fmi2Instantiate) LOAD(fmi2SetupExperiment) LOAD(fmi2EnterInitializationMode)
    LOAD(fmi2ExitInitializationMode) LOAD(fmi2SetReal) LOAD(fmi2GetReal) LOAD(fmi2DoStep)
    LOAD(fmi2Terminate) LOAD(fmi2FreeInstance)
    double step = atof(argv[4]);
    int n = atoi(argv[5]);
    size_t nout = (size_t)(argc - 7);
    unsigned *vr = malloc(nout * sizeof *vr);
    double *y = malloc(nout * sizeof *y);
    for (size_t i = 0; i < nout; i++) vr[i] = (unsigned)atoi(argv[7 + i]);
    static Callbacks cb = {logger, calloc, free, NULL, NULL};
    C c = fmi2Instantiate("c_host", 1, argv[3], res, &cb, 0, 0);
    if (!c) { fprintf(stderr, "fmi2Instantiate returned NULL\n"); return 1; }
    CHECK(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0));
    CHECK(fmi2EnterInitializationMode(c));
    for (char *p = argv[6]; *p && *p != '-';) {
        char *end;
        unsigned v = (unsigned)strtoul(p, &end, 10);
        double u = strtod(end + 1, &end);  /* skip '=' */
        CHECK(fmi2SetReal(c, &v, 1, &u));
        p = (*end == ',') ? end + 1 : end;
    }
    CHECK(fmi2ExitInitializationMode(c));
    for (int k = 0; k < n; k++) {
        CHECK(fmi2DoStep(c, k * step, step, 1));
        CHECK(fmi2GetReal(c, vr, nout, y));
        printf("%.17g", (k + 1) * step);
        for (size_t i = 0; i < nout; i++) printf(" %.17g", y[i]);
        printf("\n");
    }
    CHECK(fmi2Terminate(c));
    fmi2FreeInstance(c);
    dlclose(h);
    free(vr);
    free(y);
    return 0;
}
