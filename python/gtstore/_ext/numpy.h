/* NumPy, reached at run time: the numpy module and its C API (numpy_api.c). */
#ifndef GTSTORE_EXT_NUMPY_H
#define GTSTORE_EXT_NUMPY_H

#include "ext.h"

/* numpy.<name>, imported on first use and cached (a borrowed reference). */
PyObject *gtpy_numpy(const char *name);
PyObject *gtpy_numpy_asarray(void);

/* NumPy's C API bound at run time (numpy_api.c): whether it is usable, and
 * an ndarray over `data` whose base becomes `base` (new reference). */
bool gtpy_numpy_capi(void);
PyObject *gtpy_numpy_capi_array(gts_dtype dtype, int ndim, const Py_ssize_t *shape,
                                const Py_ssize_t *strides, void *data, bool readonly,
                                PyObject *base);

#endif
