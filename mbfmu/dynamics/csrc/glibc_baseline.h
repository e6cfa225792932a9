/*
 * The glibc baseline of every binary built from these sources: glibc 2.17
 * (RHEL/CentOS 7 and later) on x86_64 and aarch64 Linux.
 *
 * glibc 2.27 to 2.29 gave exp, log, pow, exp2 and log2 (and their float
 * variants), and glibc 2.35 hypot, new implementations under new symbol versions, so a binary linked
 * against a recent glibc needs GLIBC_2.29 and does not load on older systems.
 * The original versions are still in every later glibc and compute the same
 * values there (the new code behind a wrapper that only adds the old SVID
 * error handling); binding this file's references to them keeps the baseline.
 * Every translation unit includes this header (through mb.h or directly): a
 * .symver binds the references of its own object file only.
 *
 * The pin is on where MB_GLIBC_BASELINE is defined (the FMU builder's flags:
 * -DMB_GLIBC_BASELINE ... -lm). A versioned reference needs libm on the link
 * line, which the Python extension's and fmpy's CMake builds do not give; a
 * binary built without the macro links the newest versions, which is right
 * for a binary made on the machine it runs on.
 */
#ifndef MBFMU_GLIBC_BASELINE_H
#define MBFMU_GLIBC_BASELINE_H

/* The other build setting every translation unit needs before its code, here because every
 * one includes this header first: no fused multiply-add. Every product is rounded before it
 * is added, as in the shipped binaries (-std=c99, -ffp-contract=off); a build in a GNU C mode
 * (fmpy's CMake build: -std=gnu99) for a target with FMA (aarch64, x86_64 -march=haswell)
 * would otherwise fuse them and differ from the shipped numbers by round-off. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h> /* defines __GLIBC__ where the C library is glibc */

#if defined(__GLIBC__) && defined(__linux__) && defined(MB_GLIBC_BASELINE)
#if defined(__x86_64__) && !defined(__ILP32__)
#define MB_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define MB_GLIBC_BASE "GLIBC_2.17"
#endif
#ifdef MB_GLIBC_BASE
__asm__(".symver exp,exp@" MB_GLIBC_BASE);
__asm__(".symver log,log@" MB_GLIBC_BASE);
__asm__(".symver pow,pow@" MB_GLIBC_BASE);
__asm__(".symver exp2,exp2@" MB_GLIBC_BASE);
__asm__(".symver log2,log2@" MB_GLIBC_BASE);
__asm__(".symver expf,expf@" MB_GLIBC_BASE);
__asm__(".symver logf,logf@" MB_GLIBC_BASE);
__asm__(".symver powf,powf@" MB_GLIBC_BASE);
__asm__(".symver exp2f,exp2f@" MB_GLIBC_BASE);
__asm__(".symver log2f,log2f@" MB_GLIBC_BASE);
/* glibc 2.35 gave hypot a new version too */
__asm__(".symver hypot,hypot@" MB_GLIBC_BASE);
__asm__(".symver hypotf,hypotf@" MB_GLIBC_BASE);
#endif
#endif

#endif
