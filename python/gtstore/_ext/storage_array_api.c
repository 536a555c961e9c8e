/* The ndarray methods a duck array is expected to have, beyond the
 * reductions (storage_compute.c): round, clip, squeeze, ravel, flatten,
 * cumsum, cumprod, sort, argsort, view and tofile, with NumPy's parameters
 * and semantics. Axes are integers or dim labels (axes.h).
 *
 * What the results are (docs/storage.md, "Array methods"):
 * - a storage where the result's dims follow from the storage's: round,
 *   clip (by dims, as a ufunc), cumsum/cumprod/argsort along an axis (every
 *   dim kept), squeeze (a view without the extent-1 dims), view(dtype);
 * - a NumPy array where no dims follow: ravel, flatten, and cumsum,
 *   cumprod and argsort along no axis (axis=None), which flatten in C
 *   order as NumPy does, read on the host;
 * - sort sorts in place, as ndarray.sort does. */
#include "storage_array_api.h"
#include "args.h"
#include "axes.h"
#include "convert.h"
#include "engine.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"
#include "storage_object.h"
#include "ufunc.h"
#include "write_hold.h"


/* ---- the reductions' path: a result of the storage's dims ----------------------------------- */

#define KEEPS_DIMS(name)                                                              \
    PyObject *gtpy_storage_##name(PyObject *self, PyObject *args, PyObject *kwargs)   \
    {                                                                                 \
        return gtpy_storage_reduction(self, #name, args, kwargs);                     \
    }
KEEPS_DIMS(round)
KEEPS_DIMS(cumsum)
KEEPS_DIMS(cumprod)
KEEPS_DIMS(argsort)

/* ---- clip: NumPy's ufuncs, broadcast by dims ------------------------------------------------ */

/* numpy._core.umath.<name>: the ufunc ndarray.clip calls (np.clip is no
 * ufunc); a borrowed reference cached for the process. */
static PyObject *umath(const char *name)
{
    static PyObject *module;
    if (!module && !(module = PyImport_ImportModule("numpy._core.umath")))
        return NULL;
    PyObject *ufunc = PyObject_GetAttrString(module, name);
    Py_XDECREF(ufunc); /* the module keeps it */
    return ufunc;
}

/* A Python int bound beyond an integer dtype's range clips nothing, and
 * NumPy drops it (NEP 50: it would not convert): `bound` <= min (`op`
 * Py_LE) or >= max (Py_GE) of iinfo(dtype). */
static int beyond(PyObject *self, PyObject *bound, const char *end, int op)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    if (!bound || !PyLong_CheckExact(bound) ||
        (g.dtype.kind != GTS_KIND_INT && g.dtype.kind != GTS_KIND_UINT))
        return 0;
    PyObject *dtype = gtpy_dtype_object(g.dtype);
    PyObject *info = dtype ? PyObject_CallOneArg(gtpy_numpy("iinfo"), dtype) : NULL;
    PyObject *limit = info ? PyObject_GetAttrString(info, end) : NULL;
    int result = limit ? PyObject_RichCompareBool(bound, limit, op) : -1;
    Py_XDECREF(limit);
    Py_XDECREF(info);
    Py_XDECREF(dtype);
    return result;
}

/* clip(min=None, max=None, out=None, **kwargs): NumPy's ndarray.clip, its
 * ufuncs called on the storage (positive, minimum, maximum or clip), so
 * that bounds that are storages broadcast by dims and the result is a
 * storage on the device the ufunc chooses. */
PyObject *gtpy_storage_clip(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static const char *const names[] = {"min", "max", "out"};
    static gtpy_signature sig = GTPY_SIGNATURE("clip", names, 3, 0, 0);
    PyObject *v[3], *kw, *result = NULL; /* v: borrowed; kw: NumPy's other keywords */
    if (gtpy_parse_tuple_rest(&sig, args, kwargs, v, &kw) < 0)
        return NULL;
    PyObject *bounds[2] = {v[0], v[1]}, *out = v[2];
    int low = beyond(self, bounds[0], "min", Py_LE);
    int high = low < 0 ? -1 : beyond(self, bounds[1], "max", Py_GE);
    if (high >= 0) {
        if (low || bounds[0] == Py_None)
            bounds[0] = NULL;
        if (high || bounds[1] == Py_None)
            bounds[1] = NULL;
        if (out && out != Py_None && PyDict_SetItemString(kw, "out", out) < 0)
            high = -1;
    }
    if (high >= 0) {
        PyObject *call[4] = {self, bounds[0] ? bounds[0] : bounds[1], bounds[1], NULL};
        const char *name = bounds[0] && bounds[1] ? "clip"
                           : bounds[0]            ? "maximum"
                           : bounds[1]            ? "minimum"
                                                  : "positive";
        PyObject *ufunc = umath(name);
        PyObject *inputs = !ufunc                    ? NULL
                           : bounds[0] && bounds[1] ? PyTuple_Pack(3, call[0], call[1], call[2])
                           : call[1]                ? PyTuple_Pack(2, call[0], call[1])
                                                    : PyTuple_Pack(1, call[0]);
        result = inputs ? PyObject_Call(ufunc, inputs, kw) : NULL;
        Py_XDECREF(inputs);
    }
    Py_DECREF(kw);
    return result;
}

/* ---- squeeze: a view ------------------------------------------------------------------------ */

/* squeeze(axis=None): a view without the dims of extent 1 (without those
 * of `axis`, integers or labels, which must have extent 1), each dropped
 * with its label as an index 0 drops it. */
PyObject *gtpy_storage_squeeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    static const char *const names[] = {"axis"};
    static gtpy_signature sig = GTPY_SIGNATURE("squeeze", names, 1, 0, 0);
    PyObject *axis;
    gts_storage g, view;
    gts_error err;
    bool drop[GTS_MAX_NDIM];
    int n = 0, axes[GTS_MAX_NDIM];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, &axis) < 0)
        return NULL;
    gtpy_storage_load(self, &g);
    bool all = !axis || axis == Py_None;
    if (!all && gtpy_axes(axis, &g, "axis", &n, axes) < 0)
        return NULL;
    for (int d = 0; d < g.ndim; ++d)
        drop[d] = all && g.shape[d] == 1;
    for (int i = 0; i < n; ++i) {
        if (g.shape[axes[i]] != 1) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(g.dims[axes[i]], label);
            return PyErr_Format(PyExc_ValueError,
                                "axis: cannot select an axis to squeeze out which has size not "
                                "equal to one: dim '%s' has extent %lld",
                                label, (long long)g.shape[axes[i]]);
        }
        drop[axes[i]] = true;
    }
    gts_storage_view(&g, &view);
    for (int d = g.ndim - 1; d >= 0; --d) {
        if (drop[d] && gts_storage_index(&view, d, 0, &err) != 0) {
            gts_storage_release(&view);
            return gtpy_raise_null(&err);
        }
    }
    return gtpy_storage_derived(self, &view);
}

/* ---- NumPy arrays of the values ------------------------------------------------------------- */

/* array.<name>(*args, **kwargs) on an ndarray of the values: the host side
 * itself where there is one (`view`: a view NumPy's method may return
 * shares the storage's memory, and counts as a write), else a host copy
 * of the device's values. */
static PyObject *on_host(PyObject *self, const char *name, PyObject *args, PyObject *kwargs,
                         bool view)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    PyObject *array = view && gtpy_has_host_side(g.buffer) ? gtpy_storage_ndarray(self, true)
                                                           : gtpy_storage_host_values(self);
    PyObject *method = array ? PyObject_GetAttrString(array, name) : NULL;
    PyObject *result = method ? PyObject_Call(method, args, kwargs) : NULL;
    Py_XDECREF(method);
    Py_XDECREF(array);
    return result;
}

/* ravel(order='C'): NumPy's ravel of the values, a view of the host memory
 * where NumPy's is one (no padding between the elements in that order). */
PyObject *gtpy_storage_ravel(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return on_host(self, "ravel", args, kwargs, true);
}

/* flatten(order='C'): a new 1-d ndarray of the values. */
PyObject *gtpy_storage_flatten(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return on_host(self, "flatten", args, kwargs, false);
}

/* tofile(fid, sep='', format='%s'): the values in C order, as
 * ndarray.tofile writes them (no halo or padding left out: the values the
 * storage has, halo included). */
PyObject *gtpy_storage_tofile(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return on_host(self, "tofile", args, kwargs, false);
}

/* ---- sort: in place ------------------------------------------------------------------------- */

/* sort(axis=-1, kind=None, order=None, *, stable=None): sorts along one axis
 * (an integer or a label) in place, as ndarray.sort: on the host side where
 * the storage has one, else on its device with the engine. */
PyObject *gtpy_storage_sort(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    static const char *const names[] = {"axis", "kind", "order", "stable"};
    static gtpy_signature sig = GTPY_SIGNATURE("sort", names, 3, 0, 0);
    PyObject *values[4];
    gts_storage g;
    int axis = 0;
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0)
        return NULL;
    gtpy_storage_load(self, &g);
    PyObject *last = values[0] ? NULL : PyLong_FromLong(-1);
    int rc = gtpy_axis(values[0] ? values[0] : last, &g, "axis", NULL, &axis);
    Py_XDECREF(last);
    PyObject *kw = rc < 0 ? NULL : Py_BuildValue("{s:i}", "axis", axis);
    for (int i = 1; kw && i < 4; ++i) /* only those given: CuPy's sort takes fewer */
        if (values[i] && PyDict_SetItemString(kw, names[i], values[i]) < 0)
            Py_CLEAR(kw);
    if (!kw)
        return NULL;
    gtpy_engine engine;
    bool on_device = !gtpy_has_host_side(g.buffer);
    gtpy_holds holds;
    gtpy_holds_init(&holds);
    PyObject *array = NULL, *result = NULL;
    bool engine_got = on_device && gtpy_engine_get(gts_buffer_device(g.buffer), &engine) == 0;
    if (engine_got) {
        array = gtpy_engine_storage_view(&engine, self, 0, NULL, NULL, true, false);
    } else if (!on_device) {
        gtpy_holds_add(&holds, &g);
        if (gtpy_holds_begin(&holds, GTS_SIDE_HOST, NULL) == 0) {
            array = gtpy_storage_ndarray(self, true);
            if (!array)
                gtpy_holds_end(&holds);
        }
    }
    PyObject *method = array ? PyObject_GetAttrString(array, "sort") : NULL;
    PyObject *empty = method ? PyTuple_New(0) : NULL;
    result = empty ? PyObject_Call(method, empty, kw) : NULL;
    if (engine_got && gtpy_engine_finish(&engine) < 0)
        Py_CLEAR(result);
    if (!on_device && array)
        gtpy_holds_end(&holds);
    Py_XDECREF(empty);
    Py_XDECREF(method);
    Py_XDECREF(array);
    Py_DECREF(kw);
    if (!result)
        return NULL;
    Py_DECREF(result);
    Py_RETURN_NONE;
}

/* ---- view ----------------------------------------------------------------------------------- */

static bool is_subtype(PyObject *obj, PyObject *base)
{
    return PyType_Check(obj) && base && PyType_Check(base) &&
           PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)base);
}

/* view([dtype][, type]): as ndarray.view. A storage over the same memory
 * (shared sync state), of another dtype where one is given (libgtstore's
 * gts_storage_view_dtype regroups the last dim for another itemsize); with
 * a `type` that is no Storage type (an ndarray subclass), NumPy's view of
 * the host memory. */
PyObject *gtpy_storage_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "type"};
    static gtpy_signature sig = GTPY_SIGNATURE("view", names, 2, 0, 0);
    PyObject *values[2];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0)
        return NULL;
    PyObject *dtype = values[0] == Py_None ? NULL : values[0], *type = values[1];
    PyObject *ndarray = gtpy_numpy("ndarray");
    if (dtype && !type && is_subtype(dtype, ndarray)) { /* view(type): NumPy's reading */
        type = dtype;
        dtype = NULL;
    }
    if (type == Py_None)
        type = NULL;
    if (type && !is_subtype(type, (PyObject *)&gtpy_Storage_Type)) {
        if (!is_subtype(type, ndarray))
            return PyErr_Format(PyExc_TypeError,
                                "type: %.200R is neither an ndarray subclass nor a Storage type",
                                type);
        PyObject *array = gtpy_storage_ndarray(self, true);
        PyObject *result = !array  ? NULL
                           : dtype ? PyObject_CallMethod(array, "view", "OO", dtype, type)
                                   : PyObject_CallMethod(array, "view", "O", type);
        Py_XDECREF(array);
        return result;
    }
    gts_storage g, view;
    gts_error err;
    gtpy_dtype parsed;
    gtpy_storage_load(self, &g);
    if (dtype && gtpy_dtype_parse(dtype, &parsed) < 0)
        return NULL;
    if (dtype && parsed.nsub)
        return PyErr_Format(PyExc_TypeError, "dtype: %.200R is a subarray dtype", dtype);
    gts_storage_view(&g, &view);
    if (dtype && gts_storage_view_dtype(&view, parsed.base, &err) != 0) {
        gts_storage_release(&view);
        return gtpy_raise_null(&err);
    }
    return gtpy_storage_derived(self, &view);
}
