/*
 * The expression tape of a plant's parameters (mbfmu.dynamics.symbolic,
 * packed by mbfmu.fmu.native.tape): nn nodes in evaluation order, node k
 * = op[k](value[a[k]], value[b[k]]), a constant c[k] (TP_CONST) or parameter
 * c[k] (TP_PARAM). The description entries d[out_d[i]] = value[out_n[i]];
 * the guards: the plant was built on the branch value[g_node[g]] g_cmp[g] 0,
 * g_text[g] says which (for the refusal message).
 */
#ifndef MBFMU_TAPE_H
#define MBFMU_TAPE_H

/* the codes of mbfmu.dynamics.symbolic */
enum { TP_CONST, TP_PARAM, TP_ADD, TP_SUB, TP_MUL, TP_DIV, TP_NEG, TP_POW, TP_SIN, TP_COS, TP_TAN, TP_SQRT,
       TP_EXP, TP_LOG, TP_ATAN2, TP_ABS, TP_ASIN, TP_ACOS, TP_ATAN, TP_HYPOT };
enum { TP_LT, TP_LE, TP_GT, TP_GE, TP_EQ, TP_NE };

typedef struct {
    int nn;
    const unsigned char *op;
    const int *a, *b;
    const double *c;
    int nout;
    const int *out_d, *out_n;
    int ng;
    const int *g_node, *g_cmp;
    const char *const *g_text;
} mbn_tape;

/* values (nn) of the nodes for parameters p */
void mbn_tape_eval(const mbn_tape *T, const double *p, double *values);
/* the first guard that values break, or -1 */
int mbn_tape_failed_guard(const mbn_tape *T, const double *values);

#endif
