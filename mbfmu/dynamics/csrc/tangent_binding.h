/*
 * mbfmu.dynamics._kernels.native_tangents (tangent_binding.c): the native
 * runtime's exact directional derivatives (fmu/native/csrc/dirder.c) of a
 * packed description, for mbfmu.dynamics.tangents.
 *
 * native_tangents(header, arrays, d, x, u, t, out) fills out ((nx + ny) x
 * (nx + nu), row-major) with [A B; C D] = d[dx/dt; y] / d[x; u] and returns
 * 0, the runtime's error code (a singular articulated inertia), or a str:
 * why the plant has no exact tangents (out untouched).
 */
#ifndef MBFMU_TANGENT_BINDING_H
#define MBFMU_TANGENT_BINDING_H

#include <Python.h>

PyObject *mb_py_native_tangents(PyObject *self, PyObject *args);

#endif
