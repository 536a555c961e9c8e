/* NumPy, reached at run time: the numpy module and its C API (numpy_api.c). */
#ifndef GTSTORE_EXT_NUMPY_H
#define GTSTORE_EXT_NUMPY_H

#include "ext.h"
#include "array_interface.h"

/* numpy.<name>, imported on first use and cached (a borrowed reference). */
PyObject *gtpy_numpy(const char *name);
PyObject *gtpy_numpy_asarray(void);

/* NumPy's C API bound at run time (numpy_api.c): whether it is usable, and
 * an ndarray over `data` whose base becomes `base` (new reference). */
bool gtpy_numpy_capi(void);
/* GTSTORE_NUMPY_CAPI checked: unset, empty, "1" or "0", else GTS_EINVAL
 * naming it (at import, as libgtstore's variables are checked). */
int gtpy_numpy_capi_check_environment(gts_error *err);
PyObject *gtpy_numpy_capi_array(gts_dtype dtype, int ndim, const Py_ssize_t *shape,
                                const Py_ssize_t *strides, void *data, bool readonly,
                                PyObject *base);
/* Whether `obj` is an ndarray, not a subclass. */
bool gtpy_numpy_is_ndarray(PyObject *obj);
/* An ndarray (not a subclass) of a dtype storages hold (NumPy's own
 * descriptor of it: the machine's byte order, no fields) and of at most
 * `max_ndim` dimensions, read from NumPy's array
 * struct through the C API: its memory, shape, strides, dtype and
 * read-only flag, each as its buffer export gives them (a contiguous
 * array's strides recomputed in its order; read-only also for a view
 * NumPy warns about writing), without the buffer protocol (whose export
 * builds a format string and caches its info per array: most of the cost of
 * reading an array). False for any other object, or without the C API;
 * nothing is raised. */
bool gtpy_numpy_read(PyObject *obj, int max_ndim, gtpy_array_info *out);

#endif
