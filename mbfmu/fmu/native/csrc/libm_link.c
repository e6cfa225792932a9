/*
 * The C math library for builds that do not link it.
 *
 * fmpy.build.build_platform_binary compiles the FMU's sources with a CMake
 * project of its own that links no library: it ignores the buildDescription's
 * <Library name="m"> (FMI 3), and FMI 2's <SourceFiles> cannot name one. On
 * glibc the math functions live in libm.so.6, so such a binary has undefined
 * sin, exp, pow, ...: it loads in a host that happens to have libm (fmpy's
 * Python) and fails in one that has not (the FMU Compliance Checker, a plain C
 * host: "undefined symbol: sincos").
 *
 * Where the build does not say it links libm (MB_LINKS_LIBM, defined by the
 * FMU builder, which passes -lm), this file defines the math functions the
 * sources call (and those the compiler emits for them: sincos for a sin and a
 * cos of one angle, sqrt for its errno path), hidden in the binary, each
 * calling libm's own function, found once with dlopen/dlsym when the binary is
 * loaded. They compute what libm computes, so the binary gives the shipped
 * binary's numbers. dlopen is in glibc's libc from glibc 2.34 on; an older
 * glibc needs -ldl on the link line (or -lm, with -DMB_LINKS_LIBM).
 * Elsewhere (Windows, macOS, musl) the math functions are in the C library
 * itself and this file compiles to nothing.
 */
#if defined(__linux__) && !defined(MB_LINKS_LIBM)
#include <features.h>   /* __GLIBC__ */
#endif

#if defined(__GLIBC__) && !defined(MB_LINKS_LIBM)
#include <dlfcn.h>
#include <string.h>

/* With MB_GLIBC_BASELINE (glibc_baseline.h), dlopen and dlsym bind to their
 * oldest versions, which glibc 2.34 and newer keep in libc, instead of
 * dlopen@GLIBC_2.34: the binary keeps the 2.17 baseline of the others. */
#if defined(MB_GLIBC_BASELINE) && defined(__x86_64__) && !defined(__ILP32__)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
#elif defined(MB_GLIBC_BASELINE) && defined(__aarch64__)
__asm__(".symver dlopen,dlopen@GLIBC_2.17");
__asm__(".symver dlsym,dlsym@GLIBC_2.17");
#endif

#define MB_LIBM_HIDDEN __attribute__((visibility("hidden")))
/* the functions forwarded: (name, number of double arguments) */
#define MB_LIBM_1(X) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(tanh) X(exp) X(log) X(sqrt) X(floor)
#define MB_LIBM_2(X) X(atan2) X(pow) X(hypot) X(fmax) X(fmin)

typedef double (*mb_libm_f1)(double);
typedef double (*mb_libm_f2)(double, double);
typedef void (*mb_libm_sc)(double, double *, double *);

static struct {
#define F1(name) mb_libm_f1 name;
#define F2(name) mb_libm_f2 name;
    MB_LIBM_1(F1) MB_LIBM_2(F2)
#undef F1
#undef F2
    mb_libm_sc sincos;
} mb_libm;

/* libm's function `name` into *slot (a function pointer of any type): the object pointer
 * dlsym returns is copied, as ISO C converts none to a function pointer */
static void mb_libm_find(void *lib, const char *name, void *slot, size_t size)
{
    void *sym = lib ? dlsym(lib, name) : NULL;
    if (sym) memcpy(slot, &sym, size);
}

__attribute__((constructor)) static void mb_libm_open(void)
{
    void *lib = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
#define FIND(name) mb_libm_find(lib, #name, &mb_libm.name, sizeof mb_libm.name);
    MB_LIBM_1(FIND) MB_LIBM_2(FIND) FIND(sincos)
#undef FIND
}

/* without libm (it cannot be opened) every result is NaN, which the runtime refuses as a state */
#define DEF1(name) MB_LIBM_HIDDEN double name(double x) { return mb_libm.name ? mb_libm.name(x) : 0.0 / 0.0; }
#define DEF2(name) \
    MB_LIBM_HIDDEN double name(double x, double y) { return mb_libm.name ? mb_libm.name(x, y) : 0.0 / 0.0; }
MB_LIBM_1(DEF1)
MB_LIBM_2(DEF2)
#undef DEF1
#undef DEF2

MB_LIBM_HIDDEN void sincos(double x, double *s, double *c)
{
    if (mb_libm.sincos) {
        mb_libm.sincos(x, s, c);
    } else {
        *s = *c = 0.0 / 0.0;
    }
}
#endif

/* ISO C wants a declaration in every translation unit */
typedef int mb_libm_link_unit;
