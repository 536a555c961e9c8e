/* gtstore.arrays: empty, zeros, ones, full, from_array, the *_like
 * functions and plan. They resolve every parameter (explicit keyword, then
 * the preset, then the template or data, then the fallback), let libgtstore
 * compute the geometry and return a NumPy array over libgtstore memory (for
 * GPU presets, device memory from libgtstore as a CuPy array, or as NumPy
 * for the emulated device). */
#include "allocation.h"
#include "api.h"
#include "args.h"
#include "convert.h"
#include "request.h"
#include "source.h"
#include "storage.h"

#include <string.h>

/* The parameters: the leading ones per function, then the keywords all
 * share, each read as keywords.c declares it (of aliases, the first given
 * names the value). */
#define KEYWORDS                                                                           \
    "backend", "defaults", "aligned_index", "dims", "dimensions", "alignment_size", "layout", \
        "device"
static const char *const shape_names[] = {"shape", "dtype", KEYWORDS};
static const char *const full_names[] = {"shape", "fill_value", "dtype", KEYWORDS};
static const char *const data_names[] = {"data", "dtype", KEYWORDS};
static const char *const like_names[] = {"a", "dtype", KEYWORDS};
static const char *const full_like_names[] = {"a", "fill_value", "dtype", KEYWORDS};

/* ---- Plan: a resolved allocation, for inspection and the GPU path -------- */

/* A resolved spec and its geometry (its preset pointer is not kept). */
typedef struct {
    PyObject_HEAD
    gts_storage_spec spec;
    gts_geometry geometry;
} Plan;

static PyObject *plan_get(PyObject *self, void *closure)
{
    const gts_storage_spec *s = &((Plan *)self)->spec;
    const gts_geometry *g = &((Plan *)self)->geometry;
    int64_t layout[GTS_MAX_NDIM];
    switch ((int)(intptr_t)closure) {
    case 0: return gtpy_int64_tuple(g->ndim, g->shape);
    case 1: return gtpy_int64_tuple(g->ndim, g->padded_shape);
    case 2: return gtpy_int64_tuple(g->ndim, g->strides);
    case 3:
        for (int d = 0; d < g->ndim; ++d)
            layout[d] = g->layout[d];
        return gtpy_int64_tuple(g->ndim, layout);
    case 4: return gtpy_dims_to_tuple(g->ndim, s->dims);
    case 5: return gtpy_dtype_object(s->dtype);
    case 6: return PyLong_FromLongLong(g->alignment);
    case 7: return gtpy_int64_tuple(g->ndim, g->aligned_index);
    case 8: return PyUnicode_FromString(gtpy_device_name(s->device));
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

/* base: an address, an integer (a NumPy one too) from 0 to the largest
 * pointer (2**63 - 1 at most). */
static PyObject *plan_offset(PyObject *self, PyObject *base)
{
    int64_t address;
    if (gtpy_int(base, "base", &address) < 0)
        return NULL;
    if (address < 0 || (uint64_t)address > (uint64_t)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "base: %lld is not an address (0 or more)",
                     (long long)address);
        return NULL;
    }
    return PyLong_FromLongLong(gts_geometry_offset(&((Plan *)self)->geometry,
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
                                    (long long)((Plan *)self)->geometry.alignment,
                                    gtpy_device_name(((Plan *)self)->spec.device));
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(dims);
    Py_XDECREF(dtype);
    return repr;
}

static PyMethodDef plan_methods[] = {
    {"offset", plan_offset, METH_O,
     "offset(base)\n--\n\nByte offset of element 0 from a block at address `base` (an integer, "
     "0 or more) that makes the aligned point aligned."},
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

static PyObject *plan_new(const gts_storage_spec *spec, const gts_geometry *geometry)
{
    Plan *plan = PyObject_New(Plan, &gtpy_Plan_Type);
    if (plan) { /* the geometry is all it reads: it keeps no preset */
        gts_storage_spec_copy(&plan->spec, spec);
        plan->spec.preset = NULL;
        plan->geometry = *geometry;
    }
    return (PyObject *)plan;
}

/* ---- allocation -------------------------------------------------------- */

/* The storage gtstore.Storage's creation functions make (the same library
 * call, filled or copied the same way), as an array whose base it is: an
 * ndarray of host memory; for GPU presets, device memory only (an array
 * library's GPU array has no host copy), as CuPy sees it (to_cupy), or for
 * the emulated device as NumPy sees its memory. */
static PyObject *allocate(const gtpy_request *r, gtpy_source *src, gtpy_resolved *resolved)
{
    bool gpu = gts_storage_spec_device(gtpy_spec(resolved)) == GTS_DEVICE_GPU;
    if (gpu && gtpy_check_gpu(r, &resolved->spec) < 0)
        return NULL;
    resolved->spec.managed = GTS_MANAGED_NONE;
    gts_storage s;
    PyObject *storage = gtpy_storage_allocate(r, src, resolved, &s);
    PyObject *array = !storage ? NULL
                      : gpu    ? gtpy_storage_to_ndarray(storage, NULL)
                               : gtpy_storage_ndarray_over(&s, storage, true);
    Py_XDECREF(storage);
    return array;
}

static PyObject *run(gtpy_request *r, bool only_plan)
{
    gtpy_source src = {0};
    gts_device device;
    if (r->source && (gtpy_request_asked_device(r, &device) < 0 ||
                      gtpy_source_open(&src, r->source, r->source_is_data ? "data" : "a",
                                       device) < 0)) {
        gtpy_source_release(&src);
        return NULL;
    }
    gtpy_resolved resolved;
    gts_geometry geometry;
    PyObject *result = NULL;
    if (only_plan && gtpy_request_resolve(r, &src, &resolved, &geometry) == 0) {
        result = plan_new(&resolved.spec, &geometry);
        gtpy_resolved_release(&resolved);
    } else if (!only_plan && gtpy_request_spec(r, &src, &resolved) == 0) {
        result = allocate(r, &src, &resolved);
        gtpy_resolved_release(&resolved);
    }
    gtpy_source_release(&src);
    return result;
}

/* ---- the Python functions ---------------------------------------------- */

/* [shape, a or data], [fill_value], dtype, *, keywords: one body for all. */
static PyObject *call(gtpy_signature *sig, gtpy_fill fill, bool only_plan, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames)
{
    gtpy_request r = {.fill = fill, .source_is_data = fill == FILL_COPY};
    if (gtpy_request_parse(&r, sig, args, nargs, kwnames) < 0)
        return NULL;
    return run(&r, only_plan);
}

#define API_FUNCTION(fn, names, npos, nreq, fill, only_plan)                            \
    static PyObject *api_##fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs, \
                              PyObject *kwnames)                                        \
    {                                                                                   \
        (void)self;                                                                     \
        static gtpy_signature sig = GTPY_SIGNATURE(#fn, names, npos, nreq, 0);          \
        return call(&sig, fill, only_plan, args, nargs, kwnames);                       \
    }

API_FUNCTION(empty, shape_names, 2, 1, FILL_NONE, false)
API_FUNCTION(zeros, shape_names, 2, 1, FILL_ZEROS, false)
API_FUNCTION(ones, shape_names, 2, 1, FILL_ONES, false)
API_FUNCTION(full, full_names, 3, 2, FILL_VALUE, false)
API_FUNCTION(plan, shape_names, 2, 1, FILL_NONE, true)
API_FUNCTION(from_array, data_names, 2, 1, FILL_COPY, false)
API_FUNCTION(empty_like, like_names, 2, 1, FILL_NONE, false)
API_FUNCTION(zeros_like, like_names, 2, 1, FILL_ZEROS, false)
API_FUNCTION(ones_like, like_names, 2, 1, FILL_ONES, false)
API_FUNCTION(full_like, full_like_names, 3, 2, FILL_VALUE, false)

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

/* The arguments of a normalize_ function: the value, and the name its
 * errors give (`param`, a str; `fallback` where not given). */
static int normalize_args(gtpy_signature *sig, PyObject *args, const char *fallback,
                          PyObject **value, const char **param)
{
    PyObject *v[2];
    if (gtpy_parse_tuple(sig, args, NULL, v) < 0)
        return -1;
    *value = v[0];
    *param = fallback;
    if (v[1] && !(PyUnicode_Check(v[1]) && (*param = gtpy_text(v[1], "param")))) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "param: expected a str, got %.200R", v[1]);
        return -1;
    }
    return 0;
}

static PyObject *api_normalize_dims(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *const names[] = {"dims", "param"};
    static gtpy_signature sig = GTPY_SIGNATURE("normalize_dims", names, 2, 1, 2);
    PyObject *dims;
    const char *param;
    if (normalize_args(&sig, args, "dims", &dims, &param) < 0)
        return NULL;
    gts_dim labels[GTS_MAX_NDIM];
    int ndim;
    return gtpy_dims(dims, param, &ndim, labels) < 0 ? NULL : gtpy_dims_to_tuple(ndim, labels);
}

static PyObject *api_normalize_shape(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *const names[] = {"shape", "param"};
    static gtpy_signature sig = GTPY_SIGNATURE("normalize_shape", names, 2, 1, 2);
    PyObject *shape;
    const char *param;
    if (normalize_args(&sig, args, "shape", &shape, &param) < 0)
        return NULL;
    int64_t extents[GTS_MAX_NDIM];
    int ndim;
    return gtpy_shape(shape, param, &ndim, extents) < 0 ? NULL : gtpy_int64_tuple(ndim, extents);
}

/* gtstore.arrays' get_dims and get_origin read the protocol attributes as
 * a stencil call does: None without one, else the value (and for the
 * origin the attribute's name, for messages). */
static PyObject *api_protocol_dims(PyObject *self, PyObject *x)
{
    (void)self;
    PyObject *dims;
    int found = gtpy_gt_dims(x, &dims);
    return found < 0 ? NULL : found ? dims : Py_NewRef(Py_None);
}

static PyObject *api_protocol_origin(PyObject *self, PyObject *x)
{
    (void)self;
    PyObject *origin;
    const char *name;
    int found = gtpy_gt_origin(x, &origin, &name);
    return found < 0 ? NULL : found ? Py_BuildValue("(sN)", name, origin) : Py_NewRef(Py_None);
}

PyMethodDef gtpy_arrays_methods[] = {
    {"_protocol_dims", api_protocol_dims, METH_O,
     "_protocol_dims(x)\n--\n\nx.__gt_dims__ (called where it is a method), or None."},
    {"_protocol_origin", api_protocol_origin, METH_O,
     "_protocol_origin(x)\n--\n\n(name, value) of x.__gt_origin__, else of x.default_origin; "
     "None without either."},
    {"normalize_dims", api_normalize_dims, METH_VARARGS,
     "normalize_dims(dims, param='dims')\n--\n\nDimension labels as a tuple of str, checked "
     "(errors name `param`): 'I', 'J', 'K' "
     "and data dimensions '0', '1', ..., none repeated. Accepts a string such as 'IJK0' or a "
     "sequence of labels (or of objects with __gt_axis_name__)."},
    {"normalize_shape", api_normalize_shape, METH_VARARGS,
     "normalize_shape(shape, param='shape')\n--\n\nA shape as a tuple of int, checked as "
     "the creation functions check theirs (errors name `param`): an integer or a sequence of "
     "integers (not bools), none negative, at most GTS_MAX_NDIM."},
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
