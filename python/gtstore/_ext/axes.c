/* Axis arguments: integers or dim labels into axis numbers (axes.h). */
#include "axes.h"
#include "convert.h"
#include "numpy.h"

/* NumPy's AxisError (a ValueError and an IndexError), with a message. */
static int axis_error(const char *format, ...)
{
    PyObject *type = PyObject_GetAttrString(gtpy_numpy("exceptions"), "AxisError");
    if (!type)
        return -1;
    va_list args;
    va_start(args, format);
    PyObject *message = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (message) {
        PyErr_SetObject(type, message);
        Py_DECREF(message);
    }
    Py_DECREF(type);
    return -1;
}

/* " in (0, 'X')" after an axis that came from a sequence, else "". */
static PyObject *context(PyObject *whole)
{
    return whole ? PyUnicode_FromFormat(" in %.200R", whole) : PyUnicode_FromString("");
}

static int label_axis(PyObject *obj, const gts_storage *g, const char *param, PyObject *whole,
                      int *axis)
{
    const char *label = gtpy_text(obj, param);
    gts_error err;
    if (!label)
        return -1;
    if (gts_dims_axis(g->ndim, g->dims, label, axis, &err) == GTS_OK)
        return 0;
    PyObject *where = context(whole);
    if (where)
        PyErr_Format(PyExc_ValueError, "%s: %s%U", param, err.message, where);
    Py_XDECREF(where);
    return -1;
}

int gtpy_axis(PyObject *obj, const gts_storage *g, const char *param, PyObject *whole, int *axis)
{
    if (PyUnicode_Check(obj))
        return label_axis(obj, g, param, whole, axis);
    if (PyBool_Check(obj) || !gtpy_is_integer(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an integer or a dim label, got %.200R", param,
                     obj);
        return -1;
    }
    int64_t a;
    if (gtpy_int(obj, param, &a) < 0)
        return -1;
    int64_t normal = a < 0 ? a + g->ndim : a;
    if (normal < 0 || normal >= g->ndim) {
        PyObject *where = context(whole);
        if (where)
            axis_error("%s: axis %lld%U is out of bounds for a storage of %d dimensions", param,
                       (long long)a, where, g->ndim);
        Py_XDECREF(where);
        return -1;
    }
    *axis = (int)normal;
    return 0;
}

int gtpy_axes(PyObject *obj, const gts_storage *g, const char *param, int *n, int *axes)
{
    if (PyUnicode_Check(obj) || !(PyTuple_Check(obj) || PyList_Check(obj))) {
        *n = 1;
        return gtpy_axis(obj, g, param, NULL, axes);
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(obj);
    if (count > g->ndim)
        return axis_error("%s: %.200R has %zd axes for a storage of %d dimensions", param, obj,
                          count, g->ndim);
    bool seen[GTS_MAX_NDIM] = {false};
    for (Py_ssize_t i = 0; i < count; ++i) {
        if (gtpy_axis(PySequence_Fast_GET_ITEM(obj, i), g, param, obj, &axes[i]) < 0)
            return -1;
        if (seen[axes[i]])
            return axis_error("%s: %.200R repeats an axis", param, obj);
        seen[axes[i]] = true;
    }
    *n = (int)count;
    return 0;
}

PyObject *gtpy_axis_argument(PyObject *obj, const gts_storage *g, const char *param)
{
    int n, axes[GTS_MAX_NDIM];
    if (obj == Py_None)
        return Py_NewRef(obj);
    if (!PyTuple_Check(obj)) /* NumPy takes one axis or a tuple */
        return gtpy_axis(obj, g, param, NULL, axes) < 0 ? NULL : PyLong_FromLong(axes[0]);
    if (gtpy_axes(obj, g, param, &n, axes) < 0)
        return NULL;
    PyObject *result = PyTuple_New(n);
    for (int i = 0; result && i < n; ++i) {
        PyObject *item = PyLong_FromLong(axes[i]);
        if (!item)
            Py_CLEAR(result);
        else
            PyTuple_SET_ITEM(result, i, item);
    }
    return result;
}
