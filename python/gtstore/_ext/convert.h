/* Conversions of Python objects to libgtstore's C types and back (convert.c). */
#ifndef GTSTORE_EXT_CONVERT_H
#define GTSTORE_EXT_CONVERT_H

#include "ext.h"

/* The UTF-8 text of a str (the caller checked the type). A str holding a
 * NUL character is refused with a ValueError naming `param`: C would read
 * it as its end, and "IJ\0K" would silently mean "IJ". */
const char *gtpy_text(PyObject *str, const char *param);

/* The attribute `name` of `obj` (a new reference), or NULL without an
 * exception where it has none or reading it fails: for the optional
 * protocol attributes (__gt_dims__, __gt_axis_name__). It does not build
 * the AttributeError a plain getattr would (a microsecond on an ndarray).
 * `interned` caches the name. */
PyObject *gtpy_optional_attr(PyObject *obj, const char *name, PyObject **interned);
/* The same for a protocol attribute whose getter is user code (a class's
 * __gt_data_interface__): 1 with the value, 0 where it has none (an
 * AttributeError), -1 with the getter's exception as it raised it. */
int gtpy_lookup_attr(PyObject *obj, const char *name, PyObject **interned, PyObject **value);

/* The one reader of GT4Py's protocol attributes that a stencil call, storage
 * creation from an array and gtstore.arrays share; as gtpy_lookup_attr (1
 * with the value, 0 without, -1 with the exception raised).
 * gtpy_gt_dims: __gt_dims__, an attribute or a method that is called (the
 * adopted design: "a __gt_dims__(self) method"; GT4Py reads a property).
 * gtpy_gt_origin: __gt_origin__ (GT4Py's name), else default_origin (the
 * adopted design's); None is none. *name is the attribute read. */
int gtpy_gt_dims(PyObject *obj, PyObject **value);
int gtpy_gt_origin(PyObject *obj, PyObject **value, const char **name);

/* An integer (int or an object with __index__; not bool). */
int gtpy_int(PyObject *obj, const char *param, int64_t *out);
/* The same within a C int. */
int gtpy_c_int(PyObject *obj, const char *param, int *out);

/* An alignment in bytes given by the caller: an integer >= 1, else a
 * ValueError naming `param` (libgtstore takes 0 as "none given", which a
 * caller who gives one cannot mean; what suits the itemsize libgtstore
 * checks). */
int gtpy_alignment(PyObject *obj, const char *param, int64_t *out);

/* Whether `obj` is one integer rather than a sequence: an int, or an object
 * with __index__ that has no length (a NumPy integer, a 0-d integer array). */
bool gtpy_is_integer(PyObject *obj);
/* Whether `dims` names dimensions by another convention than gtstore's: a
 * sequence (not a str) of strings none of which is a gtstore label, such
 * as xarray's ("x", "y"). They label nothing gtstore knows. */
bool gtpy_foreign_dim_names(PyObject *dims);

/* A `copy=` argument as NumPy reads one: None (`none`), a str refused
 * with ValueError (NumPy's rule: `copy="no"` would be true), anything else
 * by its truth; `absent` where it was not given (obj NULL). */
int gtpy_copy_flag(PyObject *obj, int absent, int none, int *copy);

/* An int or a sequence of ints, each >= 0. */
int gtpy_shape(PyObject *obj, const char *param, int *ndim, int64_t *shape);
/* The same, of any sign (a reshape's -1 is libgtstore's to read). */
int gtpy_extents(PyObject *obj, const char *param, int *ndim, int64_t *shape);

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

/* halo= (or what else `param` names: a signature's extents): `ndim`
 * entries (`nbase` accepted: the rest are zero), each an int (the same on
 * both sides) or a pair (lower, upper). Signs and sizes are checked by
 * libgtstore. */
int gtpy_halo(PyObject *obj, const char *param, int ndim, int nbase, gts_halo *halo);
/* The same for a field of these dims (no subarray), which takes 3 entries
 * in I, J, K order too where libgtstore says so (gts_dims_take_ijk). */
int gtpy_halo_ijk(PyObject *obj, const char *param, int ndim, const gts_dim *dims,
                  gts_halo *halo);
PyObject *gtpy_halo_to_tuple(int ndim, const gts_halo *halo);

/* A tuple of Python ints. */
PyObject *gtpy_int64_tuple(int n, const int64_t *values);

/* layout=: a permutation (tuple/list of ints), an axis string such as "KJI",
 * or a callable taking the dims tuple and returning either. `dims` includes
 * the `nsub` trailing dims of a subarray dtype; a permutation may leave them
 * out: their entries are then GTS_LAYOUT_OUTER, for libgtstore. With `ijk`,
 * a field whose dims take IJK-ordered parameters (gts_dims_take_ijk) takes
 * 3 ranks in I, J, K order too. Errors name `param`. */
int gtpy_layout(PyObject *obj, const char *param, int ndim, const gts_dim *dims, int nsub,
                bool ijk, int *layout);

/* Device kinds by name, "cpu" and "gpu": parsed (anything else is a
 * ValueError naming device, whose list of choices starts with None where
 * `none_ok`: the caller takes None as "the preset's") and formatted. */
int gtpy_device(PyObject *obj, bool none_ok, gts_device *out);
const char *gtpy_device_name(gts_device device);

/* The index of `obj`, a str, among the `n` `choices`; else -1 with a
 * ValueError "param: expected <expected>, got <obj>". */
int gtpy_choice(PyObject *obj, const char *param, const char *const *choices, int n,
                const char *expected);

/* `n` entries of `obj` (`what`: "entries", "labels") for `ndim` dims must
 * be one per dim or one per base dim (the first `nbase`; the others are a
 * subarray's): else a ValueError. */
int gtpy_check_entries(const char *param, PyObject *obj, Py_ssize_t n, const char *what,
                       int nbase, int ndim);
/* The same, where `ijk` also 3 (in I, J, K order), which the message says. */
int gtpy_check_entries_ijk(const char *param, PyObject *obj, Py_ssize_t n, const char *what,
                           int nbase, int ndim, bool ijk);

#endif
