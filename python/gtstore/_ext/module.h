/* Shared declarations of the _gtstore extension: converting Python objects
 * to libgtstore's C types and back. All layout arithmetic is libgtstore's. */
#ifndef GTSTORE_EXT_MODULE_H
#define GTSTORE_EXT_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gtstore/gtstore.h"

/* ---- module state (module.c) ------------------------------------------ */

extern PyObject *gtpy_UnknownPresetError;

/* Raises the Python exception for a libgtstore error (ValueError for invalid
 * values, TypeError for types, OverflowError for values out of a dtype's
 * range, MemoryError, UnknownPresetError) and returns -1 / NULL. If a Python
 * exception is already set (a Python callback failed), it is kept. */
int gtpy_raise(const gts_error *err);
/* The same, with the message prefixed by "param: " unless it names it. */
int gtpy_raise_param(const char *param, const gts_error *err);
PyObject *gtpy_raise_null(const gts_error *err);

/* numpy.<name>, imported on first use and cached (a borrowed reference). */
PyObject *gtpy_numpy(const char *name);
PyObject *gtpy_numpy_asarray(void);

/* NumPy's C API bound at run time (numpy_api.c): whether it is usable, and
 * an ndarray over `data` whose base becomes `base` (new reference). */
bool gtpy_numpy_capi(void);
PyObject *gtpy_numpy_capi_array(gts_dtype dtype, int ndim, const Py_ssize_t *shape,
                                const Py_ssize_t *strides, void *data, bool readonly,
                                PyObject *base);

/* ---- conversions (convert.c) ------------------------------------------ */

/* An integer (int or an object with __index__; not bool). */
int gtpy_int(PyObject *obj, const char *param, int64_t *out);

/* An int or a sequence of ints, each >= 0. */
int gtpy_shape(PyObject *obj, const char *param, int *ndim, int64_t *shape);

/* A sequence of `ndim` ints (any sign; callers check ranges). */
int gtpy_int_tuple(PyObject *obj, const char *param, int max_ndim, int *ndim, int64_t *values);

/* A string of one-character labels ("IJK0") or a sequence of labels ("I",
 * "12", or objects with __gt_axis_name__). */
int gtpy_dims(PyObject *obj, const char *param, int *ndim, gts_dim *dims);
PyObject *gtpy_dims_to_tuple(int ndim, const gts_dim *dims);

/* A dtype-like accepted by numpy.dtype. A subarray dtype such as
 * ("f8", (3,)) yields its base dtype and the trailing shape. */
typedef struct gtpy_dtype {
    gts_dtype base;
    int nsub;
    int64_t sub_shape[GTS_MAX_NDIM];
} gtpy_dtype;
int gtpy_dtype_parse(PyObject *obj, gtpy_dtype *out);
/* The numpy.dtype object for a dtype (new reference). */
PyObject *gtpy_dtype_object(gts_dtype dtype);

/* A Python number (bool, int, float, complex or a NumPy scalar). */
int gtpy_scalar(PyObject *obj, const char *param, gts_scalar *out);

/* layout=: a permutation (tuple/list of ints), an axis string such as "KJI",
 * or a callable taking the dims tuple and returning either. `dims` includes
 * the `nsub` trailing dims of a subarray dtype; a permutation may leave them
 * out, and they then go outermost, as data dims do. */
int gtpy_layout(PyObject *obj, int ndim, const gts_dim *dims, int nsub, int *layout);

/* ---- arrays over libgtstore memory (hostarray.c) ---------------------- */

extern PyTypeObject gtpy_BufferView_Type;

/* An ndarray viewing `geometry` at byte `offset` of `buffer` (the view
 * takes its own reference to the buffer). */
PyObject *gtpy_ndarray(gts_buffer *buffer, int64_t offset, const gts_geometry *geometry,
                       gts_dtype dtype);

/* ---- Python API functions (arrays.c, presets.c, memory.c) ------------- */

extern PyMethodDef gtpy_arrays_methods[];
extern PyMethodDef gtpy_presets_methods[];
extern PyMethodDef gtpy_memory_methods[];
extern PyTypeObject gtpy_Plan_Type;

/* Fast argument parsing for METH_FASTCALL | METH_KEYWORDS functions.
 * `names` lists every parameter, the first `npositional` may be passed by
 * position, the first `nrequired` are required. Missing ones are NULL. */
typedef struct gtpy_signature {
    const char *function;
    const char *const *names;
    int nnames;
    int npositional;
    int nrequired;
    PyObject **interned; /* filled on first use */
} gtpy_signature;
int gtpy_parse_args(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values);

#endif
