/* A stand-in python3.dll for testing the FMU's win64 loader shim under wine.
 *
 * No Windows CPython can be installed on the Linux test machine, so this DLL
 * exports the few stable-ABI functions the shim calls and behaves like a
 * Python in which mbfmu is not installed: PyImport_ImportModule fails with
 * "No module named '<name>'". sys.executable is the program name the shim
 * set. It lets the test check the shim's part (finding python3.dll through
 * MBFMU_PYTHON, PATH and pyvenv.cfg, binding the symbols, starting the
 * interpreter, the message) -- not pythonfmu's.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -o python3.dll fake_python3.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define API __declspec(dllexport)

typedef struct { char text[4096]; } Obj;   /* every "object" is its str() */

static int initialized = 0;
static Obj program = {"(program name not set)"};
static Obj error = {""};
static int error_set = 0;

API int Py_IsInitialized(void) { return initialized; }
API void Py_SetProgramName(const wchar_t *name)
{
    wcstombs(program.text, name, sizeof program.text - 1);
}
API void Py_InitializeEx(int sigs) { (void)sigs; initialized = 1; }
API void *PyEval_SaveThread(void) { return NULL; }
API int PyGILState_Ensure(void) { return 1; }
API void PyGILState_Release(int s) { (void)s; }
API Obj *PySys_GetObject(const char *name) { return strcmp(name, "executable") == 0 ? &program : NULL; }
API Obj *PyImport_ImportModule(const char *name)
{
    snprintf(error.text, sizeof error.text, "No module named '%s'", name);
    error_set = 1;
    return NULL;
}
API Obj *PyObject_GetAttrString(Obj *o, const char *name) { (void)o; (void)name; return NULL; }
API void PyErr_Fetch(Obj **type, Obj **value, Obj **tb)
{
    *type = NULL;
    *value = error_set ? &error : NULL;
    *tb = NULL;
    error_set = 0;
}
API Obj *PyObject_Str(Obj *o) { return o; }
API const char *PyUnicode_AsUTF8AndSize(Obj *o, ptrdiff_t *n)
{
    if (n) *n = (ptrdiff_t)strlen(o->text);
    return o->text;
}
API void Py_DecRef(Obj *o) { (void)o; }
