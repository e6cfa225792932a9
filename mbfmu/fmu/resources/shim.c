/*
 * mbfmu FMU loader shim: the FMU's binaries/linux64/<modelIdentifier>.so.
 *
 * pythonfmu's export library (libpythonfmu-export.so) does not link
 * libpython: its Py* symbols are undefined, so a host that is not Python
 * (or that opens the FMU with RTLD_LOCAL without libpython loaded globally)
 * cannot use it.  This shim is what the host loads instead.  On the first
 * fmi2Instantiate it
 *
 *   1. makes libpython's symbols global: if they are already visible in the
 *      global scope (a Python host) nothing is loaded; otherwise libpython is
 *      re-opened with RTLD_GLOBAL | RTLD_NOLOAD (loaded locally by someone
 *      else) or loaded from the path recorded at build time, RTLD_GLOBAL;
 *   2. initializes the interpreter when the host has not, with the program
 *      name of the Python the FMU was built with, so its virtual environment
 *      (site-packages) is found;
 *   3. opens pythonfmu's export library (binaries/linux64/
 *      mbfmu_pythonfmu_export.so) with RTLD_LOCAL and forwards every fmi2*
 *      function to it.
 *
 * It also gives the Python slave a way to set the FMI status of the call in
 * progress (pythonfmu maps every Python exception to fmi2Fatal and a failed
 * step to fmi2Discard): the slave calls mbfmu_report(status, category,
 * message) through ctypes; the message is passed to the host's logger and
 * the status returned by the current fmi2* call becomes the worse of the
 * two.  "Current" is per thread: the fmi2* call and the Python code it runs
 * share the calling thread.
 *
 * The build records the Python to use in resources/mbfmu_python.txt
 * (key=value lines: soname, libpython, executable); the environment
 * variables MBFMU_LIBPYTHON and MBFMU_PYTHON override them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* ---- the FMI 2.0 types this file needs (fmi2TypesPlatform.h, fmi2FunctionTypes.h) */
typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
typedef struct {
    fmi2CallbackLogger logger;
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

#define EXPORT __attribute__((visibility("default")))

/* ---- one instance: the real component plus what the shim needs */
typedef struct {
    void *real;                     /* pythonfmu's fmi2Component */
    fmi2CallbackLogger logger;      /* host's logger (may be NULL) */
    fmi2ComponentEnvironment env;
    char *name;
    int pending;                    /* worst status reported during the current call */
} Inst;

static __thread Inst *current = NULL;

static void say(Inst *s, fmi2Status status, const char *category, const char *msg)
{
    if (s && s->logger) {
        /* the host treats the message as a printf format: escape '%' */
        size_t n = strlen(msg), k = 0;
        char *m = malloc(2 * n + 1);
        if (!m) return;
        for (size_t i = 0; i < n; i++) {
            m[k++] = msg[i];
            if (msg[i] == '%') m[k++] = '%';
        }
        m[k] = 0;
        s->logger(s->env, s->name, status, category, m);
        free(m);
    } else if (status >= fmi2Error) {
        fprintf(stderr, "mbfmu FMU: %s\n", msg);
    }
}

/* Called by the Python slave (ctypes) during an fmi2* call. */
EXPORT void mbfmu_report(int status, const char *category, const char *message)
{
    Inst *s = current;
    if (!s) return;
    if (status > s->pending && status <= fmi2Fatal) s->pending = status;
    say(s, (fmi2Status)status, category ? category : "", message ? message : "");
}

/* ---- the backend: libpython + pythonfmu's export library */
#define FMI_FUNCTIONS(X) \
    X(fmi2Instantiate) X(fmi2FreeInstance) X(fmi2SetDebugLogging) X(fmi2SetupExperiment) \
    X(fmi2EnterInitializationMode) X(fmi2ExitInitializationMode) X(fmi2Terminate) X(fmi2Reset) \
    X(fmi2GetReal) X(fmi2GetInteger) X(fmi2GetBoolean) X(fmi2GetString) \
    X(fmi2SetReal) X(fmi2SetInteger) X(fmi2SetBoolean) X(fmi2SetString) \
    X(fmi2GetFMUstate) X(fmi2SetFMUstate) X(fmi2FreeFMUstate) X(fmi2SerializedFMUstateSize) \
    X(fmi2SerializeFMUstate) X(fmi2DeSerializeFMUstate) X(fmi2GetDirectionalDerivative) \
    X(fmi2SetRealInputDerivatives) X(fmi2GetRealOutputDerivatives) X(fmi2DoStep) X(fmi2CancelStep) \
    X(fmi2GetStatus) X(fmi2GetRealStatus) X(fmi2GetIntegerStatus) X(fmi2GetBooleanStatus) \
    X(fmi2GetStringStatus)

static struct {
#define X(f) void *f;
    FMI_FUNCTIONS(X)
#undef X
} real;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *backend = NULL;   /* handle of pythonfmu's export library */
static char load_error[1024] = "";
static int live = 0;           /* instances alive, under load_lock */

/* pythonfmu 0.7's export library holds its interpreter guard in a static
 * std::shared_ptr and resets it from an __attribute__((destructor)) function,
 * which runs *after* the C++ static destructor has already destroyed the
 * shared_ptr: releasing the dangling control block writes into freed memory
 * at every unload and at process exit (glibc later aborts: "corrupted
 * double-linked list" in libgfortran's exit handler, valgrind: invalid read in
 * finalizePythonInterpreter). The shim resets the guard itself through the
 * library's exported finalizePythonInterpreter() while the shared_ptr is
 * still alive -- when the last instance is freed, from an exit handler
 * registered after the library's static destructors, and before unloading
 * it -- so both later resets see an empty pointer. (The guard only owns the
 * interpreter when pythonfmu started it; the shim always starts it first.) */
static void (*backend_release_guard)(void) = NULL;

static void release_guard(void)
{
    if (backend_release_guard) backend_release_guard();
}

static char *config_value(const char *root, const char *key)
{
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/resources/mbfmu_python.txt", root);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t kl = strlen(key);
    char *out = NULL;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
            line[strcspn(line, "\r\n")] = 0;
            out = strdup(line + kl + 1);
            break;
        }
    }
    fclose(f);
    return out;
}

static int load_python(const char *root)
{
    if (dlsym(RTLD_DEFAULT, "Py_IsInitialized")) return 0; /* a Python host: symbols are global */
    char *soname = config_value(root, "soname");
    char *path = getenv("MBFMU_LIBPYTHON") ? strdup(getenv("MBFMU_LIBPYTHON")) : config_value(root, "libpython");
    void *h = NULL;
    if (soname) h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!h && path) h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h && soname) h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load libpython (recorded path %s, soname %s): %s",
                 path ? path : "none", soname ? soname : "none", dlerror());
    }
    free(soname);
    free(path);
    return h ? 0 : -1;
}

static int init_python(const char *root)
{
    int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (!is_init) {
        snprintf(load_error, sizeof load_error, "libpython loaded but Py_IsInitialized not found");
        return -1;
    }
    if (is_init()) return 0;
    /* The host is not Python: start the interpreter of the Python the FMU was
     * built with (its program name lets it find its virtual environment). */
    void (*set_name)(const wchar_t *) = (void (*)(const wchar_t *))dlsym(RTLD_DEFAULT, "Py_SetProgramName");
    wchar_t *(*decode)(const char *, size_t *) = (wchar_t * (*)(const char *, size_t *)) dlsym(RTLD_DEFAULT, "Py_DecodeLocale");
    void (*init_ex)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "Py_InitializeEx");
    void *(*save_thread)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
    if (!init_ex || !save_thread) {
        snprintf(load_error, sizeof load_error, "libpython lacks Py_InitializeEx/PyEval_SaveThread");
        return -1;
    }
    char *exe = getenv("MBFMU_PYTHON") ? strdup(getenv("MBFMU_PYTHON")) : config_value(root, "executable");
    if (exe && set_name && decode) {
        static wchar_t *wexe = NULL; /* must outlive the interpreter */
        wexe = decode(exe, NULL);
        if (wexe) set_name(wexe);
    }
    free(exe);
    init_ex(0);          /* 0: leave the host's signal handlers alone */
    save_thread();       /* release the GIL; pythonfmu takes it per call */
    return 0;
}

static int load_backend(void)
{
    pthread_mutex_lock(&load_lock);
    int rc = 0;
    if (!backend) {
        Dl_info info;
        char root[4096], lib[4096];
        if (!dladdr((void *)&load_backend, &info) || !info.dli_fname) {
            snprintf(load_error, sizeof load_error, "cannot locate the FMU binary (dladdr)");
            rc = -1;
            goto out;
        }
        /* <root>/binaries/linux64/<id>.so */
        snprintf(root, sizeof root, "%s", info.dli_fname);
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(root, '/');
            if (slash) *slash = 0; else snprintf(root, sizeof root, ".");
        }
        if (load_python(root) != 0 || init_python(root) != 0) { rc = -1; goto out; }
        snprintf(lib, sizeof lib, "%s/binaries/linux64/mbfmu_pythonfmu_export.so", root);
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(load_error, sizeof load_error, "cannot load %s: %s", lib, dlerror());
            rc = -1;
            goto out;
        }
#define X(f)                                                                   \
        real.f = dlsym(h, #f);                                                 \
        if (!real.f) {                                                         \
            snprintf(load_error, sizeof load_error, "%s lacks %s", lib, #f);  \
            dlclose(h);                                                        \
            rc = -1;                                                           \
            goto out;                                                          \
        }
        FMI_FUNCTIONS(X)
#undef X
        backend_release_guard = (void (*)(void))dlsym(h, "finalizePythonInterpreter");
        atexit(release_guard);  /* runs before the library's static destructors */
        backend = h;
    }
out:
    pthread_mutex_unlock(&load_lock);
    return rc;
}

__attribute__((destructor)) static void unload_backend(void)
{
    if (backend) {
        release_guard();
        dlclose(backend);
    }
    backend = NULL;
    backend_release_guard = NULL;
}

/* ---- forwarding */
static fmi2Status worst(fmi2Status st, int pending)
{
    if (st == fmi2Pending) return st;
    return (int)st > pending ? st : (fmi2Status)pending;
}

#define FWD(fn, type, ...)                                                   \
    Inst *s = (Inst *)c;                                                     \
    if (!s) return fmi2Error;                                                \
    Inst *prev = current;                                                    \
    current = s;                                                             \
    s->pending = fmi2OK;                                                     \
    fmi2Status st = ((fmi2Status(*) type)real.fn)(s->real, ##__VA_ARGS__);   \
    current = prev;                                                          \
    return worst(st, s->pending);

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    Inst *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->name = strdup(instanceName ? instanceName : "");
    if (functions) {
        s->logger = functions->logger;
        s->env = functions->componentEnvironment;
    }
    if (fmuType != fmi2CoSimulation) {
        say(s, fmi2Error, "logStatusError", "this FMU supports co-simulation only");
        free(s->name);
        free(s);
        return NULL;
    }
    if (load_backend() != 0) {
        say(s, fmi2Fatal, "logStatusFatal", load_error);
        free(s->name);
        free(s);
        return NULL;
    }
    Inst *prev = current;
    current = s;
    s->real = ((fmi2Component(*)(fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,
                                 fmi2Boolean, fmi2Boolean))real.fmi2Instantiate)(
        instanceName, fmuType, fmuGUID, fmuResourceLocation, functions, visible, loggingOn);
    current = prev;
    if (s->real) {
        pthread_mutex_lock(&load_lock);
        live++;
        pthread_mutex_unlock(&load_lock);
    }
    if (!s->real) {
        if (s->pending < fmi2Error)
            say(s, fmi2Fatal, "logStatusFatal",
                "the Python slave could not be instantiated (switch logging on for pythonfmu's message)");
        free(s->name);
        free(s);
        return NULL;
    }
    return s;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    Inst *s = (Inst *)c;
    if (!s) return;
    Inst *prev = current;
    current = s;
    ((void (*)(fmi2Component))real.fmi2FreeInstance)(s->real);
    current = prev;
    free(s->name);
    free(s);
    pthread_mutex_lock(&load_lock);
    if (--live == 0) release_guard();
    pthread_mutex_unlock(&load_lock);
}

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[])
{ FWD(fmi2SetDebugLogging, (fmi2Component, fmi2Boolean, size_t, const fmi2String *), on, n, cat) }

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDef, fmi2Real tol, fmi2Real t0,
                                      fmi2Boolean stopDef, fmi2Real tEnd)
{ FWD(fmi2SetupExperiment, (fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real),
      tolDef, tol, t0, stopDef, tEnd) }

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{ FWD(fmi2EnterInitializationMode, (fmi2Component)) }
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{ FWD(fmi2ExitInitializationMode, (fmi2Component)) }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { FWD(fmi2Terminate, (fmi2Component)) }
EXPORT fmi2Status fmi2Reset(fmi2Component c) { FWD(fmi2Reset, (fmi2Component)) }

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[])
{ FWD(fmi2GetReal, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *), vr, n, v) }
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[])
{ FWD(fmi2GetInteger, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Integer *), vr, n, v) }
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[])
{ FWD(fmi2GetBoolean, (fmi2Component, const fmi2ValueReference *, size_t, fmi2Boolean *), vr, n, v) }
EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[])
{ FWD(fmi2GetString, (fmi2Component, const fmi2ValueReference *, size_t, fmi2String *), vr, n, v) }
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[])
{ FWD(fmi2SetReal, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Real *), vr, n, v) }
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[])
{ FWD(fmi2SetInteger, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Integer *), vr, n, v) }
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[])
{ FWD(fmi2SetBoolean, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Boolean *), vr, n, v) }
EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[])
{ FWD(fmi2SetString, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2String *), vr, n, v) }

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state)
{ FWD(fmi2GetFMUstate, (fmi2Component, fmi2FMUstate *), state) }
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{ FWD(fmi2SetFMUstate, (fmi2Component, fmi2FMUstate), state) }
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state)
{ FWD(fmi2FreeFMUstate, (fmi2Component, fmi2FMUstate *), state) }
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size)
{ FWD(fmi2SerializedFMUstateSize, (fmi2Component, fmi2FMUstate, size_t *), state, size) }
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte b[], size_t size)
{ FWD(fmi2SerializeFMUstate, (fmi2Component, fmi2FMUstate, fmi2Byte *, size_t), state, b, size) }
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t size, fmi2FMUstate *state)
{ FWD(fmi2DeSerializeFMUstate, (fmi2Component, const fmi2Byte *, size_t, fmi2FMUstate *), b, size, state) }

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                               const fmi2ValueReference z[], size_t nz, const fmi2Real dv[],
                                               fmi2Real dz[])
{ FWD(fmi2GetDirectionalDerivative, (fmi2Component, const fmi2ValueReference *, size_t,
      const fmi2ValueReference *, size_t, const fmi2Real *, fmi2Real *), u, nu, z, nz, dv, dz) }
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                              const fmi2Integer order[], const fmi2Real v[])
{ FWD(fmi2SetRealInputDerivatives, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Integer *,
      const fmi2Real *), vr, n, order, v) }
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                               const fmi2Integer order[], fmi2Real v[])
{ FWD(fmi2GetRealOutputDerivatives, (fmi2Component, const fmi2ValueReference *, size_t, const fmi2Integer *,
      fmi2Real *), vr, n, order, v) }

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior)
{ FWD(fmi2DoStep, (fmi2Component, fmi2Real, fmi2Real, fmi2Boolean), t, h, noSetPrior) }
EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { FWD(fmi2CancelStep, (fmi2Component)) }

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v)
{ FWD(fmi2GetStatus, (fmi2Component, fmi2StatusKind, fmi2Status *), k, v) }
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v)
{ FWD(fmi2GetRealStatus, (fmi2Component, fmi2StatusKind, fmi2Real *), k, v) }
EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v)
{ FWD(fmi2GetIntegerStatus, (fmi2Component, fmi2StatusKind, fmi2Integer *), k, v) }
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v)
{ FWD(fmi2GetBooleanStatus, (fmi2Component, fmi2StatusKind, fmi2Boolean *), k, v) }
EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v)
{ FWD(fmi2GetStringStatus, (fmi2Component, fmi2StatusKind, fmi2String *), k, v) }
