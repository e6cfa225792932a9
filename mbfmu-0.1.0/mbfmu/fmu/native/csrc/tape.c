/* Evaluating a plant's expression tape (tape.h) in the order Tape.evaluate does. */
#include "glibc_baseline.h" /* before any libm use: see there */
#include <math.h>

#include "tape.h"

void mbn_tape_eval(const mbn_tape *T, const double *p, double *v) {
    for (int k = 0; k < T->nn; ++k) {
        double x = T->a[k] >= 0 ? v[T->a[k]] : 0.0, y = T->b[k] >= 0 ? v[T->b[k]] : 0.0;
        switch (T->op[k]) {
        case TP_CONST: v[k] = T->c[k]; break;
        case TP_PARAM: v[k] = p[(int)T->c[k]]; break;
        case TP_ADD: v[k] = x + y; break;
        case TP_SUB: v[k] = x - y; break;
        case TP_MUL: v[k] = x * y; break;
        case TP_DIV: v[k] = y != 0 ? x / y : NAN; break;
        case TP_NEG: v[k] = -x; break;
        case TP_POW: v[k] = pow(x, y); break;
        case TP_SIN: v[k] = sin(x); break;
        case TP_COS: v[k] = cos(x); break;
        case TP_TAN: v[k] = tan(x); break;
        case TP_SQRT: v[k] = x >= 0 ? sqrt(x) : NAN; break;
        case TP_EXP: v[k] = exp(x); break;
        case TP_LOG: v[k] = x > 0 ? log(x) : NAN; break;
        case TP_ATAN2: v[k] = atan2(x, y); break;
        case TP_ABS: v[k] = fabs(x); break;
        case TP_ASIN: v[k] = fabs(x) <= 1 ? asin(x) : NAN; break;
        case TP_ACOS: v[k] = fabs(x) <= 1 ? acos(x) : NAN; break;
        case TP_ATAN: v[k] = atan(x); break;
        case TP_HYPOT: v[k] = hypot(x, y); break;
        default: v[k] = NAN;
        }
    }
}

int mbn_tape_failed_guard(const mbn_tape *T, const double *v) {
    for (int g = 0; g < T->ng; ++g) {
        double d = v[T->g_node[g]];
        int ok;
        switch (T->g_cmp[g]) {
        case TP_LT: ok = d < 0; break;
        case TP_LE: ok = d <= 0; break;
        case TP_GT: ok = d > 0; break;
        case TP_GE: ok = d >= 0; break;
        case TP_EQ: ok = d == 0; break;
        default: ok = d != 0;
        }
        if (!ok) return g;
    }
    return -1;
}
