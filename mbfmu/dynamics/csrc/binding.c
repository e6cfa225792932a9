/*
 * CPython binding of the dynamics kernels: mbfmu.dynamics._kernels.
 *
 * Every entry point validates its arguments once (sizes, finiteness) and
 * raises mbfmu.errors.InputError naming the offending coordinate, then hands
 * flat arrays to the kernels in algorithms.c. A model handle is a capsule made
 * by new_model(); mbfmu.dynamics.model.Model owns it. The handle holds the
 * model (mb_model, packed by mb_pack: pack.c, as the native FMU packs its
 * own) and one workspace (mb_data); share() makes another handle on the same
 * model with a workspace of its own. Every kernel runs with the GIL released
 * and the handle's lock held, so threads stepping plants of one model run in
 * parallel, and two threads on one handle take turns.
 *
 * Why hand-written and not Cython or nanobind: either adds a build dependency
 * (a compiler front end or a C++ toolchain and its headers), while this file
 * needs only Python's and NumPy's headers, so a fresh clone builds in one
 * step (`make test`) with the C compiler the kernels need anyway.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <numpy/arrayobject.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb.h"
#include "drives.h"
#include "flexible.h"
#include "flexsensors.h"
#include "sensors.h"
#include "adaptive.h"
#include "element.h"
#include "tangent_binding.h"

static PyObject *InputError = NULL;      /* mbfmu.errors.InputError */
static PyObject *SimulationError = NULL; /* mbfmu.errors.SimulationError */
static PyObject *ModelError = NULL;      /* mbfmu.errors.ModelError */

typedef struct {
    mb_model *m;          /* owned, or base's (set_gravity, set_drives: before it is shared) */
    mb_data *d;           /* this handle's own workspace */
    PyThread_type_lock lock; /* held around every kernel call on d */
    PyObject *base;       /* the handle whose model this one shares (kept alive), or NULL */
    int shared;           /* share() was called on it: its model is read-only from then on */
    PyObject *q_names;    /* tuple (nq) of "joint[k]" labels */
    PyObject *v_names;    /* tuple (nv) */
    PyObject *body_names; /* tuple (nb) */
} handle_t;

static const char *CAPSULE = "mbfmu.dynamics.model";

/* Run the kernel statement(s) with the GIL released and lock held: no
 * Python API inside, only the kernels and copies into arrays made before. */
#define KERNEL(lk, ...) do { \
        Py_BEGIN_ALLOW_THREADS \
        PyThread_acquire_lock((lk), WAIT_LOCK); \
        __VA_ARGS__; \
        PyThread_release_lock((lk)); \
        Py_END_ALLOW_THREADS \
    } while (0)

static void handle_clear(handle_t *h) {
    mb_data_free(h->d);
    if (h->base) Py_DECREF(h->base);
    else mb_free(h->m);
    if (h->lock) PyThread_free_lock(h->lock);
    Py_XDECREF(h->q_names);
    Py_XDECREF(h->v_names);
    Py_XDECREF(h->body_names);
    free(h);
}

static void handle_free(PyObject *cap) {
    handle_t *h = PyCapsule_GetPointer(cap, CAPSULE);
    if (h) handle_clear(h);
}

/* a capsule on the model m (owned when base is NULL, else base's) with a new
 * workspace; NULL with MemoryError set (m is freed if owned) */
static PyObject *handle_new(mb_model *m, PyObject *base, PyObject *q_names, PyObject *v_names,
                            PyObject *body_names) {
    handle_t *h = calloc(1, sizeof(handle_t));
    if (!h) {
        if (!base) mb_free(m);
        return PyErr_NoMemory();
    }
    h->m = m;
    h->base = base;
    Py_XINCREF(base);
    Py_INCREF(q_names); h->q_names = q_names;
    Py_INCREF(v_names); h->v_names = v_names;
    Py_INCREF(body_names); h->body_names = body_names;
    h->d = mb_data_new(m);
    h->lock = PyThread_allocate_lock();
    PyObject *cap = h->d && h->lock ? PyCapsule_New(h, CAPSULE, handle_free) : NULL;
    if (!cap) {
        handle_clear(h);
        if (!PyErr_Occurred()) PyErr_NoMemory();
    }
    return cap;
}

static handle_t *get_handle(PyObject *cap) {
    handle_t *h = PyCapsule_GetPointer(cap, CAPSULE);
    if (!h) PyErr_SetString(PyExc_TypeError, "expected an mbfmu model handle (Model._h)");
    return h;
}

/* Convert obj to a C-contiguous float64 array with n elements (any shape
 * whose size is n), finite. labels: tuple of names for messages or NULL.
 * Returns a new reference or NULL with InputError set. */
static PyArrayObject *as_vector(PyObject *obj, npy_intp n, const char *arg, PyObject *labels) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0,
                                                         NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(InputError, "%s: cannot be read as an array of floats", arg);
        return NULL;
    }
    if (PyArray_SIZE(a) != n) {
        PyErr_Format(InputError, "%s has %zd values, expected %zd", arg, (Py_ssize_t)PyArray_SIZE(a),
                     (Py_ssize_t)n);
        Py_DECREF(a);
        return NULL;
    }
    const double *d = (const double *)PyArray_DATA(a);
    for (npy_intp k = 0; k < n; ++k) {
        if (!isfinite(d[k])) {
            const char *what = isnan(d[k]) ? "nan" : (d[k] > 0 ? "inf" : "-inf");
            if (labels && PyTuple_Check(labels) && k < PyTuple_GET_SIZE(labels))
                PyErr_Format(InputError, "%s[%zd] (%S) is %s: inputs must be finite", arg,
                             (Py_ssize_t)k + 1, PyTuple_GET_ITEM(labels, k), what);
            else
                PyErr_Format(InputError, "%s[%zd] is %s: inputs must be finite", arg, (Py_ssize_t)k + 1,
                             what);
            Py_DECREF(a);
            return NULL;
        }
    }
    return a;
}

static PyArrayObject *as_fext(PyObject *obj, handle_t *h) {
    if (obj == NULL || obj == Py_None) return NULL;
    return as_vector(obj, (npy_intp)h->m->nb * 6, "f_ext (nbodies x 6, body frame)", NULL);
}

static PyObject *new_vector(npy_intp n) { return PyArray_SimpleNew(1, &n, NPY_DOUBLE); }

static PyObject *new_matrix(npy_intp rows, npy_intp cols) {
    npy_intp d[2] = {rows, cols};
    return PyArray_SimpleNew(2, d, NPY_DOUBLE);
}

static PyObject *raise_singular(handle_t *h, int err) {
    int body = -err;
    PyObject *name = (body >= 0 && body < PyTuple_GET_SIZE(h->body_names))
                         ? PyTuple_GET_ITEM(h->body_names, body) : Py_None;
    PyErr_Format(SimulationError,
                 "the articulated inertia seen by the joint of body %d (%S) is singular: "
                 "that joint moves no mass (add mass or inertia to the bodies it carries)",
                 body, name);
    return NULL;
}

#define D(a) ((double *)PyArray_DATA(a))

/* -------------------------------------------------------------- new_model */
/* obj as a C-contiguous array of n ints (new reference), or NULL with ModelError set */
static PyArrayObject *int_array(PyObject *obj, npy_intp n, const char *arg) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!a) return NULL;
    if (PyArray_SIZE(a) != n) {
        PyErr_Format(ModelError, "%s has %zd entries, expected %zd", arg, (Py_ssize_t)PyArray_SIZE(a),
                     (Py_ssize_t)n);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static int copy_int(PyObject *obj, int n, int **out, const char *arg) {
    PyArrayObject *a = int_array(obj, n, arg);
    if (!a) return -1;
    *out = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (*out) memcpy(*out, PyArray_DATA(a), sizeof(int) * (size_t)n);
    Py_DECREF(a);
    if (!*out) PyErr_NoMemory();
    return *out ? 0 : -1;
}

static int copy_dbl(PyObject *obj, npy_intp n, double **out, const char *arg) {
    PyArrayObject *a = as_vector(obj, n, arg, NULL);
    if (!a) return -1;
    *out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (*out) memcpy(*out, PyArray_DATA(a), sizeof(double) * (size_t)n);
    Py_DECREF(a);
    if (!*out) PyErr_NoMemory();
    return *out ? 0 : -1;
}

/* the ModelError or MemoryError of a failed mb_pack; returns NULL */
static PyObject *raise_pack(int code, int where, const mb_desc *D) {
    switch (code) {
    case MB_PACK_NOMEM: return PyErr_NoMemory();
    case MB_PACK_PARENT:
        PyErr_Format(ModelError, "body %d: parent %d is not an earlier body", where, D->parent[where]);
        break;
    case MB_PACK_SPRING: PyErr_Format(ModelError, "spring %d: body index out of range", where); break;
    case MB_PACK_CONTACT:
        PyErr_Format(ModelError, "contact %d: body index out of range 1..%d", where, D->nb - 1);
        break;
    case MB_PACK_CABLE:
        PyErr_Format(ModelError, "cable %d: body index out of range 1..%d", where, D->nb - 1);
        break;
    default: PyErr_SetString(ModelError, "no bodies, or a negative force element count"); break;
    }
    return NULL;
}

static PyObject *py_new_model(PyObject *self, PyObject *args) {
    PyObject *parent, *jtype, *nqi, *nvi, *axis1, *axis2, *Rtree, *ptree, *inertia, *grav;
    PyObject *dof_force, *springs, *contacts, *cables, *q_names, *v_names, *body_names;
    int nb, ns, nct, ncb;
    if (!PyArg_ParseTuple(args, "iOOOOOOOOOOOiOiOiOO!O!O!", &nb, &parent, &jtype, &nqi, &nvi, &axis1,
                          &axis2, &Rtree, &ptree, &inertia, &grav, &dof_force, &ns, &springs,
                          &nct, &contacts, &ncb, &cables, &PyTuple_Type, &q_names, &PyTuple_Type,
                          &v_names, &PyTuple_Type, &body_names))
        return NULL;
    if (nb < 1 || ns < 0 || nct < 0 || ncb < 0) {
        PyErr_SetString(ModelError, "no bodies, or a negative force element count");
        return NULL;
    }
    /* the description as borrowed arrays; mb_pack copies it */
    enum { A_PARENT, A_JTYPE, A_NQI, A_NVI, A_AXIS1, A_AXIS2, A_RTREE, A_PTREE, A_INERTIA, A_G, A_DOF,
           A_SPRINGS, A_CONTACTS, A_CABLES, A_N };
    PyArrayObject *a[A_N] = {NULL};
    PyObject *res = NULL;
    if (!(a[A_PARENT] = int_array(parent, nb, "parent")) || !(a[A_JTYPE] = int_array(jtype, nb, "jtype")) ||
        !(a[A_NQI] = int_array(nqi, nb, "nqi")) || !(a[A_NVI] = int_array(nvi, nb, "nvi")) ||
        !(a[A_AXIS1] = as_vector(axis1, (npy_intp)nb * 3, "axis1", NULL)) ||
        !(a[A_AXIS2] = as_vector(axis2, (npy_intp)nb * 3, "axis2", NULL)) ||
        !(a[A_RTREE] = as_vector(Rtree, (npy_intp)nb * 9, "Rtree", NULL)) ||
        !(a[A_PTREE] = as_vector(ptree, (npy_intp)nb * 3, "ptree", NULL)) ||
        !(a[A_INERTIA] = as_vector(inertia, (npy_intp)nb * 36, "inertia", NULL)) ||
        !(a[A_G] = as_vector(grav, 3, "gravity", NULL)))
        goto done;
    mb_desc desc = {nb, ns, nct, ncb, 0, PyArray_DATA(a[A_PARENT]), PyArray_DATA(a[A_JTYPE]),
                 PyArray_DATA(a[A_NQI]), PyArray_DATA(a[A_NVI]), D(a[A_AXIS1]), D(a[A_AXIS2]),
                 D(a[A_RTREE]), D(a[A_PTREE]), D(a[A_INERTIA]), D(a[A_G]), NULL, NULL, NULL, NULL, NULL};
    /* limits may be +-inf: as_vector refuses non-finite values, so the Python
     * side encodes "no limit" as +-1e300 (mb_pack's rule) */
    if (!(a[A_DOF] = as_vector(dof_force, (npy_intp)mb_desc_nv(&desc) * DF_N, "dof_force", NULL)) ||
        !(a[A_SPRINGS] = as_vector(springs, (npy_intp)ns * SP_N, "springs", NULL)) ||
        !(a[A_CONTACTS] = as_vector(contacts, (npy_intp)nct * CT_N, "contacts", NULL)) ||
        !(a[A_CABLES] = as_vector(cables, (npy_intp)ncb * CB_N, "cables", NULL)))
        goto done;
    desc.dof_force = D(a[A_DOF]);
    desc.springs = D(a[A_SPRINGS]);
    desc.contacts = D(a[A_CONTACTS]);
    desc.cables = D(a[A_CABLES]);
    mb_model *m = NULL;
    int where = 0, code = mb_pack(&desc, &m, &where);
    if (code) raise_pack(code, where, &desc);
    else res = handle_new(m, NULL, q_names, v_names, body_names);
done:
    for (int k = 0; k < A_N; ++k) Py_XDECREF(a[k]);
    return res;
}

/* share(h) -> a handle on h's model with a workspace of its own: for
 * another thread (the model is read-only from here on) */
static PyObject *py_share(PyObject *self, PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h) return NULL;
    PyObject *owner = h->base ? h->base : cap;
    ((handle_t *)PyCapsule_GetPointer(owner, CAPSULE))->shared = 1;
    return handle_new(h->m, owner, h->q_names, h->v_names, h->body_names);
}

/* 0 if h's model is its own and not shared (it may still change), else -1 with ModelError set */
static int check_unshared(const handle_t *h, const char *what) {
    if (!h->base && !h->shared) return 0;
    PyErr_Format(ModelError, "%s: the model is shared by several handles (share()) and is read-only", what);
    return -1;
}

/* set_drives(h, drives (n, DR_N)): the model's joint drives (drives.h), set
 * once by mbfmu.dynamics.model.Model when it is made */
static PyObject *py_set_drives(PyObject *self, PyObject *args) {
    PyObject *cap, *rows;
    int n;
    if (!PyArg_ParseTuple(args, "OiO", &cap, &n, &rows)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h || check_unshared(h, "set_drives")) return NULL;
    mb_model *m = h->m;
    if (n < 0) {
        PyErr_SetString(ModelError, "negative number of joint drives");
        return NULL;
    }
    double *d = NULL;
    if (copy_dbl(rows, (npy_intp)n * DR_N, &d, "drives")) return NULL;
    int bad = mb_drives_check(m, n, d);
    if (bad) {
        free(d);
        PyErr_Format(ModelError, "joint drive %d does not fit the model (a 1-DOF revolute or prismatic joint's "
                                 "coordinates, driven once; mode 0, 1 or 2; gains, limit and friction >= 0; "
                                 "smoothing velocity > 0)", bad);
        return NULL;
    }
    free(m->drives);
    m->drives = d;
    m->ndr = n;
    Py_RETURN_NONE;
}

static PyObject *py_set_gravity(PyObject *self, PyObject *args) {
    PyObject *cap, *g;
    if (!PyArg_ParseTuple(args, "OO", &cap, &g)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h || check_unshared(h, "set_gravity")) return NULL;
    PyArrayObject *a = as_vector(g, 3, "gravity", NULL);
    if (!a) return NULL;
    memcpy(h->m->g, PyArray_DATA(a), 3 * sizeof(double));
    memcpy(h->d->g, PyArray_DATA(a), 3 * sizeof(double));
    Py_DECREF(a);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------ algorithms */

/* parse (handle, q[, v[, w]]) with the right sizes; fills arrays (new refs) */
typedef struct {
    handle_t *h;
    PyArrayObject *q, *v, *w, *fext;
} call_t;

static void call_clear(call_t *c) {
    Py_XDECREF(c->q);
    Py_XDECREF(c->v);
    Py_XDECREF(c->w);
    Py_XDECREF(c->fext);
}

/* kinds: 'q' (nq), 'v' (nv); wname names the third vector */
static int call_parse(call_t *c, PyObject *cap, PyObject *q, PyObject *v, const char *vname,
                      PyObject *w, const char *wname, PyObject *fext) {
    memset(c, 0, sizeof *c);
    c->h = get_handle(cap);
    if (!c->h) return -1;
    mb_model *m = c->h->m;
    c->q = as_vector(q, m->nq, "q", c->h->q_names);
    if (!c->q) return -1;
    if (v) {
        c->v = as_vector(v, m->nv, vname, c->h->v_names);
        if (!c->v) return -1;
    }
    if (w) {
        c->w = as_vector(w, m->nv, wname, c->h->v_names);
        if (!c->w) return -1;
    }
    if (fext && fext != Py_None) {
        c->fext = as_fext(fext, c->h);
        if (!c->fext) return -1;
    }
    return 0;
}

static PyObject *py_rnea(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *a, *fext = Py_None;
    int grav = 1;
    if (!PyArg_ParseTuple(args, "OOOO|Op", &cap, &q, &v, &a, &fext, &grav)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", a, "a", fext)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nv);
    if (out) KERNEL(c.h->lock, mb_rnea_tau(c.h->m, c.h->d, D(c.q), D(c.v), D(c.w), c.fext ? D(c.fext) : NULL, grav,
                                           D((PyArrayObject *)out)));
    call_clear(&c);
    return out;
}

static PyObject *py_crba(PyObject *self, PyObject *args) {
    PyObject *cap, *q;
    if (!PyArg_ParseTuple(args, "OO", &cap, &q)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, NULL, NULL, NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    npy_intp dims[2] = {c.h->m->nv, c.h->m->nv};
    PyObject *out = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    if (out) KERNEL(c.h->lock, mb_crba(c.h->m, c.h->d, D(c.q), D((PyArrayObject *)out)));
    call_clear(&c);
    return out;
}

/* the InputError of a kernel that needs the sparse route's workspace
 * (mb_data.Hs) on a handle whose workspace holds none; returns NULL */
static PyObject *raise_no_sparse(const handle_t *h, const char *what) {
    PyErr_Format(InputError, "%s works in a dense nv x nv workspace held only for 1 to %d velocity "
                             "coordinates; this model has %d", what, MB_SPARSE_MAX_NV, h->m->nv);
    return NULL;
}

/* crba_pattern(h, q) -> values of H's lower pattern (mb_crba_pattern) */
static PyObject *py_crba_pattern(PyObject *self, PyObject *args) {
    PyObject *cap, *q;
    if (!PyArg_ParseTuple(args, "OO", &cap, &q)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, NULL, NULL, NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector((npy_intp)c.h->m->lnnz);
    if (out) KERNEL(c.h->lock, mb_crba_pattern(c.h->m, c.h->d, D(c.q), D((PyArrayObject *)out)));
    call_clear(&c);
    return out;
}

static PyObject *py_aba(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None;
    int grav = 1;
    if (!PyArg_ParseTuple(args, "OOOO|Op", &cap, &q, &v, &tau, &fext, &grav)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", tau, "tau", fext)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nv);
    if (out) {
        int err;
        KERNEL(c.h->lock, err = mb_aba(c.h->m, c.h->d, D(c.q), D(c.v), D(c.w), c.fext ? D(c.fext) : NULL, grav,
                                       D((PyArrayObject *)out)));
        if (err) { Py_DECREF(out); out = raise_singular(c.h, err); }
    }
    call_clear(&c);
    return out;
}

/* forward_dynamics(h, q, v, tau, fext=None, gravity=True, route=-1) -> a:
 * route -1 the model's pick, 0 ABA, 1 the sparse LTDL route */
static PyObject *py_forward_dynamics(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None;
    int grav = 1, route = -1;
    if (!PyArg_ParseTuple(args, "OOOO|Opi", &cap, &q, &v, &tau, &fext, &grav, &route)) return NULL;
    if (route < -1 || route > 1) {
        PyErr_Format(InputError, "route %d: expected -1 (the model's pick), 0 (ABA) or 1 (sparse LTDL)", route);
        return NULL;
    }
    call_t c;
    if (call_parse(&c, cap, q, v, "v", tau, "tau", fext)) { call_clear(&c); return NULL; }
    PyObject *out = route == 1 && !c.h->d->Hs ? raise_no_sparse(c.h, "the sparse route")
                                                : new_vector(c.h->m->nv);
    if (out) {
        int err;
        KERNEL(c.h->lock, err = mb_forward_dynamics(c.h->m, c.h->d, D(c.q), D(c.v), D(c.w),
                                                    c.fext ? D(c.fext) : NULL, grav, D((PyArrayObject *)out),
                                                    route));
        if (err) { Py_DECREF(out); out = raise_singular(c.h, err); }
    }
    call_clear(&c);
    return out;
}

/* sparsity(h) -> (lambda, route): the dof parent array and the forward
 * dynamics route the model's structure picks (0 ABA, 1 sparse LTDL); both
 * are the immutable model's, so no lock */
static PyObject *py_sparsity(PyObject *self, PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h) return NULL;
    npy_intp n = h->m->nv;
    PyObject *lam = PyArray_SimpleNew(1, &n, NPY_INT);
    if (!lam) return NULL;
    if (n > 0) memcpy(PyArray_DATA((PyArrayObject *)lam), h->m->lambda, sizeof(int) * (size_t)n);
    return Py_BuildValue("Ni", lam, h->m->fd_sparse);
}

/* the square matrix and parent array of sparse_factor / sparse_solve: *H a
 * new reference, *lam a malloc'd copy of lambda as int (the caller frees
 * both, also on failure), *n their size; 0, or -1 with the error set */
static int sparse_parse(PyObject *Hobj, PyObject *lobj, PyArrayObject **H, int **lam, int *n) {
    PyArrayObject *la = (PyArrayObject *)PyArray_FROMANY(lobj, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!la) {
        PyErr_Clear();
        PyErr_SetString(InputError, "lambda: cannot be read as a vector of integers");
        return -1;
    }
    npy_intp len = PyArray_SIZE(la);
    if (len > 100000) {
        PyErr_Format(InputError, "lambda has %zd entries, more than the 100000 the dense storage allows",
                     (Py_ssize_t)len);
        Py_DECREF(la);
        return -1;
    }
    *n = (int)len;
    const npy_int64 *l = PyArray_DATA(la);
    *lam = malloc(sizeof(int) * (size_t)(len > 0 ? len : 1));
    if (!*lam) {
        Py_DECREF(la);
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < *n; ++k) {
        if (l[k] < -1 || l[k] >= k) {
            PyErr_Format(InputError, "lambda[%d] = %lld: a parent must come before its dof (-1 <= lambda[k] < k)",
                         k, (long long)l[k]);
            Py_DECREF(la);
            return -1;
        }
        (*lam)[k] = (int)l[k];
    }
    Py_DECREF(la);
    *H = as_vector(Hobj, len * len, "H (n x n, n = len(lambda))", NULL);
    return *H ? 0 : -1;
}

/* sparse_factor(H, lambda, unit=True) -> L: LTDL (unit) or LTL factor of
 * H's lower pattern; no model, so the GIL is released without a lock (the
 * factor is a new array of this call's) */
static PyObject *py_sparse_factor(PyObject *self, PyObject *args) {
    PyObject *Hobj, *lobj;
    int unit = 1, n, err = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &Hobj, &lobj, &unit)) return NULL;
    PyArrayObject *H = NULL;
    int *l = NULL;
    PyObject *out = NULL;
    if (sparse_parse(Hobj, lobj, &H, &l, &n) == 0 && (out = new_matrix(n, n))) {
        double *F = D((PyArrayObject *)out);
        const double *Hd = D(H);
        Py_BEGIN_ALLOW_THREADS
        memcpy(F, Hd, sizeof(double) * (size_t)n * (size_t)n);
        err = unit ? mb_ltdl_factor(F, l, n) : mb_ltl_factor(F, l, n);
        Py_END_ALLOW_THREADS
        if (err) {
            Py_CLEAR(out);
            PyErr_Format(InputError, "H is not positive definite: the pivot of row %d is not positive",
                         err - 1);
        }
    }
    Py_XDECREF(H);
    free(l);
    return out;
}

/* 1 when every diagonal entry of the n x n factor F is positive (a factor
 * of sparse_factor's), else 0 with InputError set */
static int factor_diagonal_ok(const double *F, int n) {
    for (int k = 0; k < n; ++k)
        if (!(F[(size_t)k * (size_t)n + (size_t)k] > 0.0)) {
            PyErr_Format(InputError, "F[%d][%d] is not positive: F is not a factor of sparse_factor "
                                     "(its diagonal is positive)", k, k);
            return 0;
        }
    return 1;
}

/* sparse_solve(F, lambda, b, unit=True) -> H^-1 b with the factor F of
 * sparse_factor; GIL released as sparse_factor */
static PyObject *py_sparse_solve(PyObject *self, PyObject *args) {
    PyObject *Fobj, *lobj, *bobj;
    int unit = 1, n;
    if (!PyArg_ParseTuple(args, "OOO|p", &Fobj, &lobj, &bobj, &unit)) return NULL;
    PyArrayObject *F = NULL, *b = NULL;
    int *l = NULL;
    PyObject *out = NULL;
    if (sparse_parse(Fobj, lobj, &F, &l, &n) == 0 && (b = as_vector(bobj, n, "b", NULL)) &&
        factor_diagonal_ok(D(F), n) && (out = new_vector(n))) {
        double *x = D((PyArrayObject *)out);
        const double *Fd = D(F), *bd = D(b);
        Py_BEGIN_ALLOW_THREADS
        memcpy(x, bd, sizeof(double) * (size_t)n);
        if (unit) mb_ltdl_solve(Fd, l, n, x);
        else mb_ltl_solve(Fd, l, n, x);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(F);
    free(l);
    Py_XDECREF(b);
    return out;
}

static PyObject *py_minv(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *b;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &q, &b)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, b, "b", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nv);
    if (out) {
        int err;
        KERNEL(c.h->lock, err = mb_minv(c.h->m, c.h->d, D(c.q), D(c.v), D((PyArrayObject *)out)));
        if (err) { Py_DECREF(out); out = raise_singular(c.h, err); }
    }
    call_clear(&c);
    return out;
}

static PyObject *py_momentum(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &q, &v)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nv);
    if (out) KERNEL(c.h->lock, mb_momentum(c.h->m, c.h->d, D(c.q), D(c.v), D((PyArrayObject *)out)));
    call_clear(&c);
    return out;
}

static PyObject *py_sweep(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *p, *tau, *fext = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &cap, &q, &p, &tau, &fext)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, p, "p", tau, "tau", fext)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    PyObject *v = new_vector(m->nv), *qdot = new_vector(m->nq), *pdot = new_vector(m->nv);
    PyObject *res = NULL;
    if (v && qdot && pdot) {
        int err;
        KERNEL(c.h->lock, err = mb_sweep(m, d, D(c.q), D(c.v), D(c.w), c.fext ? D(c.fext) : NULL,
                                         D((PyArrayObject *)v), D((PyArrayObject *)qdot), D((PyArrayObject *)pdot)));
        if (err) raise_singular(c.h, err);
        else res = PyTuple_Pack(3, qdot, pdot, v);
    }
    Py_XDECREF(v); Py_XDECREF(qdot); Py_XDECREF(pdot);
    call_clear(&c);
    return res;
}

/* (R (nb,3,3), p (nb,3), v (nb,6) or None, c-free) after kinematics */
static PyObject *py_kinematics(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O", &cap, &q, &v)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v == Py_None ? NULL : v, "v", NULL, NULL, NULL)) {
        call_clear(&c);
        return NULL;
    }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    npy_intp dR[3] = {m->nb, 3, 3}, dp[2] = {m->nb, 3}, dv[2] = {m->nb, 6};
    PyObject *R = PyArray_SimpleNew(3, dR, NPY_DOUBLE), *P = PyArray_SimpleNew(2, dp, NPY_DOUBLE);
    PyObject *V = c.v ? PyArray_SimpleNew(2, dv, NPY_DOUBLE) : Py_NewRef(Py_None), *res = NULL;
    if (R && P && V) {
        double *vd = c.v ? PyArray_DATA((PyArrayObject *)V) : NULL;
        KERNEL(c.h->lock,
               mb_kinematics(m, d, D(c.q), c.v ? D(c.v) : NULL);
               memcpy(PyArray_DATA((PyArrayObject *)R), d->RW, sizeof(double) * 9 * m->nb);
               memcpy(PyArray_DATA((PyArrayObject *)P), d->pW, sizeof(double) * 3 * m->nb);
               if (vd) {
                   memset(vd, 0, 6 * sizeof(double));
                   memcpy(vd + 6, d->v + 6, sizeof(double) * 6 * (m->nb - 1));
               });
        res = PyTuple_Pack(3, R, P, V);
    }
    call_clear(&c);
    Py_XDECREF(R); Py_XDECREF(P); Py_XDECREF(V);
    return res;
}

/* body_frame(h, q, v, body) -> (quaternion (4) of R_WB, scalar first, w >= 0;
 * twist (6): angular velocity, rad/s, and velocity of the body origin, m/s,
 * world axes): the sensors' own code (sensors.h) */
static PyObject *py_body_frame(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    int b;
    if (!PyArg_ParseTuple(args, "OOOi", &cap, &q, &v, &b)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    if (b < 1 || b >= m->nb) {
        call_clear(&c);
        PyErr_Format(InputError, "body_frame: body %d is not a body of the model (1..%d)", b, m->nb - 1);
        return NULL;
    }
    PyObject *quat = new_vector(4), *tw = new_vector(6), *res = NULL;
    if (quat && tw) {
        KERNEL(c.h->lock, mb_kinematics(m, d, D(c.q), D(c.v)); mb_body_quaternion(m, d, b, D((PyArrayObject *)quat));
               mb_body_twist(m, d, b, D((PyArrayObject *)tw)));
        res = PyTuple_Pack(2, quat, tw);
    }
    Py_XDECREF(quat); Py_XDECREF(tw);
    call_clear(&c);
    return res;
}

/* body accelerations (nb, 6), body frame, with gravity excluded, for (q, v, a) */
static PyObject *py_body_accelerations(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *a;
    if (!PyArg_ParseTuple(args, "OOOO", &cap, &q, &v, &a)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", a, "a", NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    npy_intp dv[2] = {m->nb, 6};
    PyObject *A = PyArray_SimpleNew(2, dv, NPY_DOUBLE);
    if (A) {
        double *ad = PyArray_DATA((PyArrayObject *)A);
        KERNEL(c.h->lock, mb_rnea(m, d, D(c.q), D(c.v), D(c.w), NULL, 0, d->tau);
               memset(ad, 0, 6 * sizeof(double));
               memcpy(ad + 6, d->a + 6, sizeof(double) * 6 * (m->nb - 1)));
    }
    call_clear(&c);
    return A;
}

/* point_accelerations(h, q, v, a, bodies (n,), points (n, 3)) -> (n, 3):
 * world-frame inertial accelerations of body points (gravity excluded) */
static PyObject *py_point_accelerations(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *a, *bodies, *points;
    if (!PyArg_ParseTuple(args, "OOOOOO", &cap, &q, &v, &a, &bodies, &points)) return NULL;
    call_t c;
    PyArrayObject *ab = NULL, *ap = NULL;
    PyObject *out = NULL;
    if (call_parse(&c, cap, q, v, "v", a, "a", NULL)) goto done;
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    ab = (PyArrayObject *)PyArray_FROMANY(bodies, NPY_INTP, 0, 1, NPY_ARRAY_IN_ARRAY);
    if (!ab) {
        PyErr_Clear();
        PyErr_SetString(InputError, "point_accelerations: bodies must be integers");
        goto done;
    }
    npy_intp n = PyArray_SIZE(ab);
    const npy_intp *b = PyArray_DATA(ab);
    for (npy_intp k = 0; k < n; ++k)
        if (b[k] < 0 || b[k] >= m->nb) {
            PyErr_Format(InputError, "point_accelerations: body %zd is out of range [0, %d)",
                         (Py_ssize_t)b[k], m->nb);
            goto done;
        }
    if (!(ap = as_vector(points, 3 * n, "points (n x 3, body frames)", NULL))) goto done;
    if (!(out = new_matrix(n, 3))) goto done;
    KERNEL(c.h->lock, mb_rnea(m, d, D(c.q), D(c.v), D(c.w), NULL, 0, d->tau);
           for (npy_intp k = 0; k < n; ++k)
               mb_point_acceleration(m, d, (int)b[k], D(ap) + 3 * k, D((PyArrayObject *)out) + 3 * k));
done:
    call_clear(&c);
    Py_XDECREF(ab); Py_XDECREF(ap);
    return out;
}

/* (S, Sring) each (nb, 6, 6): column k of joint i's motion subspace at [i, k] */
static PyObject *py_subspaces(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &q, &v)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    npy_intp dims[3] = {m->nb, 6, 6};
    PyObject *S = PyArray_SimpleNew(3, dims, NPY_DOUBLE), *Sr = PyArray_SimpleNew(3, dims, NPY_DOUBLE), *res = NULL;
    if (S && Sr) {
        KERNEL(c.h->lock, mb_kinematics(m, d, D(c.q), D(c.v));
               memcpy(PyArray_DATA((PyArrayObject *)S), d->S, sizeof(double) * 36 * m->nb);
               memcpy(PyArray_DATA((PyArrayObject *)Sr), d->Sr, sizeof(double) * 36 * m->nb));
        memset(PyArray_DATA((PyArrayObject *)S), 0, sizeof(double) * 36);
        memset(PyArray_DATA((PyArrayObject *)Sr), 0, sizeof(double) * 36);
        res = PyTuple_Pack(2, S, Sr);
    }
    call_clear(&c);
    Py_XDECREF(S); Py_XDECREF(Sr);
    return res;
}

static PyObject *py_qdot(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &q, &v)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nq);
    if (out) mb_qdot(c.h->m, D(c.q), D(c.v), D((PyArrayObject *)out));
    call_clear(&c);
    return out;
}

static PyObject *py_integrate(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    double dt;
    if (!PyArg_ParseTuple(args, "OOOd", &cap, &q, &v, &dt)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nq);
    if (out) {
        memcpy(D((PyArrayObject *)out), D(c.q), sizeof(double) * c.h->m->nq);
        mb_integrate(c.h->m, D((PyArrayObject *)out), D(c.v), dt);
    }
    call_clear(&c);
    return out;
}

static PyObject *py_normalize(PyObject *self, PyObject *args) {
    PyObject *cap, *q;
    if (!PyArg_ParseTuple(args, "OO", &cap, &q)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, NULL, NULL, NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    PyObject *out = new_vector(c.h->m->nq);
    if (out) {
        memcpy(D((PyArrayObject *)out), D(c.q), sizeof(double) * c.h->m->nq);
        mb_normalize(c.h->m, D((PyArrayObject *)out));
    }
    call_clear(&c);
    return out;
}

/* passive_forces(h, q, v, tau=None) -> (generalized forces (nv), body wrenches
 * (nb, 6)) that the force elements add to the commanded tau (zero if None);
 * a model with servo drives needs tau (their set-points are in it) */
static PyObject *py_passive_forces(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *cmd = Py_None;
    if (!PyArg_ParseTuple(args, "OOO|O", &cap, &q, &v, &cmd)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", cmd == Py_None ? NULL : cmd, "tau", NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    if (!c.w && mb_drives_have_servo(m)) {
        call_clear(&c);
        PyErr_SetString(ModelError, "passive_forces: the model has servo drives, whose set-points are in the "
                                    "commanded generalized forces: pass tau");
        return NULL;
    }
    npy_intp df[2] = {m->nb, 6};
    PyObject *tau = new_vector(m->nv), *F = PyArray_ZEROS(2, df, NPY_DOUBLE, 0), *res = NULL;
    if (tau && F) {
        double *t = D((PyArrayObject *)tau);
        if (c.w) memcpy(t, D(c.w), sizeof(double) * m->nv);
        else memset(t, 0, sizeof(double) * m->nv);
        KERNEL(c.h->lock, mb_kinematics(m, d, D(c.q), D(c.v));
               mb_passive_forces(m, d, D(c.q), D(c.v), t, D((PyArrayObject *)F)));
        if (c.w)
            for (int k = 0; k < m->nv; ++k) t[k] -= D(c.w)[k];
        res = PyTuple_Pack(2, tau, F);
    }
    call_clear(&c);
    Py_XDECREF(tau); Py_XDECREF(F);
    return res;
}

/* elements(h, q, v) -> (contact force (nct,3) world N, contact point (nct,3)
 * world m, penetration (nct,) m, cable tension (ncb,) N, cable length (ncb,) m) */
static PyObject *py_elements(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v;
    if (!PyArg_ParseTuple(args, "OOO", &cap, &q, &v)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    PyObject *Fc = new_matrix(m->nct, 3), *xc = new_matrix(m->nct, 3), *dc = new_vector(m->nct);
    PyObject *T = new_vector(m->ncb), *L = new_vector(m->ncb), *res = NULL;
    if (Fc && xc && dc && T && L) {
        KERNEL(c.h->lock,
               mb_kinematics(m, d, D(c.q), D(c.v));
               for (int k = 0; k < m->nct; ++k) {
                   double rB[3];
                   D((PyArrayObject *)dc)[k] = mb_contact_force(m, d, k, D((PyArrayObject *)Fc) + 3 * k, rB);
                   mb_point_position(m, d, (int)m->contacts[CT_N * k + CT_BODY], rB, D((PyArrayObject *)xc) + 3 * k);
               }
               for (int k = 0; k < m->ncb; ++k) {
                   double F[3];
                   D((PyArrayObject *)T)[k] = mb_cable_force(m, d, k, F, D((PyArrayObject *)L) + k);
               });
        res = PyTuple_Pack(5, Fc, xc, dc, T, L);
    }
    Py_XDECREF(Fc); Py_XDECREF(xc); Py_XDECREF(dc); Py_XDECREF(T); Py_XDECREF(L);
    call_clear(&c);
    return res;
}

static PyObject *py_passive_energy(PyObject *self, PyObject *args) {
    PyObject *cap, *q;
    if (!PyArg_ParseTuple(args, "OO", &cap, &q)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, NULL, NULL, NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    double e;
    KERNEL(c.h->lock, e = mb_passive_energy(c.h->m, c.h->d, D(c.q)));
    call_clear(&c);
    return PyFloat_FromDouble(e);
}

static PyObject *py_rhs(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &cap, &q, &v, &tau, &fext)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, "v", tau, "tau", fext)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    PyObject *qdot = new_vector(m->nq), *vdot = new_vector(m->nv), *res = NULL;
    if (qdot && vdot) {
        int err;
        KERNEL(c.h->lock, err = mb_rhs(m, d, D(c.q), D(c.v), D(c.w), c.fext ? D(c.fext) : NULL,
                                       D((PyArrayObject *)qdot), D((PyArrayObject *)vdot)));
        if (err) raise_singular(c.h, err);
        else res = PyTuple_Pack(2, qdot, vdot);
    }
    Py_XDECREF(qdot); Py_XDECREF(vdot);
    call_clear(&c);
    return res;
}

typedef int (*stepper_t)(const mb_model *, mb_data *, double *, double *, const double *, const double *, double, int);

/* "%g" text of x (PyErr_Format has no floating-point conversions); the
 * array lives until the end of the full expression of the call */
typedef struct { char s[32]; } gtext_t;
static gtext_t gtext(double x) {
    gtext_t g;
    snprintf(g.s, sizeof g.s, "%g", x);
    return g;
}

/* 0 if the stepped state (q, v) is finite, else -1 with SimulationError set */
static int check_stepped(const char *what, const double *q, int nq, const double *v, int nv,
                         double h, int n) {
    int ok = 1;
    for (int k = 0; k < nq && ok; ++k) ok = isfinite(q[k]);
    for (int k = 0; k < nv && ok; ++k) ok = isfinite(v[k]);
    if (ok) return 0;
    PyErr_Format(SimulationError, "%s: the state became non-finite within %d steps of %s s "
                 "(unstable: reduce the step)", what, n, gtext(h).s);
    return -1;
}

/* 0 if (h, n) is a valid step size and count, else -1 with InputError set */
static int check_steps(const char *what, double h, int n) {
    if (h > 0 && isfinite(h) && n >= 0) return 0;
    PyErr_Format(InputError, "%s: the step (%s s) must be finite and > 0 and the step count (%d) >= 0",
                 what, gtext(h).s, n);
    return -1;
}

/* shared by rk4 and rk4_canonical: parse (h, q, x2, tau, dt, n[, fext]),
 * run the compiled loop on copies, check the result is finite */
static PyObject *run_stepper(PyObject *args, const char *what, const char *second, stepper_t step) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None;
    double h;
    int n;
    if (!PyArg_ParseTuple(args, "OOOOdi|O", &cap, &q, &v, &tau, &h, &n, &fext)) return NULL;
    if (check_steps(what, h, n)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, second, tau, "tau", fext)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    PyObject *qo = new_vector(m->nq), *vo = new_vector(m->nv), *res = NULL;
    if (qo && vo) {
        memcpy(D((PyArrayObject *)qo), D(c.q), sizeof(double) * m->nq);
        memcpy(D((PyArrayObject *)vo), D(c.v), sizeof(double) * m->nv);
        int err;
        KERNEL(c.h->lock, err = step(m, d, D((PyArrayObject *)qo), D((PyArrayObject *)vo), D(c.w),
                                     c.fext ? D(c.fext) : NULL, h, n));
        if (err) raise_singular(c.h, err);
        else if (!check_stepped(what, D((PyArrayObject *)qo), m->nq, D((PyArrayObject *)vo), m->nv, h, n))
            res = PyTuple_Pack(2, qo, vo);
    }
    Py_XDECREF(qo); Py_XDECREF(vo);
    call_clear(&c);
    return res;
}

static PyObject *py_rk4(PyObject *self, PyObject *args) {
    return run_stepper(args, "rk4", "v", mb_rk4);
}

static PyObject *py_rk4_canonical(PyObject *self, PyObject *args) {
    return run_stepper(args, "rk4_canonical", "p", mb_rk4_canonical);
}

/* ------------------------------------------------- error-controlled steps */

/* options tuple (rtol, atol, h_init, h_max, h_min, max_steps, method) */
static int parse_adapt_options(PyObject *obj, mb_adapt_options *opt) {
    mb_adapt_defaults(opt);
    if (!PyArg_ParseTuple(obj, "dddddli;options must be (rtol, atol, h_init, h_max, h_min, "
                          "max_steps, method)", &opt->rtol, &opt->atol, &opt->h_init, &opt->h_max,
                          &opt->h_min, &opt->max_steps, &opt->method))
        return -1;
    if (!(opt->rtol >= 0 && opt->atol >= 0 && opt->rtol + opt->atol > 0 && isfinite(opt->rtol) &&
          isfinite(opt->atol))) {
        PyErr_Format(InputError, "tolerances rtol = %s, atol = %s: must be finite, >= 0, not both 0",
                     gtext(opt->rtol).s, gtext(opt->atol).s);
        return -1;
    }
    if (opt->method != MB_BS32 && opt->method != MB_DP54) {
        PyErr_Format(InputError, "integration method %d is not 0 (BS32) or 1 (DP54)", opt->method);
        return -1;
    }
    return 0;
}

/* (accepted, rejected, evaluations, t_reached, h_next, err_norm) */
static PyObject *adapt_stats_tuple(const mb_adapt_stats *st) {
    return Py_BuildValue("(lllddd)", st->accepted, st->rejected, st->evaluations, st->t_reached,
                         st->h_next, st->err_norm);
}

/* SimulationError for a failed mb_adapt_advance that is not a right-hand-side
 * error; returns NULL */
static PyObject *raise_adapt(int status, const mb_adapt_stats *st, const mb_adapt_options *opt,
                             double span) {
    PyErr_Format(SimulationError, "%s: reached %s s of the %s s interval after %ld accepted and %ld "
                 "rejected steps (last step %s s, error norm %s; rtol %s, atol %s, max_steps %ld)",
                 mb_adapt_message(status), gtext(st->t_reached).s, gtext(span).s, st->accepted,
                 st->rejected, gtext(st->h_last).s, gtext(st->err_norm).s, gtext(opt->rtol).s,
                 gtext(opt->atol).s, opt->max_steps);
    return NULL;
}

static int check_span(double span) {
    if (span >= 0 && isfinite(span)) return 0;
    PyErr_Format(InputError, "the interval (%s s) must be finite and >= 0", gtext(span).s);
    return -1;
}

/* adapt(h, q, y, tau, dt, options, fext=None, canonical=False) -> (q, y, stats):
 * x = [q; v] (or [q; p] when canonical) over dt (s) with error control */
static PyObject *py_adapt(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *options, *fext = Py_None;
    double span;
    int canonical = 0;
    if (!PyArg_ParseTuple(args, "OOOOdO|Op", &cap, &q, &v, &tau, &span, &options, &fext, &canonical))
        return NULL;
    mb_adapt_options opt;
    if (check_span(span) || parse_adapt_options(options, &opt)) return NULL;
    call_t c;
    if (call_parse(&c, cap, q, v, canonical ? "p" : "v", tau, "tau", fext)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    PyObject *qo = new_vector(m->nq), *vo = new_vector(m->nv), *res = NULL;
    if (!qo || !vo) goto done;
    memcpy(D((PyArrayObject *)qo), D(c.q), sizeof(double) * m->nq);
    memcpy(D((PyArrayObject *)vo), D(c.v), sizeof(double) * m->nv);
    mb_ode ode;
    if (canonical) mb_canonical_ode(m, d, &ode);
    else mb_rigid_ode(m, d, &ode);
    mb_adapt_stats st;
    int status;
    KERNEL(c.h->lock, status = mb_adapt_advance(&ode, D((PyArrayObject *)qo), D((PyArrayObject *)vo), D(c.w),
                                                c.fext ? D(c.fext) : NULL, span, &opt, &st));
    if (status == MB_ADAPT_RHS_ERROR) raise_singular(c.h, st.rhs_error);
    else if (status) raise_adapt(status, &st, &opt, span);
    else res = Py_BuildValue("(OON)", qo, vo, adapt_stats_tuple(&st));
done:
    Py_XDECREF(qo); Py_XDECREF(vo);
    call_clear(&c);
    return res;
}

/* ------------------------------------------------ plug-in elements (element.h) */
/* a registry (classes: tuple of the addresses of their mbn_element_class, bodies (nel) ints,
 * par: the elements' [rB (3); par] concatenated, npar (nel) ints, nstate (nel) ints, ndisc (nel)
 * ints), checked against the classes and the model; keeps the arrays the rows point into. The
 * elements' block of the state: nes continuous states, then nez discrete ones. */
typedef struct {
    mbn_element *el;
    int nel, nes, nez;
    PyArrayObject *par;
    PyArrayObject *jq, *jv; /* the joint rows' coordinate indices, class after class (element.h's iq, iv) */
} elreg_t;

static const double ZEROS_Z[MBN_ELEMENT_MAX_DISCRETE] = {0};

static void elreg_clear(elreg_t *r) {
    free(r->el);
    Py_XDECREF(r->par);
    Py_XDECREF(r->jq);
    Py_XDECREF(r->jv);
    memset(r, 0, sizeof *r);
}

static int elreg_parse(elreg_t *r, const mb_model *m, PyObject *reg) {
    PyObject *classes, *bodies, *par, *npar, *nstate, *ndisc, *jq = NULL, *jv = NULL;
    memset(r, 0, sizeof *r);
    /* optional after ndisc: the joint rows' configuration and velocity indices (element.h's
     * iq, iv), element after element, as many as each class's njoint */
    if (!PyArg_ParseTuple(reg, "O!OOOOO|OO", &PyTuple_Type, &classes, &bodies, &par, &npar, &nstate, &ndisc, &jq,
                          &jv))
        return -1;
    Py_ssize_t nel = PyTuple_GET_SIZE(classes);
    PyArrayObject *ab = (PyArrayObject *)PyArray_FROMANY(bodies, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *ap = (PyArrayObject *)PyArray_FROMANY(npar, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *as = (PyArrayObject *)PyArray_FROMANY(nstate, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *az = (PyArrayObject *)PyArray_FROMANY(ndisc, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY);
    int err = -1;
    if (!ab || !ap || !as || !az) goto done;
    if (PyArray_SIZE(ab) != nel || PyArray_SIZE(ap) != nel || PyArray_SIZE(as) != nel || PyArray_SIZE(az) != nel) {
        PyErr_SetString(InputError, "element registry: classes, bodies, npar, nstate and ndisc differ in length");
        goto done;
    }
    const int *b = PyArray_DATA(ab), *np_ = PyArray_DATA(ap), *ns = PyArray_DATA(as), *nz = PyArray_DATA(az);
    npy_intp total = 0;
    int nes_all = 0;
    for (Py_ssize_t e = 0; e < nel; ++e) total += 3 + np_[e];
    for (Py_ssize_t e = 0; e < nel; ++e) nes_all += ns[e] > 0 ? ns[e] : 0;
    if (!(r->par = as_vector(par, total, "element parameters", NULL))) goto done;
    npy_intp none = 0;
    r->jq = jq ? (PyArrayObject *)PyArray_FROMANY(jq, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY)
               : (PyArrayObject *)PyArray_ZEROS(1, &none, NPY_INT, 0);
    r->jv = jv ? (PyArrayObject *)PyArray_FROMANY(jv, NPY_INT, 1, 1, NPY_ARRAY_IN_ARRAY)
               : (PyArrayObject *)PyArray_ZEROS(1, &none, NPY_INT, 0);
    if (!r->jq || !r->jv) goto done;
    npy_intp nj_all = PyArray_SIZE(r->jq), nj_at = 0;
    if (PyArray_SIZE(r->jv) != nj_all) {
        PyErr_SetString(InputError, "element registry: the joint rows' iq and iv differ in length");
        goto done;
    }
    r->el = calloc((size_t)nel + 1, sizeof(mbn_element));
    if (!r->el) { PyErr_NoMemory(); goto done; }
    r->nel = (int)nel;
    int at = 0;
    for (Py_ssize_t e = 0; e < nel; ++e) {
        void *addr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(classes, e));
        if (!addr) { if (!PyErr_Occurred()) PyErr_SetString(InputError, "element registry: a NULL class"); goto done; }
        const mbn_element_class *cls = addr;
        if (!mbn_element_class_complete(cls)) {
            PyErr_Format(InputError, "plug-in element %zd (%s): its class is incomplete (a function "
                         "without its tangent, or a count without its functions; element.h)", (Py_ssize_t)e, cls->name ? cls->name : "?");
            goto done;
        }
        if (cls->npar != np_[e] || cls->nstate != ns[e] || ns[e] < 0 || ns[e] > MBN_ELEMENT_MAX_STATES ||
            cls->ndisc != nz[e] || nz[e] < 0 || nz[e] > MBN_ELEMENT_MAX_DISCRETE) {
            PyErr_Format(InputError, "plug-in element %zd (%s): registered with %d parameters, %d states and %d "
                         "discrete states, its class has %d, %d and %d", (Py_ssize_t)e, cls->name, np_[e], ns[e],
                         nz[e], cls->npar, cls->nstate, cls->ndisc);
            goto done;
        }
        if (b[e] < 1 || b[e] >= m->nb) {
            PyErr_Format(InputError, "plug-in element %zd (%s) acts on body %d, not one of 1..%d", (Py_ssize_t)e,
                         cls->name, b[e], m->nb - 1);
            goto done;
        }
        r->el[e] = (mbn_element){cls, b[e], at, np_[e], ns[e], r->nes, NULL, D(r->par) + at, nz[e],
                                 nes_all + r->nez, ZEROS_Z};
        if (cls->njoint) { /* its joint rows: indices into q and v */
            if (nj_at + cls->njoint > nj_all) {
                PyErr_Format(InputError, "plug-in element %zd (%s): its class has %d joint rows, the registry "
                             "gives %zd in all", (Py_ssize_t)e, cls->name, cls->njoint, (Py_ssize_t)nj_all);
                goto done;
            }
            const int *iq = (const int *)PyArray_DATA(r->jq) + nj_at, *iv = (const int *)PyArray_DATA(r->jv) + nj_at;
            for (int k = 0; k < cls->njoint; ++k)
                if (iq[k] < 0 || iq[k] >= m->nq || iv[k] < 0 || iv[k] >= m->nv) {
                    PyErr_Format(InputError, "plug-in element %zd (%s): joint row %d reads q[%d], v[%d], not "
                                 "indices of the model's %d coordinates and %d velocities", (Py_ssize_t)e,
                                 cls->name, k, iq[k], iv[k], m->nq, m->nv);
                    goto done;
                }
            r->el[e].iq = iq;
            r->el[e].iv = iv;
            nj_at += cls->njoint;
        }
        at += 3 + np_[e];
        r->nes += ns[e];
        r->nez += nz[e];
    }
    if (mbn_elements_nframe(r->nel, r->el) > 1) {
        PyErr_SetString(InputError, "plug-in elements: more than one frame element (a plant moves in one frame)");
        goto done;
    }
    if (nj_at != nj_all) {
        PyErr_Format(InputError, "plug-in elements: their classes have %zd joint rows, the registry gives %zd",
                     (Py_ssize_t)nj_at, (Py_ssize_t)nj_all);
        goto done;
    }
    if (!mbn_elements_periods_valid(r->nel, r->el)) {
        PyErr_SetString(InputError, "plug-in elements: a sampling period of their discrete states is not a "
                                    "positive finite time");
        goto done;
    }
    err = 0;
done:
    Py_XDECREF(ab); Py_XDECREF(ap); Py_XDECREF(as); Py_XDECREF(az);
    if (err) elreg_clear(r);
    return err;
}

/* the plant's inputs u (None: none) a frame element reads (element.h), as a new reference in *out */
static int element_inputs(PyObject *u, PyArrayObject **out) {
    *out = NULL;
    if (u == Py_None) return 0;
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(u, NPY_DOUBLE, 0, 1, NPY_ARRAY_IN_ARRAY);
    if (!a) return -1;
    *out = as_vector((PyObject *)a, PyArray_SIZE(a), "u", NULL);
    Py_DECREF(a);
    return *out ? 0 : -1;
}

/* element_adapt(h, q, y, tau, t, dt, options, registry, u=None) -> (q, y, stats): adapt's rigid x = [q; v]
 * with the elements' forces and y = [v; s; z], s their continuous states (element.h's
 * mbn_element_ode), z their discrete ones, sampled on their grids (mbn_element_advance); u the
 * plant's inputs a frame element reads */
static PyObject *py_element_adapt(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *y, *tau, *options, *reg, *u = Py_None;
    double t, span;
    if (!PyArg_ParseTuple(args, "OOOOddOO|O", &cap, &q, &y, &tau, &t, &span, &options, &reg, &u)) return NULL;
    PyArrayObject *au;
    if (element_inputs(u, &au)) return NULL;
    mb_adapt_options opt;
    if (check_span(span) || parse_adapt_options(options, &opt)) return NULL;
    call_t c;
    elreg_t r;
    if (call_parse(&c, cap, q, NULL, NULL, tau, "tau", NULL)) { call_clear(&c); Py_XDECREF(au); return NULL; }
    mb_model *m = c.h->m;
    if (elreg_parse(&r, m, reg)) { call_clear(&c); Py_XDECREF(au); return NULL; }
    npy_intp ny = m->nv + r.nes + r.nez;
    PyArrayObject *ay = as_vector(y, ny, "y = [v; element states]", NULL);
    PyObject *qo = new_vector(m->nq), *yo = new_vector(ny), *res = NULL;
    double *fx = calloc(6 * (size_t)m->nb + 1, sizeof(double));
    if (!ay || !qo || !yo || !fx) { if (!fx) PyErr_NoMemory(); goto done; }
    memcpy(D((PyArrayObject *)qo), D(c.q), sizeof(double) * m->nq);
    memcpy(D((PyArrayObject *)yo), D(ay), sizeof(double) * ny);
    mbn_element_ode eo;
    mb_ode ode;
    mbn_element_ode_init(&eo, m, c.h->d, r.nel, r.el, t, fx, &ode);
    if (au) mbn_element_ode_inputs(&eo, D(au), (int)PyArray_SIZE(au));
    mb_adapt_stats st;
    memset(&st, 0, sizeof st);
    int status;
    KERNEL(c.h->lock, status = mbn_element_advance(&eo, &ode, D((PyArrayObject *)qo), D((PyArrayObject *)yo), D(c.w),
                                                   span, &opt, &st));
    if (status == MB_ADAPT_RHS_ERROR) raise_singular(c.h, st.rhs_error);
    else if (status) raise_adapt(status, &st, &opt, span);
    else res = Py_BuildValue("(OON)", qo, yo, adapt_stats_tuple(&st));
done:
    free(fx);
    Py_XDECREF(au);
    Py_XDECREF(ay); Py_XDECREF(qo); Py_XDECREF(yo);
    elreg_clear(&r);
    call_clear(&c);
    return res;
}

/* element_rhs(h, q, y, tau, t, registry, u=None) -> (qdot, ydot): the right-hand side element_adapt
 * integrates (the discrete states' rates zero) */
static PyObject *py_element_rhs(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *y, *tau, *reg, *u = Py_None;
    double t;
    if (!PyArg_ParseTuple(args, "OOOOdO|O", &cap, &q, &y, &tau, &t, &reg, &u)) return NULL;
    PyArrayObject *au;
    if (element_inputs(u, &au)) return NULL;
    call_t c;
    elreg_t r;
    if (call_parse(&c, cap, q, NULL, NULL, tau, "tau", NULL)) { call_clear(&c); Py_XDECREF(au); return NULL; }
    mb_model *m = c.h->m;
    if (elreg_parse(&r, m, reg)) { call_clear(&c); Py_XDECREF(au); return NULL; }
    npy_intp ny = m->nv + r.nes + r.nez;
    PyArrayObject *ay = as_vector(y, ny, "y = [v; element states]", NULL);
    PyObject *qd = new_vector(m->nq), *yd = new_vector(ny), *res = NULL;
    double *fx = calloc(6 * (size_t)m->nb + 1, sizeof(double));
    if (!ay || !qd || !yd || !fx) { if (!fx) PyErr_NoMemory(); goto done; }
    for (npy_intp k = m->nv + r.nes; k < ny; ++k) D((PyArrayObject *)yd)[k] = 0.0; /* discrete: no rate */
    mbn_element_ode eo;
    mb_ode ode;
    mbn_element_ode_init(&eo, m, c.h->d, r.nel, r.el, t, fx, &ode);
    if (au) mbn_element_ode_inputs(&eo, D(au), (int)PyArray_SIZE(au));
    int err;
    KERNEL(c.h->lock, err = ode.f(ode.ctx, D(c.q), D(ay), D(c.w), NULL, D((PyArrayObject *)qd), D((PyArrayObject *)yd)));
    if (err) raise_singular(c.h, err);
    else res = Py_BuildValue("(OO)", qd, yd);
done:
    free(fx);
    Py_XDECREF(au);
    Py_XDECREF(ay); Py_XDECREF(qd); Py_XDECREF(yd);
    elreg_clear(&r);
    call_clear(&c);
    return res;
}

/* element_class_counts(address) -> (npar, nstate, ndisc, nout, njoint, nevent) of an
 * mbn_element_class (element.h), for the packer's checks */
static PyObject *py_element_class_counts(PyObject *self, PyObject *args) {
    PyObject *addr;
    if (!PyArg_ParseTuple(args, "O", &addr)) return NULL;
    const mbn_element_class *cls = PyLong_AsVoidPtr(addr);
    if (!cls) {
        if (!PyErr_Occurred()) PyErr_SetString(InputError, "element_class_counts: a NULL class");
        return NULL;
    }
    return Py_BuildValue("(iiiiii)", cls->npar, cls->nstate, cls->ndisc, cls->nout, cls->njoint, cls->nevent);
}

/* element_energy(h, q, v, s, registry) -> the elements' elastic energy (J) at (q, v) and their
 * states s (the elements' block: continuous, then discrete; element.h's energy) */
static PyObject *py_element_energy(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *s, *reg;
    if (!PyArg_ParseTuple(args, "OOOOO", &cap, &q, &v, &s, &reg)) return NULL;
    call_t c;
    elreg_t r;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    if (elreg_parse(&r, m, reg)) { call_clear(&c); return NULL; }
    PyArrayObject *as = as_vector(s, r.nes + r.nez, "element states", NULL);
    PyObject *res = NULL;
    if (as) {
        double E;
        KERNEL(c.h->lock, E = mbn_elements_energy(r.nel, r.el, D(c.q), D(c.v), D(as), D(as)));
        res = PyFloat_FromDouble(E);
    }
    Py_XDECREF(as);
    elreg_clear(&r);
    call_clear(&c);
    return res;
}

/* element_outputs(h, q, v, s, t, registry, which (n, 2) ints: element, output) -> (n,) */
static PyObject *py_element_outputs(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *s, *reg, *which;
    double t;
    if (!PyArg_ParseTuple(args, "OOOOdOO", &cap, &q, &v, &s, &t, &reg, &which)) return NULL;
    call_t c;
    elreg_t r;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) { call_clear(&c); return NULL; }
    mb_model *m = c.h->m;
    if (elreg_parse(&r, m, reg)) { call_clear(&c); return NULL; }
    PyArrayObject *as = as_vector(s, r.nes + r.nez, "element states", NULL);
    PyArrayObject *aw = (PyArrayObject *)PyArray_FROMANY(which, NPY_INT, 1, 2, NPY_ARRAY_IN_ARRAY);
    PyObject *out = NULL, *res = NULL;
    if (!as || !aw) goto done;
    npy_intp n = PyArray_SIZE(aw) / 2;
    const int *w = PyArray_DATA(aw);
    for (npy_intp k = 0; k < n; ++k)
        if (w[2 * k] < 0 || w[2 * k] >= r.nel || w[2 * k + 1] < 0 || w[2 * k + 1] >= r.el[w[2 * k]].cls->nout) {
            PyErr_Format(InputError, "element output %zd: element %d output %d is not registered", (Py_ssize_t)k,
                         w[2 * k], w[2 * k + 1]);
            goto done;
        }
    if (!(out = new_vector(n))) goto done;
    double *y = D((PyArrayObject *)out);
    KERNEL(c.h->lock, {
        mb_kinematics(m, c.h->d, D(c.q), D(c.v));
        for (npy_intp k = 0; k < n; ++k) {
            const mbn_element *el = r.el + w[2 * k];
            double x[3], V[3];
            mbn_element_point(m, c.h->d, el, x, V);
            y[k] = el->cls->output(el->par + 3, t, x, V, D(as) + el->os, w[2 * k + 1]);
        }
    });
    res = out;
    out = NULL;
done:
    Py_XDECREF(out); Py_XDECREF(as); Py_XDECREF(aw);
    elreg_clear(&r);
    call_clear(&c);
    return res;
}

/* a Python right-hand side f(t, x) -> dx/dt and normalize(x) -> x for
 * mb_adapt_advance (ny = 0: x is all "q") */
typedef struct {
    PyObject *f, *normalize;
    double t0, t;
    npy_intp n;
} pycb_t;

static int pycb_copy(PyObject *res, double *out, npy_intp n, const char *what) {
    if (!res) return -1;
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(res, NPY_DOUBLE, 0, 1, NPY_ARRAY_IN_ARRAY);
    Py_DECREF(res);
    if (!a) return -1;
    if (PyArray_SIZE(a) != n) {
        PyErr_Format(InputError, "%s returned %zd values, expected %zd", what,
                     (Py_ssize_t)PyArray_SIZE(a), (Py_ssize_t)n);
        Py_DECREF(a);
        return -1;
    }
    memcpy(out, PyArray_DATA(a), sizeof(double) * (size_t)n);
    Py_DECREF(a);
    return 0;
}

static PyObject *pycb_array(const double *x, npy_intp n) {
    PyObject *a = new_vector(n);
    if (a) memcpy(D((PyArrayObject *)a), x, sizeof(double) * (size_t)n);
    return a;
}

static int pycb_rhs(void *ctx, const double *x, const double *unused_y, const double *tau,
                    const double *fext, double *dx, double *unused_dy) {
    pycb_t *cb = ctx;
    PyObject *xa = pycb_array(x, cb->n);
    if (!xa) return -1;
    PyObject *r = PyObject_CallFunction(cb->f, "dO", cb->t0 + cb->t, xa);
    Py_DECREF(xa);
    return pycb_copy(r, dx, cb->n, "the right-hand side") ? -1 : 0;
}

static void pycb_normalize(void *ctx, double *x) {
    pycb_t *cb = ctx;
    if (cb->normalize == Py_None || PyErr_Occurred()) return;
    PyObject *xa = pycb_array(x, cb->n);
    if (!xa) return;
    PyObject *r = PyObject_CallFunctionObjArgs(cb->normalize, xa, NULL);
    Py_DECREF(xa);
    pycb_copy(r, x, cb->n, "normalize"); /* an exception stays set and stops the call below */
}

/* adapt_callback(f, normalize, t0, x, dt, options) -> (x, stats): x over
 * dt (s) with error control, f(t, x) -> dx/dt in Python, normalize(x) -> x
 * after every accepted step (or None) */
static PyObject *py_adapt_callback(PyObject *self, PyObject *args) {
    PyObject *f, *norm, *x, *options;
    double t0, span;
    if (!PyArg_ParseTuple(args, "OOdOdO", &f, &norm, &t0, &x, &span, &options)) return NULL;
    mb_adapt_options opt;
    if (check_span(span) || parse_adapt_options(options, &opt)) return NULL;
    if (!PyCallable_Check(f) || (norm != Py_None && !PyCallable_Check(norm))) {
        PyErr_SetString(PyExc_TypeError, "adapt_callback: f and normalize must be callables");
        return NULL;
    }
    PyArrayObject *x0 = (PyArrayObject *)PyArray_FROMANY(x, NPY_DOUBLE, 0, 1, NPY_ARRAY_IN_ARRAY);
    if (!x0) return NULL;
    PyArrayObject *xa = as_vector((PyObject *)x0, PyArray_SIZE(x0), "x", NULL);
    Py_DECREF(x0);
    if (!xa) return NULL;
    pycb_t cb = {f, norm, t0, 0.0, PyArray_SIZE(xa)};
    mb_ode ode = {&cb, pycb_rhs, pycb_normalize, (int)cb.n, 0, NULL, &cb.t};
    PyObject *xo = pycb_array(D(xa), cb.n), *res = NULL;
    Py_DECREF(xa);
    if (!xo) return NULL;
    mb_adapt_stats st;
    double unused;
    int status = mb_adapt_advance(&ode, D((PyArrayObject *)xo), &unused, NULL, NULL, span, &opt, &st);
    if (PyErr_Occurred()) ; /* the Python right-hand side or normalize raised */
    else if (status) raise_adapt(status, &st, &opt, span);
    else res = Py_BuildValue("(ON)", xo, adapt_stats_tuple(&st));
    Py_DECREF(xo);
    return res;
}

/* ------------------------------------------------------ flexible systems */

typedef struct {
    mb_flex *fx;          /* with its own workspace of the virtual tree (fx->d) */
    PyThread_type_lock lock; /* held around every kernel call on fx */
    PyObject *model;      /* the virtual tree's capsule (kept alive) */
    PyObject *q_names;    /* tuple (nq) public coordinate labels */
    PyObject *v_names;    /* tuple (nv) */
    PyObject *beam_names; /* tuple (nbeam) */
} flex_handle_t;

static const char *FLEX_CAPSULE = "mbfmu.dynamics.flexible";

static void flex_handle_free(PyObject *cap) {
    flex_handle_t *h = PyCapsule_GetPointer(cap, FLEX_CAPSULE);
    if (!h) return;
    mb_flex_free(h->fx);
    if (h->lock) PyThread_free_lock(h->lock);
    Py_XDECREF(h->model);
    Py_XDECREF(h->q_names);
    Py_XDECREF(h->v_names);
    Py_XDECREF(h->beam_names);
    free(h);
}

static flex_handle_t *get_flex(PyObject *cap) {
    flex_handle_t *h = PyCapsule_GetPointer(cap, FLEX_CAPSULE);
    if (!h) PyErr_SetString(PyExc_TypeError, "expected a flexible-system handle (FlexibleSystem._fh)");
    return h;
}

/* SimulationError for a nonzero mb_flex_rhs code; returns NULL */
static PyObject *raise_flex(flex_handle_t *h, int err) {
    if (err < 0) return raise_singular(PyCapsule_GetPointer(h->model, CAPSULE), err);
    PyErr_Format(SimulationError, "the modal mass matrix M_ee of beam %S is singular (a beam "
                 "without mass, or modes its stations cannot resolve)",
                 PyTuple_GET_ITEM(h->beam_names, err - 1));
    return NULL;
}

static int copy_dbl_any(PyObject *obj, double **out, npy_intp *n, const char *arg) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0, NPY_ARRAY_IN_ARRAY);
    if (!a) return -1;
    *n = PyArray_SIZE(a);
    Py_DECREF(a);
    return copy_dbl(obj, *n, out, arg);
}

/* new_flex(model, nq, nv, role, beam, pq, pv, goff, hoff, gtab, htab,
 *          bbody, bq, bv, bnm, kdoff, kd, q_names, v_names, beam_names) */
static PyObject *py_new_flex(PyObject *self, PyObject *args) {
    PyObject *cap, *role, *beam, *pq, *pv, *goff, *hoff, *gtab, *htab, *bbody, *bq, *bv, *bnm;
    PyObject *kdoff, *kd, *q_names, *v_names, *beam_names;
    int nq, nv;
    if (!PyArg_ParseTuple(args, "OiiOOOOOOOOOOOOOOO!O!O!", &cap, &nq, &nv, &role, &beam, &pq, &pv,
                          &goff, &hoff, &gtab, &htab, &bbody, &bq, &bv, &bnm, &kdoff, &kd,
                          &PyTuple_Type, &q_names, &PyTuple_Type, &v_names, &PyTuple_Type,
                          &beam_names))
        return NULL;
    handle_t *mh = get_handle(cap);
    if (!mh) return NULL;
    const mb_model *m = mh->m;
    int nb = m->nb, nbeam = (int)PyTuple_GET_SIZE(beam_names);
    mb_flex *fx = calloc(1, sizeof(mb_flex));
    if (!fx) return PyErr_NoMemory();
    fx->m = m;
    fx->nq = nq;
    fx->nv = nv;
    fx->nbeam = nbeam;
    npy_intp ng, nh, nkd;
    if (copy_int(role, nb, &fx->role, "role") || copy_int(beam, nb, &fx->beam, "beam") ||
        copy_int(pq, nb, &fx->pq, "pq") || copy_int(pv, nb, &fx->pv, "pv") ||
        copy_int(goff, nb, &fx->goff, "goff") || copy_int(hoff, nb, &fx->hoff, "hoff") ||
        copy_int(bbody, nbeam, &fx->bbody, "bbody") || copy_int(bq, nbeam, &fx->bq, "bq") ||
        copy_int(bv, nbeam, &fx->bv, "bv") || copy_int(bnm, nbeam, &fx->bnm, "bnm") ||
        copy_int(kdoff, nbeam, &fx->kdoff, "kdoff") ||
        copy_dbl_any(gtab, &fx->gtab, &ng, "gtab") || copy_dbl_any(htab, &fx->htab, &nh, "htab") ||
        copy_dbl_any(kd, &fx->kd, &nkd, "kd")) {
        mb_flex_free(fx);
        return NULL;
    }
    /* every index the kernel follows is checked here, once */
    const char *bad = NULL;
    int where = 0;
    fx->nm_max = 0;
    for (int b = 0; b < nbeam && !bad; ++b) {
        int n = fx->bnm[b];
        where = b;
        if (n < 1 || fx->bbody[b] < 1 || fx->bbody[b] >= nb || fx->bq[b] < 0 || fx->bq[b] + n > nq ||
            fx->bv[b] < 0 || fx->bv[b] + n > nv || fx->kdoff[b] < 0 || fx->kdoff[b] + 2 * n * n > nkd)
            bad = "beam table";
        else if (fx->nm_max < n) fx->nm_max = n;
    }
    for (int i = 1; i < nb && !bad; ++i) {
        int r = fx->role[i], b = fx->beam[i];
        where = i;
        if (r == FX_RIGID || r == FX_FRAME) {
            if (fx->pq[i] < 0 || fx->pq[i] + m->nqi[i] > nq || fx->pv[i] < 0 || fx->pv[i] + m->nvi[i] > nv)
                bad = "rigid joint index";
            else if (r == FX_FRAME && (b < 0 || b >= nbeam || fx->bbody[b] != i))
                bad = "beam frame";
        } else if (r == FX_DEFORM) {
            int p = m->parent[i];
            if (b < 0 || b >= nbeam || m->nvi[i] != 1 || m->nqi[i] != 1 ||
                (m->jtype[i] != MB_REVOLUTE && m->jtype[i] != MB_PRISMATIC) ||
                !((fx->role[p] == FX_DEFORM && fx->beam[p] == b) || fx->bbody[b] == p))
                bad = "deformation joint";
            else if (fx->goff[i] < 0 || fx->goff[i] + fx->bnm[b] > ng ||
                     (fx->hoff[i] >= 0 && fx->hoff[i] + fx->bnm[b] * fx->bnm[b] > nh))
                bad = "station table";
        } else {
            bad = "role";
        }
    }
    if (bad) {
        PyErr_Format(ModelError, "flexible system: inconsistent %s at entry %d", bad, where);
        mb_flex_free(fx);
        return NULL;
    }
    if (mb_flex_alloc_workspace(fx)) {
        mb_flex_free(fx);
        return PyErr_NoMemory();
    }
    flex_handle_t *h = calloc(1, sizeof(flex_handle_t));
    if (!h) {
        mb_flex_free(fx);
        return PyErr_NoMemory();
    }
    h->fx = fx;
    if (!(h->lock = PyThread_allocate_lock())) {
        mb_flex_free(fx);
        free(h);
        return PyErr_NoMemory();
    }
    Py_INCREF(cap); h->model = cap;
    Py_INCREF(q_names); h->q_names = q_names;
    Py_INCREF(v_names); h->v_names = v_names;
    Py_INCREF(beam_names); h->beam_names = beam_names;
    PyObject *out = PyCapsule_New(h, FLEX_CAPSULE, flex_handle_free);
    if (!out) {
        mb_flex_free(fx);
        PyThread_free_lock(h->lock);
        Py_DECREF(cap); Py_DECREF(q_names); Py_DECREF(v_names); Py_DECREF(beam_names);
        free(h);
    }
    return out;
}

/* flex_rhs(h, q, v, tau, fext=None, pidx=None, pacc=None) -> (qdot, vdot) */
static PyObject *py_flex_rhs(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None, *pidx = Py_None, *pacc = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|OOO", &cap, &q, &v, &tau, &fext, &pidx, &pacc)) return NULL;
    flex_handle_t *h = get_flex(cap);
    if (!h) return NULL;
    mb_flex *fx = h->fx;
    const mb_model *m = fx->m;
    PyArrayObject *aq = NULL, *av = NULL, *at = NULL, *af = NULL, *ai = NULL, *aa = NULL;
    PyObject *qdot = NULL, *vdot = NULL, *res = NULL;
    /* fx->pres and fx->pacc are set here, so the lock is held for the whole call */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(h->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    aq = as_vector(q, fx->nq, "q", h->q_names);
    if (!aq) goto done;
    av = as_vector(v, fx->nv, "v", h->v_names);
    if (!av) goto done;
    at = as_vector(tau, fx->nv, "tau", h->v_names);
    if (!at) goto done;
    if (fext != Py_None && !(af = as_vector(fext, (npy_intp)m->nb * 6, "f_ext (nbodies x 6, body frame)", NULL)))
        goto done;
    memset(fx->pres, 0, sizeof(int) * (size_t)m->nb);
    if (pidx != Py_None) {
        ai = (PyArrayObject *)PyArray_FROMANY(pidx, NPY_INTP, 0, 1, NPY_ARRAY_IN_ARRAY);
        if (!ai) {
            PyErr_Clear();
            PyErr_SetString(InputError, "prescribed indices: cannot be read as integers");
            goto done;
        }
        npy_intp n = PyArray_SIZE(ai);
        aa = as_vector(pacc, n, "prescribed accelerations", NULL);
        if (!aa) goto done;
        const npy_intp *idx = PyArray_DATA(ai);
        memset(fx->pacc, 0, sizeof(double) * (size_t)fx->nv);
        for (npy_intp k = 0; k < n; ++k) {
            npy_intp j = idx[k];
            if (j < 0 || j >= fx->nv) {
                PyErr_Format(InputError, "prescribed index %zd is out of range [0, %d)", (Py_ssize_t)j, fx->nv);
                goto done;
            }
            fx->pacc[j] = D(aa)[k];
        }
        /* a joint is prescribed if all its velocity coordinates are */
        for (int i = 1; i < m->nb; ++i) {
            int r = fx->role[i], cnt = 0;
            if (r != FX_RIGID && r != FX_FRAME) continue;
            for (npy_intp k = 0; k < n; ++k)
                if (idx[k] >= fx->pv[i] && idx[k] < fx->pv[i] + m->nvi[i]) ++cnt;
            if (cnt > 0 && cnt != m->nvi[i]) {
                PyErr_Format(InputError, "prescribed accelerations: %d of the %d coordinates of the joint "
                             "of body %d (first %S); prescribe all or none", cnt, m->nvi[i], i,
                             PyTuple_GET_ITEM(h->v_names, fx->pv[i]));
                goto done;
            }
            fx->pres[i] = cnt > 0;
        }
        for (int b = 0; b < fx->nbeam; ++b)
            for (npy_intp k = 0; k < n; ++k)
                if (idx[k] >= fx->bv[b] && idx[k] < fx->bv[b] + fx->bnm[b]) {
                    PyErr_Format(InputError, "prescribed accelerations: %S is a modal coordinate; the "
                                 "flexible ABA prescribes rigid joints only",
                                 PyTuple_GET_ITEM(h->v_names, idx[k]));
                    goto done;
                }
    }
    qdot = new_vector(fx->nq);
    vdot = new_vector(fx->nv);
    if (!qdot || !vdot) goto done;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = mb_flex_rhs(fx, D(aq), D(av), D(at), af ? D(af) : NULL, D((PyArrayObject *)qdot),
                      D((PyArrayObject *)vdot));
    Py_END_ALLOW_THREADS
    if (err) raise_flex(h, err);
    else res = PyTuple_Pack(2, qdot, vdot);
done:
    PyThread_release_lock(h->lock);
    Py_XDECREF(aq); Py_XDECREF(av); Py_XDECREF(at); Py_XDECREF(af); Py_XDECREF(ai); Py_XDECREF(aa);
    Py_XDECREF(qdot); Py_XDECREF(vdot);
    return res;
}

/* SimulationError for an mb_flex_rk4 error code: as raise_flex, but if the
 * start state (q, v) is regular, the steps led to the singular state (most
 * likely a diverging, unstable step), which the message says first.
 * Returns NULL. */
static PyObject *raise_flex_stepped(flex_handle_t *h, int err, const double *q, const double *v,
                                    const double *tau, const double *fext, double dt, int n) {
    mb_flex *fx = h->fx;
    raise_flex(h, err);
    int start_err;
    KERNEL(h->lock, start_err = mb_flex_rhs(fx, q, v, tau, fext, fx->rk, fx->rk + fx->nq));
    if (start_err) return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    if (!text) return NULL;
    PyErr_Format(SimulationError, "flex_rk4: the steps reached a singular state within %d steps "
                 "of %s s from a regular one (most likely an unstable, diverging step: reduce the "
                 "step): %U", n, gtext(dt).s, text);
    Py_DECREF(text);
    return NULL;
}

/* flex_rk4(fh, q, v, tau, dt, n, fext=None) -> (q, v): n RK4 steps of dt
 * with mb_flex_rhs, inputs held, no prescribed joints */
static PyObject *py_flex_rk4(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *fext = Py_None;
    double dt;
    int n;
    if (!PyArg_ParseTuple(args, "OOOOdi|O", &cap, &q, &v, &tau, &dt, &n, &fext)) return NULL;
    flex_handle_t *h = get_flex(cap);
    if (!h || check_steps("flex_rk4", dt, n)) return NULL;
    mb_flex *fx = h->fx;
    PyArrayObject *aq = NULL, *av = NULL, *at = NULL, *af = NULL;
    PyObject *qo = NULL, *vo = NULL, *res = NULL;
    if (!(aq = as_vector(q, fx->nq, "q", h->q_names)) || !(av = as_vector(v, fx->nv, "v", h->v_names)) ||
        !(at = as_vector(tau, fx->nv, "tau", h->v_names)))
        goto done;
    if (fext != Py_None &&
        !(af = as_vector(fext, (npy_intp)fx->m->nb * 6, "f_ext (nbodies x 6, body frame)", NULL)))
        goto done;
    qo = new_vector(fx->nq);
    vo = new_vector(fx->nv);
    if (!qo || !vo) goto done;
    double *qs = D((PyArrayObject *)qo), *vs = D((PyArrayObject *)vo);
    memcpy(qs, D(aq), sizeof(double) * (size_t)fx->nq);
    memcpy(vs, D(av), sizeof(double) * (size_t)fx->nv);
    int err;
    KERNEL(h->lock, err = mb_flex_rk4(fx, qs, vs, D(at), af ? D(af) : NULL, dt, n));
    if (err == FX_NONFINITE)
        PyErr_Format(SimulationError, "flex_rk4: the state became non-finite within %d steps of %s s "
                     "(unstable: reduce the step)", n, gtext(dt).s);
    else if (err) raise_flex_stepped(h, err, D(aq), D(av), D(at), af ? D(af) : NULL, dt, n);
    else if (!check_stepped("flex_rk4", qs, fx->nq, vs, fx->nv, dt, n))
        res = PyTuple_Pack(2, qo, vo);
done:
    Py_XDECREF(aq); Py_XDECREF(av); Py_XDECREF(at); Py_XDECREF(af);
    Py_XDECREF(qo); Py_XDECREF(vo);
    return res;
}

/* flex_adapt(fh, q, v, tau, dt, options, fext=None) -> (q, v, stats): the
 * flexible system over dt (s) with error control, inputs held */
static PyObject *py_flex_adapt(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *tau, *options, *fext = Py_None;
    double span;
    if (!PyArg_ParseTuple(args, "OOOOdO|O", &cap, &q, &v, &tau, &span, &options, &fext)) return NULL;
    flex_handle_t *h = get_flex(cap);
    mb_adapt_options opt;
    if (!h || check_span(span) || parse_adapt_options(options, &opt)) return NULL;
    mb_flex *fx = h->fx;
    PyArrayObject *aq = NULL, *av = NULL, *at = NULL, *af = NULL;
    PyObject *qo = NULL, *vo = NULL, *res = NULL;
    if (!(aq = as_vector(q, fx->nq, "q", h->q_names)) || !(av = as_vector(v, fx->nv, "v", h->v_names)) ||
        !(at = as_vector(tau, fx->nv, "tau", h->v_names)))
        goto done;
    if (fext != Py_None &&
        !(af = as_vector(fext, (npy_intp)fx->m->nb * 6, "f_ext (nbodies x 6, body frame)", NULL)))
        goto done;
    if (!(qo = pycb_array(D(aq), fx->nq)) || !(vo = pycb_array(D(av), fx->nv))) goto done;
    mb_ode ode;
    mb_flex_ode(fx, &ode);
    mb_adapt_stats st;
    int status;
    KERNEL(h->lock, status = mb_adapt_advance(&ode, D((PyArrayObject *)qo), D((PyArrayObject *)vo), D(at),
                                              af ? D(af) : NULL, span, &opt, &st));
    if (status == MB_ADAPT_RHS_ERROR) raise_flex(h, st.rhs_error);
    else if (status) raise_adapt(status, &st, &opt, span);
    else res = Py_BuildValue("(OON)", qo, vo, adapt_stats_tuple(&st));
done:
    Py_XDECREF(aq); Py_XDECREF(av); Py_XDECREF(at); Py_XDECREF(af);
    Py_XDECREF(qo); Py_XDECREF(vo);
    return res;
}

static PyObject *py_sizes(PyObject *self, PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h) return NULL;
    return Py_BuildValue("(iii)", h->m->nb, h->m->nq, h->m->nv);
}

/* momenta(h, q, v, mass (nb), com (nb, 3), Ic (nb, 3, 3)) -> [H; L] (6,): see sensors.h */
static PyObject *py_momenta(PyObject *self, PyObject *args) {
    PyObject *cap, *q, *v, *mass, *com, *Ic, *out = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOO", &cap, &q, &v, &mass, &com, &Ic)) return NULL;
    call_t c;
    PyArrayObject *am = NULL, *ac = NULL, *ai = NULL;
    if (call_parse(&c, cap, q, v, "v", NULL, NULL, NULL)) goto done;
    int nb = c.h->m->nb;
    if (!(am = as_vector(mass, nb, "mass", NULL)) || !(ac = as_vector(com, 3 * nb, "com", NULL)) ||
        !(ai = as_vector(Ic, 9 * nb, "Ic", NULL)))
        goto done;
    mb_mass_props mp = {D(am), D(ac), D(ai)};
    if (!(out = new_vector(6))) goto done;
    KERNEL(c.h->lock, mb_momenta(c.h->m, c.h->d, &mp, D(c.q), D(c.v), D((PyArrayObject *)out)));
done:
    Py_XDECREF(am); Py_XDECREF(ac); Py_XDECREF(ai);
    call_clear(&c);
    return out;
}

/* a sensor from its row (kind, index, axis, offset into par or -1) */
static void sensor_from_row(mb_sensor *s, const int *row, double *par) {
    s->kind = row[0];
    s->index = row[1];
    s->axis = row[2];
    s->par = row[3] >= 0 ? par + row[3] : NULL;
}

/* ------------------------------------------------ output sensors (sensors.h) */

/* Sensors packed once (sensors_pack) and evaluated by mb_sensors_eval, the
 * code the native FMU runs (sensors_eval): one call per evaluation of all of
 * a plant's outputs. The capsule owns copies of everything it points into
 * and a reference to the model capsule. */
typedef struct {
    PyObject *model;      /* the model capsule (kept alive) */
    int n, nu;
    mb_sensor *s;
    double *par, *mass, *com, *Ic;
    mb_mass_props mp;
} sensors_t;

static const char *SENSORS_CAPSULE = "mbfmu.dynamics.sensors";

static void sensors_free(PyObject *cap) {
    sensors_t *p = PyCapsule_GetPointer(cap, SENSORS_CAPSULE);
    if (!p) return;
    Py_XDECREF(p->model);
    free(p->s); free(p->par); free(p->mass); free(p->com); free(p->Ic);
    free(p);
}

static double *copy_doubles(PyArrayObject *a) {
    npy_intp n = PyArray_SIZE(a);
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (d && n > 0) memcpy(d, PyArray_DATA(a), sizeof(double) * (size_t)n);
    return d;
}

/* the row's body, index and parameters fit the model (sensors.h); else an InputError naming the sensor */
static int check_sensor_row(const mb_model *m, const int *r, npy_intp npar, int nu, int k) {
    int kind = r[0], index = r[1], axis = r[2], at = r[3];
    int nx = m->nq + m->nv, bad = 0, need = 0;
    switch (kind) {
    case MB_SENS_STATE: bad = index < 0 || index >= nx; break;
    case MB_SENS_VELOCITY: bad = index < 0 || index >= m->nv; break;
    case MB_SENS_POINT: bad = index < 1 || index >= m->nb || axis < 0 || axis > 2; need = 3; break;
    case MB_SENS_KINETIC: case MB_SENS_POTENTIAL: break;
    case MB_SENS_QUATERNION: bad = index < 0 || index + 4 > m->nq || axis < 0 || axis > 3; break;
    case MB_SENS_MOMENTUM: bad = axis < 0 || axis > 5; break;
    case MB_SENS_BODY_QUATERNION: bad = index < 1 || index >= m->nb || axis < 0 || axis > 3; break;
    case MB_SENS_BODY_TWIST: bad = index < 1 || index >= m->nb || axis < 0 || axis > 5; break;
    case MB_SENS_LINEAR: need = 1 + m->nv + nu; break;
    default:
        PyErr_Format(InputError, "sensors_pack: sensor %d has kind %d, not an engine sensor (1..10)", k + 1, kind);
        return -1;
    }
    if (!bad && need) bad = at < 0 || at + need > npar;
    if (bad) {
        PyErr_Format(InputError, "sensors_pack: sensor %d (kind %d, index %d, axis %d) does not fit the model",
                     k + 1, kind, index, axis);
        return -1;
    }
    return 0;
}

/* sensors_pack(h, rows (n, 4) int: kind, index, axis, offset into par or -1, par, nu, mass (nb),
 *              com (nb, 3), Ic (nb, 3, 3)) -> capsule */
static PyObject *py_sensors_pack(PyObject *self, PyObject *args) {
    PyObject *cap, *rows, *par, *mass, *com, *Ic, *out = NULL;
    int nu;
    if (!PyArg_ParseTuple(args, "OOOiOOO", &cap, &rows, &par, &nu, &mass, &com, &Ic)) return NULL;
    handle_t *h = get_handle(cap);
    if (!h) return NULL;
    mb_model *m = h->m;
    PyArrayObject *ar = NULL, *ap = NULL, *am = NULL, *ac = NULL, *ai = NULL;
    sensors_t *p = calloc(1, sizeof(sensors_t));
    if (!p) return PyErr_NoMemory();
    ar = (PyArrayObject *)PyArray_FROMANY(rows, NPY_INT, 2, 2, NPY_ARRAY_IN_ARRAY);
    if (!ar || PyArray_DIM(ar, 1) != 4) {
        PyErr_Clear();
        PyErr_SetString(InputError, "sensors_pack: rows must be an (n, 4) integer array");
        goto fail;
    }
    if (!(ap = (PyArrayObject *)PyArray_FROMANY(par, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY))) goto fail;
    int nb = m->nb, n = (int)PyArray_DIM(ar, 0);
    if (nu < 0 || !(am = as_vector(mass, nb, "mass", NULL)) || !(ac = as_vector(com, 3 * nb, "com", NULL)) ||
        !(ai = as_vector(Ic, 9 * nb, "Ic", NULL)))
        goto fail;
    const int *r = PyArray_DATA(ar);
    p->n = n;
    p->nu = nu;
    p->s = calloc((size_t)n + 1, sizeof(mb_sensor));
    p->par = copy_doubles(ap);
    p->mass = copy_doubles(am);
    p->com = copy_doubles(ac);
    p->Ic = copy_doubles(ai);
    if (!p->s || !p->par || !p->mass || !p->com || !p->Ic) { PyErr_NoMemory(); goto fail; }
    for (int k = 0; k < n; ++k) sensor_from_row(p->s + k, r + 4 * k, p->par);
    p->mp = (mb_mass_props){p->mass, p->com, p->Ic};
    for (int k = 0; k < n; ++k)
        if (check_sensor_row(m, r + 4 * k, PyArray_SIZE(ap), nu, k)) goto fail;
    Py_INCREF(cap);
    p->model = cap;
    out = PyCapsule_New(p, SENSORS_CAPSULE, sensors_free);
    if (!out) { Py_DECREF(cap); p->model = NULL; goto fail; }
    p = NULL;
fail:
    if (p) {
        free(p->s); free(p->par); free(p->mass); free(p->com); free(p->Ic);
        free(p);
    }
    Py_XDECREF(ar); Py_XDECREF(ap); Py_XDECREF(am); Py_XDECREF(ac); Py_XDECREF(ai);
    return out;
}

/* obj as a C-contiguous float64 array of n values (any values), or NULL with InputError set */
static PyArrayObject *sized_vector(PyObject *obj, npy_intp n, const char *arg) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0,
                                                         NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(InputError, "%s: cannot be read as an array of floats", arg);
        return NULL;
    }
    if (PyArray_SIZE(a) != n) {
        PyErr_Format(InputError, "%s has %zd values, expected %zd", arg, (Py_ssize_t)PyArray_SIZE(a), (Py_ssize_t)n);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* sensors_eval(packed, x, v, u) -> (n,): mb_sensors_eval at state x (nq + nv),
 * velocities v (nv) and inputs u (nu) */
static PyObject *py_sensors_eval(PyObject *self, PyObject *args) {
    PyObject *cap, *x, *v, *u, *out = NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &cap, &x, &v, &u)) return NULL;
    sensors_t *p = PyCapsule_GetPointer(cap, SENSORS_CAPSULE);
    if (!p) return NULL;
    handle_t *h = PyCapsule_GetPointer(p->model, CAPSULE);
    if (!h) return NULL;
    mb_model *m = h->m;
    npy_intp nx = m->nq + m->nv;
    PyArrayObject *ax = NULL, *av = NULL, *au = NULL;
    /* not finite is allowed: the outputs of a blown-up state are not finite, as in Python */
    if (!(ax = sized_vector(x, nx, "x")) || !(av = sized_vector(v, m->nv, "v")) ||
        !(au = sized_vector(u, p->nu, "u")))
        goto done;
    if (!(out = new_vector(p->n))) goto done;
    KERNEL(h->lock, mb_sensors_eval(m, h->d, &p->mp, p->n, p->s, D(ax), D(av), D(au), p->nu, D((PyArrayObject *)out)));
done:
    Py_XDECREF(ax); Py_XDECREF(av); Py_XDECREF(au);
    return out;
}

/* ------------------------------------------------ sensors of the dynamics (element.h) */
/* motion_sensors(h, rows (n, 4: kind, index, axis, offset into par or -1), par, x, v, u, tau, t,
 *                mass, com, Ic, registry None or elreg_parse's) -> (n,): mbn_motion_sensors_eval,
 * in the frame of the registry's frame element if any (x = [q; y; the elements' states]) */
static PyObject *py_motion_sensors(PyObject *self, PyObject *args) {
    PyObject *cap, *rows, *par, *x, *v, *u, *tau, *mass, *com, *Ic, *reg, *out = NULL;
    double t;
    if (!PyArg_ParseTuple(args, "OOOOOOOdOOOO", &cap, &rows, &par, &x, &v, &u, &tau, &t, &mass, &com, &Ic, &reg))
        return NULL;
    call_t c;
    elreg_t r;
    int has_el = 0;
    PyArrayObject *ar = NULL, *ap = NULL, *ax = NULL, *am = NULL, *ac = NULL, *ai = NULL, *a0 = NULL, *au = NULL,
                  *auu = NULL;
    mb_sensor *sens = NULL;
    double *fx = NULL;
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    handle_t *hd = get_handle(cap);
    if (!hd) goto done;
    PyObject *qs = PySequence_GetSlice(x, 0, hd->m->nq); /* q = x[:nq] */
    if (!qs) goto done;
    int perr = call_parse(&c, cap, qs, v, "v", tau, "tau", NULL);
    Py_DECREF(qs);
    if (perr) goto done;
    mb_model *m = c.h->m;
    mb_data *d = c.h->d;
    if (reg != Py_None) {
        if (elreg_parse(&r, m, reg)) goto done;
        has_el = 1;
    }
    if (!(auu = (PyArrayObject *)PyArray_FROMANY(u, NPY_DOUBLE, 0, 1, NPY_ARRAY_IN_ARRAY))) goto done;
    if (!(au = as_vector((PyObject *)auu, PyArray_SIZE(auu), "u", NULL))) goto done;
    if (!(a0 = (PyArrayObject *)PyArray_FROMANY(x, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY))) goto done;
    if (!(ax = as_vector((PyObject *)a0, PyArray_SIZE(a0), "x", NULL))) goto done;
    npy_intp nx_min = m->nq + m->nv + (has_el ? r.nes + r.nez : 0);
    if (PyArray_SIZE(ax) < nx_min) {
        PyErr_Format(InputError, "x has %zd values, expected at least %zd (nq + nv and the elements' states)",
                     (Py_ssize_t)PyArray_SIZE(ax), (Py_ssize_t)nx_min);
        goto done;
    }
    ar = (PyArrayObject *)PyArray_FROMANY(rows, NPY_INT, 2, 2, NPY_ARRAY_IN_ARRAY);
    if (!ar || PyArray_DIM(ar, 1) != 4) {
        PyErr_Clear();
        PyErr_SetString(InputError, "motion_sensors: rows must be an (n, 4) integer array");
        goto done;
    }
    ap = (PyArrayObject *)PyArray_FROMANY(par, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!ap) goto done;
    int nb = m->nb, n = (int)PyArray_DIM(ar, 0);
    if (!(am = as_vector(mass, nb, "mass", NULL)) || !(ac = as_vector(com, 3 * nb, "com", NULL)) ||
        !(ai = as_vector(Ic, 9 * nb, "Ic", NULL)))
        goto done;
    sens = calloc((size_t)n + 1, sizeof(mb_sensor));
    fx = calloc(6 * (size_t)nb + 1, sizeof(double));
    if (!sens || !fx) { PyErr_NoMemory(); goto done; }
    const int *rw = PyArray_DATA(ar);
    npy_intp np_ = PyArray_SIZE(ap);
    for (int k = 0; k < n; ++k) {
        const int *rk = rw + 4 * k;
        if (rk[3] >= np_ || rk[3] < -1) {
            PyErr_Format(InputError, "motion_sensors: sensor %d's parameters are out of range", k + 1);
            goto done;
        }
        int bad = (rk[0] == MBN_SENS_ACCELEROMETER || rk[0] == MBN_SENS_DISPLACEMENT || rk[0] == MB_SENS_POINT)
                      ? (rk[1] < 1 || rk[1] >= nb || rk[3] < 0)
                      : rk[0] == MBN_SENS_CABLE_TENSION ? (rk[1] < 0 || rk[1] >= m->ncb) : 0;
        if (bad) {
            if (rk[0] == MBN_SENS_CABLE_TENSION)
                PyErr_Format(InputError, "motion_sensors: sensor %d (kind %d) refers to cable %d that does not exist",
                             k + 1, rk[0], rk[1] + 1);
            else
                PyErr_Format(InputError, "motion_sensors: sensor %d (kind %d) refers to body %d that does not exist",
                             k + 1, rk[0], rk[1]);
            goto done;
        }
        if (rk[0] == MBN_SENS_FRAME_ACCEL && (rk[2] < 0 || rk[2] > 2)) {
            PyErr_Format(InputError, "motion_sensors: sensor %d (frame acceleration) has axis %d, not 0..2", k + 1,
                         rk[2]);
            goto done;
        }
        sensor_from_row(sens + k, rk, D(ap));
    }
    mb_mass_props mp = {D(am), D(ac), D(ai)};
    if (!(out = new_vector(n))) goto done;
    const double *xs = D(ax);
    KERNEL(c.h->lock, mbn_motion_sensors_eval(m, d, &mp, has_el ? r.nel : 0, has_el ? r.el : NULL, t, n, sens, xs,
                                              D(c.v), xs + m->nq + m->nv, D(au), (int)PyArray_SIZE(au), D(c.w),
                                              fx, D((PyArrayObject *)out)));
done:
    free(sens);
    free(fx);
    Py_XDECREF(ar); Py_XDECREF(ap); Py_XDECREF(ax); Py_XDECREF(a0); Py_XDECREF(au); Py_XDECREF(auu);
    Py_XDECREF(am); Py_XDECREF(ac); Py_XDECREF(ai);
    if (has_el) elreg_clear(&r);
    call_clear(&c);
    return out;
}

/* flex_sensors(fh, x, u, rows (n, 4) int: kind, index, axis, offset into par
 * or -1, par, mass (nb), com (nb, 3), Ic (nb, 3, 3)) -> (n,): the sensors of
 * flexsensors.h at the public state x = [q; v] (mass properties of the
 * virtual tree) */
static PyObject *py_flex_sensors(PyObject *self, PyObject *args) {
    PyObject *cap, *x, *u, *rows, *par, *mass, *com, *Ic, *out = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &cap, &x, &u, &rows, &par, &mass, &com, &Ic)) return NULL;
    flex_handle_t *h = get_flex(cap);
    if (!h) return NULL;
    mb_flex *fx = h->fx;
    int nb = fx->m->nb, nx = fx->nq + fx->nv;
    PyArrayObject *ax = NULL, *au = NULL, *ar = NULL, *ap = NULL, *am = NULL, *ac = NULL, *ai = NULL;
    mb_sensor *sens = NULL;
    if (!(am = as_vector(mass, nb, "mass", NULL)) || !(ac = as_vector(com, 3 * nb, "com", NULL)) ||
        !(ai = as_vector(Ic, 9 * nb, "Ic", NULL)))
        goto done;
    /* a non-finite state gives non-finite outputs, as the native FMU's would be */
    ax = (PyArrayObject *)PyArray_FROMANY(x, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (ax && PyArray_SIZE(ax) != nx) {
        PyErr_Format(InputError, "x has %zd values, expected %d", (Py_ssize_t)PyArray_SIZE(ax), nx);
        goto done;
    }
    au = (PyArrayObject *)PyArray_FROMANY(u, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY);
    ap = (PyArrayObject *)PyArray_FROMANY(par, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY);
    ar = (PyArrayObject *)PyArray_FROMANY(rows, NPY_INT, 2, 2, NPY_ARRAY_IN_ARRAY);
    if (!ax || !au || !ap || !ar) goto done;
    if (PyArray_DIM(ar, 1) != 4) {
        PyErr_SetString(InputError, "flex_sensors: rows must have 4 columns");
        goto done;
    }
    int n = (int)PyArray_DIM(ar, 0), npar = (int)PyArray_SIZE(ap);
    const int *R = (const int *)PyArray_DATA(ar);
    sens = calloc((size_t)n + 1, sizeof(mb_sensor));
    if (!sens) { PyErr_NoMemory(); goto done; }
    for (int k = 0; k < n; ++k) {
        const int *r = R + 4 * k;
        int need = r[0] == MB_SENS_POINT || r[0] == MB_SENS_RELATIVE ? 3 : r[0] == MB_SENS_COMBINATION ? nx : 0;
        int ok = (r[0] == MB_SENS_STATE && r[1] >= 0 && r[1] < nx) ||
                 (r[0] == MB_SENS_VELOCITY && r[1] >= 0 && r[1] < fx->nv) ||
                 (r[0] == MB_SENS_POINT && r[1] >= 1 && r[1] < nb && r[2] >= 0 && r[2] < 3) ||
                 (r[0] == MB_SENS_RELATIVE && r[1] >= 1 && r[1] < nb && r[2] >= 3 && r[2] < 3 * nb) ||
                 r[0] == MB_SENS_KINETIC || r[0] == MB_SENS_POTENTIAL || r[0] == MB_SENS_COMBINATION;
        if (!ok || (need && (r[3] < 0 || r[3] + need > npar))) {
            PyErr_Format(ModelError, "flex_sensors: sensor %d (kind %d, index %d) does not fit the system", k + 1,
                         r[0], r[1]);
            goto done;
        }
        sensor_from_row(sens + k, r, D(ap));
    }
    mb_mass_props mp = {D(am), D(ac), D(ai)};
    if (!(out = new_vector(n))) goto done;
    KERNEL(h->lock, mb_flex_sensors_eval(fx, &mp, n, sens, D(ax), D(au), (int)PyArray_SIZE(au), D((PyArrayObject *)out)));
done:
    free(sens);
    Py_XDECREF(ax); Py_XDECREF(au); Py_XDECREF(ar); Py_XDECREF(ap);
    Py_XDECREF(am); Py_XDECREF(ac); Py_XDECREF(ai);
    return out;
}

static PyMethodDef methods[] = {
    {"new_model", py_new_model, METH_VARARGS, "Pack a model into a kernel handle."},
    {"set_gravity", py_set_gravity, METH_VARARGS, "Set gravity (3,), m/s^2."},
    {"sizes", py_sizes, METH_VARARGS, "(nb, nq, nv) of a handle."},
    {"share", py_share, METH_VARARGS, "share(h) -> a handle on h's model with its own workspace (for a thread)"},
    {"rnea", py_rnea, METH_VARARGS, "rnea(h, q, v, a, fext=None, gravity=True) -> tau"},
    {"crba", py_crba, METH_VARARGS, "crba(h, q) -> M"},
    {"crba_pattern", py_crba_pattern, METH_VARARGS,
     "crba_pattern(h, q) -> H's lower pattern, row by row, each from the diagonal up the ancestors"},
    {"aba", py_aba, METH_VARARGS, "aba(h, q, v, tau, fext=None, gravity=True) -> a"},
    {"forward_dynamics", py_forward_dynamics, METH_VARARGS,
     "forward_dynamics(h, q, v, tau, fext=None, gravity=True, route=-1) -> a"},
    {"sparsity", py_sparsity, METH_VARARGS, "sparsity(h) -> (lambda, route)"},
    {"sparse_factor", py_sparse_factor, METH_VARARGS, "sparse_factor(H, lambda, unit=True) -> LTDL or LTL factor"},
    {"sparse_solve", py_sparse_solve, METH_VARARGS, "sparse_solve(F, lambda, b, unit=True) -> H^-1 b"},
    {"minv", py_minv, METH_VARARGS, "minv(h, q, b) -> M^-1 b"},
    {"momentum", py_momentum, METH_VARARGS, "momentum(h, q, v) -> p = M v"},
    {"sweep", py_sweep, METH_VARARGS, "sweep(h, q, p, tau, fext=None) -> (qdot, pdot, v)"},
    {"kinematics", py_kinematics, METH_VARARGS, "kinematics(h, q, v=None) -> (R, p, v)"},
    {"body_accelerations", py_body_accelerations, METH_VARARGS, "body accelerations (nb,6)"},
    {"point_accelerations", py_point_accelerations, METH_VARARGS,
     "point_accelerations(h, q, v, a, bodies, points) -> (n, 3) world, gravity excluded"},
    {"subspaces", py_subspaces, METH_VARARGS, "subspaces(h, q, v) -> (S, Sring)"},
    {"qdot", py_qdot, METH_VARARGS, "qdot(h, q, v) -> dq/dt"},
    {"integrate", py_integrate, METH_VARARGS, "integrate(h, q, v, dt) -> q (+) v dt"},
    {"normalize", py_normalize, METH_VARARGS, "normalize(h, q) -> q with unit quaternions"},
    {"passive_forces", py_passive_forces, METH_VARARGS,
     "passive_forces(h, q, v, tau=None) -> (tau, fext) the force elements add to the commanded tau"},
    {"set_drives", py_set_drives, METH_VARARGS, "set_drives(h, n, drives (n, DR_N)): joint drives (drives.h)"},
    {"body_frame", py_body_frame, METH_VARARGS,
     "body_frame(h, q, v, body) -> (quaternion of R_WB (w first), world twist [w; v_origin])"},
    {"passive_energy", py_passive_energy, METH_VARARGS,
     "passive_energy(h, q) -> elastic energy of the force elements, J"},
    {"elements", py_elements, METH_VARARGS,
     "elements(h, q, v) -> (contact forces, contact points, penetrations, cable tensions, lengths)"},
    {"rhs", py_rhs, METH_VARARGS, "rhs(h, q, v, tau, fext=None) -> (qdot, vdot)"},
    {"rk4", py_rk4, METH_VARARGS, "rk4(h, q, v, tau, dt, n, fext=None) -> (q, v)"},
    {"rk4_canonical", py_rk4_canonical, METH_VARARGS,
     "rk4_canonical(h, q, p, tau, dt, n, fext=None) -> (q, p)"},
    {"momenta", py_momenta, METH_VARARGS,
     "momenta(h, q, v, mass, com, Ic) -> [H about the world origin; L], world axes (sensors.h)"},
    {"element_class_counts", py_element_class_counts, METH_VARARGS,
     "element_class_counts(address) -> (npar, nstate, ndisc, nout, njoint, nevent) of an element class"},
    {"element_energy", py_element_energy, METH_VARARGS,
     "element_energy(h, q, v, s, registry) -> elastic energy of the plug-in elements, J (element.h)"},
    {"sensors_pack", py_sensors_pack, METH_VARARGS,
     "sensors_pack(h, rows, par, nu, mass, com, Ic) -> packed engine sensors (sensors.h)"},
    {"sensors_eval", py_sensors_eval, METH_VARARGS,
     "sensors_eval(packed, x, v, u) -> outputs: mb_sensors_eval, the native FMU's sensor code (sensors.h)"},
    {"motion_sensors", py_motion_sensors, METH_VARARGS,
     "motion_sensors(h, rows, par, x, v, u, tau, t, mass, com, Ic, registry) -> outputs: accelerometers, frame (element.h)"},
    {"adapt", py_adapt, METH_VARARGS,
     "adapt(h, q, y, tau, dt, options, fext=None, canonical=False) -> (q, y, stats)"},
    {"element_adapt", py_element_adapt, METH_VARARGS,
     "element_adapt(h, q, y, tau, t, dt, options, registry, u=None) -> (q, y = [v; element states], stats) (element.h)"},
    {"element_rhs", py_element_rhs, METH_VARARGS,
     "element_rhs(h, q, y, tau, t, registry, u=None) -> (qdot, ydot) (element.h)"},
    {"element_outputs", py_element_outputs, METH_VARARGS,
     "element_outputs(h, q, v, s, t, registry, which) -> outputs of the elements (element.h)"},
    {"adapt_callback", py_adapt_callback, METH_VARARGS,
     "adapt_callback(f, normalize, t0, x, dt, options) -> (x, stats)"},
    {"flex_adapt", py_flex_adapt, METH_VARARGS,
     "flex_adapt(fh, q, v, tau, dt, options, fext=None) -> (q, v, stats)"},
    {"flex_sensors", py_flex_sensors, METH_VARARGS,
     "flex_sensors(fh, x, u, rows, par, mass, com, Ic) -> outputs (flexsensors.h)"},
    {"new_flex", py_new_flex, METH_VARARGS, "Pack a flexible system (see FlexibleSystem)."},
    {"flex_rhs", py_flex_rhs, METH_VARARGS,
     "flex_rhs(fh, q, v, tau, fext=None, pidx=None, pacc=None) -> (qdot, vdot)"},
    {"flex_rk4", py_flex_rk4, METH_VARARGS,
     "flex_rk4(fh, q, v, tau, dt, n, fext=None) -> (q, v)"},
    {"native_tangents", mb_py_native_tangents, METH_VARARGS,
     "native_tangents(header, arrays, d, x, u, t, out) -> 0, error code or why not exact (tangent_binding.h)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_kernels",
                                    "Compiled dynamics kernels of mbfmu.", -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) {
    import_array();
    PyObject *errors = PyImport_ImportModule("mbfmu.errors");
    if (!errors) return NULL;
    InputError = PyObject_GetAttrString(errors, "InputError");
    SimulationError = PyObject_GetAttrString(errors, "SimulationError");
    ModelError = PyObject_GetAttrString(errors, "ModelError");
    Py_DECREF(errors);
    if (!InputError || !SimulationError || !ModelError) return NULL;
    return PyModule_Create(&moddef);
}
