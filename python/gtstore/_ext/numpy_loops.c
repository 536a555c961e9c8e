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

PyObject *gtpy_numpy_loop_call(PyObject *function, PyObject *args, PyObject *kwargs)
{
    int route = broken(function);
    if (route < 0)
        return NULL;
    if (!route || !kwargs) /* (a ufunc call here always has out=) */
        return PyObject_Call(function, args, kwargs);
    return PyObject_CallMethod(loops, "call", "OOO", function, args, kwargs);
}
