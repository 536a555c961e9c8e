/* gtstore.arrays: empty, zeros, ones, full, from_array, the *_like
 * functions and plan. They resolve every parameter (explicit keyword, then
 * the preset, then the template or data, then the fallback), let libgtstore
 * compute the geometry and return a NumPy array over libgtstore memory (a
 * CuPy array for GPU presets, through gtstore.arrays._allocate_on_gpu). */
#include "module.h"

#include <string.h>

/* ---- requests ------------------------------------------------------------ */

typedef enum fill_kind { FILL_NONE, FILL_ZEROS, FILL_ONES, FILL_VALUE, FILL_COPY } fill_kind;

/* What the caller passed. Borrowed references; NULL when absent. */
typedef struct request {
    PyObject *shape, *dtype, *fill_value, *source; /* source: data or template */
    bool source_is_data;                            /* from_array (else *_like) */
    PyObject *backend, *aligned_index, *dims, *dimensions, *alignment_size, *layout, *device;
    const char *backend_param; /* "backend" or "defaults", whichever was given */
    fill_kind fill;
} request;

/* The shape, strides and dtype of a data or template array, read through
 * the buffer protocol (np.asarray first for objects without one; NumPy
 * arrays that export no buffer, such as datetime64, through their shape
 * and strides, leaving the dtype to NumPy). */
typedef struct source {
    const char *param; /* "data" or "a" */
    PyObject *array;   /* the object read (new reference) */
    bool have_view;
    Py_buffer view;
    int ndim;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    bool dtype_known; /* a native dtype libgtstore supports */
    bool byteswapped; /* a supported dtype in the other byte order */
    gts_dtype dtype;
} source;

/* Everything the allocation needs, resolved. */
typedef struct resolved {
    int nsub; /* trailing dims from a subarray dtype */
    gts_dim dims[GTS_MAX_NDIM];
    gts_dtype dtype;
    gts_device device;
    gts_geometry geometry;
} resolved;

/* Parameter names: the leading ones per function, then the keywords all
 * share (read_common knows their order). */
#define COMMON_NAMES \
    "backend", "defaults", "aligned_index", "dimensions", "dims", "alignment_size", "layout", "device"
#define NCOMMON 8
static const char *const shape_names[] = {"shape", "dtype", COMMON_NAMES};
static const char *const full_names[] = {"shape", "fill_value", "dtype", COMMON_NAMES};
static const char *const data_names[] = {"data", "dtype", COMMON_NAMES};
static const char *const like_names[] = {"a", "dtype", COMMON_NAMES};
static const char *const full_like_names[] = {"a", "fill_value", "dtype", COMMON_NAMES};

/* Aliases: either may be given, or both if they agree. */
static int alias(PyObject *a, PyObject *b, const char *name_a, const char *name_b, PyObject **out)
{
    a = a == Py_None ? NULL : a;
    b = b == Py_None ? NULL : b;
    if (a && b) {
        int same = PyObject_RichCompareBool(a, b, Py_EQ);
        if (same < 0)
            return -1;
        if (!same) {
            PyErr_Format(PyExc_ValueError, "%s=%.200R and %s=%.200R disagree; they are aliases",
                         name_a, a, name_b, b);
            return -1;
        }
    }
    *out = a ? a : b;
    return 0;
}

static PyObject *given(PyObject *value)
{
    return value == Py_None ? NULL : value;
}

static int read_common(request *r, PyObject **values)
{
    r->aligned_index = values[2];
    r->alignment_size = values[5];
    r->layout = values[6];
    r->device = values[7];
    r->dimensions = given(values[3]);
    r->dims = given(values[4]);
    r->backend_param = given(values[0]) ? "backend" : "defaults";
    return alias(values[0], values[1], "backend", "defaults", &r->backend);
}

/* ---- sources ------------------------------------------------------------- */

static void source_release(source *s)
{
    if (s->have_view)
        PyBuffer_Release(&s->view);
    Py_CLEAR(s->array);
}

static void source_dtype(source *s)
{
    const char *format = s->view.format;
    s->dtype_known = gts_dtype_from_format(format, &s->dtype, NULL) == 0;
    if (!s->dtype_known && format && (format[0] == '>' || format[0] == '<' || format[0] == '!')) {
        char native[GTS_DTYPE_TEXT_SIZE + 1] = "=";
        strncat(native, format + 1, GTS_DTYPE_TEXT_SIZE - 1);
        s->byteswapped = gts_dtype_from_format(native, &s->dtype, NULL) == 0;
    }
}

/* Shape and strides from the buffer; NULL strides mean C order. */
static void source_geometry_from_view(source *s)
{
    const Py_buffer *v = &s->view;
    s->ndim = v->ndim;
    int64_t stride = v->itemsize;
    for (int d = s->ndim - 1; d >= 0; --d) {
        s->shape[d] = v->shape ? v->shape[d] : v->len / v->itemsize;
        s->strides[d] = v->strides ? v->strides[d] : stride;
        stride *= s->shape[d];
    }
}

/* Shape and strides from the attributes of an array NumPy cannot export. */
static int source_geometry_from_attributes(source *s)
{
    PyObject *shape = PyObject_GetAttrString(s->array, "shape");
    PyObject *strides = shape ? PyObject_GetAttrString(s->array, "strides") : NULL;
    int n = -1, rc = -1;
    if (strides && gtpy_int_tuple(shape, s->param, GTS_MAX_NDIM, &s->ndim, s->shape) == 0 &&
        gtpy_int_tuple(strides, s->param, GTS_MAX_NDIM, &n, s->strides) == 0 && n == s->ndim)
        rc = 0;
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    if (rc < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: cannot read %.200R as an array", s->param, s->array);
    return rc;
}

static int source_open(source *s, PyObject *obj, const char *param)
{
    memset(s, 0, sizeof *s);
    s->param = param;
    if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an array, got %.200R", param, obj);
        return -1;
    }
    if (PyObject_CheckBuffer(obj) && PyObject_GetBuffer(obj, &s->view, PyBUF_RECORDS_RO) == 0) {
        s->array = Py_NewRef(obj);
    } else {
        PyErr_Clear();
        PyObject *asarray = gtpy_numpy_asarray();
        if (!asarray || !(s->array = PyObject_CallOneArg(asarray, obj)))
            return -1;
        if (PyObject_GetBuffer(s->array, &s->view, PyBUF_RECORDS_RO) < 0) {
            PyErr_Clear();
            return source_geometry_from_attributes(s);
        }
    }
    s->have_view = true;
    source_geometry_from_view(s);
    source_dtype(s);
    return 0;
}

static int source_numpy_dtype_error(const source *s)
{
    PyObject *dtype = PyObject_GetAttrString(s->array, "dtype");
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: %.200R has dtype %.200R, which is not supported; pass "
                 "dtype=", s->param, s->array, dtype ? dtype : (PyObject *)Py_None);
    Py_XDECREF(dtype);
    return -1;
}

/* ---- resolution ---------------------------------------------------------- */

static int resolve_preset(const request *r, gts_preset *preset, bool *have)
{
    *have = r->backend != NULL;
    if (!*have)
        return 0;
    if (!PyUnicode_Check(r->backend)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a preset name (str), got %.200R",
                     r->backend_param, r->backend);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(r->backend);
    gts_error err;
    if (!name)
        return -1;
    if (gts_preset_lookup(name, preset, &err) == 0)
        return 0;
    PyErr_Format(gtpy_UnknownPresetError,
                 "%s: storage preset %.200R is not registered "
                 "(gtstore.arrays.presets() lists those that are)",
                 r->backend_param, r->backend);
    return -1;
}

static int resolve_dtype(const request *r, const source *src, gtpy_dtype *dtype)
{
    if (r->dtype && r->dtype != Py_None)
        return gtpy_dtype_parse(r->dtype, dtype);
    dtype->nsub = 0;
    if (src->array) {
        if (!src->dtype_known && !src->byteswapped)
            return source_numpy_dtype_error(src);
        dtype->base = src->dtype;
        return 0;
    }
    dtype->base = (gts_dtype){GTS_KIND_FLOAT, 8};
    return 0;
}

/* The full shape: the base shape and the subarray's trailing dims. */
static int resolve_shape(const request *r, const source *src, const gtpy_dtype *dtype, int *ndim,
                         int *nbase, int64_t *shape)
{
    if (src->array) {
        *ndim = src->ndim;
        memcpy(shape, src->shape, (size_t)src->ndim * sizeof *shape);
    } else if (gtpy_shape(r->shape, "shape", ndim, shape) < 0) {
        return -1;
    }
    if (r->source_is_data) { /* the data's trailing dims must be the subarray's */
        int n = dtype->nsub;
        bool fits = n <= *ndim;
        for (int k = 0; fits && k < n; ++k)
            fits = shape[*ndim - n + k] == dtype->sub_shape[k];
        if (!fits) {
            PyErr_Format(PyExc_ValueError,
                         "dtype: the data's shape does not end with the subarray shape of %.200R",
                         r->dtype);
            return -1;
        }
        *nbase = *ndim - n;
        return 0;
    }
    *nbase = *ndim;
    if (*ndim + dtype->nsub > GTS_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "dtype: the subarray adds too many dimensions (max %d)",
                     GTS_MAX_NDIM);
        return -1;
    }
    memcpy(shape + *ndim, dtype->sub_shape, (size_t)dtype->nsub * sizeof *shape);
    *ndim += dtype->nsub;
    return 0;
}

/* Labels for the base dims, then data dims numbered on for the subarray. */
static int resolve_dims(const request *r, const source *src, int ndim, int nbase, gts_dim *dims)
{
    int n = -1;
    PyObject *template_dims = NULL;
    PyObject *given = r->dims ? r->dims : r->dimensions;
    const char *param = r->dims ? "dims" : "dimensions";
    if (given) {
        if (gtpy_dims(given, param, &n, dims) < 0)
            return -1;
        if (n != nbase && n != ndim) {
            PyErr_Format(PyExc_ValueError, "%s: %.200R has %d labels for %d dimensions", param,
                         given, n, nbase);
            return -1;
        }
        gts_dim other[GTS_MAX_NDIM];
        int m;
        if (r->dims && r->dimensions &&
            (gtpy_dims(r->dimensions, "dimensions", &m, other) < 0 || m != n ||
             memcmp(other, dims, (size_t)n * sizeof *dims) != 0)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError,
                             "dims=%.200R and dimensions=%.200R disagree; they are aliases",
                             r->dims, r->dimensions);
            return -1;
        }
    } else if (src->array && (template_dims = PyObject_GetAttrString(r->source, "__gt_dims__"))) {
        int rc = gtpy_dims(template_dims, r->source_is_data ? "data.__gt_dims__" : "a.__gt_dims__",
                           &n, dims);
        Py_DECREF(template_dims);
        if (rc < 0)
            return -1;
        if (n != nbase)
            n = -1; /* labels that do not fit the array are not its dims */
    } else {
        PyErr_Clear(); /* no __gt_dims__ */
    }
    gts_error err;
    if (n < 0 && gts_dims_default(nbase, dims, &err) != 0)
        return gtpy_raise(&err);
    n = n < 0 ? nbase : n;
    gts_dim next = 0;
    for (int d = 0; d < n; ++d)
        next = dims[d] >= next ? dims[d] + 1 : next;
    for (int d = n; d < ndim; ++d)
        dims[d] = next++;
    if (gts_dims_check(ndim, dims, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

static int resolve_layout(const request *r, const source *src, const gts_preset *preset,
                          int ndim, int nsub, const gts_dim *dims, int *layout)
{
    gts_error err;
    if (r->layout && r->layout != Py_None)
        return gtpy_layout(r->layout, ndim, dims, nsub, layout);
    if (preset)
        return gts_preset_layout(preset, ndim, dims, layout, &err) ? gtpy_raise(&err) : 0;
    if (src->array) {
        int n = src->ndim, shift = ndim - n; /* a template may lack the subarray dims */
        gts_layout_from_strides(n, src->strides, layout);
        for (int d = 0; d < n; ++d)
            layout[d] += shift;
        for (int d = n; d < ndim; ++d)
            layout[d] = d - n;
        return 0;
    }
    gts_layout_c(ndim, layout);
    return 0;
}

static int resolve_alignment(const request *r, const gts_preset *preset, gts_dtype dtype,
                             int64_t *alignment)
{
    if (r->alignment_size && r->alignment_size != Py_None) {
        int rc = gtpy_int(r->alignment_size, "alignment_size", alignment);
        if (rc == 0 && *alignment < 1) {
            PyErr_Format(PyExc_ValueError, "alignment_size: %lld bytes is not positive",
                         (long long)*alignment);
            rc = -1;
        }
        return rc;
    }
    *alignment = 1;
    if (preset && gts_mul_overflow(preset->alignment, dtype.itemsize, alignment)) {
        PyErr_Format(PyExc_ValueError, "%s: the preset's alignment %lld overflows",
                     r->backend_param, (long long)preset->alignment);
        return -1;
    }
    return 0;
}

static int resolve_device(const request *r, const gts_preset *preset, gts_device *device)
{
    *device = preset ? preset->device : GTS_DEVICE_CPU;
    if (!r->device || r->device == Py_None)
        return 0;
    const char *name = PyUnicode_Check(r->device) ? PyUnicode_AsUTF8(r->device) : NULL;
    if (name && strcmp(name, "cpu") == 0)
        *device = GTS_DEVICE_CPU;
    else if (name && strcmp(name, "gpu") == 0)
        *device = GTS_DEVICE_GPU;
    else {
        PyErr_Format(PyExc_ValueError, "device: expected None, 'cpu' or 'gpu', got %.200R",
                     r->device);
        return -1;
    }
    return 0;
}

static int resolve_aligned_index(const request *r, int ndim, int nbase, int64_t *index)
{
    int n = 0;
    if (r->aligned_index && r->aligned_index != Py_None) {
        if (gtpy_int_tuple(r->aligned_index, "aligned_index", GTS_MAX_NDIM, &n, index) < 0)
            return -1;
        if (n != nbase && n != ndim) {
            PyErr_Format(PyExc_ValueError,
                         "aligned_index: %.200R has %d entries for %d dimensions",
                         r->aligned_index, n, nbase);
            return -1;
        }
    }
    for (int d = n; d < ndim; ++d)
        index[d] = 0;
    return 0;
}

static int resolve(const request *r, const source *src, resolved *out)
{
    gts_preset preset;
    bool have_preset;
    gtpy_dtype dtype;
    int ndim, nbase, layout[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM], aligned_index[GTS_MAX_NDIM], alignment;
    if (resolve_preset(r, &preset, &have_preset) < 0 || resolve_dtype(r, src, &dtype) < 0 ||
        resolve_shape(r, src, &dtype, &ndim, &nbase, shape) < 0 ||
        resolve_dims(r, src, ndim, nbase, out->dims) < 0)
        return -1;
    const gts_preset *p = have_preset ? &preset : NULL;
    out->nsub = ndim - nbase;
    out->dtype = dtype.base;
    if (resolve_layout(r, src, p, ndim, out->nsub, out->dims, layout) < 0 ||
        resolve_alignment(r, p, dtype.base, &alignment) < 0 ||
        resolve_device(r, p, &out->device) < 0 ||
        resolve_aligned_index(r, ndim, nbase, aligned_index) < 0)
        return -1;
    gts_error err;
    if (gts_geometry_init(&out->geometry, ndim, shape, layout, dtype.base.itemsize, alignment,
                          aligned_index, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

/* ---- Plan: a resolved allocation, for inspection and the GPU path -------- */

typedef struct {
    PyObject_HEAD
    resolved spec;
} Plan;

static PyObject *int64_tuple(int n, const int64_t *values)
{
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; tuple && i < n; ++i) {
        PyObject *value = PyLong_FromLongLong(values[i]);
        if (!value) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, value);
    }
    return tuple;
}

static PyObject *plan_get(PyObject *self, void *closure)
{
    const resolved *s = &((Plan *)self)->spec;
    const gts_geometry *g = &s->geometry;
    int64_t layout[GTS_MAX_NDIM];
    switch ((int)(intptr_t)closure) {
    case 0: return int64_tuple(g->ndim, g->shape);
    case 1: return int64_tuple(g->ndim, g->padded_shape);
    case 2: return int64_tuple(g->ndim, g->strides);
    case 3:
        for (int d = 0; d < g->ndim; ++d)
            layout[d] = g->layout[d];
        return int64_tuple(g->ndim, layout);
    case 4: return gtpy_dims_to_tuple(g->ndim, s->dims);
    case 5: return gtpy_dtype_object(s->dtype);
    case 6: return PyLong_FromLongLong(g->alignment);
    case 7: return int64_tuple(g->ndim, g->aligned_index);
    case 8: return PyUnicode_FromString(s->device == GTS_DEVICE_GPU ? "gpu" : "cpu");
    case 9: return PyLong_FromLongLong(g->alloc_size);
    default: return PyLong_FromLongLong(g->span);
    }
}

#define PLAN_FIELD(name, index, doc) {name, plan_get, NULL, doc, (void *)(intptr_t)(index)}

static PyGetSetDef plan_getset[] = {
    PLAN_FIELD("shape", 0, "Shape of the array (subarray dims included)."),
    PLAN_FIELD("padded_shape", 1, "Shape with the contiguous dimension padded for alignment."),
    PLAN_FIELD("strides", 2, "Byte strides."),
    PLAN_FIELD("layout", 3, "Rank of each dimension in decreasing stride order."),
    PLAN_FIELD("dims", 4, "Dimension labels."),
    PLAN_FIELD("dtype", 5, "Element dtype (the base dtype of a subarray dtype)."),
    PLAN_FIELD("alignment_size", 6, "Alignment of the aligned point, in bytes."),
    PLAN_FIELD("aligned_index", 7, "Index of the grid point whose address is aligned."),
    PLAN_FIELD("device", 8, "'cpu' or 'gpu'."),
    PLAN_FIELD("nbytes", 9, "Bytes to allocate: span + alignment_size - 1."),
    PLAN_FIELD("span", 10, "Bytes from element 0 to the end of the padded array."),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *plan_offset(PyObject *self, PyObject *base)
{
    unsigned long long address = PyLong_AsUnsignedLongLong(base);
    if (address == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(gts_geometry_offset(&((Plan *)self)->spec.geometry,
                                                   (uintptr_t)address));
}

static PyObject *plan_repr(PyObject *self)
{
    PyObject *shape = plan_get(self, (void *)0), *strides = plan_get(self, (void *)2);
    PyObject *dims = plan_get(self, (void *)4), *dtype = plan_get(self, (void *)5);
    PyObject *repr = NULL;
    if (shape && strides && dims && dtype)
        repr = PyUnicode_FromFormat("Plan(shape=%R, dtype=%R, dims=%R, strides=%R, "
                                    "alignment_size=%lld, device='%s')",
                                    shape, dtype, dims, strides,
                                    (long long)((Plan *)self)->spec.geometry.alignment,
                                    ((Plan *)self)->spec.device == GTS_DEVICE_GPU ? "gpu" : "cpu");
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(dims);
    Py_XDECREF(dtype);
    return repr;
}

static PyMethodDef plan_methods[] = {
    {"offset", plan_offset, METH_O,
     "offset(base)\n--\n\nByte offset of element 0 from a block at address `base` that makes "
     "the aligned point aligned."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject gtpy_Plan_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.arrays.Plan",
    .tp_doc = "The resolved geometry of an allocation (see gtstore.arrays.plan).",
    .tp_basicsize = sizeof(Plan),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_getset = plan_getset,
    .tp_methods = plan_methods,
    .tp_repr = plan_repr,
};

static PyObject *plan_new(const resolved *spec)
{
    Plan *plan = PyObject_New(Plan, &gtpy_Plan_Type);
    if (plan)
        plan->spec = *spec;
    return (PyObject *)plan;
}

/* ---- allocation -------------------------------------------------------- */

/* Fills the whole padded span (padding too: it is contiguous and faster). */
static int fill_span(void *data, const resolved *spec, const unsigned char *item)
{
    int64_t count = spec->geometry.span / spec->dtype.itemsize, stride = spec->dtype.itemsize;
    gts_error err;
    if (gts_fill(data, 1, &count, &stride, stride, item, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

/* The fill value as one element of the dtype, checked before allocating. */
static int fill_item(const request *r, const resolved *spec, unsigned char *item)
{
    gts_scalar value = {.kind = GTS_SCALAR_INT, .value.i = 1}; /* ones */
    if (r->fill == FILL_VALUE && gtpy_scalar(r->fill_value, "fill_value", &value) < 0)
        return -1;
    /* A Python int beyond 64 bits arrives as a float, which loses digits:
     * no integer dtype can hold it, whatever the rounding says. */
    bool integer_dtype = spec->dtype.kind == GTS_KIND_INT || spec->dtype.kind == GTS_KIND_UINT;
    if (integer_dtype && value.kind == GTS_SCALAR_FLOAT && PyLong_Check(r->fill_value)) {
        PyErr_Format(PyExc_OverflowError, "fill_value: %.80R is out of bounds for %s",
                     r->fill_value, gts_dtype_name(spec->dtype));
        return -1;
    }
    gts_error err;
    if (gts_scalar_store(value, spec->dtype, item, &err) != 0)
        return gtpy_raise_param("fill_value", &err);
    return 0;
}

static int copy_source(PyObject *array, void *data, const resolved *spec, const source *src)
{
    const gts_geometry *g = &spec->geometry;
    if (!src->dtype_known || !gts_dtype_equal(src->dtype, spec->dtype)) /* NumPy casts */
        return PyObject_SetItem(array, Py_Ellipsis, src->array);
    gts_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gts_copy(data, g->strides, src->view.buf, src->strides, g->ndim, g->shape, g->itemsize,
                  &err);
    Py_END_ALLOW_THREADS
    return rc ? gtpy_raise(&err) : 0;
}

static PyObject *allocate_on_gpu(const request *r, const resolved *spec)
{
    PyObject *module = PyImport_ImportModule("gtstore.arrays");
    PyObject *allocate = module ? PyObject_GetAttrString(module, "_allocate_on_gpu") : NULL;
    PyObject *plan = allocate ? plan_new(spec) : NULL;
    PyObject *result = NULL;
    if (plan) {
        static const char *const kinds[] = {"empty", "zeros", "ones", "full", "copy"};
        PyObject *value = r->fill == FILL_COPY ? r->source
                          : r->fill == FILL_VALUE ? r->fill_value
                                                  : Py_None;
        result = PyObject_CallFunction(allocate, "OsO", plan, kinds[r->fill], value);
    }
    Py_XDECREF(plan);
    Py_XDECREF(allocate);
    Py_XDECREF(module);
    return result;
}

static PyObject *allocate(const request *r, const resolved *spec, const source *src)
{
    unsigned char item[16];
    bool fill = r->fill == FILL_VALUE || r->fill == FILL_ONES;
    if (fill && fill_item(r, spec, item) < 0)
        return NULL;
    if (spec->device == GTS_DEVICE_GPU)
        return allocate_on_gpu(r, spec);
    gts_buffer *buffer;
    int64_t offset;
    gts_error err;
    unsigned flags = r->fill == FILL_ZEROS ? GTS_ALLOC_ZERO : 0;
    if (gts_buffer_alloc_geometry(&spec->geometry, flags, &buffer, &offset, &err) != 0)
        return gtpy_raise_null(&err);
    char *data = (char *)gts_buffer_host(buffer) + offset;
    int rc = fill ? fill_span(data, spec, item) : 0;
    PyObject *array = rc == 0 ? gtpy_ndarray(buffer, offset, &spec->geometry, spec->dtype) : NULL;
    gts_buffer_release(buffer); /* the array holds its own reference */
    if (array && r->fill == FILL_COPY && copy_source(array, data, spec, src) < 0)
        Py_CLEAR(array);
    return array;
}

static PyObject *run(request *r, bool only_plan)
{
    source src = {0};
    if (r->source && source_open(&src, r->source, r->source_is_data ? "data" : "a") < 0) {
        source_release(&src);
        return NULL;
    }
    resolved spec;
    PyObject *result = NULL;
    if (resolve(r, &src, &spec) == 0)
        result = only_plan ? plan_new(&spec) : allocate(r, &spec, &src);
    source_release(&src);
    return result;
}

/* ---- the Python functions ---------------------------------------------- */

#define SIGNATURE(fn, names, npos, nreq) \
    static gtpy_signature sig = {fn, names, (npos) + NCOMMON, npos, nreq, NULL}

/* [shape or a], [fill_value], dtype, *, common: one body for all. */
static PyObject *call(gtpy_signature *sig, fill_kind fill, bool from_template, bool only_plan,
                      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *values[3 + NCOMMON];
    if (gtpy_parse_args(sig, args, nargs, kwnames, values) < 0)
        return NULL;
    int with_value = sig->npositional - 2; /* 1 if fill_value is a parameter */
    request r = {.dtype = values[1 + with_value], .fill = fill,
                 .fill_value = with_value ? values[1] : NULL};
    if (from_template || fill == FILL_COPY) {
        r.source = values[0];
        r.source_is_data = fill == FILL_COPY;
    } else {
        r.shape = values[0];
    }
    if (read_common(&r, values + 2 + with_value) < 0)
        return NULL;
    return run(&r, only_plan);
}

#define API_FUNCTION(fn, names, npos, nreq, fill, from_template, only_plan)             \
    static PyObject *api_##fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs, \
                              PyObject *kwnames)                                        \
    {                                                                                   \
        (void)self;                                                                     \
        SIGNATURE(#fn, names, npos, nreq);                                              \
        return call(&sig, fill, from_template, only_plan, args, nargs, kwnames);        \
    }

API_FUNCTION(empty, shape_names, 2, 1, FILL_NONE, false, false)
API_FUNCTION(zeros, shape_names, 2, 1, FILL_ZEROS, false, false)
API_FUNCTION(ones, shape_names, 2, 1, FILL_ONES, false, false)
API_FUNCTION(full, full_names, 3, 2, FILL_VALUE, false, false)
API_FUNCTION(plan, shape_names, 2, 1, FILL_NONE, false, true)
API_FUNCTION(from_array, data_names, 2, 1, FILL_COPY, false, false)
API_FUNCTION(empty_like, like_names, 2, 1, FILL_NONE, true, false)
API_FUNCTION(zeros_like, like_names, 2, 1, FILL_ZEROS, true, false)
API_FUNCTION(ones_like, like_names, 2, 1, FILL_ONES, true, false)
API_FUNCTION(full_like, full_like_names, 3, 2, FILL_VALUE, true, false)

#define COMMON_SIGNATURE                                                                  \
    "*, backend=None, aligned_index=None, dimensions=None, dims=None, alignment_size=None, " \
    "layout=None, device=None, defaults=None)\n--\n\n"
#define COMMON_DOC                                                                        \
    "\n\nKeywords (explicit values override the preset's):\n"                             \
    "  backend, defaults: name of a preset (aliases), e.g. 'gt:cpu_ifirst'.\n"            \
    "  aligned_index: index of the grid point whose address is aligned.\n"                \
    "  dims, dimensions: labels 'I', 'J', 'K', '0', ... (aliases), as a sequence or a\n"  \
    "    string such as 'IJK0'; they choose the layout by name.\n"                         \
    "  alignment_size: alignment of the aligned point, in bytes.\n"                        \
    "  layout: ranks in decreasing stride order, e.g. (2, 1, 0), or axis names\n"         \
    "    from the largest stride in, e.g. 'KJI'.\n"                                        \
    "  device: 'cpu' or 'gpu'.\n"                                                          \
    "Without a preset the layout is C order and the alignment 1 byte."

#define METHOD(fn, signature, doc)                                                        \
    {#fn, (PyCFunction)(void (*)(void))api_##fn, METH_FASTCALL | METH_KEYWORDS,           \
     #fn signature COMMON_SIGNATURE doc COMMON_DOC}

static PyObject *api_normalize_dims(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dims;
    const char *param = "dims";
    if (!PyArg_ParseTuple(args, "O|s:normalize_dims", &dims, &param))
        return NULL;
    gts_dim labels[GTS_MAX_NDIM];
    int ndim;
    return gtpy_dims(dims, param, &ndim, labels) < 0 ? NULL : gtpy_dims_to_tuple(ndim, labels);
}

PyMethodDef gtpy_arrays_methods[] = {
    {"normalize_dims", api_normalize_dims, METH_VARARGS,
     "normalize_dims(dims, param='dims')\n--\n\nDimension labels as a tuple of str, checked "
     "(errors name `param`): 'I', 'J', 'K' "
     "and data dimensions '0', '1', ..., none repeated. Accepts a string such as 'IJK0' or a "
     "sequence of labels (or of objects with __gt_axis_name__)."},
    METHOD(empty, "(shape, dtype=None, ",
           "An array of uninitialized values with the layout and alignment of the preset."),
    METHOD(zeros, "(shape, dtype=None, ", "An array of zeros; see empty()."),
    METHOD(ones, "(shape, dtype=None, ", "An array of ones; see empty()."),
    METHOD(full, "(shape, fill_value, dtype=None, ",
           "An array filled with fill_value; see empty()."),
    METHOD(from_array, "(data, dtype=None, ",
           "A copy of data with optimal layout; dtype defaults to the data's. Without a preset "
           "or layout the copy keeps the data's layout (as numpy.array does)."),
    METHOD(empty_like, "(a, dtype=None, ",
           "Like empty(), with the shape, dtype and layout (read from its strides) of a "
           "unless given."),
    METHOD(zeros_like, "(a, dtype=None, ", "Like zeros(); see empty_like()."),
    METHOD(ones_like, "(a, dtype=None, ", "Like ones(); see empty_like()."),
    METHOD(full_like, "(a, fill_value, dtype=None, ", "Like full(); see empty_like()."),
    METHOD(plan, "(shape, dtype=None, ",
           "The geometry empty() would allocate (shape, padded_shape, strides, layout, dims, "
           "alignment_size, nbytes, ...), without allocating."),
    {NULL, NULL, 0, NULL},
};
