/* Python exceptions for libgtstore errors (errors.c). */
#ifndef GTSTORE_EXT_ERRORS_H
#define GTSTORE_EXT_ERRORS_H

#include "ext.h"

extern PyObject *gtpy_UnknownPresetError;
extern PyObject *gtpy_NoSuchBufferError;

/* Raises the Python exception for a libgtstore error (ValueError for invalid
 * values, TypeError for types, OverflowError for values out of a dtype's
 * range, MemoryError, UnknownPresetError) and returns -1 / NULL. If a Python
 * exception is already set (a Python callback failed), it is kept. */
int gtpy_raise(const gts_error *err);
/* The same, with the message prefixed by "param: " unless it names it. */
int gtpy_raise_param(const char *param, const gts_error *err);
/* The same for a message that names the library's parameter `name`
 * ("layout: ..."), raised naming `param` in its place: the alias the caller
 * used ("layout_map: ..."), named once. */
int gtpy_raise_renamed(const char *param, const char *name, const gts_error *err);
PyObject *gtpy_raise_null(const gts_error *err);


/* The pending exception taken (NULL if none) and put back: PyErr_Fetch and
 * PyErr_Restore are deprecated from Python 3.12. */
static inline PyObject *gtpy_error_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value && traceback)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

static inline void gtpy_error_put(PyObject *error)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(error);
#else
    if (error)
        PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(error)), error,
                      PyException_GetTraceback(error));
#endif
}

/* Prefixes the pending exception's message with "name: " (a stencil's
 * field), for the shared converters' errors that name only their
 * parameter: an exception of the same type, with the original as its
 * __cause__; -1. */
int gtpy_prefix_error(const char *name);

#endif
