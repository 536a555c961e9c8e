/* Python exceptions for libgtstore's errors: the one place that maps an
 * error code to an exception type, and the extension's own exceptions
 * (created by the module's initialisation). */
#include "errors.h"

#include <stdio.h>
#include <string.h>

PyObject *gtpy_UnknownPresetError;
PyObject *gtpy_NoSuchBufferError;

int gtpy_raise(const gts_error *err)
{
    return gtpy_raise_param(NULL, err);
}

int gtpy_raise_param(const char *param, const gts_error *err)
{
    if (PyErr_Occurred())
        return -1;
    PyObject *type;
    switch (err->code) {
    case GTS_ETYPE: type = PyExc_TypeError; break;
    case GTS_ENOTFOUND: type = gtpy_UnknownPresetError; break;
    case GTS_ENOMEM: type = PyExc_MemoryError; break;
    case GTS_ERANGE: type = PyExc_OverflowError; break;
    case GTS_EBOUNDS: type = PyExc_IndexError; break;
    case GTS_ENOTSUP: type = PyExc_NotImplementedError; break;
    default: type = PyExc_ValueError; break; /* EINVAL, EOVERFLOW, EEXIST, EREADONLY */
    }
    size_t length = param ? strlen(param) : 0;
    bool named = !param || (strncmp(err->message, param, length) == 0 && err->message[length] == ':');
    if (named)
        PyErr_SetString(type, err->message);
    else
        PyErr_Format(type, "%s: %s", param, err->message);
    return -1;
}

int gtpy_raise_renamed(const char *param, const char *name, const gts_error *err)
{
    size_t length = strlen(name);
    if (strncmp(err->message, name, length) != 0 || err->message[length] != ':')
        return gtpy_raise_param(param, err);
    gts_error renamed = {.code = err->code};
    int written = snprintf(renamed.message, sizeof renamed.message, "%s%s", param,
                           err->message + length);
    (void)written; /* a message cut short still names the parameter */
    return gtpy_raise_param(param, &renamed);
}

PyObject *gtpy_raise_null(const gts_error *err)
{
    gtpy_raise(err);
    return NULL;
}

int gtpy_prefix_error(const char *name)
{
    PyObject *error = gtpy_error_take();
    PyObject *text = error ? PyObject_Str(error) : NULL;
    /* a warning turned into an error names what it is about already */
    if (text && PyErr_GivenExceptionMatches(error, PyExc_Exception) &&
        !PyErr_GivenExceptionMatches(error, PyExc_MemoryError) &&
        !PyErr_GivenExceptionMatches(error, PyExc_Warning)) {
        PyErr_Format((PyObject *)Py_TYPE(error), "%s: %U", name, text);
        PyObject *prefixed = gtpy_error_take();
        if (prefixed)
            PyException_SetCause(prefixed, error); /* (steals `error`) */
        else
            Py_DECREF(error);
        gtpy_error_put(prefixed);
    } else {
        gtpy_error_put(error);
    }
    Py_XDECREF(text);
    return -1;
}
