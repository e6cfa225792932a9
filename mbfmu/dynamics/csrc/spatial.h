/*
 * Small spatial-algebra helpers, inlined into the algorithms.
 * Spatial vectors [angular; linear]; 3x3 and 6x6 matrices row-major.
 * Notation follows Featherstone, Rigid Body Dynamics Algorithms (2008):
 * crm(v) m = v x m (motion cross), crf(v) f = v x* f (force cross).
 */
#ifndef MBFMU_SPATIAL_H
#define MBFMU_SPATIAL_H

#include <math.h>
#include <string.h>

static inline void cross3(const double *a, const double *b, double *c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}
static inline double dot3(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
/* y = A x */
static inline void mv3(const double *A, const double *x, double *y) {
    y[0] = A[0] * x[0] + A[1] * x[1] + A[2] * x[2];
    y[1] = A[3] * x[0] + A[4] * x[1] + A[5] * x[2];
    y[2] = A[6] * x[0] + A[7] * x[1] + A[8] * x[2];
}
/* y = A^T x */
static inline void mtv3(const double *A, const double *x, double *y) {
    y[0] = A[0] * x[0] + A[3] * x[1] + A[6] * x[2];
    y[1] = A[1] * x[0] + A[4] * x[1] + A[7] * x[2];
    y[2] = A[2] * x[0] + A[5] * x[1] + A[8] * x[2];
}
/* C = A B */
static inline void mm3(const double *A, const double *B, double *C) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}
/* C = A^T B */
static inline void mtm3(const double *A, const double *B, double *C) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            C[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
}

/* motion transform y = X x with X = ^iX_p = (E, r) */
static inline void Xmv(const double *E, const double *r, const double *x, double *y) {
    double t[3], rw[3];
    mv3(E, x, y);
    cross3(r, x, rw);
    t[0] = x[3] - rw[0];
    t[1] = x[4] - rw[1];
    t[2] = x[5] - rw[2];
    mv3(E, t, y + 3);
}
/* force transform to the parent y = X^T x (child force -> parent force) */
static inline void XTf(const double *E, const double *r, const double *x, double *y) {
    double n[3], f[3], rf[3];
    mtv3(E, x, n);
    mtv3(E, x + 3, f);
    cross3(r, f, rf);
    y[0] = n[0] + rf[0];
    y[1] = n[1] + rf[1];
    y[2] = n[2] + rf[2];
    y[3] = f[0];
    y[4] = f[1];
    y[5] = f[2];
}
/* y += X^T x */
static inline void XTf_add(const double *E, const double *r, const double *x, double *y) {
    double t[6];
    XTf(E, r, x, t);
    for (int k = 0; k < 6; ++k) y[k] += t[k];
}
/* z = v x m (motion cross product) */
static inline void crm(const double *v, const double *m, double *z) {
    double a[3], b[3];
    cross3(v, m, z);
    cross3(v, m + 3, a);
    cross3(v + 3, m, b);
    z[3] = a[0] + b[0];
    z[4] = a[1] + b[1];
    z[5] = a[2] + b[2];
}
/* z = v x* f (force cross product) */
static inline void crf(const double *v, const double *f, double *z) {
    double a[3], b[3];
    cross3(v, f, a);
    cross3(v + 3, f + 3, b);
    z[0] = a[0] + b[0];
    z[1] = a[1] + b[1];
    z[2] = a[2] + b[2];
    cross3(v, f + 3, z + 3);
}
/* y = A x, A 6x6 */
static inline void mv6(const double *A, const double *x, double *y) {
    for (int i = 0; i < 6; ++i) {
        const double *a = A + 6 * i;
        y[i] = a[0] * x[0] + a[1] * x[1] + a[2] * x[2] + a[3] * x[3] + a[4] * x[4] + a[5] * x[5];
    }
}
static inline double dot6(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* blocks of a symmetric spatial inertia I = [A B; B^T C], each 3x3 */
static inline void inertia_blocks(const double *I, double *A, double *B, double *C) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            A[3 * i + j] = I[6 * i + j];
            B[3 * i + j] = I[6 * i + 3 + j];
            C[3 * i + j] = I[6 * (i + 3) + 3 + j];
        }
}

/* Ip += the inertia [A B; B^T C] shifted by r (the translation part of
 * X^T I X, X = (1, r)): A - B r~ + r~ B^T - r~ C r~, B + r~ C, C. */
static inline void shifted_inertia_add(const double *A, const double *B, const double *C,
                                       const double *r, double *Ip) {
    /* r~ M and M r~ as cross products (a^T r~ = (a x r)^T, r~ b = r x b): no
     * multiplications by the zeros of r~ */
    double BX[9], XC[9], XBT[9], XCX[9], col[3], out[3];
    for (int i = 0; i < 3; ++i) cross3(B + 3 * i, r, BX + 3 * i);   /* rows of B r~ */
    for (int j = 0; j < 3; ++j) {                                   /* columns of r~ C, r~ B^T */
        col[0] = C[j]; col[1] = C[3 + j]; col[2] = C[6 + j];
        cross3(r, col, out);
        XC[j] = out[0]; XC[3 + j] = out[1]; XC[6 + j] = out[2];
        cross3(r, B + 3 * j, out);
        XBT[j] = out[0]; XBT[3 + j] = out[1]; XBT[6 + j] = out[2];
    }
    for (int i = 0; i < 3; ++i) cross3(XC + 3 * i, r, XCX + 3 * i); /* rows of (r~ C) r~ */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double b = B[3 * i + j] + XC[3 * i + j];
            Ip[6 * i + j] += A[3 * i + j] - BX[3 * i + j] + XBT[3 * i + j] - XCX[3 * i + j];
            Ip[6 * i + 3 + j] += b;
            Ip[6 * (3 + j) + i] += b;
            Ip[6 * (i + 3) + 3 + j] += C[3 * i + j];
        }
}

/* Ip += X^T I X for a symmetric 6x6 I in child coordinates, X = (E, r):
 * rotate each block by E, then shift by r. */
static inline void XTIX_add(const double *E, const double *r, const double *I, double *Ip) {
    double A[9], B[9], C[9], T[9], Ar[9], Br[9], Cr[9];
    inertia_blocks(I, A, B, C);
    mtm3(E, A, T); mm3(T, E, Ar);
    mtm3(E, B, T); mm3(T, E, Br);
    mtm3(E, C, T); mm3(T, E, Cr);
    shifted_inertia_add(Ar, Br, Cr, r, Ip);
}

/* rotation about unit axis a by angle th (Rodrigues) */
static inline void axis_rot(const double *a, double th, double *R) {
    double s = sin(th), c = cos(th), t = 1.0 - c;
    double x = a[0], y = a[1], z = a[2];
    R[0] = c + t * x * x;     R[1] = t * x * y - s * z; R[2] = t * x * z + s * y;
    R[3] = t * x * y + s * z; R[4] = c + t * y * y;     R[5] = t * y * z - s * x;
    R[6] = t * x * z - s * y; R[7] = t * y * z + s * x; R[8] = c + t * z * z;
}
/* rotation matrix of a (not necessarily unit) quaternion (w, x, y, z) */
static inline void quat_rot(const double *e, double *R) {
    double w = e[0], x = e[1], y = e[2], z = e[3];
    double n = w * w + x * x + y * y + z * z;
    double s = n > 0 ? 2.0 / n : 0.0;
    R[0] = 1 - s * (y * y + z * z); R[1] = s * (x * y - w * z);     R[2] = s * (x * z + w * y);
    R[3] = s * (x * y + w * z);     R[4] = 1 - s * (x * x + z * z); R[5] = s * (y * z - w * x);
    R[6] = s * (x * z - w * y);     R[7] = s * (y * z + w * x);     R[8] = 1 - s * (x * x + y * y);
}

#endif
