/*
 * spectral_radius.c: rho(A), the largest |eigenvalue| of a real matrix, by
 * Gelfand's formula (no eigensolver; the derivation is in the .c file).
 */
#ifndef MBFMU_SPECTRAL_RADIUS_H
#define MBFMU_SPECTRAL_RADIUS_H

/* rho of the n x n row-major matrix a (unchanged) into *radius: 0, or -1 if
 * it cannot be computed (out of memory, entries not finite) */
int mbn_spectral_radius(const double *a, int n, double *radius);

#endif
