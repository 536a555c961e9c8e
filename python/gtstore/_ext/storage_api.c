/* gtstore's creation functions (GDP-3): empty, zeros, ones, full, the *_like
 * functions, as_storage, storage and from_dlpack, all returning storages.
 * Parameters resolve as everywhere (request.c): explicit keyword, preset,
 * template or data, fallback. */
#include "allocation.h"
#include "api.h"
#include "args.h"
#include "convert.h"
#include "dlpack.h"
#include "errors.h"
#include "request.h"
#include "source.h"
#include "storage.h"

#include <string.h>

/* The keywords every function takes after its own, each read as
 * keywords.c declares it (of aliases, the first given names the value). */
#define KEYWORDS                                                                            \
    "defaults", "backend", "default_parameters", "aligned_index", "alignment_size", "alignment", \
        "device", "gpu", "dims", "axes", "halo", "layout", "layout_map", "managed"

/* ---- allocating --------------------------------------------------------------- */

/* Runs `action` with the request resolved, then releases the resolution. */
static PyObject *resolved_call(const gtpy_request *r, gtpy_source *src,
                               PyObject *(*action)(const gtpy_request *, gtpy_source *,
                                                   gtpy_resolved *))
{
    gtpy_resolved resolved;
    if (gtpy_request_spec(r, src, &resolved) < 0)
        return NULL;
    PyObject *result = action(r, src, &resolved);
    gtpy_resolved_release(&resolved);
    return result;
}

/* An allocation (a wrap needs no GPU: its memory is where it is). */
static PyObject *allocate_resolved(const gtpy_request *r, gtpy_source *src,
                                   gtpy_resolved *resolved)
{
    gts_storage s;
    if (gtpy_check_gpu(r, gtpy_spec(resolved)) < 0)
        return NULL;
    return gtpy_storage_allocate(r, src, resolved, &s);
}

static PyObject *allocate(const gtpy_request *r, gtpy_source *src)
{
    return resolved_call(r, src, allocate_resolved);
}

/* ---- wrapping ----------------------------------------------------------------- */

/* dims given for a storage must be its own: as_storage does not relabel. */
static int check_dims_kept(const gtpy_request *r, const gts_storage *data, const gts_storage *s)
{
    if (!r->dims || r->relabel ||
        memcmp(s->dims, data->dims, (size_t)data->ndim * sizeof *data->dims) == 0)
        return 0;
    PyObject *have = gtpy_dims_to_tuple(data->ndim, data->dims);
    if (have)
        PyErr_Format(PyExc_ValueError, "%s: %.200R conflicts with the dims %.200R of the data",
                     r->dims_param, r->dims, have);
    Py_XDECREF(have);
    return -1;
}

static PyObject *wrap_resolved(const gtpy_request *r, gtpy_source *src, gtpy_resolved *resolved)
{
    const gts_storage *data = &resolved->like_storage; /* if src->storage */
    gts_storage s;
    gts_error err;
    int rc;
    if (src->storage) { /* the same buffer: the same memory and sync state */
        rc = gts_storage_wrap(gtpy_spec(resolved), data->buffer, data->offset, src->strides,
                              data->readonly, &s, &err);
    } else if (src->memory && src->dtype_known) {
        rc = gtpy_source_wrap_in(src, gtpy_spec(resolved), &s, &err);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "data: %.200R cannot be wrapped: it exports no memory in a native dtype "
                     "that gtstore supports",
                     src->array);
        return NULL;
    }
    if (rc == GTS_ENOTSUP && (r->device || r->preset)) { /* the kind asked for: say who asked */
        PyErr_Format(PyExc_NotImplementedError, "%s=%.200R: %s",
                     r->device ? r->device_param : r->preset_param,
                     r->device ? r->device : r->preset, err.message);
        return NULL;
    }
    if (rc)
        return gtpy_raise_null(&err);
    if (src->storage && !src->imported && check_dims_kept(r, data, &s) < 0) {
        gts_storage_release(&s);
        return NULL;
    }
    PyObject *sync_state = src->storage ? gtpy_storage_sync_state(src->storage) : NULL;
    if (src->storage && !sync_state) {
        gts_storage_release(&s);
        return NULL;
    }
    PyObject *result = gtpy_storage_new(&s, gtpy_preset_name(r, src), sync_state);
    Py_XDECREF(sync_state);
    return result;
}

/* source.h */
PyObject *gtpy_data_interface_storage(PyObject *obj, const char *param, bool *labelled,
                                      PyObject **entry, const char **entry_name)
{
    gtpy_request r = {.fill = FILL_NONE, .source = obj, .source_is_data = true,
                      .storage_api = true};
    gtpy_source src;
    PyObject *result = NULL;
    int rc = gtpy_source_open_interface(&src, obj, param, GTS_DEVICE_GPU);
    if (rc > 0)
        result = resolved_call(&r, &src, wrap_resolved);
    *labelled = src.entry_ndims >= 0;
    if (entry && result) {
        *entry = Py_NewRef(src.entry);
        *entry_name = src.entry_name;
    }
    gtpy_source_release(&src);
    return result;
}

/* ---- the Python functions ----------------------------------------------------- */

static PyObject *with_source(gtpy_request *r, PyObject *(*action)(const gtpy_request *,
                                                                  gtpy_source *))
{
    gtpy_source src = {0};
    PyObject *result = NULL;
    gts_device device;
    if (!r->source || (gtpy_request_asked_device(r, &device) == 0 &&
                       gtpy_source_open(&src, r->source, "data", device) == 0))
        result = action(r, &src);
    gtpy_source_release(&src);
    return result;
}

/* [shape or data], [fill_value], dtype, *, keywords: the allocating functions. */
static PyObject *call(gtpy_signature *sig, gtpy_fill fill, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames)
{
    gtpy_request r = {.fill = fill, .storage_api = true};
    if (gtpy_request_parse(&r, sig, args, nargs, kwnames) < 0)
        return NULL;
    return with_source(&r, allocate);
}

static const char *const shape_names[] = {"shape", "dtype", KEYWORDS};
static const char *const full_names[] = {"shape", "fill_value", "dtype", KEYWORDS};
static const char *const like_names[] = {"data", "dtype", KEYWORDS};
static const char *const full_like_names[] = {"data", "fill_value", "dtype", KEYWORDS};

#define API_FUNCTION(fn, names, npos, nreq, fill)                                        \
    static PyObject *api_##fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,  \
                              PyObject *kwnames)                                         \
    {                                                                                    \
        (void)self;                                                                      \
        static gtpy_signature sig = GTPY_SIGNATURE(#fn, names, npos, nreq, 0);           \
        return call(&sig, fill, args, nargs, kwnames);                                   \
    }

API_FUNCTION(empty, shape_names, 2, 1, FILL_NONE)
API_FUNCTION(zeros, shape_names, 2, 1, FILL_ZEROS)
API_FUNCTION(ones, shape_names, 2, 1, FILL_ONES)
API_FUNCTION(full, full_names, 3, 2, FILL_VALUE)
API_FUNCTION(empty_like, like_names, 2, 1, FILL_NONE)
API_FUNCTION(zeros_like, like_names, 2, 1, FILL_ZEROS)
API_FUNCTION(ones_like, like_names, 2, 1, FILL_ONES)
API_FUNCTION(full_like, full_like_names, 3, 2, FILL_VALUE)

/* What as_storage and storage are given of data and device_data. */
typedef enum given { GIVEN_NEITHER, GIVEN_DATA, GIVEN_DEVICE_DATA, GIVEN_BOTH } given;

/* data, device_data and sync_state (None: not given), checked against
 * each other: sync_state says which side is current, so it needs both. */
static int check_data(gtpy_request *r, given *out)
{
    if (r->source == Py_None)
        r->source = NULL;
    if (r->device_data == Py_None)
        r->device_data = NULL;
    if (r->sync_state == Py_None)
        r->sync_state = NULL;
    if (r->sync_state && !(r->source && r->device_data)) {
        PyObject *text = gtpy_sync_state_text(r->sync_state);
        if (text)
            PyErr_Format(PyExc_ValueError,
                         "sync_state: %.200U says which of data and device_data is current; "
                         "it needs both",
                         text);
        Py_XDECREF(text);
        return -1;
    }
    *out = r->source ? (r->device_data ? GIVEN_BOTH : GIVEN_DATA)
                     : (r->device_data ? GIVEN_DEVICE_DATA : GIVEN_NEITHER);
    return 0;
}

/* Lists, tuples and scalars have no memory to wrap: NumPy would make a new
 * array, which a "no copy" function should not hide. */
static bool has_memory(PyObject *obj)
{
    return PyObject_CheckBuffer(obj) || PyObject_HasAttrString(obj, "__array_interface__") ||
           PyObject_HasAttrString(obj, "__cuda_array_interface__") ||
           PyObject_HasAttrString(obj, "__array__") || PyObject_HasAttrString(obj, "__dlpack__");
}

static PyObject *do_wrap(const gtpy_request *r, gtpy_source *src)
{
    if (!src->entry && !has_memory(r->source)) { /* a data interface entry is memory */
        PyErr_Format(PyExc_TypeError,
                     "data: %.80s has no memory to wrap (no __gt_data_interface__, buffer "
                     "protocol, array interface, CUDA array interface, __array__ or "
                     "__dlpack__); gtstore.storage(data) copies it",
                     Py_TYPE(r->source)->tp_name);
        return NULL;
    }
    return resolved_call(r, src, wrap_resolved);
}

/* device_data alone (GDP-3's final text): a device buffer, which as_storage
 * wraps as it wraps a device array given as data, and storage copies into
 * a new storage with a device side (device='gpu' unless given). Opened
 * once, as device memory: a data interface's "gpu" entry, acquired once. */
static PyObject *device_data_only(gtpy_request *r, bool copy)
{
    static PyObject *gpu; /* "gpu", kept for the life of the process */
    gts_device device = GTS_DEVICE_GPU;
    if (copy && r->device && gtpy_request_device(r->device, r->device_param, &device) < 0)
        return NULL;
    if (device != GTS_DEVICE_GPU) {
        PyErr_Format(PyExc_ValueError,
                     "%s=%.200R: storage(device_data=...) copies a device buffer into a storage "
                     "with a device side; for a host copy pass the buffer as data",
                     r->device_param, r->device);
        return NULL;
    }
    if (copy && !r->device && !gpu && !(gpu = PyUnicode_InternFromString("gpu")))
        return NULL;
    if (copy && !r->device) {
        r->device = gpu;
        r->device_param = "device";
    }
    gtpy_source src;
    if (gtpy_open_device_side(&src, r->device_data, "device_data") < 0)
        return NULL;
    r->source = r->device_data;
    r->device_data = NULL;
    PyObject *result = copy ? allocate(r, &src) : do_wrap(r, &src);
    gtpy_source_release(&src);
    return result;
}

static const char *const as_storage_names[] = {"data", "device_data", "sync_state", KEYWORDS};

static PyObject *api_as_storage(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    (void)self;
    static gtpy_signature sig = GTPY_SIGNATURE("as_storage", as_storage_names, 2, 0, 0);
    gtpy_request r = {.fill = FILL_NONE, .source_is_data = true, .storage_api = true};
    given given;
    if (gtpy_request_parse(&r, &sig, args, nargs, kwnames) < 0 || check_data(&r, &given) < 0)
        return NULL;
    switch (given) {
    case GIVEN_BOTH:
        return gtpy_storage_sides(&r, false);
    case GIVEN_DEVICE_DATA:
        return device_data_only(&r, false);
    case GIVEN_DATA:
        return with_source(&r, do_wrap);
    default:
        PyErr_SetString(PyExc_TypeError,
                        "as_storage() needs data (an array to wrap) or device_data (a device "
                        "buffer to wrap)");
        return NULL;
    }
}

/* storage() without data or device_data: with copy=False and a shape, an
 * uninitialized storage, as empty() makes one (GDP-3's final text). */
static PyObject *storage_from_shape(gtpy_request *r, int copy)
{
    if (r->shape && !copy) {
        r->fill = FILL_NONE;
        r->source_is_data = false;
        return with_source(r, allocate);
    }
    if (r->shape)
        PyErr_Format(PyExc_ValueError,
                     "copy: storage(shape=%.200R) allocates without data only with copy=False "
                     "(as empty()); copy=True needs data to copy",
                     r->shape);
    else
        PyErr_SetString(PyExc_TypeError,
                        "storage() needs data (an array to copy), device_data (a device buffer "
                        "to copy), or copy=False with shape= (an uninitialized storage, as "
                        "empty())");
    return NULL;
}

static const char *const storage_names[] = {"data", "device_data", "dtype", "copy",
                                            "sync_state", "shape", KEYWORDS};

static PyObject *api_storage(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    (void)self;
    static gtpy_signature sig = GTPY_SIGNATURE("storage", storage_names, 2, 0, 0);
    gtpy_request r = {.fill = FILL_COPY, .source_is_data = true, .storage_api = true};
    given given;
    int copy;
    if (gtpy_request_parse(&r, &sig, args, nargs, kwnames) < 0 || check_data(&r, &given) < 0 ||
        gtpy_copy_flag(r.copy, 1, 0, &copy) < 0)
        return NULL;
    if (r.shape == Py_None)
        r.shape = NULL;
    if (r.shape && given != GIVEN_NEITHER) {
        PyErr_Format(PyExc_TypeError,
                     "shape: storage() takes a shape only without data and device_data (%.200R "
                     "given); the data's shape is its own",
                     r.shape);
        return NULL;
    }
    if (given == GIVEN_NEITHER)
        return storage_from_shape(&r, copy);
    if (given == GIVEN_BOTH)
        return gtpy_storage_sides(&r, copy);
    if (!copy && r.dtype) {
        PyErr_SetString(PyExc_ValueError,
                        "dtype: storage(copy=False) wraps the data as it is; a dtype needs a copy");
        return NULL;
    }
    return given == GIVEN_DEVICE_DATA ? device_data_only(&r, copy)
                                      : with_source(&r, copy ? allocate : do_wrap);
}

static const char *const from_dlpack_names[] = {"x", "copy", KEYWORDS};

static PyObject *api_from_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    (void)self;
    static gtpy_signature sig = GTPY_SIGNATURE("from_dlpack", from_dlpack_names, 1, 1, 1);
    /* The imported storage is new: dims= labels it rather than relabels it. */
    gtpy_request r = {.fill = FILL_COPY, .source_is_data = true, .relabel = true,
                      .storage_api = true};
    if (gtpy_request_parse(&r, &sig, args, nargs, kwnames) < 0)
        return NULL;
    int copy;
    if (gtpy_copy_flag(r.copy, 0, 0, &copy) < 0 ||
        !(r.source = gtpy_storage_from_dlpack(r.source, "x")))
        return NULL;
    PyObject *result = with_source(&r, copy ? allocate : do_wrap);
    Py_DECREF(r.source);
    return result;
}

/* A GPU storage unpickled where no device plays the GPU: a host storage
 * with the same values and parameters, and a warning that says so (the
 * values stay readable; GDP-3's final text leaves the choice open). */
static int warn_host_fallback(PyObject *device, PyObject *managed)
{
    const gts_device_ops *gpu;
    gts_error err;
    if (gts_device_gpu(&gpu, &err) == GTS_OK)
        return 0;
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                            "unpickling a storage of device=%R, managed=%R without a GPU (%s): "
                            "loaded as a CPUStorage with the same values, dims, halo, layout and "
                            "alignment, as gtstore.storage(..., device='cpu') copies one",
                            device, managed, err.message) < 0
               ? -1
               : 1;
}

/* After the values went to the host side of a mirrored storage: the device
 * side gets them too, and the state becomes the one pickled. */
static int restore_sync_state(PyObject *storage, int state)
{
    gts_storage g;
    gts_error err;
    gtpy_storage_load(storage, &g);
    if (!gts_buffer_mirrored(g.buffer))
        return 0;
    if (gts_buffer_sync(g.buffer, GTS_SIDE_DEVICE, false, NULL, &err) != 0 ||
        gts_buffer_set_sync_state(g.buffer, (gts_sync_state)state, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

/* Unpickling: (values, dims, halo, aligned_index, alignment_size, layout,
 * preset, readonly[, device, managed, sync_state]) as Storage.__reduce__
 * writes them (pickles of older versions stop after readonly: host
 * storages). A GPU storage comes back on the device that plays the GPU. */
static PyObject *api_rebuild_storage(PyObject *self, PyObject *args)
{
    (void)self;
    static const char *const names[] = {"values", "dims", "halo", "aligned_index",
                                        "alignment_size", "layout", "preset", "readonly",
                                        "device", "managed", "sync_state"};
    static gtpy_signature sig = GTPY_SIGNATURE("_rebuild_storage", names, 11, 8, 11);
    PyObject *v[11];
    int state = GTS_SYNC_CLEAN;
    if (gtpy_parse_tuple(&sig, args, NULL, v) < 0 ||
        (v[10] && gtpy_c_int(v[10], "sync_state", &state) < 0))
        return NULL;
    PyObject *values = v[0], *dims = v[1], *halo = v[2], *aligned = v[3], *alignment = v[4];
    PyObject *layout = v[5], *preset = v[6], *readonly = v[7], *device = v[8], *managed = v[9];
    gtpy_request r = {.fill = FILL_COPY, .source = values, .source_is_data = true,
                      .storage_api = true, .dims = dims, .dims_param = "dims", .halo = halo,
                      .aligned_index = aligned, .alignment_size = alignment, .layout = layout,
                      .layout_param = "layout", .preset_param = "defaults", .device = device,
                      .device_param = "device", .managed = managed};
    int fallback = device && PyUnicode_Check(device) &&
                           PyUnicode_CompareWithASCIIString(device, "gpu") == 0
                       ? warn_host_fallback(device, managed)
                       : 0;
    if (fallback < 0)
        return NULL;
    if (fallback) {
        r.device = NULL; /* the values' device: the host */
        r.managed = NULL;
    }
    PyObject *storage = with_source(&r, allocate);
    if (!storage)
        return NULL;
    int ro = PyObject_IsTrue(readonly);
    if (ro < 0 || (!fallback && restore_sync_state(storage, state) < 0)) {
        Py_DECREF(storage);
        return NULL;
    }
    /* Recorded only: the preset may not be registered in this process. */
    gtpy_storage_restore(storage, preset == Py_None ? NULL : preset, ro);
    return storage;
}

#define COMMON_SIGNATURE                                                                     \
    "defaults=None, backend=None, default_parameters=None, aligned_index=None, "             \
    "alignment_size=None, alignment=None, device=None, gpu=None, dims=None, axes=None, "    \
    "halo=None, layout=None, layout_map=None, managed=None)\n--\n\n"
#define COMMON_DOC                                                                           \
    "\n\nKeywords (each from the first of: the keyword, the preset, the data or template, "  \
    "the fallback):\n"                                                                       \
    "  defaults, backend, default_parameters: a preset name (aliases), e.g.\n"              \
    "    'gt:cpu_ifirst'.\n"                                                                 \
    "  aligned_index: the index whose element is aligned; default: the lower halo.\n"       \
    "  alignment_size: alignment of that element in bytes; alignment: the same in\n"       \
    "    elements (GDP-3's first draft; both: they agree); default: the preset's\n"        \
    "    alignment times the itemsize, else the template's, else 1.\n"                     \
    "  device: 'cpu' or 'gpu' (None: the preset's); default 'cpu'. 'gpu' allocates on the\n" \
    "    device gtstore.gpu() names (CUDA, or the emulated device: gtstore.use_gpu).\n"     \
    "    gpu: True or False, the same as device='gpu' or 'cpu'.\n"                          \
    "  dims, axes: labels 'I', 'J', 'K', '0', ... (aliases); default 'IJK'[:ndim].\n"       \
    "  halo: per dimension an int or a pair (lower, upper); default none.\n"                \
    "  layout, layout_map: ranks in decreasing stride order such as (2, 1, 0), axis names\n" \
    "    from the largest stride in such as 'KJI', or a function of the dims (aliases);\n" \
    "    default: the preset's, else C order.\n"                                           \
    "  managed: for GPU storages, 'gt4py' (a host copy kept in sync; the default), None or\n" \
    "    False (device memory only) or 'cuda' (CUDA managed memory); no effect on the CPU.\n" \
    "A field whose dims are one or two of I, J and K also takes shape (with dims), halo,\n"   \
    "aligned_index and a layout tuple as 3 entries in I, J, K order: its dims' are used."

#define METHOD(fn, signature, doc)                                                           \
    {#fn, (PyCFunction)(void (*)(void))api_##fn, METH_FASTCALL | METH_KEYWORDS,              \
     #fn signature COMMON_SIGNATURE doc COMMON_DOC}

PyMethodDef gtpy_storage_api_methods[] = {
    METHOD(empty, "(shape, dtype='float64', *, ", "A storage of uninitialized values."),
    METHOD(zeros, "(shape, dtype='float64', *, ", "A storage of zeros."),
    METHOD(ones, "(shape, dtype='float64', *, ", "A storage of ones."),
    METHOD(full, "(shape, fill_value, dtype='float64', *, ", "A storage filled with fill_value."),
    METHOD(empty_like, "(data, dtype=None, *, ",
           "Like empty(), with what is not given taken from data: its shape (fixed), dtype, "
           "dims, layout and, for a storage, halo, aligned_index and alignment_size."),
    METHOD(zeros_like, "(data, dtype=None, *, ", "Like zeros(); see empty_like()."),
    METHOD(ones_like, "(data, dtype=None, *, ", "Like ones(); see empty_like()."),
    METHOD(full_like, "(data, fill_value, dtype=None, *, ", "Like full(); see empty_like()."),
    METHOD(as_storage, "(data=None, device_data=None, *, sync_state=None, ",
           "A storage over the memory of data, without copying: a storage (a view sharing its "
           "buffer), an object with __gt_data_interface__ (the entry of the device asked for, "
           "else the other; its acquire called first, its dims and halo taken), anything with "
           "the buffer protocol, the array interface or __array__, or a DLPack producer; "
           "device_data alone: a device buffer, wrapped the same way. Given parameters are "
           "checked against the memory: a layout that disagrees with the strides or an aligned "
           "point that is not aligned is an error."),
    METHOD(storage,
           "(data=None, device_data=None, *, dtype=None, copy=True, sync_state=None, "
           "shape=None, ",
           "A storage holding a copy of data in a new allocation (copy=True; dtype defaults "
           "to the data's), or wrapping it as as_storage() does (copy=False). device_data "
           "alone (a device buffer) is copied into a storage on the GPU (copy=True) or wrapped. "
           "Without data or device_data, copy=False with shape allocates as empty() does."),
    METHOD(from_dlpack, "(x, /, *, copy=None, ",
           "A storage over the memory a DLPack producer (x.__dlpack__) exports, without "
           "copying (copy=True: a copy in a new allocation)."),
    {"_rebuild_storage", api_rebuild_storage, METH_VARARGS, "Unpickling support."},
    {NULL, NULL, 0, NULL},
};
