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
/* f = I s for a rigid body's spatial inertia I = [Ibar h~; h~^T m 1] about
 * its origin (6x6, row-major): mv6 without the 12 products with its
 * structural zeros, in mv6's order (the same result) */
static inline void rigid_inertia_mv(const double *I, const double *s, double *f) {
    f[0] = I[0] * s[0] + I[1] * s[1] + I[2] * s[2] + I[4] * s[4] + I[5] * s[5];
    f[1] = I[6] * s[0] + I[7] * s[1] + I[8] * s[2] + I[9] * s[3] + I[11] * s[5];
    f[2] = I[12] * s[0] + I[13] * s[1] + I[14] * s[2] + I[15] * s[3] + I[16] * s[4];
    f[3] = I[19] * s[1] + I[20] * s[2] + I[21] * s[3];
    f[4] = I[24] * s[0] + I[26] * s[2] + I[28] * s[4];
    f[5] = I[30] * s[0] + I[31] * s[1] + I[35] * s[5];
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

/* Ip += the inertia [A B; B^T C] (A, C symmetric) shifted by r (the
 * translation part of X^T I X, X = (1, r)): A - B r~ + r~ B^T - r~ C r~,
 * B + r~ C, C, with r~ B^T = -(B r~)^T. */
static inline void shifted_inertia_add(const double *A, const double *B, const double *C,
                                       const double *r, double *Ip) {
    /* r~ M and M r~ as cross products (a^T r~ = (a x r)^T, r~ b = r x b): no
     * multiplications by the zeros of r~ */
    double BX[9], XC[9], XCX[9], col[3], out[3];
    for (int i = 0; i < 3; ++i) cross3(B + 3 * i, r, BX + 3 * i);   /* rows of B r~ */
    for (int j = 0; j < 3; ++j) {                                   /* columns of r~ C */
        col[0] = C[j]; col[1] = C[3 + j]; col[2] = C[6 + j];
        cross3(r, col, out);
        XC[j] = out[0]; XC[3 + j] = out[1]; XC[6 + j] = out[2];
    }
    for (int i = 0; i < 3; ++i) cross3(XC + 3 * i, r, XCX + 3 * i); /* rows of (r~ C) r~ */
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
            Ip[6 * i + j] += A[3 * i + j] - BX[3 * i + j] - BX[3 * j + i] - XCX[3 * i + j];
        for (int j = 0; j < 3; ++j) {
            double b = B[3 * i + j] + XC[3 * i + j];
            Ip[6 * i + 3 + j] += b;
            Ip[6 * (3 + j) + i] += b;
            Ip[6 * (i + 3) + 3 + j] += C[3 * i + j];
        }
    }
}

/* The other two coordinate axes (k + 1, k + 2 mod 3) of axis k = 0..2. */
#define AXIS_PAIR(k, i1, i2) int i1 = (k) == 2 ? 0 : (k) + 1, i2 = (k) == 0 ? 2 : (k) - 1
/* The *_axis functions below take the axis k as an argument; AXIS_INLINE
 * and AXIS_SWITCH inline them once per constant k, so that the index
 * arithmetic folds away. */
#if defined(__GNUC__)
#define AXIS_INLINE static inline __attribute__((always_inline))
#else
#define AXIS_INLINE static inline
#endif
#define AXIS_SWITCH(k, CALL)                   \
    switch (k) {                               \
    case 0: CALL(0); break;                    \
    case 1: CALL(1); break;                    \
    case 2: CALL(2); break;                    \
    default: CALL(3); break;                   \
    }

/* y = E x for a rotation E about the coordinate axis k (k = 3: E = 1) */
AXIS_INLINE void rot_axis(const double *E, int k, const double *x, double *y) {
    if (k == 3) { y[0] = x[0]; y[1] = x[1]; y[2] = x[2]; return; }
    AXIS_PAIR(k, i1, i2);
    double x1 = x[i1], x2 = x[i2];
    y[k] = x[k];
    y[i1] = E[3 * i1 + i1] * x1 + E[3 * i1 + i2] * x2;
    y[i2] = E[3 * i2 + i1] * x1 + E[3 * i2 + i2] * x2;
}
/* y = E^T x for a rotation E about the coordinate axis k (k = 3: E = 1) */
AXIS_INLINE void rot_axis_t(const double *E, int k, const double *x, double *y) {
    if (k == 3) { y[0] = x[0]; y[1] = x[1]; y[2] = x[2]; return; }
    AXIS_PAIR(k, i1, i2);
    double x1 = x[i1], x2 = x[i2];
    y[k] = x[k];
    y[i1] = E[3 * i1 + i1] * x1 + E[3 * i2 + i1] * x2;
    y[i2] = E[3 * i1 + i2] * x1 + E[3 * i2 + i2] * x2;
}
/* Mo = E^T M E for a rotation E about the coordinate axis k = 0..2: only
 * the rows and columns i1, i2 mix */
AXIS_INLINE void rot_axis_congruence(const double *E, int k, const double *M, double *Mo) {
    AXIS_PAIR(k, i1, i2);
    double e11 = E[3 * i1 + i1], e12 = E[3 * i1 + i2], e21 = E[3 * i2 + i1], e22 = E[3 * i2 + i2];
    double T[9];
    for (int r = 0; r < 3; ++r) { /* T = M E */
        const double *mr = M + 3 * r;
        double *tr = T + 3 * r;
        tr[k] = mr[k];
        tr[i1] = mr[i1] * e11 + mr[i2] * e21;
        tr[i2] = mr[i1] * e12 + mr[i2] * e22;
    }
    for (int c = 0; c < 3; ++c) { /* Mo = E^T T */
        Mo[3 * k + c] = T[3 * k + c];
        Mo[3 * i1 + c] = e11 * T[3 * i1 + c] + e21 * T[3 * i2 + c];
        Mo[3 * i2 + c] = e12 * T[3 * i1 + c] + e22 * T[3 * i2 + c];
    }
}

/* motion transform y = X x, X = (E, r) with E about the coordinate axis k (0..3) */
AXIS_INLINE void Xmv_axis_k(const double *E, int k, const double *r, const double *x, double *y) {
    double t[3], rw[3];
    cross3(r, x, rw);
    t[0] = x[3] - rw[0];
    t[1] = x[4] - rw[1];
    t[2] = x[5] - rw[2];
    rot_axis(E, k, x, y);
    rot_axis(E, k, t, y + 3);
}
/* y += X^T x (child force -> parent force), X = (E, r) with E about the
 * coordinate axis k (0..3) */
AXIS_INLINE void XTf_axis_add_k(const double *E, int k, const double *r, const double *x, double *y) {
    double n[3], f[3], rf[3];
    rot_axis_t(E, k, x, n);
    rot_axis_t(E, k, x + 3, f);
    cross3(r, f, rf);
    for (int j = 0; j < 3; ++j) {
        y[j] += n[j] + rf[j];
        y[3 + j] += f[j];
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
/* XTIX_add for E about the coordinate axis k (0..3) */
AXIS_INLINE void XTIX_axis_add_k(const double *E, int k, const double *r, const double *I, double *Ip) {
    double A[9], B[9], C[9], Ar[9], Br[9], Cr[9];
    inertia_blocks(I, A, B, C);
    if (k == 3) {
        shifted_inertia_add(A, B, C, r, Ip);
        return;
    }
    rot_axis_congruence(E, k, A, Ar);
    rot_axis_congruence(E, k, B, Br);
    rot_axis_congruence(E, k, C, Cr);
    shifted_inertia_add(Ar, Br, Cr, r, Ip);
}
/* z = v x m for m = w e_j (j = 0..5: a unit motion along a coordinate axis) */
AXIS_INLINE void crm_unit_k(const double *v, int j, double w, double *z) {
    /* (x x e_k): k-th entry 0, then x[i2] at i1 and -x[i1] at i2 */
    int k = j < 3 ? j : j - 3;
    AXIS_PAIR(k, i1, i2);
    z[0] = z[1] = z[2] = z[3] = z[4] = z[5] = 0.0;
    if (j < 3) {
        z[i1] = v[i2] * w; z[i2] = -v[i1] * w;
        z[3 + i1] = v[3 + i2] * w; z[3 + i2] = -v[3 + i1] * w;
    } else {
        z[3 + i1] = v[i2] * w; z[3 + i2] = -v[i1] * w;
    }
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


/* the dispatchers of the *_axis_k functions (k = 0..3, j = 0..5) */
static inline void Xmv_axis(const double *E, int k, const double *r, const double *x, double *y) {
#define CALL(K) Xmv_axis_k(E, K, r, x, y)
    AXIS_SWITCH(k, CALL)
#undef CALL
}
static inline void XTf_axis_add(const double *E, int k, const double *r, const double *x, double *y) {
#define CALL(K) XTf_axis_add_k(E, K, r, x, y)
    AXIS_SWITCH(k, CALL)
#undef CALL
}
static inline void XTIX_axis_add(const double *E, int k, const double *r, const double *I, double *Ip) {
#define CALL(K) XTIX_axis_add_k(E, K, r, I, Ip)
    AXIS_SWITCH(k, CALL)
#undef CALL
}
static inline void crm_unit(const double *v, int j, double w, double *z) {
    switch (j) {
    case 0: crm_unit_k(v, 0, w, z); break;
    case 1: crm_unit_k(v, 1, w, z); break;
    case 2: crm_unit_k(v, 2, w, z); break;
    case 3: crm_unit_k(v, 3, w, z); break;
    case 4: crm_unit_k(v, 4, w, z); break;
    default: crm_unit_k(v, 5, w, z); break;
    }
}

#endif
