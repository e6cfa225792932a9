/* A minimal non-Python FMI 3.0 co-simulation host for the native FMU tests.
 *
 * usage: c_host3 UNZIPDIR MODEL_IDENTIFIER TOKEN STEP NSTEPS INPUTS VR:N...
 *
 * Opens UNZIPDIR/binaries/x86_64-linux/MODEL_IDENTIFIER.so (cross-compiled
 * with mingw-w64: x86_64-windows/...dll), instantiates for co-simulation,
 * sets INPUTS = "vr=v1:v2:...,vr=..." ("-" for none: one value per element
 * of the Float64 variable vr) in initialization mode, steps NSTEPS times by
 * STEP seconds and prints "t y..." (%.17g) after every step, y the N values
 * of each Float64 variable VR. Exit code 0 on success, 1 on any status other
 * than fmi3OK.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef _WIN32
#include <windows.h>
#define PLATFORM_DIR "x86_64-windows"
#define LIB_SUFFIX ".dll"
#define dlopen(path, flags) ((void *)LoadLibraryA(path))
#define dlsym(h, name) ((void *)GetProcAddress((HMODULE)(h), name))
#define dlclose(h) FreeLibrary((HMODULE)(h))
#define dlerror() "LoadLibrary failed"
#else
#include <dlfcn.h>
#ifndef PLATFORM_DIR /* -DPLATFORM_DIR='"aarch64-linux"' for a cross-built host */
#define PLATFORM_DIR "x86_64-linux"
#endif
#define LIB_SUFFIX ".so"
#endif

typedef void *I;

static void logger(void *env, int status, const char *cat, const char *msg) {
    (void)env;
    fprintf(stderr, "[status=%d %s] %s\n", status, cat ? cat : "", msg);
}

#define LOAD(name) name##_t name = (name##_t)dlsym(h, #name); if (!name) { fprintf(stderr, "missing %s\n", #name); return 1; }
#define CHECK(call) do { int st_ = (call); if (st_ != 0) { fprintf(stderr, "%s -> status %d\n", #call, st_); return 1; } } while (0)

typedef I (*fmi3InstantiateCoSimulation_t)(const char *, const char *, const char *, bool, bool, bool, bool,
                                           const uint32_t *, size_t, void *,
                                           void (*)(void *, int, const char *, const char *), void *);
typedef int (*fmi3EnterInitializationMode_t)(I, bool, double, double, bool, double);
typedef int (*fmi3ExitInitializationMode_t)(I);
typedef int (*fmi3SetFloat64_t)(I, const uint32_t *, size_t, const double *, size_t);
typedef int (*fmi3GetFloat64_t)(I, const uint32_t *, size_t, double *, size_t);
typedef int (*fmi3DoStep_t)(I, double, double, bool, bool *, bool *, bool *, double *);
typedef int (*fmi3Terminate_t)(I);
typedef void (*fmi3FreeInstance_t)(I);

int main(int argc, char **argv) {
    if (argc < 8) { fprintf(stderr, "usage: %s UNZIPDIR ID TOKEN STEP NSTEPS INPUTS VR:N...\n", argv[0]); return 2; }
    char lib[4096], res[4096];
    snprintf(lib, sizeof lib, "%s/binaries/" PLATFORM_DIR "/%s" LIB_SUFFIX, argv[1], argv[2]);
    snprintf(res, sizeof res, "%s/resources/", argv[1]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    LOAD(fmi3InstantiateCoSimulation) LOAD(fmi3EnterInitializationMode) LOAD(fmi3ExitInitializationMode)
    LOAD(fmi3SetFloat64) LOAD(fmi3GetFloat64) LOAD(fmi3DoStep) LOAD(fmi3Terminate) LOAD(fmi3FreeInstance)
    double step = atof(argv[4]);
    int n = atoi(argv[5]);
    size_t nvr = (size_t)(argc - 7), ny = 0;
    uint32_t *vr = malloc(nvr * sizeof *vr);
    for (size_t i = 0; i < nvr; i++) {
        char *end;
        vr[i] = (uint32_t)strtoul(argv[7 + i], &end, 10);
        ny += (size_t)strtoul(end + 1, NULL, 10);
    }
    double *y = malloc((ny + 1) * sizeof *y);
    I c = fmi3InstantiateCoSimulation("c_host3", argv[3], res, false, false, false, false, NULL, 0, NULL, logger,
                                      NULL);
    if (!c) { fprintf(stderr, "fmi3InstantiateCoSimulation returned NULL\n"); return 1; }
    CHECK(fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0));
    for (char *p = argv[6]; *p && *p != '-';) {
        char *end;
        uint32_t v = (uint32_t)strtoul(p, &end, 10);
        double u[64];
        size_t m = 0;
        do { u[m++] = strtod(end + 1, &end); } while (*end == ':' && m < 64); /* skip '=' or ':' */
        CHECK(fmi3SetFloat64(c, &v, 1, u, m));
        p = (*end == ',') ? end + 1 : end;
    }
    CHECK(fmi3ExitInitializationMode(c));
    for (int k = 0; k < n; k++) {
        bool event, stop, early;
        double last;
        CHECK(fmi3DoStep(c, k * step, step, true, &event, &stop, &early, &last));
        CHECK(fmi3GetFloat64(c, vr, nvr, y, ny));
        printf("%.17g", (k + 1) * step);
        for (size_t i = 0; i < ny; i++) printf(" %.17g", y[i]);
        printf("\n");
    }
    CHECK(fmi3Terminate(c));
    fmi3FreeInstance(c);
    dlclose(h);
    free(vr);
    free(y);
    return 0;
}
