/*
 * The exact tangents of the native runtime (fmu/native/csrc/dirder.c and its
 * element files, with the plant's plug-in elements, element.h) for Python:
 * mbfmu.dynamics._kernels.native_tangents.
 *
 * ONE implementation of the derivatives: the same packed description the
 * native FMU compiles into model_data.c (mbfmu.fmu.native.pack.describe) is
 * laid into an mbn_data here at run time, an mbn_instance is made from it by
 * the runtime's own mbn_new (its one packer), and the runtime's
 * mbn_directional_derivative is called once per seed direction. The caller
 * (mbfmu.dynamics.tangents) checks sizes and finiteness; arrays arrive
 * through the buffer protocol (C-contiguous int32 / float64).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tangent_binding.h"
#include "native.h"

/* the order of the integer header (mbfmu.dynamics.tangents.HEADER) */
enum {
    H_NB, H_NQ, H_NV, H_NU, H_NY, H_NX, H_NS, H_NCT, H_NCB, H_NDR, H_CANONICAL,
    H_O_AXIS1, H_O_AXIS2, H_O_RTREE, H_O_PTREE, H_O_IBODY, H_O_G, H_O_DOF, H_O_SPRINGS, H_O_CONTACTS,
    H_O_CABLES, H_O_DRIVES, H_O_MASS, H_O_COM, H_O_IC, H_O_Q0, H_O_V0, H_O_B,
    H_O_STEP, H_O_ADAPT,
    H_FLEX, H_NBEAM, H_NG, H_NHF, H_NKD, H_O_GTAB, H_O_HTAB, H_O_KD,
    H_N
};
/* the integer arrays, in this order */
enum {
    A_PARENT, A_JTYPE, A_NQI, A_NVI, A_SENS,
    A_ROLE, A_BEAM, A_PQ, A_PV, A_GOFF, A_HOFF, A_BBODY, A_BQ, A_BV, A_BNM, A_KDOFF,
    A_N
};

static int get_buffer(PyObject *obj, Py_buffer *b, const char *format, int writable) {
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0))) return -1;
    if (!b->format || strcmp(b->format, format)) {
        PyErr_Format(PyExc_TypeError, "native_tangents: expected a buffer of format %s", format);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

PyObject *mb_py_native_tangents(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_hdr, *o_arrays, *o_d, *o_x, *o_u, *o_out, *o_el = Py_None;
    double t;
    if (!PyArg_ParseTuple(args, "OO!OOOdO|O", &o_hdr, &PyTuple_Type, &o_arrays, &o_d, &o_x, &o_u, &t, &o_out, &o_el))
        return NULL;
    /* the plug-in elements (element.h), or None: (class addresses, rows (nel, 5) of body, o_par in d,
     * npar, nstate, ndisc); mbn_new checks them against their classes and d. Their discrete states
     * follow all their continuous ones (zero columns and rates here). */
    mbn_element *el = NULL;
    int nel = 0, os = 0, oz = 0;
    static const double zeros[MBN_ELEMENT_MAX_DISCRETE] = {0};
    /* the joint rows' coordinates (element.h's iq, iv), element after element: copied, freed with el */
    int *joints = NULL;
    if (o_el != Py_None) {
        PyObject *addrs, *o_rows, *o_jq = NULL, *o_jv = NULL;
        Py_buffer br, bq, bv;
        if (!PyArg_ParseTuple(o_el, "O!O|OO", &PyTuple_Type, &addrs, &o_rows, &o_jq, &o_jv)) return NULL;
        if (get_buffer(o_rows, &br, "i", 0)) return NULL;
        nel = (int)PyTuple_GET_SIZE(addrs);
        if (br.len != (Py_ssize_t)(sizeof(int) * 5 * (size_t)nel)) {
            PyBuffer_Release(&br);
            PyErr_SetString(PyExc_ValueError, "native_tangents: element rows of the wrong size");
            return NULL;
        }
        Py_ssize_t nj = 0;
        if (o_jq && o_jv) {
            if (get_buffer(o_jq, &bq, "i", 0)) { PyBuffer_Release(&br); return NULL; }
            if (get_buffer(o_jv, &bv, "i", 0)) { PyBuffer_Release(&bq); PyBuffer_Release(&br); return NULL; }
            nj = bq.len / (Py_ssize_t)sizeof(int);
            if (bv.len != bq.len) nj = -1;
            else if ((joints = malloc(sizeof(int) * (2 * (size_t)nj + 1)))) {
                memcpy(joints, bq.buf, (size_t)bq.len);
                memcpy(joints + nj, bv.buf, (size_t)bv.len);
            }
            PyBuffer_Release(&bq);
            PyBuffer_Release(&bv);
            if (nj < 0) {
                PyBuffer_Release(&br);
                PyErr_SetString(PyExc_ValueError, "native_tangents: joint rows' iq and iv differ in length");
                return NULL;
            }
            if (!joints) { PyBuffer_Release(&br); return PyErr_NoMemory(); }
        }
        el = calloc((size_t)nel + 1, sizeof(mbn_element));
        if (!el) { free(joints); PyBuffer_Release(&br); return PyErr_NoMemory(); }
        Py_ssize_t at = 0;
        const int *r = br.buf;
        for (int e = 0; e < nel; ++e) oz += r[5 * e + 3]; /* the discrete states after all continuous ones */
        for (int e = 0; e < nel; ++e) {
            const mbn_element_class *cls = PyLong_AsVoidPtr(PyTuple_GET_ITEM(addrs, e));
            if (!cls || (cls->njoint > 0 && at + cls->njoint > nj)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, cls ? "native_tangents: fewer joint rows than the classes have"
                                                          : "native_tangents: a NULL element class");
                PyBuffer_Release(&br);
                free(el);
                free(joints);
                return NULL;
            }
            el[e] = (mbn_element){cls, r[5 * e], r[5 * e + 1], r[5 * e + 2], r[5 * e + 3], os, zeros, NULL,
                                  r[5 * e + 4], oz, zeros};
            if (cls->njoint > 0) { /* mbn_new checks the indices against nq, nv */
                el[e].iq = joints + at;
                el[e].iv = joints + nj + at;
                at += cls->njoint;
            }
            os += r[5 * e + 3];
            oz += r[5 * e + 4];
        }
        PyBuffer_Release(&br);
    }
    if (PyTuple_GET_SIZE(o_arrays) != A_N) {
        PyErr_SetString(PyExc_ValueError, "native_tangents: wrong number of integer arrays");
        return NULL;
    }
    Py_buffer bh, bd, bx, bu, bo, ba[A_N];
    int nheld = 0;
    PyObject *result = NULL;
    mbn_instance *in = NULL;
    if (get_buffer(o_hdr, &bh, "i", 0)) { free(el); free(joints); return NULL; }
    if (get_buffer(o_d, &bd, "d", 0)) goto release_h;
    if (get_buffer(o_x, &bx, "d", 0)) goto release_d;
    if (get_buffer(o_u, &bu, "d", 0)) goto release_x;
    if (get_buffer(o_out, &bo, "d", 1)) goto release_u;
    for (; nheld < A_N; ++nheld)
        if (get_buffer(PyTuple_GET_ITEM(o_arrays, nheld), ba + nheld, "i", 0)) goto release;
    if (bh.len != (Py_ssize_t)(H_N * sizeof(int))) {
        PyErr_SetString(PyExc_ValueError, "native_tangents: wrong header size");
        goto release;
    }
    const int *h = bh.buf;
    const int *arr[A_N];
    for (int k = 0; k < A_N; ++k) arr[k] = ba[k].buf;
    int nx = h[H_NX], nu = h[H_NU], ny = h[H_NY];
    if (bx.len != (Py_ssize_t)(sizeof(double) * (size_t)nx) || bu.len != (Py_ssize_t)(sizeof(double) * (size_t)nu) ||
        bo.len != (Py_ssize_t)(sizeof(double) * (size_t)(nx + ny) * (size_t)(nx + nu))) {
        PyErr_SetString(PyExc_ValueError, "native_tangents: state, input or output of the wrong size");
        goto release;
    }
    static const double none = 0.0;
    mbn_flex_data F = {
        .nbeam = h[H_NBEAM], .role = arr[A_ROLE], .beam = arr[A_BEAM], .pq = arr[A_PQ], .pv = arr[A_PV],
        .goff = arr[A_GOFF], .hoff = arr[A_HOFF], .bbody = arr[A_BBODY], .bq = arr[A_BQ], .bv = arr[A_BV],
        .bnm = arr[A_BNM], .kdoff = arr[A_KDOFF], .ng = h[H_NG], .nh = h[H_NHF], .nkd = h[H_NKD],
        .o_gtab = h[H_O_GTAB], .o_htab = h[H_O_HTAB], .o_kd = h[H_O_KD]};
    mbn_data D = {
        .plant = "", .guid = "", .nb = h[H_NB], .nq = h[H_NQ], .nv = h[H_NV], .nu = nu, .np = 0, .ny = ny,
        .nx = nx, .ns = h[H_NS], .nct = h[H_NCT], .ncb = h[H_NCB], .ndr = h[H_NDR], .canonical = h[H_CANONICAL],
        .parent = arr[A_PARENT], .jtype = arr[A_JTYPE], .nqi = arr[A_NQI], .nvi = arr[A_NVI],
        .nd = (int)(bd.len / (Py_ssize_t)sizeof(double)),
        .d0 = bd.buf, .o_axis1 = h[H_O_AXIS1], .o_axis2 = h[H_O_AXIS2], .o_Rtree = h[H_O_RTREE],
        .o_ptree = h[H_O_PTREE], .o_Ibody = h[H_O_IBODY], .o_g = h[H_O_G], .o_dof = h[H_O_DOF],
        .o_springs = h[H_O_SPRINGS], .o_contacts = h[H_O_CONTACTS], .o_cables = h[H_O_CABLES],
        .o_drives = h[H_O_DRIVES], .o_mass = h[H_O_MASS], .o_com = h[H_O_COM], .o_Ic = h[H_O_IC],
        .o_q0 = h[H_O_Q0], .o_v0 = h[H_O_V0], .o_B = h[H_O_B],
        .o_step = h[H_O_STEP], .o_adapt = h[H_O_ADAPT],
        .sens = arr[A_SENS], .p0 = &none, .u0 = bu.buf, .flex = h[H_FLEX] ? &F : NULL, .nel = nel,
        .elements = el};
    in = mbn_new(&D);
    if (!in) {
        if (nel) /* mbn_new also refuses a registry that does not match its classes, the model or d */
            PyErr_SetString(PyExc_ValueError, "native_tangents: the plug-in elements do not match their classes, "
                                              "the model or d (or no memory)");
        else
            PyErr_NoMemory();
        goto release;
    }
    const char *why = mbn_dirder_inexact(in);
    if (why) {
        result = PyUnicode_FromString(why);
        goto release;
    }
    memcpy(in->x, bx.buf, sizeof(double) * (size_t)nx);
    memcpy(in->u, bu.buf, sizeof(double) * (size_t)nu);
    in->t = t;
    mbn_generalized_forces(in);
    size_t nk = (size_t)(nx + nu), nr = (size_t)(nx + ny);
    int *iu = malloc(sizeof(int) * (nr + 1));
    double *col = malloc(sizeof(double) * (nr + 1)), *J = bo.buf;
    int err = (iu && col) ? 0 : MBN_NOMEM;
    for (size_t k = 0; k < nr; ++k) iu[k] = (int)k;
    Py_BEGIN_ALLOW_THREADS
    for (size_t j = 0; j < nk && !err; ++j) {
        int ik = (int)j;
        double seed = 1.0;
        err = mbn_directional_derivative(in, 1, &ik, &seed, nr, iu, col);
        for (size_t r = 0; r < nr && !err; ++r) J[r * nk + j] = col[r];
    }
    Py_END_ALLOW_THREADS
    free(iu);
    free(col);
    if (err == MBN_NOMEM) PyErr_NoMemory();
    else result = PyLong_FromLong(err);
release:
    mbn_free(in);
    while (nheld > 0) PyBuffer_Release(ba + --nheld);
    PyBuffer_Release(&bo);
release_u:
    PyBuffer_Release(&bu);
release_x:
    PyBuffer_Release(&bx);
release_d:
    PyBuffer_Release(&bd);
release_h:
    PyBuffer_Release(&bh);
    free(el);
    free(joints);
    return result;
}
