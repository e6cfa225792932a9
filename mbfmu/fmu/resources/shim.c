/*
 * mbfmu FMU loader shim: the FMU's binaries/<platform>/<modelIdentifier>.so|.dll
 * (linux64: compiled with the build machine's cc; win64: cross-compiled with
 * mingw-w64).
 *
 * pythonfmu's export library does not link libpython on Linux (its Py*
 * symbols are undefined) and links python3.dll by name on Windows, so a host
 * that is not Python cannot use it.  This shim is what the host loads
 * instead.  On the first fmi2Instantiate it
 *
 *   1. finds a Python, unless the host already is one (libpython's symbols
 *      are global, or python3*.dll is loaded), in this order:
 *        a. the interpreter named by the environment variable MBFMU_PYTHON;
 *        b. python3, then python, on PATH (Windows: python.exe);
 *        c. the build-time interpreter, only if the build recorded it
 *           (build_fmu(python_hint=...), "python_hint" in
 *           resources/mbfmu_python.txt): a hint, never required.
 *      On Linux each candidate is asked (a short "python -c" run) for its
 *      real executable, its shared libpython and its mbfmu version; the first
 *      with the mbfmu version the FMU needs wins, else the first usable one;
 *      on Windows python3.dll is taken next to the interpreter or in the
 *      "home" of its pyvenv.cfg.  MBFMU_LIBPYTHON overrides the libpython
 *      file (Linux).
 *   2. loads that libpython with RTLD_GLOBAL (Python's own extension
 *      modules need its symbols global) and initializes the interpreter with
 *      the interpreter's path as program name, so its virtual environment
 *      (site-packages) is found;
 *   3. checks that "import mbfmu" works and gives the version recorded at
 *      build time ("mbfmu" in resources/mbfmu_python.txt), in every host,
 *      Python hosts included; otherwise instantiation fails with a log
 *      message saying what to install into which interpreter;
 *   4. opens pythonfmu's export library (binaries/<platform>/
 *      mbfmu_pythonfmu_export.so|.dll) privately and forwards every fmi2*
 *      function to it.
 *
 * It also gives the Python slave a way to set the FMI status of the call in
 * progress (pythonfmu maps every Python exception to fmi2Fatal and a failed
 * step to fmi2Discard): the slave calls mbfmu_report(status, category,
 * message) through ctypes; the message is passed to the host's logger and
 * the status returned by the current fmi2* call becomes the worse of the
 * two.  "Current" is per thread: the fmi2* call and the Python code it runs
 * share the calling thread.
 */
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#define EXPORT __declspec(dllexport)
#define THREAD_LOCAL __thread  /* mingw-w64 gcc */
#define PLATFORM "win64"
#define LIB_SUFFIX ".dll"
#else
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#define EXPORT __attribute__((visibility("default")))
#define THREAD_LOCAL __thread
#define PLATFORM "linux64"
#define LIB_SUFFIX ".so"
extern char **environ;
/* The glibc 2.17 baseline of the native FMUs (mbfmu/dynamics/csrc/glibc_baseline.h): glibc 2.34
 * moved the dl* functions from libdl into libc under a new symbol version; binding them to
 * their original versions (libc's compatibility symbols since 2.34; before, libdl's, which a
 * host that loads the shim with dlopen has loaded itself) keeps the shim loadable down to
 * glibc 2.17. Every other function it calls is older than 2.17. */
#if defined(__GLIBC__) && defined(__x86_64__) && !defined(__ILP32__)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
#endif
#endif
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

/* ---- the FMI 2.0 types and signatures: the standard's headers (mbfmu/fmu/native/fmi_headers,
 * with their license; fmi2Functions.h declares every function this file defines, unprefixed, as a
 * shared library's must be) */
#include "fmi2Functions.h"

#define PATH_LEN 4096
#define ERR_LEN 8192

/* ---- one instance: the real component plus what the shim needs */
typedef struct {
    void *real;                     /* pythonfmu's fmi2Component */
    fmi2CallbackLogger logger;      /* host's logger (may be NULL) */
    fmi2ComponentEnvironment env;
    char *name;
    int pending;                    /* worst status reported during the current call */
    int resource_fd;                /* Linux: open folder behind /proc/self/fd/<n> (-1: none) */
    /* the slave's values, attached by it (mbfmu_attach); values == NULL: every call goes to Python */
    struct {
        double *values;             /* (n) every variable by value reference, in the slave's memory */
        int n, nu;                  /* inputs are value references 0..nu-1 */
        int *fresh;                 /* nonzero: the outputs in values are those of the current state */
        const double *u_min, *u_max;
    } io;
} Inst;

static THREAD_LOCAL Inst *current = NULL;

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

/* Called by the Python slave (ctypes) from its constructor, during fmi2Instantiate or fmi2Reset:
 * its values and input bounds, which fmi2GetReal and fmi2SetReal then read and write here
 * without running Python (see "fast paths" below). The memory stays the slave's; it lives
 * until fmi2FreeInstance or the next fmi2Reset, which detach it first. */
EXPORT void mbfmu_attach(double *values, int n, int *fresh, int nu, const double *u_min, const double *u_max)
{
    Inst *s = current;
    if (!s) return;
    s->io.values = values && fresh && n >= nu && nu >= 0 ? values : NULL;
    s->io.n = n;
    s->io.nu = nu;
    s->io.fresh = fresh;
    s->io.u_min = u_min;
    s->io.u_max = u_max;
}

/* ---- platform layer: locks, libraries, the FMU's own path */
#ifdef _WIN32
static SRWLOCK load_lock_ = SRWLOCK_INIT;
static void lock(void) { AcquireSRWLockExclusive(&load_lock_); }
static void unlock(void) { ReleaseSRWLockExclusive(&load_lock_); }
static void *lib_open_private(const char *path)
{
    return (void *)LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
}
static void *lib_sym(void *h, const char *name) { return (void *)GetProcAddress((HMODULE)h, name); }
static void lib_close(void *h) { FreeLibrary((HMODULE)h); }
static const char *lib_error(void)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "Windows error %lu", (unsigned long)GetLastError());
    return buf;
}
static int self_path(char *out, size_t n)
{
    HMODULE me = NULL;
    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)&self_path, &me))
        return -1;
    DWORD k = GetModuleFileNameA(me, out, (DWORD)n);
    if (k == 0 || k >= n) return -1;
    for (char *p = out; *p; p++) if (*p == '\\') *p = '/';
    return 0;
}
#else
static pthread_mutex_t load_lock_ = PTHREAD_MUTEX_INITIALIZER;
static void lock(void) { pthread_mutex_lock(&load_lock_); }
static void unlock(void) { pthread_mutex_unlock(&load_lock_); }
static void *lib_open_private(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *lib_sym(void *h, const char *name) { return dlsym(h, name); }
static void lib_close(void *h) { dlclose(h); }
static const char *lib_error(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
static int self_path(char *out, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&self_path, &info) || !info.dli_fname) return -1;
    snprintf(out, n, "%s", info.dli_fname);
    return 0;
}
#endif

/* ---- resources/mbfmu_python.txt: key=value lines */
static char fmu_root[PATH_LEN];

static char *config_value(const char *key)
{
    char path[PATH_LEN + 64], line[PATH_LEN];
    snprintf(path, sizeof path, "%s/resources/mbfmu_python.txt", fmu_root);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t kl = strlen(key);
    char *out = NULL;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
            line[strcspn(line, "\r\n")] = 0;
            out = line[kl + 1] ? strdup(line + kl + 1) : NULL;
            break;
        }
    }
    fclose(f);
    return out;
}

static char load_error[ERR_LEN] = "";

/* ---- the Python symbols the shim calls (all in the stable ABI) */
typedef struct _object PyObject;
static struct {
    void *lib;   /* where to look them up; NULL = global scope (Linux) */
    int (*IsInitialized)(void);
    void (*SetProgramName)(const wchar_t *);
    void (*InitializeEx)(int);
    void *(*SaveThread)(void);
    int (*GILStateEnsure)(void);
    void (*GILStateRelease)(int);
    PyObject *(*ImportModule)(const char *);
    PyObject *(*GetAttrString)(PyObject *, const char *);
    const char *(*AsUTF8AndSize)(PyObject *, ptrdiff_t *);
    PyObject *(*SysGetObject)(const char *);
    void (*ErrFetch)(PyObject **, PyObject **, PyObject **);
    PyObject *(*Str)(PyObject *);
    void (*DecRef)(PyObject *);
} py;

static void *py_sym(const char *name)
{
#ifdef _WIN32
    return py.lib ? lib_sym(py.lib, name) : NULL;
#else
    return py.lib ? dlsym(py.lib, name) : dlsym(RTLD_DEFAULT, name);
#endif
}

static int bind_python(void)
{
#define B(field, name) *(void **)&py.field = py_sym(name); if (!py.field) { \
        snprintf(load_error, sizeof load_error, "the Python library lacks %s", name); return -1; }
    B(IsInitialized, "Py_IsInitialized") B(SetProgramName, "Py_SetProgramName")
    B(InitializeEx, "Py_InitializeEx") B(SaveThread, "PyEval_SaveThread")
    B(GILStateEnsure, "PyGILState_Ensure") B(GILStateRelease, "PyGILState_Release")
    B(ImportModule, "PyImport_ImportModule") B(GetAttrString, "PyObject_GetAttrString")
    B(AsUTF8AndSize, "PyUnicode_AsUTF8AndSize") B(SysGetObject, "PySys_GetObject")
    B(ErrFetch, "PyErr_Fetch") B(Str, "PyObject_Str") B(DecRef, "Py_DecRef")
#undef B
    return 0;
}

/* ---- finding a Python: candidates in the documented order */
typedef struct {
    char executable[PATH_LEN];   /* interpreter (program name for the embedded one) */
    char libpython[PATH_LEN];    /* shared library to load ("" = none) */
    char mbfmu[128];             /* installed mbfmu version ("" = none) */
    char problem[1024];          /* why it cannot be used ("" = usable) */
} Candidate;

#ifdef _WIN32
static int host_python(void)
{
    static const char *names[] = {"python3.dll", "python314.dll", "python313.dll", "python312.dll",
                                  "python311.dll", "python310.dll", "python39.dll", NULL};
    for (int i = 0; names[i]; i++) {
        HMODULE h = GetModuleHandleA(names[i]);
        if (h && GetProcAddress(h, "Py_IsInitialized")) { py.lib = (void *)h; return 1; }
    }
    return 0;
}

/* python3.dll next to the interpreter, or in the home of its venv (pyvenv.cfg) */
static void examine(const char *python, Candidate *c)
{
    char exe[PATH_LEN], dir[PATH_LEN], probe[PATH_LEN + 32];
    memset(c, 0, sizeof *c);
    DWORD k = SearchPathA(NULL, python, strchr(python, '.') ? NULL : ".exe", sizeof exe, exe, NULL);
    if (k == 0 || k >= sizeof exe) {
        snprintf(c->problem, sizeof c->problem, "%s: not found", python);
        return;
    }
    snprintf(c->executable, sizeof c->executable, "%s", exe);
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '\\');
    if (!slash) slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    snprintf(probe, sizeof probe, "%s\\python3.dll", dir);
    if (GetFileAttributesA(probe) != INVALID_FILE_ATTRIBUTES) {
        snprintf(c->libpython, sizeof c->libpython, "%s", probe);
        return;
    }
    for (int up = 0; up < 2 && !c->libpython[0]; up++) {
        char cfg[PATH_LEN + 32], line[PATH_LEN];
        snprintf(cfg, sizeof cfg, up ? "%s\\..\\pyvenv.cfg" : "%s\\pyvenv.cfg", dir);
        FILE *f = fopen(cfg, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            char *eq = strchr(line, '=');
            if (strncmp(line, "home", 4) != 0 || !eq) continue;
            char *v = eq + 1;
            while (*v == ' ') v++;
            v[strcspn(v, "\r\n")] = 0;
            snprintf(probe, sizeof probe, "%s\\python3.dll", v);
            if (GetFileAttributesA(probe) != INVALID_FILE_ATTRIBUTES)
                snprintf(c->libpython, sizeof c->libpython, "%s", probe);
        }
        fclose(f);
    }
    if (!c->libpython[0])
        snprintf(c->problem, sizeof c->problem, "%s: no python3.dll next to it or in its pyvenv.cfg home", exe);
}

static const char *const PATH_NAMES[] = {"python.exe", NULL};

static int load_libpython(const Candidate *c)
{
    HMODULE h = LoadLibraryExA(c->libpython, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load %s (Python %s): %s", c->libpython, c->executable,
                 lib_error());
        return -1;
    }
    py.lib = (void *)h;
    return 0;
}

static wchar_t *widen(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc(n * sizeof *w) : NULL;
    if (w) MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
    return w;
}
#else
static int host_python(void) { return dlsym(RTLD_DEFAULT, "Py_IsInitialized") != NULL; }

/* What the interpreter says about itself: key=value lines. */
static const char PROBE[] =
    "import os, sys, sysconfig\n"
    "v = sysconfig.get_config_var\n"
    "name = v('INSTSONAME') or ''\n"
    "lib = ''\n"
    "if v('Py_ENABLE_SHARED') and name:\n"
    "    for d in (v('LIBDIR'), os.path.join(v('LIBDIR') or '', v('MULTIARCH') or ''), v('LIBPL'),\n"
    "              os.path.join(sys.base_prefix, 'lib')):\n"
    "        if d and os.path.isfile(os.path.join(d, name)):\n"
    "            lib = os.path.join(d, name)\n"
    "            break\n"
    "    else:\n"
    "        lib = name\n"
    "try:\n"
    "    from importlib.metadata import version\n"
    "    m = version('mbfmu')\n"
    "except Exception:\n"
    "    import importlib.util\n"
    "    m = ''\n"
    "    if importlib.util.find_spec('mbfmu'):\n"
    "        import mbfmu\n"
    "        m = getattr(mbfmu, '__version__', '?')\n"
    "print('executable=' + sys.executable)\n"
    "print('libpython=' + lib)\n"
    "print('mbfmu=' + m)\n";

static void field(const char *out, const char *key, char *dst, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t len = strcspn(p + kl + 1, "\r\n");
            if (len >= n) len = n - 1;
            memcpy(dst, p + kl + 1, len);
            dst[len] = 0;
            return;
        }
    }
    dst[0] = 0;
}

/* Run "python -c PROBE" (PATH searched for a bare name) and read its answer. */
static void examine(const char *python, Candidate *c)
{
    memset(c, 0, sizeof *c);
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(c->problem, sizeof c->problem, "%s: cannot create a pipe", python);
        return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)python, "-c", (char *)PROBE, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    char out[3 * PATH_LEN + 256];
    size_t got = 0;
    if (rc == 0) {
        ssize_t k;
        while (got < sizeof out - 1 && (k = read(fd[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)k;
    }
    out[got] = 0;
    close(fd[0]);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    if (rc != 0) {
        snprintf(c->problem, sizeof c->problem, "%s: not found", python);
        return;
    }
    field(out, "executable", c->executable, sizeof c->executable);
    field(out, "libpython", c->libpython, sizeof c->libpython);
    field(out, "mbfmu", c->mbfmu, sizeof c->mbfmu);
    if (!c->executable[0])
        snprintf(c->problem, sizeof c->problem, "%s: did not run as a Python interpreter", python);
    else if (!c->libpython[0])
        snprintf(c->problem, sizeof c->problem, "%s: built without a shared libpython (configure --enable-shared); "
                 "a host that is not Python needs one", c->executable);
}

static const char *const PATH_NAMES[] = {"python3", "python", NULL};

static int load_libpython(const Candidate *c)
{
    const char *path = getenv("MBFMU_LIBPYTHON") ? getenv("MBFMU_LIBPYTHON") : c->libpython;
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!h) h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load libpython %s of %s: %s", path, c->executable,
                 lib_error());
        return -1;
    }
    py.lib = NULL;  /* global now */
    return 0;
}

static wchar_t *widen(const char *s)
{
    wchar_t *(*decode)(const char *, size_t *) = (wchar_t * (*)(const char *, size_t *))py_sym("Py_DecodeLocale");
    return decode ? decode(s, NULL) : NULL;
}
#endif

static void append(char *buf, size_t n, const char *text)
{
    size_t k = strlen(buf);
    if (k < n - 1) snprintf(buf + k, n - k, "%s", text);
}

/* Choose the interpreter (search order above); on failure load_error says why. */
static int find_python(const char *need, Candidate *chosen)
{
    const char *order[8];
    int n = 0;
    const char *env = getenv("MBFMU_PYTHON");
    char *hint = config_value("python_hint");
    if (env && *env) order[n++] = env;
    else {
        for (int i = 0; PATH_NAMES[i]; i++) order[n++] = PATH_NAMES[i];
        if (hint) order[n++] = hint;
    }
    char tried[ERR_LEN] = "";
    int usable = -1;
    Candidate c;
    for (int i = 0; i < n; i++) {
        examine(order[i], &c);
        append(tried, sizeof tried, i ? "; " : "");
        if (c.problem[0]) {
            append(tried, sizeof tried, c.problem);
            continue;
        }
        if (!need || strcmp(c.mbfmu, need) == 0) {
            *chosen = c;
            free(hint);
            return 0;
        }
        if (usable < 0) { usable = i; *chosen = c; }
        char line[PATH_LEN + 128];
        snprintf(line, sizeof line, "%s: mbfmu %s", c.executable, c.mbfmu[0] ? c.mbfmu : "not installed");
        append(tried, sizeof tried, line);
    }
    free(hint);
    if (usable >= 0) return 0;  /* the import check below says what to install */
    snprintf(load_error, sizeof load_error,
             "no usable Python found (tried %s%s). Install Python (with a shared libpython) and %s%s, or name "
             "its interpreter in the environment variable MBFMU_PYTHON",
             env && *env ? "MBFMU_PYTHON=" : "", tried, need ? "mbfmu " : "pythonfmu", need ? need : "");
    return -1;
}

/* Start the interpreter with the chosen Python as program name. */
static int start_python(const Candidate *c)
{
    if (bind_python() != 0) return -1;
    if (py.IsInitialized()) return 0;
    static wchar_t *wexe = NULL; /* must outlive the interpreter */
    wexe = widen(c->executable);
    if (wexe) py.SetProgramName(wexe);
    /* UTF-8 mode (PEP 540), as "python -X utf8": a host started without a UTF-8 locale (the C
     * locale of "env -i", a service) would otherwise give the interpreter ASCII file names, and
     * the FMU's folder, when it holds a non-ASCII character, could not be decoded. Set through
     * the pre-initialization variable Py_UTF8Mode, which Py_InitializeEx reads (the host's own
     * environment is left alone); an interpreter without it gets PYTHONUTF8 unless set. */
    int *utf8_mode = (int *)py_sym("Py_UTF8Mode");
    if (utf8_mode) *utf8_mode = 1;
#ifndef _WIN32
    else setenv("PYTHONUTF8", "1", 0);
#endif
    py.InitializeEx(0);   /* 0: leave the host's signal handlers alone */
    py.SaveThread();      /* release the GIL; pythonfmu takes it per call */
    return 0;
}

static void utf8(PyObject *o, char *dst, size_t n)
{
    const char *s = o ? py.AsUTF8AndSize(o, NULL) : NULL;
    snprintf(dst, n, "%s", s ? s : "?");
}

/* ---- what to install where mbfmu is missing
 *
 * mbfmu is on no index a recipient can reach: the FMU carries its source
 * distribution (resources/<mbfmu_sdist of mbfmu_python.txt>), and the log
 * names "python -m pip install <that file>".  Hosts such as fmpy remove the
 * extracted folder when the run ends, so on Linux the file is first copied
 * into a new private folder (mkdtemp) that outlives the run. */
static void quote_arg(const char *arg, char *out, size_t n)
{
#ifdef _WIN32
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:@,\\";
#else
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:@,";
#endif
    int plain = *arg != 0;
    for (const char *p = arg; *p; p++)
        if (!strchr(safe, *p)) plain = 0;
    if (plain) { snprintf(out, n, "%s", arg); return; }
    size_t k = 0;
#ifdef _WIN32
    const char q = '"';
#else
    const char q = '\'';
#endif
    if (k + 1 < n) out[k++] = q;
    for (const char *p = arg; *p && k + 5 < n; p++) {
#ifndef _WIN32
        if (*p == '\'') { memcpy(out + k, "'\\''", 4); k += 4; continue; }  /* close, escaped quote, reopen */
#endif
        out[k++] = *p;
    }
    if (k + 1 < n) out[k++] = q;
    out[k < n ? k : n - 1] = 0;
}

#ifndef _WIN32
static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in) return -1;
    FILE *out = fopen(to, "wb");
    if (!out) { fclose(in); return -1; }
    char buf[65536];
    size_t k;
    int rc = 0;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, k, out) != k) { rc = -1; break; }
    if (ferror(in)) rc = -1;
    fclose(in);
    if (fclose(out) != 0) rc = -1;
    return rc;
}

/* Mark folder `dir` as mbfmu.untrusted.scratch marks its private folders: the owner (this host
   process, its pid and start time) and how long to keep it after the owner is gone, so that the
   command the log offers still finds the file, and a later mbfmu process then removes it. */
static void mark_owner(const char *dir)
{
    char start[32] = "null", line[1024], path[PATH_LEN + 32];
    FILE *f = fopen("/proc/self/stat", "rb");
    if (f) {
        size_t k = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[k] = 0;
        char *p = strrchr(line, ')');
        for (int field = 0; p && field < 20; field++) p = strchr(p + 1, ' ');  /* to field 22, starttime */
        if (p) {
            size_t m = strspn(p + 1, "0123456789");
            if (m > 0 && m < sizeof start - 2) snprintf(start, sizeof start, "\"%.*s\"", (int)m, p + 1);
        }
    }
    snprintf(path, sizeof path, "%s/.mbfmu-owner", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (fd < 0) return;
    char text[256];
    int len = snprintf(text, sizeof text, "{\"pid\": %ld, \"start\": %s, \"keep_until\": %lld}",
                       (long)getpid(), start, (long long)time(NULL) + 86400);
    if (len > 0 && write(fd, text, (size_t)len) != len) { /* an unmarked folder is only left behind */ }
    close(fd);
}

#endif

static int hosted_by_python = 0;  /* the host is a Python process: its interpreter is the one used */

/* The pending Python exception, dropped (GIL held). */
static void drop_error(void)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    py.ErrFetch(&type, &value, &tb);
    if (type) py.DecRef(type);
    if (value) py.DecRef(value);
    if (tb) py.DecRef(tb);
}

/* str(module.func(arg)) of the running interpreter into out; "" where it fails (GIL held). */
static void call_text(const char *module, const char *func, const char *arg, char *out, size_t n)
{
    PyObject *(*call)(PyObject *, const char *, ...) = (PyObject * (*)(PyObject *, const char *, ...))
        py_sym("PyObject_CallFunction");
    PyObject *mod = call ? py.ImportModule(module) : NULL;
    PyObject *fn = mod ? py.GetAttrString(mod, func) : NULL;
    PyObject *res = fn ? call(fn, "s", arg) : NULL;
    const char *text = res ? py.AsUTF8AndSize(res, NULL) : NULL;
    snprintf(out, n, "%s", text ? text : "");
    if (!text) drop_error();
    if (res) py.DecRef(res);
    if (fn) py.DecRef(fn);
    if (mod) py.DecRef(mod);
}

/* What decides the install command, asked of the running interpreter (GIL held):
 * externally managed (PEP 668: an EXTERNALLY-MANAGED file in the stdlib folder of a Python that
 * is not a virtual environment; pip refuses to install into it), and whether pip can build the
 * source distribution offline with --no-build-isolation: setuptools >= 68 (mbfmu's
 * pyproject.toml) installed there, with the wheel package where setuptools < 70.1 lacks its own
 * bdist_wheel. */
static void install_facts(int *managed, int *builds_offline)
{
    char stdlib[PATH_LEN], prefix[PATH_LEN], base[PATH_LEN], setuptools[64], wheel[64], marker[PATH_LEN + 32];
    call_text("sysconfig", "get_path", "stdlib", stdlib, sizeof stdlib);
    utf8(py.SysGetObject("prefix"), prefix, sizeof prefix);
    utf8(py.SysGetObject("base_prefix"), base, sizeof base);
    snprintf(marker, sizeof marker, "%s/EXTERNALLY-MANAGED", stdlib);
    FILE *f = stdlib[0] ? fopen(marker, "r") : NULL;
    *managed = f && strcmp(prefix, base) == 0;
    if (f) fclose(f);
    call_text("importlib.metadata", "version", "setuptools", setuptools, sizeof setuptools);
    call_text("importlib.metadata", "version", "wheel", wheel, sizeof wheel);
    int major = 0, minor = 0;
    sscanf(setuptools, "%d.%d", &major, &minor);
    *builds_offline = major >= 68 && (major > 70 || (major == 70 && minor >= 1) || wheel[0]);
}

static void install_command(const char *exe, const char *need, char *out, size_t n)
{
    char qexe[PATH_LEN + 64], qfile[2 * PATH_LEN + 64];
    quote_arg(exe, qexe, sizeof qexe);
    char *name = config_value("mbfmu_sdist");
    char carried[PATH_LEN + 128];
    FILE *f = NULL;
    if (name && !strchr(name, '/') && !strchr(name, '\\') && name[0] != '.') {
        snprintf(carried, sizeof carried, "%s/resources/%s", fmu_root, name);
        f = fopen(carried, "rb");
    }
    if (!f) {
        snprintf(out, n, "%s -m pip install mbfmu==%s", qexe, need);
        free(name);
        return;
    }
    fclose(f);
    const char *file = carried;
#ifndef _WIN32
    /* one copy per process however many instantiations fail (each FMU extraction loads its own
       copy of this library: the copy's path is kept in the environment), in a marked private folder */
    static char kept[PATH_LEN + 128];
    static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&kept_lock);
    const char *before = getenv("MBFMU_INSTALL_COPY");
    if (before && strlen(before) < sizeof kept && strrchr(before, '/')
            && strcmp(strrchr(before, '/') + 1, name) == 0 && access(before, R_OK) == 0) {
        snprintf(kept, sizeof kept, "%s", before);
        file = kept;
    } else {
        const char *tmp = getenv("TMPDIR");
        char dir[PATH_LEN];
        snprintf(dir, sizeof dir, "%s/mbfmu-install-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        kept[0] = 0;
        if (mkdtemp(dir)) {
            mark_owner(dir);
            snprintf(kept, sizeof kept, "%s/%s", dir, name);
            if (copy_file(carried, kept) == 0) {
                file = kept;
                setenv("MBFMU_INSTALL_COPY", kept, 1);
            } else {
                char mark[PATH_LEN + 32];
                snprintf(mark, sizeof mark, "%s/.mbfmu-owner", dir);
                remove(kept); remove(mark); rmdir(dir);
                kept[0] = 0;
            }
        }
    }
    pthread_mutex_unlock(&kept_lock);
#endif
    quote_arg(file, qfile, sizeof qfile);
    int managed = 0, offline = 0;
    int gil = py.GILStateEnsure();
    install_facts(&managed, &offline);
    py.GILStateRelease(gil);
    char carried_by[PATH_LEN];
    snprintf(carried_by, sizeof carried_by, "mbfmu's source distribution, carried by this FMU as resources/%s", name);
    if (managed) {
#ifdef _WIN32
        const char *venv = "%USERPROFILE%\\mbfmu-venv", *vpy = "%USERPROFILE%\\mbfmu-venv\\Scripts\\python.exe";
#else
        const char *venv = "$HOME/mbfmu-venv", *vpy = "$HOME/mbfmu-venv/bin/python";
#endif
        snprintf(out, n, "%s -m venv %s && %s -m pip install %s (%s; %s is an externally managed system Python, "
                 "into which pip installs nothing: this creates the virtual environment %s for mbfmu, and pip takes "
                 "mbfmu's dependencies and build tools from your package index), then %s %s", qexe, venv, vpy, qfile,
                 carried_by, exe, venv, hosted_by_python ? "run this host with" : "set MBFMU_PYTHON to", vpy);
    } else if (offline) {
        snprintf(out, n, "%s -m pip install --no-build-isolation %s (%s; built with the setuptools installed "
                 "there, so no network is needed where mbfmu's dependencies are installed)", qexe, qfile, carried_by);
    } else {
        snprintf(out, n, "%s -m pip install %s (%s; pip takes mbfmu's dependencies from the installed packages or "
                 "your package index, and fetches the build tools setuptools>=68 and wheel: offline, install "
                 "those first and add --no-build-isolation)", qexe, qfile, carried_by);
    }
    free(name);
}

/* "import mbfmu" in the running interpreter gives version `need`, or load_error says what to install. */
static int check_mbfmu(const char *need)
{
    int gil = py.GILStateEnsure();
    char exe[PATH_LEN], have[128] = "", why[1024] = "";
    utf8(py.SysGetObject("executable"), exe, sizeof exe);  /* borrowed */
    PyObject *mod = py.ImportModule("mbfmu");
    if (!mod) {
        PyObject *type = NULL, *value = NULL, *tb = NULL;
        py.ErrFetch(&type, &value, &tb);
        PyObject *text = value ? py.Str(value) : NULL;
        utf8(text, why, sizeof why);
        if (text) py.DecRef(text);
        if (type) py.DecRef(type);
        if (value) py.DecRef(value);
        if (tb) py.DecRef(tb);
    } else {
        PyObject *v = py.GetAttrString(mod, "__version__");
        if (v) { utf8(v, have, sizeof have); py.DecRef(v); }
        else { PyObject *t, *e, *b; py.ErrFetch(&t, &e, &b); if (t) py.DecRef(t); if (e) py.DecRef(e); if (b) py.DecRef(b); }
        py.DecRef(mod);
    }
    py.GILStateRelease(gil);
    if (mod && strcmp(have, need) == 0) return 0;
    char install[3 * PATH_LEN + 512];
    install_command(exe, need, install, sizeof install);
    if (!mod && strstr(why, "No module named 'mbfmu'"))
        snprintf(load_error, sizeof load_error, "mbfmu %s is not installed in %s: run %s", need, exe, install);
    else if (!mod)
        snprintf(load_error, sizeof load_error, "mbfmu %s does not import in %s (%s): run %s", need, exe, why,
                 install);
    else
        snprintf(load_error, sizeof load_error, "this FMU needs mbfmu %s but %s has mbfmu %s: run %s", need, exe,
                 have[0] ? have : "(no version)", install);
    return -1;
}

/* ---- the backend: pythonfmu's export library */
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
#define X(f) f##TYPE *f;
    FMI_FUNCTIONS(X)
#undef X
} real;

static void *backend = NULL;   /* handle of pythonfmu's export library */
static int live = 0;           /* instances alive, under lock() */

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

/* Python found, started and checked (steps 1-3 of the header comment). */
static int prepare_python(void)
{
    char *need = config_value("mbfmu");   /* absent: a plain pythonfmu FMU (add_loader_shim) */
    int rc = 0;
    hosted_by_python = host_python();
    if (!hosted_by_python) {
        Candidate c;
        rc = find_python(need, &c) != 0 || load_libpython(&c) != 0 || start_python(&c) != 0 ? -1 : 0;
    } else {
        rc = bind_python();
    }
    if (rc == 0 && need) rc = check_mbfmu(need);
    free(need);
    return rc;
}

/* fmu_root: the FMU's folder, from this binary's path <root>/binaries/<platform>/<id>.so */
static int locate_fmu(void)
{
    lock();
    int rc = 0;
    if (!fmu_root[0]) {
        char here[PATH_LEN];
        if (self_path(here, sizeof here) != 0) {
            snprintf(load_error, sizeof load_error, "cannot locate the FMU binary");
            rc = -1;
        } else {
            for (int up = 0; up < 3; up++) {
                char *slash = strrchr(here, '/');
                if (slash) *slash = 0; else snprintf(here, sizeof here, ".");
            }
            snprintf(fmu_root, sizeof fmu_root, "%s", here);
        }
    }
    unlock();
    return rc;
}

/* The GUID the host gives is this FMU's (resources/mbfmu_python.txt, written with
 * modelDescription.xml), as FMI 2.0 requires (section 2.1.5); else err says so. */
static int check_guid(const char *given, char *err, size_t n)
{
    char *own = config_value("guid");
    int rc = 0;
    if (own && (!given || strcmp(given, own) != 0)) {
        snprintf(err, n, "GUID %s does not match this FMU's %s (its modelDescription.xml)",
                 given ? given : "(null)", own);
        rc = -1;
    }
    free(own);
    return rc;
}

static int load_backend(void)
{
    lock();
    int rc = 0;
    if (!backend) {
        char lib[PATH_LEN + 64];
        if (prepare_python() != 0) { rc = -1; goto out; }
        snprintf(lib, sizeof lib, "%s/binaries/" PLATFORM "/mbfmu_pythonfmu_export" LIB_SUFFIX, fmu_root);
        void *h = lib_open_private(lib);
        if (!h) {
            snprintf(load_error, sizeof load_error, "cannot load %s: %s", lib, lib_error());
            rc = -1;
            goto out;
        }
#define X(f)                                                                   \
        *(void **)&real.f = lib_sym(h, #f);                                    \
        if (!real.f) {                                                         \
            snprintf(load_error, sizeof load_error, "%s lacks %s", lib, #f);  \
            lib_close(h);                                                      \
            rc = -1;                                                           \
            goto out;                                                          \
        }
        FMI_FUNCTIONS(X)
#undef X
        *(void **)&backend_release_guard = lib_sym(h, "finalizePythonInterpreter");
        atexit(release_guard);  /* runs before the library's static destructors */
        backend = h;
    }
out:
    unlock();
    return rc;
}

#ifdef _WIN32
BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
    (void)inst;
    if (reason == DLL_PROCESS_DETACH && reserved == NULL && backend) {  /* FreeLibrary, not process exit */
        release_guard();
        FreeLibrary((HMODULE)backend);
        backend = NULL;
        backend_release_guard = NULL;
    }
    return TRUE;
}
#else
__attribute__((destructor)) static void unload_backend(void)
{
    if (backend) {
        release_guard();
        dlclose(backend);
    }
    backend = NULL;
    backend_release_guard = NULL;
}
#endif

/* ---- the resource folder, spelled so that pythonfmu 0.7 can use it
 *
 * pythonfmu 0.7 turns fmuResourceLocation into a path by replacing "%20"
 * with a space and cutting "file://": every other percent escape stays.
 * fmpy passes the standard URI (non-ASCII bytes, '#' and '%' escaped), so
 * the folder pythonfmu looks in does not exist, and its findClass then
 * returns a NULL class that it calls: signal 11 in the host.  The shim
 * decodes the URI itself and hands pythonfmu a plain path, one without
 * "file://" (so nothing is cut).  Where that path would still be misread
 * (it holds "%20", which pythonfmu would turn into a space, or on Linux it
 * is not UTF-8, which Python refuses), the same folder is given by another
 * name: /proc/self/fd/<n> of a descriptor held open for the instance
 * (Linux), or its 8.3 short name (Windows, whose narrow file functions use
 * the ANSI code page while Python reads UTF-8: only ASCII means the same to
 * both).  A URI that is not a local file URI falls back to the resources
 * folder next to the FMU's binaries. */
static int hex_digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int ascii_prefix_casecmp(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        int a = (unsigned char)*s, b = (unsigned char)*prefix;
        if (a >= 'A' && a <= 'Z') a += 'a' - 'A';
        if (a != b) return 1;
    }
    return 0;
}

/* "file:///a/J%C3%BCrgen%20%23" -> "/a/Jürgen #"; "file:/x", "file://localhost/x" too.  -1: not a local file URI. */
static int uri_to_path(const char *uri, char *out, size_t n)
{
    if (!uri || ascii_prefix_casecmp(uri, "file:") != 0) return -1;
    const char *p = uri + 5;
    if (p[0] == '/' && p[1] == '/') {
        p += 2;
        if (ascii_prefix_casecmp(p, "localhost/") == 0) p += 9;
        else if (*p != '/') return -1;   /* another host's file */
    }
    if (*p != '/') return -1;
    size_t k = 0;
    for (; *p; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = hex_digit(p[1]), lo = hi >= 0 ? hex_digit(p[2]) : -1;
            if (lo < 0) return -1;
            c = 16 * hi + lo;
            if (c == 0) return -1;
            p += 2;
        }
        if (k + 1 >= n) return -1;
        out[k++] = (char)c;
    }
    out[k] = 0;
#ifdef _WIN32
    /* "/C:/dir" -> "C:/dir" */
    if (out[0] == '/' && ((out[1] >= 'A' && out[1] <= 'Z') || (out[1] >= 'a' && out[1] <= 'z')) && out[2] == ':')
        memmove(out, out + 1, k);
#endif
    return 0;
}

#ifdef _WIN32
static int is_ascii(const char *s)
{
    for (; *s; s++) if ((unsigned char)*s >= 0x80) return 0;
    return 1;
}
#else
static int is_utf8(const unsigned char *s)
{
    while (*s) {
        int extra = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 && *s >= 0xC2 ? 1 : (*s & 0xF0) == 0xE0 ? 2
                  : (*s & 0xF8) == 0xF0 && *s <= 0xF4 ? 3 : -1;
        if (extra < 0) return 0;
        s++;
        for (int i = 0; i < extra; i++, s++) if ((*s & 0xC0) != 0x80) return 0;
    }
    return 1;
}
#endif

/* The folder pythonfmu is to use, in out (see above); -1 with load_error set if there is none. */
static int resource_folder(Inst *s, const char *uri, char *out, size_t n)
{
    if (uri_to_path(uri, out, n) != 0) snprintf(out, n, "%s/resources", fmu_root);
#ifdef _WIN32
    (void)s;
    if (!is_ascii(out)) {
        wchar_t wide[PATH_LEN], shrt[PATH_LEN];
        char narrow[PATH_LEN];
        if (MultiByteToWideChar(CP_UTF8, 0, out, -1, wide, PATH_LEN) > 0) {
            DWORD k = GetShortPathNameW(wide, shrt, PATH_LEN);
            if (k > 0 && k < PATH_LEN && WideCharToMultiByte(CP_UTF8, 0, shrt, -1, narrow, sizeof narrow, NULL, NULL) > 0
                && is_ascii(narrow))
                snprintf(out, n, "%s", narrow);
        }
    }
#else
    if (strstr(out, "%20") || !is_utf8((const unsigned char *)out)) {
        int fd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(load_error, sizeof load_error, "cannot open the FMU's resources folder %s", out);
            return -1;
        }
        s->resource_fd = fd;
        snprintf(out, n, "/proc/self/fd/%d", fd);
    }
#endif
    /* what pythonfmu reads first: its absence would become the NULL class */
    char probe[PATH_LEN + 32];
    snprintf(probe, sizeof probe, "%s/slavemodule.txt", out);
    FILE *f = fopen(probe, "r");
    if (!f) {
        snprintf(load_error, sizeof load_error, "the FMU's resources folder %s has no readable slavemodule.txt "
                 "(fmuResourceLocation %s)", out, uri ? uri : "(none)");
        return -1;
    }
    fclose(f);
    return 0;
}

static void release_resource_folder(Inst *s)
{
#ifndef _WIN32
    if (s->resource_fd >= 0) close(s->resource_fd);
#endif
    s->resource_fd = -1;
}

/* ---- forwarding */
static fmi2Status worst(fmi2Status st, int pending)
{
    if (st == fmi2Pending) return st;
    return (int)st > pending ? st : (fmi2Status)pending;
}

#define FWD(fn, ...)                                                   \
    Inst *s = (Inst *)c;                                                     \
    if (!s) return fmi2Error;                                                \
    Inst *prev = current;                                                    \
    current = s;                                                             \
    s->pending = fmi2OK;                                                     \
    fmi2Status st = real.fn(s->real, ##__VA_ARGS__);                         \
    current = prev;                                                          \
    return worst(st, s->pending);

FMI2_Export const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_Export const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_Export fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    Inst *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->resource_fd = -1;
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
    char refused[PATH_LEN + 256] = "";
    if (locate_fmu() != 0 || check_guid(fmuGUID, refused, sizeof refused) != 0) {
        say(s, fmi2Error, "logStatusError", refused[0] ? refused : load_error);
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
    char folder[PATH_LEN];
    if (resource_folder(s, fmuResourceLocation, folder, sizeof folder) != 0) {
        say(s, fmi2Fatal, "logStatusFatal", load_error);
        release_resource_folder(s);
        free(s->name);
        free(s);
        return NULL;
    }
    Inst *prev = current;
    current = s;
    s->real = real.fmi2Instantiate(instanceName, fmuType, fmuGUID, folder, functions, visible, loggingOn);
    current = prev;
    if (s->real) {
        lock();
        live++;
        unlock();
    }
    if (!s->real) {
        if (s->pending < fmi2Error)
            say(s, fmi2Fatal, "logStatusFatal",
                "the Python slave could not be instantiated (switch logging on for pythonfmu's message)");
        release_resource_folder(s);
        free(s->name);
        free(s);
        return NULL;
    }
    return s;
}

FMI2_Export void fmi2FreeInstance(fmi2Component c)
{
    Inst *s = (Inst *)c;
    if (!s) return;
    s->io.values = NULL;
    Inst *prev = current;
    current = s;
    real.fmi2FreeInstance(s->real);
    current = prev;
    release_resource_folder(s);
    free(s->name);
    free(s);
    lock();
    if (--live == 0) release_guard();
    unlock();
}

FMI2_Export fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cat[])
{ FWD(fmi2SetDebugLogging, on, n, cat) }

FMI2_Export fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDef, fmi2Real tol, fmi2Real t0,
                                      fmi2Boolean stopDef, fmi2Real tEnd)
{ FWD(fmi2SetupExperiment, tolDef, tol, t0, stopDef, tEnd) }

FMI2_Export fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{ FWD(fmi2EnterInitializationMode) }
FMI2_Export fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{ FWD(fmi2ExitInitializationMode) }
FMI2_Export fmi2Status fmi2Terminate(fmi2Component c) { FWD(fmi2Terminate) }
FMI2_Export fmi2Status fmi2Reset(fmi2Component c)
{
    if (c) ((Inst *)c)->io.values = NULL;  /* pythonfmu makes a new slave, which attaches anew */
    FWD(fmi2Reset)
}

/* Fast paths: fmi2GetReal when the outputs are fresh (the slave computes them once per step)
 * and fmi2SetReal of inputs that are finite and within their bounds read and write the slave's
 * values directly; anything else (a value reference out of range, a refused value, stale
 * outputs) goes to the Python slave, which also writes the messages. */
FMI2_Export fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[])
{
    Inst *fast = (Inst *)c;
    if (fast && fast->io.values && *fast->io.fresh && (vr || n == 0) && (v || n == 0)) {
        size_t i = 0;
        for (; i < n && vr[i] < (fmi2ValueReference)fast->io.n; i++) v[i] = fast->io.values[vr[i]];
        if (i == n) return fmi2OK;
    }
    FWD(fmi2GetReal, vr, n, v)
}
FMI2_Export fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[])
{ FWD(fmi2GetInteger, vr, n, v) }
FMI2_Export fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[])
{ FWD(fmi2GetBoolean, vr, n, v) }
FMI2_Export fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[])
{ FWD(fmi2GetString, vr, n, v) }
FMI2_Export fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[])
{
    Inst *fast = (Inst *)c;
    if (fast && fast->io.values && (vr || n == 0) && (v || n == 0)) {
        size_t i = 0;
        for (; i < n; i++) {
            fmi2ValueReference k = vr[i];
            if (k >= (fmi2ValueReference)fast->io.nu || !isfinite(v[i]) || v[i] < fast->io.u_min[k] ||
                v[i] > fast->io.u_max[k])
                break;
        }
        if (i == n) {
            for (i = 0; i < n; i++) fast->io.values[vr[i]] = v[i];
            if (n) *fast->io.fresh = 0;  /* outputs may feed through from the inputs */
            return fmi2OK;
        }
    }
    FWD(fmi2SetReal, vr, n, v)
}
FMI2_Export fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[])
{ FWD(fmi2SetInteger, vr, n, v) }
FMI2_Export fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[])
{ FWD(fmi2SetBoolean, vr, n, v) }
FMI2_Export fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[])
{ FWD(fmi2SetString, vr, n, v) }

FMI2_Export fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state)
{ FWD(fmi2GetFMUstate, state) }
FMI2_Export fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{ FWD(fmi2SetFMUstate, state) }
FMI2_Export fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state)
{ FWD(fmi2FreeFMUstate, state) }
FMI2_Export fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size)
{ FWD(fmi2SerializedFMUstateSize, state, size) }
FMI2_Export fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte b[], size_t size)
{ FWD(fmi2SerializeFMUstate, state, b, size) }
FMI2_Export fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t size, fmi2FMUstate *state)
{ FWD(fmi2DeSerializeFMUstate, b, size, state) }

FMI2_Export fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                               const fmi2ValueReference z[], size_t nz, const fmi2Real dv[],
                                               fmi2Real dz[])
{ FWD(fmi2GetDirectionalDerivative, u, nu, z, nz, dv, dz) }
FMI2_Export fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                              const fmi2Integer order[], const fmi2Real v[])
{ FWD(fmi2SetRealInputDerivatives, vr, n, order, v) }
FMI2_Export fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                               const fmi2Integer order[], fmi2Real v[])
{ FWD(fmi2GetRealOutputDerivatives, vr, n, order, v) }

FMI2_Export fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior)
{ FWD(fmi2DoStep, t, h, noSetPrior) }
FMI2_Export fmi2Status fmi2CancelStep(fmi2Component c) { FWD(fmi2CancelStep) }

FMI2_Export fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind k, fmi2Status *v)
{ FWD(fmi2GetStatus, k, v) }
FMI2_Export fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind k, fmi2Real *v)
{ FWD(fmi2GetRealStatus, k, v) }
FMI2_Export fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind k, fmi2Integer *v)
{ FWD(fmi2GetIntegerStatus, k, v) }
FMI2_Export fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind k, fmi2Boolean *v)
{ FWD(fmi2GetBooleanStatus, k, v) }
FMI2_Export fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind k, fmi2String *v)
{ FWD(fmi2GetStringStatus, k, v) }
