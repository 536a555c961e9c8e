/* The declarative argument parser of METH_FASTCALL | METH_KEYWORDS
 * functions and methods (gtpy_signature in module.h): positional and
 * keyword arguments matched to a list of names, with the messages CPython
 * gives for its own functions. */
#include "args.h"

static int intern_names(gtpy_signature *sig)
{
    if (sig->interned)
        return 0;
    PyObject **interned = PyMem_Calloc((size_t)sig->nnames, sizeof *interned);
    if (!interned)
        return PyErr_NoMemory(), -1;
    for (int i = 0; i < sig->nnames; ++i) {
        interned[i] = PyUnicode_InternFromString(sig->names[i]);
        if (!interned[i])
            return -1; /* the strings made so far live as long as the module */
    }
    sig->interned = interned;
    return 0;
}

static int keyword_index(const gtpy_signature *sig, PyObject *key)
{
    for (int i = sig->nposonly; i < sig->nnames; ++i)
        if (sig->interned[i] == key)
            return i;
    for (int i = sig->nposonly; i < sig->nnames; ++i) /* not interned: compare text */
        if (PyUnicode_Compare(sig->interned[i], key) == 0)
            return i;
    return -1;
}

int gtpy_parse_args(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values)
{
    if (intern_names(sig) < 0)
        return -1;
    if (nargs > sig->npositional) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)",
                     sig->function, sig->npositional, nargs);
        return -1;
    }
    for (int i = 0; i < sig->nnames; ++i)
        values[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; ++k) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int i = keyword_index(sig, key);
        if (i < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         sig->function, key);
            return -1;
        }
        if (values[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                         sig->function, sig->names[i]);
            return -1;
        }
        values[i] = args[nargs + k];
    }
    for (int i = 0; i < sig->nrequired; ++i) {
        if (!values[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", sig->function,
                         sig->names[i]);
            return -1;
        }
    }
    return 0;
}
