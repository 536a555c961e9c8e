/* Computing with storages (ufunc.c): NEP 13's __array_ufunc__, and the
 * reductions of the Storage methods (sum, mean, ...). */
#ifndef GTSTORE_EXT_UFUNC_H
#define GTSTORE_EXT_UFUNC_H

#include "ext.h"

/* Storage.__array_ufunc__(ufunc, method, *inputs, **kwargs). */
PyObject *gtpy_storage_array_ufunc(PyObject *self, PyObject *args, PyObject *kwargs);
/* Its "__call__": ufunc(*inputs, **kwargs) (kwargs may be NULL), for
 * callers that know no input or output defers to another participant of
 * NEP 13 (Python's operators on storages and numbers: storage_compute.c). */
PyObject *gtpy_ufunc_call(PyObject *ufunc, PyObject *inputs, PyObject *kwargs);

/* storage.<name>(*args, **kwargs) for a reduction NumPy names `name` (sum,
 * prod, mean, std, var, min, max, any, all, argmin, argmax): NumPy's
 * parameters and result, as a storage of the remaining dims where the
 * result is a field. */
PyObject *gtpy_storage_reduction(PyObject *self, const char *name, PyObject *args,
                                 PyObject *kwargs);

/* target[...] = value, a storage, aligned by dims (GDP-3's first draft: as
 * np.positive(value, out=target), with NumPy's assignment casting), on the
 * device GDP-3's first draft chooses. */
int gtpy_storage_assign_by_dims(PyObject *target, PyObject *value);

/* function(*args, **kwargs) as a vectorcall (`stack`: the `nargs`
 * positional arguments, then the values of the keywords `names` names) for
 * one ufunc call whose operands (the positional ones and out=, a tuple) are
 * arrays over the storages' memory, or around a bug of NumPy's loops that
 * the call would meet (numpy_loops.c). */
PyObject *gtpy_numpy_loop_call(PyObject *function, PyObject *const *stack, size_t nargs,
                               PyObject *names);

#endif
