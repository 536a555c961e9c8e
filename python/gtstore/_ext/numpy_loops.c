/* NumPy's loop bugs routed around (docs/storage.md, "NumPy's own loops").
 *
 * Every ufunc call of a computation goes through gtpy_numpy_loop_call. The
 * Python module gtstore._numpy_loops probes a ufunc the first time it is
 * called here (is any of its loops wrong on strided operands that it
 * computes right on contiguous ones?) and, for one that is, computes the
 * call with every operand dense. That module is the one place that decides
 * which calls meet a bug and which layout avoids it; this file only caches
 * its answer per function, so that other calls pay one dict lookup. */
#include "ufunc.h"

static PyObject *answers; /* {function: True/False}, filled as functions are first called */
static PyObject *loops;   /* the module gtstore._numpy_loops */

/* Whether the probe found `function` broken (1), not (0), or an error (-1). */
static int broken(PyObject *function)
{
    if (!answers && !(answers = PyDict_New()))
        return -1;
    PyObject *known = PyDict_GetItemWithError(answers, function);
    if (known)
        return known == Py_True;
    if (PyErr_Occurred())
        return -1;
    if (!loops && !(loops = PyImport_ImportModule("gtstore._numpy_loops")))
        return -1;
    PyObject *answer = PyObject_CallMethod(loops, "broken", "O", function);
    int truth = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(answer);
    if (truth < 0 || PyDict_SetItem(answers, function, truth ? Py_True : Py_False) < 0)
        return -1;
    return truth;
}

/* The call's positional arguments as a tuple and its keywords as a dict
 * (new references in *args and *kwargs). */
static int unpack(PyObject *const *stack, size_t nargs, PyObject *names, PyObject **args,
                  PyObject **kwargs)
{
    *args = PyTuple_New((Py_ssize_t)nargs);
    *kwargs = *args ? PyDict_New() : NULL;
    if (!*kwargs) {
        Py_CLEAR(*args);
        return -1;
    }
    for (size_t i = 0; i < nargs; ++i)
        PyTuple_SET_ITEM(*args, (Py_ssize_t)i, Py_NewRef(stack[i]));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i)
        if (PyDict_SetItem(*kwargs, PyTuple_GET_ITEM(names, i), stack[nargs + (size_t)i]) < 0) {
            Py_CLEAR(*args);
            Py_CLEAR(*kwargs);
            return -1;
        }
    return 0;
}

PyObject *gtpy_numpy_loop_call(PyObject *function, PyObject *const *stack, size_t nargs,
                               PyObject *names)
{
    int route = broken(function);
    if (route < 0)
        return NULL;
    if (!route) /* (a ufunc call here always has out=) */
        return PyObject_Vectorcall(function, stack, nargs, names);
    PyObject *args, *kwargs;
    if (unpack(stack, nargs, names, &args, &kwargs) < 0)
        return NULL;
    PyObject *result = PyObject_CallMethod(loops, "call", "OOO", function, args, kwargs);
    Py_DECREF(args);
    Py_DECREF(kwargs);
    return result;
}
