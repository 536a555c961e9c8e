/* The ndarray methods of storage_array_api.c, and their entries in the
 * Storage type's method table (storage.c). */
#ifndef GTSTORE_EXT_STORAGE_ARRAY_API_H
#define GTSTORE_EXT_STORAGE_ARRAY_API_H

#include "ext.h"

PyObject *gtpy_storage_round(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_clip(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_cumsum(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_cumprod(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_argsort(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_ravel(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_flatten(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_tofile(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gtpy_storage_squeeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames);
PyObject *gtpy_storage_sort(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);
PyObject *gtpy_storage_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);

#define GTPY_ARRAY_API_VARARGS(name, signature, doc)                                       \
    {#name, (PyCFunction)(void (*)(void))gtpy_storage_##name, METH_VARARGS | METH_KEYWORDS, \
     #name signature "\n--\n\n" doc}
#define GTPY_ARRAY_API_FASTCALL(name, signature, doc)                                      \
    {#name, (PyCFunction)(void (*)(void))gtpy_storage_##name, METH_FASTCALL | METH_KEYWORDS, \
     #name signature "\n--\n\n" doc}

/* The entries, for the method table of the Storage type. */
#define GTPY_STORAGE_ARRAY_API_METHODS                                                          \
    GTPY_ARRAY_API_VARARGS(round, "($self, /, decimals=0, out=None)",                           \
                           "The values rounded to `decimals` decimals, as numpy.round: a new "  \
                           "storage like this one (dims, halo, layout, device), or out."),      \
    GTPY_ARRAY_API_VARARGS(clip, "($self, /, min=None, max=None, out=None, **kwargs)",          \
                           "The values limited to [min, max], as ndarray.clip: NumPy's ufuncs " \
                           "on the storage, so bounds that are storages broadcast by dims and " \
                           "the result is a storage (or out)."),                                \
    GTPY_ARRAY_API_FASTCALL(squeeze, "($self, /, axis=None)",                                   \
                            "A view without the dims of extent 1 (axis: only those, given as "  \
                            "integers or labels; each must have extent 1)."),                  \
    GTPY_ARRAY_API_VARARGS(ravel, "($self, /, order='C')",                                      \
                           "The values as a 1-d numpy.ndarray (no dims follow), as "            \
                           "ndarray.ravel: a view of the host memory where NumPy's is one, "    \
                           "else a copy (always a copy from a GPUStorage)."),                   \
    GTPY_ARRAY_API_VARARGS(flatten, "($self, /, order='C')",                                    \
                           "A copy of the values as a 1-d numpy.ndarray, as ndarray.flatten."), \
    GTPY_ARRAY_API_VARARGS(cumsum, "($self, /, axis=None, dtype=None, out=None)",               \
                           "The cumulative sum along axis (an integer or a label): a storage "  \
                           "of the same dims, or out; along no axis (None) NumPy's 1-d array "  \
                           "of the values in C order."),                                        \
    GTPY_ARRAY_API_VARARGS(cumprod, "($self, /, axis=None, dtype=None, out=None)",              \
                           "The cumulative product, as cumsum()."),                             \
    GTPY_ARRAY_API_FASTCALL(sort, "($self, /, axis=-1, kind=None, order=None, *, stable=None)", \
                            "Sorts the values along axis (an integer or a label) in place, as " \
                            "ndarray.sort; returns None."),                                     \
    GTPY_ARRAY_API_VARARGS(argsort,                                                             \
                           "($self, /, axis=-1, kind=None, order=None, *, stable=None)",        \
                           "The indices that sort along axis (an integer or a label): a "       \
                           "storage of integers of the same dims; along no axis (None) "       \
                           "NumPy's 1-d array for the values in C order."),                     \
    GTPY_ARRAY_API_FASTCALL(view, "($self, /, dtype=None, type=None)",                          \
                            "A storage over the same memory, read as another dtype if given "   \
                            "(of another itemsize, NumPy's rule: the last dim, contiguous, "    \
                            "regrouped with its halo); with an ndarray type "                  \
                            "(view(np.ndarray)), NumPy's view of the host memory."),            \
    GTPY_ARRAY_API_VARARGS(tofile, "($self, fid, /, sep='', format='%s')",                     \
                           "Writes the values (halo included) in C order to a file, as "       \
                           "ndarray.tofile.")

#endif
