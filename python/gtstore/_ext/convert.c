/* Python objects to libgtstore types, with errors that name the parameter
 * and the value. */
#include "convert.h"
#include "errors.h"
#include "numpy.h"

#include <limits.h>
#include <string.h>

/* ---- integers and shapes ----------------------------------------------- */

static int as_int64(PyObject *item, const char *param, PyObject *whole, Py_ssize_t position,
                    int64_t *out)
{
    PyObject *index = NULL;
    bool integer = !PyBool_Check(item) && (PyLong_Check(item) || PyIndex_Check(item));
    if (integer && !PyLong_Check(item) && !(index = PyNumber_Index(item))) {
        /* an __index__ that refuses, as an array of more than one element
         * does, is no integer; other errors are the object's own */
        if (!PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
        integer = false;
    }
    if (!integer) {
        if (whole)
            PyErr_Format(PyExc_TypeError,
                         "%s: expected integers, got %.80R (type %.80s) at position %zd in %.200R",
                         param, item, Py_TYPE(item)->tp_name, position, whole);
        else
            PyErr_Format(PyExc_TypeError, "%s: expected an integer, got %.80R (type %.80s)",
                         param, item, Py_TYPE(item)->tp_name);
        return -1;
    }
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(index ? index : item, &overflow);
    Py_XDECREF(index);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: %.80R does not fit in 64 bits", param, item);
        return -1;
    }
    *out = value;
    return 0;
}

int gtpy_int(PyObject *obj, const char *param, int64_t *out)
{
    return as_int64(obj, param, NULL, 0, out);
}

int gtpy_c_int(PyObject *obj, const char *param, int *out)
{
    int64_t value;
    if (gtpy_int(obj, param, &value) < 0)
        return -1;
    if (value < INT_MIN || value > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %lld is outside [%d, %d]", param, (long long)value,
                     INT_MIN, INT_MAX);
        return -1;
    }
    *out = (int)value;
    return 0;
}

int gtpy_alignment(PyObject *obj, const char *param, int64_t *out)
{
    if (gtpy_int(obj, param, out) < 0)
        return -1;
    if (*out >= 1)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %lld bytes is not positive", param, (long long)*out);
    return -1;
}

/* The items of a sequence (a list or tuple, new reference); for anything
 * else (a str, bytes, a 0-d array) a TypeError "param: expected <expected>,
 * got <obj>". */
static PyObject *sequence_items(PyObject *obj, const char *param, const char *expected)
{
    if (!PyUnicode_Check(obj) && !PyBytes_Check(obj) && PySequence_Check(obj)) {
        PyObject *fast = PySequence_Fast(obj, param);
        if (fast || !PyErr_ExceptionMatches(PyExc_TypeError))
            return fast;
        PyErr_Clear(); /* for instance a 0-d array */
    }
    PyErr_Format(PyExc_TypeError, "%s: expected %s, got %.200R", param, expected, obj);
    return NULL;
}

int gtpy_int_tuple(PyObject *obj, const char *param, int max_ndim, int *ndim, int64_t *values)
{
    PyObject *fast = sequence_items(obj, param, "a sequence of integers");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    if (n > max_ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %zd entries in %.200R; at most %d are supported",
                     param, n, obj, max_ndim);
        rc = -1;
    }
    for (Py_ssize_t i = 0; i < n && rc == 0; ++i)
        rc = as_int64(PySequence_Fast_GET_ITEM(fast, i), param, obj, i, &values[i]);
    Py_DECREF(fast);
    if (rc == 0)
        *ndim = (int)n;
    return rc;
}

int gtpy_copy_flag(PyObject *obj, int absent, int none, int *copy)
{
    if (!obj || obj == Py_None) {
        *copy = obj ? none : absent;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_ValueError, "copy: %.100R is a string; use True, False or None", obj);
        return -1;
    }
    int truth = PyObject_IsTrue(obj);
    if (truth < 0)
        return -1;
    *copy = truth;
    return 0;
}

/* An integer given where a sequence may be: an int, or an object with
 * __index__ that is no sequence or has no length (a 0-d integer array) and
 * whose __index__ works (a 0-d boolean array has one that refuses). */
bool gtpy_is_integer(PyObject *obj)
{
    if (PyLong_Check(obj))
        return true;
    if (!PyIndex_Check(obj) || PyUnicode_Check(obj) || PyBytes_Check(obj))
        return false;
    if (PySequence_Check(obj)) {
        Py_ssize_t length = PySequence_Size(obj);
        PyErr_Clear();
        if (length >= 0)
            return false;
    }
    PyObject *index = PyNumber_Index(obj);
    Py_XDECREF(index);
    PyErr_Clear();
    return index != NULL;
}

int gtpy_extents(PyObject *obj, const char *param, int *ndim, int64_t *shape)
{
    if (!gtpy_is_integer(obj))
        return gtpy_int_tuple(obj, param, GTS_MAX_NDIM, ndim, shape);
    *ndim = 1;
    return gtpy_int(obj, param, &shape[0]);
}

int gtpy_shape(PyObject *obj, const char *param, int *ndim, int64_t *shape)
{
    int rc = gtpy_extents(obj, param, ndim, shape);
    for (int d = 0; rc == 0 && d < *ndim; ++d) {
        if (shape[d] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative extent %lld at position %d in %.200R",
                         param, (long long)shape[d], d, obj);
            rc = -1;
        }
    }
    return rc;
}

/* A tuple of `n` items, the i-th made by item(values, i) (new references). */
static PyObject *tuple_of(int n, const void *values, PyObject *(*item)(const void *, int))
{
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; tuple && i < n; ++i) {
        PyObject *value = item(values, i);
        if (!value) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, value);
    }
    return tuple;
}

static PyObject *int64_item(const void *values, int i)
{
    return PyLong_FromLongLong(((const int64_t *)values)[i]);
}

PyObject *gtpy_int64_tuple(int n, const int64_t *values)
{
    return tuple_of(n, values, int64_item);
}

int gtpy_check_entries_ijk(const char *param, PyObject *obj, Py_ssize_t n, const char *what,
                           int nbase, int ndim, bool ijk)
{
    if (n == nbase || n == ndim || (ijk && n == 3))
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %.200R has %zd %s for %d dimensions%s", param, obj, n,
                 what, nbase, ijk ? " (or 3, in I, J, K order)" : "");
    return -1;
}

int gtpy_check_entries(const char *param, PyObject *obj, Py_ssize_t n, const char *what,
                       int nbase, int ndim)
{
    return gtpy_check_entries_ijk(param, obj, n, what, nbase, ndim, false);
}

/* ---- halos ------------------------------------------------------------- */

static int halo_entry(PyObject *item, const char *param, PyObject *whole, Py_ssize_t position,
                      gts_halo *out)
{
    if (gtpy_is_integer(item)) {
        int64_t width;
        if (gtpy_int(item, param, &width) < 0)
            return -1;
        *out = (gts_halo){width, width};
        return 0;
    }
    int64_t pair[2];
    int n = 0;
    if (gtpy_int_tuple(item, param, 2, &n, pair) < 0 || n != 2) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%s: expected an int or a pair (lower, upper), got %.80R at position "
                         "%zd in %.200R",
                         param, item, position, whole);
        }
        return -1;
    }
    *out = (gts_halo){pair[0], pair[1]};
    return 0;
}

/* `ijk`: the field's dims where they take 3 IJK-ordered entries, else NULL. */
static int halo_entries(PyObject *obj, const char *param, int ndim, int nbase,
                        const gts_dim *ijk, gts_halo *halo)
{
    PyObject *fast = sequence_items(obj, param, "a sequence of ints or (lower, upper) pairs");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    bool ordered = ijk && n == 3 && ndim != 3; /* the field's entries: selected below */
    gts_halo given[3];
    int rc = gtpy_check_entries_ijk(param, obj, n, "entries", nbase, ndim, ijk != NULL);
    for (Py_ssize_t i = 0; i < n && rc == 0; ++i)
        rc = halo_entry(PySequence_Fast_GET_ITEM(fast, i), param, obj, i,
                        ordered ? &given[i] : &halo[i]);
    for (Py_ssize_t i = ordered ? 0 : n; i < ndim && rc == 0; ++i)
        halo[i] = (gts_halo){0, 0};
    Py_DECREF(fast);
    gts_error err;
    if (rc == 0 && ordered && gts_halo_select_ijk(ndim, ijk, given, halo, &err) != 0)
        return gtpy_raise_param(param, &err);
    return rc;
}

int gtpy_halo(PyObject *obj, const char *param, int ndim, int nbase, gts_halo *halo)
{
    return halo_entries(obj, param, ndim, nbase, NULL, halo);
}

int gtpy_halo_ijk(PyObject *obj, const char *param, int ndim, const gts_dim *dims,
                  gts_halo *halo)
{
    return halo_entries(obj, param, ndim, ndim, gts_dims_take_ijk(ndim, dims) ? dims : NULL,
                        halo);
}

static PyObject *halo_item(const void *values, int d)
{
    const gts_halo *halo = (const gts_halo *)values + d;
    return Py_BuildValue("(LL)", (long long)halo->lower, (long long)halo->upper);
}

PyObject *gtpy_halo_to_tuple(int ndim, const gts_halo *halo)
{
    return tuple_of(ndim, halo, halo_item);
}

/* ---- dims ------------------------------------------------------------- */

static int dim_label(PyObject *item, const char *param, Py_ssize_t position, gts_dim *out)
{
    static PyObject *axis_name;
    PyObject *name = PyUnicode_CheckExact(item)
                         ? NULL
                         : gtpy_optional_attr(item, "__gt_axis_name__", &axis_name);
    if (!name)
        name = Py_NewRef(item);
    int rc = -1;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: labels are strings such as 'I' or '0', got %.80R at position %zd",
                     param, item, position);
    } else {
        gts_error err;
        const char *text = gtpy_text(name, param);
        if (text && gts_dim_parse(text, out, &err) == 0)
            rc = 0;
        else if (text)
            PyErr_Format(PyExc_ValueError, "%s: invalid label %.80R at position %zd (expected "
                         "'I', 'J', 'K' or a data dimension '0', '1', ...)", param, name, position);
    }
    Py_DECREF(name);
    return rc;
}

int gtpy_lookup_attr(PyObject *obj, const char *name, PyObject **interned, PyObject **value)
{
    *value = NULL;
    if (!*interned && !(*interned = PyUnicode_InternFromString(name)))
        return -1;
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, *interned, value);
#else
    return _PyObject_LookupAttr(obj, *interned, value);
#endif
}

PyObject *gtpy_optional_attr(PyObject *obj, const char *name, PyObject **interned)
{
    PyObject *value;
    if (gtpy_lookup_attr(obj, name, interned, &value) < 0)
        PyErr_Clear();
    return value;
}

int gtpy_gt_dims(PyObject *obj, PyObject **value)
{
    static PyObject *interned;
    int rc = gtpy_lookup_attr(obj, "__gt_dims__", &interned, value);
    if (rc > 0 && PyCallable_Check(*value)) { /* labels (a str, a tuple) are not */
        PyObject *dims = PyObject_CallNoArgs(*value);
        Py_SETREF(*value, dims);
        rc = dims ? 1 : -1;
    }
    return rc;
}

int gtpy_gt_origin(PyObject *obj, PyObject **value, const char **name)
{
    static const char *const names[] = {"__gt_origin__", "default_origin"};
    static PyObject *interned[2];
    for (int i = 0; i < 2; ++i) {
        int rc = gtpy_lookup_attr(obj, names[i], &interned[i], value);
        if (rc < 0)
            return -1;
        if (rc > 0 && *value != Py_None) {
            *name = names[i];
            return 1;
        }
        Py_CLEAR(*value);
    }
    return 0;
}

const char *gtpy_text(PyObject *str, const char *param)
{
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(str, &size);
    if (text && strlen(text) != (size_t)size) {
        PyErr_Format(PyExc_ValueError, "%s: %.200R contains a NUL character", param, str);
        return NULL;
    }
    return text;
}

bool gtpy_foreign_dim_names(PyObject *dims)
{
    if (!PyTuple_Check(dims) && !PyList_Check(dims))
        return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(dims);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PySequence_Fast_GET_ITEM(dims, i);
        const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        gts_dim label;
        if (!text) {
            PyErr_Clear();
            return false;
        }
        if (gts_dim_parse(text, &label, NULL) == 0)
            return false;
    }
    return true;
}

int gtpy_dims(PyObject *obj, const char *param, int *ndim, gts_dim *dims)
{
    gts_error err;
    if (PyUnicode_Check(obj)) {
        const char *text = gtpy_text(obj, param);
        if (!text)
            return -1;
        if (!PyUnicode_IS_ASCII(obj)) {
            PyErr_Format(PyExc_ValueError, "%s: %.200R is not a valid dims string (labels are "
                         "'I', 'J', 'K' and the digits of data dimensions)", param, obj);
            return -1;
        }
        if (gts_dims_parse(text, dims, ndim, &err) == 0)
            return 0;
        PyErr_Format(PyExc_ValueError, "%s: %.200R is not a valid dims string (%s)", param, obj,
                     err.message);
        return -1;
    }
    PyObject *fast = sequence_items(obj, param, "a string such as 'IJK' or a sequence of labels");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    if (n > GTS_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %zd labels; at most %d are supported", param, n,
                     GTS_MAX_NDIM);
        rc = -1;
    }
    for (Py_ssize_t i = 0; i < n && rc == 0; ++i)
        rc = dim_label(PySequence_Fast_GET_ITEM(fast, i), param, i, &dims[i]);
    Py_DECREF(fast);
    if (rc == 0 && gts_dims_check((int)n, dims, &err) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %.200R: %s", param, obj, err.message);
        rc = -1;
    }
    if (rc == 0)
        *ndim = (int)n;
    return rc;
}

/* A label as a str. The common ones (I, J, K, data dims 0 to 12) are made
 * once and shared: __gt_dims__ is read on every GT4Py stencil call, and
 * formatting a label each time cost most of it. */
static PyObject *dim_item(const void *values, int d)
{
    enum { FIRST = GTS_DIM_I, COMMON = 16 };
    static PyObject *common[COMMON];
    gts_dim dim = ((const gts_dim *)values)[d];
    int slot = dim - FIRST;
    if (slot >= 0 && slot < COMMON && common[slot])
        return Py_NewRef(common[slot]);
    char text[GTS_DIM_TEXT_SIZE];
    gts_dim_format(dim, text);
    PyObject *label = PyUnicode_InternFromString(text);
    if (label && slot >= 0 && slot < COMMON)
        common[slot] = Py_NewRef(label); /* kept for the life of the process */
    return label;
}

PyObject *gtpy_dims_to_tuple(int ndim, const gts_dim *dims)
{
    return tuple_of(ndim, dims, dim_item);
}

/* ---- strings from a fixed set ------------------------------------------ */

int gtpy_choice(PyObject *obj, const char *param, const char *const *choices, int n,
                const char *expected)
{
    const char *text = PyUnicode_Check(obj) ? gtpy_text(obj, param) : NULL;
    for (int i = 0; text && i < n; ++i)
        if (strcmp(text, choices[i]) == 0)
            return i;
    PyErr_Clear(); /* a str with a NUL character is no choice either */
    PyErr_Format(PyExc_ValueError, "%s: expected %s, got %.200R", param, expected, obj);
    return -1;
}

static const char *const device_names[] = {[GTS_DEVICE_CPU] = "cpu", [GTS_DEVICE_GPU] = "gpu"};

int gtpy_device(PyObject *obj, bool none_ok, gts_device *out)
{
    int device = gtpy_choice(obj, "device", device_names, 2,
                             none_ok ? "None, 'cpu' or 'gpu'" : "'cpu' or 'gpu'");
    if (device < 0)
        return -1;
    *out = (gts_device)device;
    return 0;
}

const char *gtpy_device_name(gts_device device)
{
    return device_names[device == GTS_DEVICE_GPU ? GTS_DEVICE_GPU : GTS_DEVICE_CPU];
}

/* ---- dtypes ------------------------------------------------------------ */

/* Cache of dtype-likes seen before: object -> int (kind << 8 | itemsize).
 * Only constant ones without a subarray are cached, which is the hot path. */
static PyObject *dtype_cache;

static int dtype_from_numpy(PyObject *obj, gtpy_dtype *out)
{
    PyObject *numpy_dtype = gtpy_numpy("dtype");
    if (!numpy_dtype)
        return -1;
    PyObject *descr = PyObject_CallOneArg(numpy_dtype, obj);
    if (!descr) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "dtype: data type %.200R not understood", obj);
        }
        return -1;
    }
    PyObject *sub = PyObject_GetAttrString(descr, "subdtype");
    PyObject *base = NULL, *typestr = NULL;
    int rc = -1;
    out->nsub = 0;
    if (!sub)
        goto done;
    if (sub != Py_None) { /* (base dtype, shape) */
        base = Py_NewRef(PyTuple_GetItem(sub, 0));
        if (gtpy_int_tuple(PyTuple_GetItem(sub, 1), "dtype", GTS_MAX_NDIM, &out->nsub,
                           out->sub_shape) < 0)
            goto done;
    } else {
        base = Py_NewRef(descr);
    }
    typestr = PyObject_GetAttrString(base, "str");
    const char *text = typestr ? PyUnicode_AsUTF8(typestr) : NULL;
    if (!text)
        goto done;
    gts_error err;
    if (gts_dtype_from_typestr(text, &out->base, &err) != 0) {
        PyErr_Format(PyExc_TypeError, "dtype: %.200R is not supported (%s)", descr, err.message);
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(typestr);
    Py_XDECREF(base);
    Py_XDECREF(sub);
    Py_DECREF(descr);
    return rc;
}

/* Whether `obj` means the same dtype whenever it is seen: an exact str, a
 * built-in or NumPy type, a NumPy dtype. Only these are cached: any other
 * object may give another answer next time (an object whose .dtype
 * attribute changed from f4 to i8 once kept allocating float32). */
static bool constant_dtype_like(PyObject *obj)
{
    if (PyUnicode_CheckExact(obj))
        return true;
    if (PyType_Check(obj))
        return !(PyType_GetFlags((PyTypeObject *)obj) & Py_TPFLAGS_HEAPTYPE);
    PyObject *dtype_type = gtpy_numpy("dtype");
    if (!dtype_type) {
        PyErr_Clear();
        return false;
    }
    return PyType_Check(dtype_type) && PyObject_TypeCheck(obj, (PyTypeObject *)dtype_type) &&
           !(PyType_GetFlags(Py_TYPE(obj)) & Py_TPFLAGS_HEAPTYPE);
}

int gtpy_dtype_parse(PyObject *obj, gtpy_dtype *out)
{
    if (!dtype_cache && !(dtype_cache = PyDict_New()))
        return -1;
    bool cacheable = constant_dtype_like(obj);
    PyObject *hit = cacheable ? PyDict_GetItemWithError(dtype_cache, obj) : NULL;
    if (hit) {
        long packed = PyLong_AsLong(hit);
        out->base.kind = (char)(packed >> 8);
        out->base.itemsize = (uint8_t)(packed & 0xff);
        out->nsub = 0;
        return 0;
    }
    PyErr_Clear();
    if (dtype_from_numpy(obj, out) < 0)
        return -1;
    if (cacheable && out->nsub == 0 && PyDict_GET_SIZE(dtype_cache) < 256) {
        PyObject *packed = PyLong_FromLong((long)out->base.kind << 8 | out->base.itemsize);
        int rc = packed ? PyDict_SetItem(dtype_cache, obj, packed) : -1;
        Py_XDECREF(packed);
        if (rc < 0)
            PyErr_Clear(); /* only a cache */
    }
    return 0;
}

PyObject *gtpy_dtype_object(gts_dtype dtype)
{
    /* By kind and log2 of the itemsize; NumPy's descriptors are immutable. */
    static PyObject *cache[256][5];
    int size_index = dtype.itemsize == 1 ? 0 : dtype.itemsize == 2 ? 1 : dtype.itemsize == 4 ? 2
                                           : dtype.itemsize == 8 ? 3 : 4;
    PyObject **slot = &cache[(unsigned char)dtype.kind][size_index];
    if (!*slot) {
        PyObject *numpy_dtype = gtpy_numpy("dtype");
        char typestr[GTS_DTYPE_TEXT_SIZE];
        gts_dtype_typestr(dtype, typestr);
        *slot = numpy_dtype ? PyObject_CallFunction(numpy_dtype, "s", typestr) : NULL;
    }
    return Py_XNewRef(*slot);
}

/* ---- scalars ----------------------------------------------------------- */

static int scalar_from_int(PyObject *obj, const char *param, gts_scalar *out)
{
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (!overflow) {
        out->kind = GTS_SCALAR_INT;
        out->value.i = value;
        return 0;
    }
    unsigned long long big = overflow > 0 ? PyLong_AsUnsignedLongLong(obj) : 0;
    if (overflow > 0 && !(big == (unsigned long long)-1 && PyErr_Occurred())) {
        out->kind = GTS_SCALAR_UINT;
        out->value.u = big;
        return 0;
    }
    /* Beyond 64 bits: a float, which floating dtypes take as NumPy does and
     * integer dtypes refuse as out of range. */
    PyErr_Clear();
    double real = PyLong_AsDouble(obj);
    if (real == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "%s: %.80R is out of bounds for every supported dtype",
                     param, obj);
        return -1;
    }
    out->kind = GTS_SCALAR_FLOAT;
    out->value.f = real;
    return 0;
}

/* A NumPy long double or complex long double, rounded to double. */
static int long_double(PyObject *obj, const char *param, gts_scalar *out)
{
    PyObject *dtype = PyObject_GetAttrString(obj, "dtype");
    PyObject *kind = dtype ? PyObject_GetAttrString(dtype, "kind") : NULL;
    const char *text = kind && PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
    char k = text ? text[0] : '\0';
    Py_XDECREF(kind);
    Py_XDECREF(dtype);
    PyErr_Clear();
    if (k == 'c') {
        Py_complex value = PyComplex_AsCComplex(obj);
        out->kind = GTS_SCALAR_COMPLEX;
        out->value.c.re = value.real;
        out->value.c.im = value.imag;
    } else if (k == 'f') {
        out->kind = GTS_SCALAR_FLOAT;
        out->value.f = PyFloat_AsDouble(obj);
    } else {
        PyErr_Format(PyExc_TypeError, "%s: %.200R is not a number", param, obj);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

int gtpy_scalar(PyObject *obj, const char *param, gts_scalar *out)
{
    if (PyBool_Check(obj)) {
        out->kind = GTS_SCALAR_BOOL;
        out->value.b = obj == Py_True;
        return 0;
    }
    if (PyLong_Check(obj))
        return scalar_from_int(obj, param, out);
    if (PyFloat_Check(obj)) {
        out->kind = GTS_SCALAR_FLOAT;
        out->value.f = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyComplex_Check(obj)) {
        out->kind = GTS_SCALAR_COMPLEX;
        out->value.c.re = PyComplex_RealAsDouble(obj);
        out->value.c.im = PyComplex_ImagAsDouble(obj);
        return 0;
    }
    /* NumPy scalars and 0-d arrays: their .item() is one of the above, but
     * for long doubles, which convert through __float__ or __complex__. */
    if (PyObject_HasAttrString(obj, "dtype") && PyObject_HasAttrString(obj, "item")) {
        PyObject *item = PyObject_CallMethod(obj, "item", NULL);
        if (!item) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: expected a scalar, got %.200R", param, obj);
            return -1;
        }
        bool plain = PyBool_Check(item) || PyLong_Check(item) || PyFloat_Check(item) ||
                     PyComplex_Check(item);
        int rc = plain ? gtpy_scalar(item, param, out) : long_double(obj, param, out);
        Py_DECREF(item);
        return rc;
    }
    if (PyIndex_Check(obj)) {
        PyObject *index = PyNumber_Index(obj);
        int rc = index ? scalar_from_int(index, param, out) : -1;
        Py_XDECREF(index);
        return rc;
    }
    if (Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float) {
        double value = PyFloat_AsDouble(obj);
        if (value == -1.0 && PyErr_Occurred())
            return -1;
        out->kind = GTS_SCALAR_FLOAT;
        out->value.f = value;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: expected a number, got %.200R (type %.80s)", param, obj,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* ---- layouts ----------------------------------------------------------- */

/* 3 ranks in IJK order for a field whose dims take them. */
static int layout_select_ijk(PyObject *original, const char *param, int ndim, const gts_dim *dims,
                             const int64_t *values, int *layout)
{
    int ranks[3];
    for (int d = 0; d < 3; ++d)
        ranks[d] = values[d] < 0 || values[d] > 2 ? -1 : (int)values[d];
    if (gts_layout_select_ijk(ndim, dims, ranks, layout, NULL) == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %.200R is not a permutation of 0..2 (the ranks of I, J "
                 "and K)", param, original);
    return -1;
}

static int layout_from_value(PyObject *obj, PyObject *original, const char *param, int ndim,
                             const gts_dim *dims, int nsub, bool ijk, int *layout)
{
    gts_error err;
    if (PyUnicode_Check(obj)) {
        const char *axes = gtpy_text(obj, param);
        if (!axes)
            return -1;
        if (gts_layout_from_axes(ndim, dims, axes, layout, &err) != 0)
            return gtpy_raise_renamed(param, "layout", &err);
        return 0;
    }
    int64_t values[GTS_MAX_NDIM];
    int n;
    if (gtpy_int_tuple(obj, param, GTS_MAX_NDIM, &n, values) < 0)
        return -1;
    /* A permutation of the dims before the subarray's leaves those to the
     * library (outermost, as data dims go). */
    ijk = ijk && gts_dims_take_ijk(ndim, dims);
    if (gtpy_check_entries_ijk(param, original, n, "entries", ndim - nsub, ndim, ijk) < 0)
        return -1;
    if (ijk && n == 3 && ndim != 3)
        return layout_select_ijk(original, param, ndim, dims, values, layout);
    for (int d = 0; d < n; ++d)
        layout[d] = values[d] < 0 || values[d] > INT32_MAX ? -1 : (int)values[d];
    if (gts_layout_check(n, layout, &err) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %.200R is not a permutation of 0..%d", param,
                     original, n - 1);
        return -1;
    }
    for (int d = n; d < ndim; ++d)
        layout[d] = GTS_LAYOUT_OUTER;
    return 0;
}

int gtpy_layout(PyObject *obj, const char *param, int ndim, const gts_dim *dims, int nsub,
                bool ijk, int *layout)
{
    if (!PyCallable_Check(obj) || PyUnicode_Check(obj) || PySequence_Check(obj))
        return layout_from_value(obj, obj, param, ndim, dims, nsub, ijk, layout);
    PyObject *labels = gtpy_dims_to_tuple(ndim, dims);
    PyObject *result = labels ? PyObject_CallOneArg(obj, labels) : NULL;
    Py_XDECREF(labels);
    if (!result)
        return -1;
    int rc = layout_from_value(result, obj, param, ndim, dims, nsub, ijk, layout);
    Py_DECREF(result);
    return rc;
}
