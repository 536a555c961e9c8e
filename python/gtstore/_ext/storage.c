/* gtstore.Storage: a view of a libgtstore buffer with dims, halo and an
 * aligned point (GDP-3). The object stores what libgtstore's gts_storage
 * holds, compactly (its field list, ndim entries each); every operation
 * loads it into a gts_storage, lets libgtstore compute, and stores the
 * result in a new object. CPUStorage is the kind with host memory only.
 * Indexing and NumPy interop are in storage_index.c and storage_interop.c. */
#include "axes.h"
#include "storage_array_api.h"
#include "storage_object.h"
#include "ufunc.h"

#include <stddef.h>
#include <string.h>

/* Loading and storing walk the packed arrays in order, element by element:
 * for the few dimensions of a field that is faster than a memcpy call per
 * array (slicing is measured against NumPy's). */
#define LOAD_FIELD(type, name, comment)          \
    for (int d = 0; d < n; ++d)                  \
        out->name[d] = ((const type *)packed)[d]; \
    packed += (size_t)n * sizeof(type);
#define STORE_FIELD(type, name, comment)   \
    for (int d = 0; d < n; ++d)            \
        ((type *)packed)[d] = g->name[d];  \
    packed += (size_t)n * sizeof(type);

void gtpy_storage_load(PyObject *obj, gts_storage *out)
{
    const StorageObject *s = STORAGE(obj);
    out->buffer = s->buffer;
    out->offset = s->offset;
    out->dtype = s->dtype;
    out->ndim = s->ndim;
    out->readonly = s->readonly;
    out->alignment_size = s->alignment_size;
    const char *packed = (const char *)s->fields;
    int n = s->ndim;
    GTS_STORAGE_DIM_FIELDS(LOAD_FIELD)
}

/* The type a storage over `buffer` has: host memory, device memory with a
 * host side (mirrored), host-accessible device memory (managed), or device
 * memory only. */
static PyTypeObject *storage_type_of(const gts_buffer *buffer)
{
    const gts_device_ops *device = gts_buffer_device(buffer);
    if (device->kind == GTS_MEMORY_HOST)
        return &gtpy_CPUStorage_Type;
    if (gts_buffer_mirrored(buffer))
        return &gtpy_SoftwareManagedGPUStorage_Type;
    if (device->kind == GTS_MEMORY_MANAGED)
        return &gtpy_CudaManagedGPUStorage_Type;
    return device->host_accessible ? &gtpy_CPUStorage_Type : &gtpy_GPUStorage_Type;
}

PyObject *gtpy_storage_new(gts_storage *g, PyObject *preset, PyObject *sync_state)
{
    StorageObject *s = PyObject_NewVar(StorageObject, storage_type_of(g->buffer),
                                       (Py_ssize_t)DIM_BYTES * g->ndim);
    if (!s) {
        gts_storage_release(g);
        return NULL;
    }
    s->buffer = g->buffer; /* the reference moves into the object */
    g->buffer = NULL;
    s->offset = g->offset;
    s->alignment_size = g->alignment_size;
    s->dtype = g->dtype;
    s->ndim = g->ndim;
    s->readonly = g->readonly;
    s->exports = 0;
    s->sync_state = Py_XNewRef(sync_state);
    s->preset = Py_XNewRef(preset);
    char *packed = (char *)s->fields;
    int n = g->ndim;
    GTS_STORAGE_DIM_FIELDS(STORE_FIELD)
    return (PyObject *)s;
}

PyObject *gtpy_storage_preset(PyObject *obj)
{
    return STORAGE(obj)->preset;
}

void gtpy_storage_restore(PyObject *obj, PyObject *preset, bool readonly)
{
    Py_XSETREF(STORAGE(obj)->preset, Py_XNewRef(preset));
    STORAGE(obj)->readonly = readonly;
}

/* A view made from `self`: same preset, same sync state. */
PyObject *gtpy_storage_derived(PyObject *self, gts_storage *view)
{
    PyObject *sync = gtpy_storage_sync_state(self);
    if (!sync) {
        gts_storage_release(view);
        return NULL;
    }
    PyObject *result = gtpy_storage_new(view, STORAGE(self)->preset, sync);
    Py_DECREF(sync);
    return result;
}

static void storage_dealloc(PyObject *self)
{
    StorageObject *s = STORAGE(self);
    assert(s->exports == 0); /* every export holds a reference */
    gts_buffer_release(s->buffer);
    Py_XDECREF(s->sync_state);
    Py_XDECREF(s->preset);
    Py_TYPE(self)->tp_free(self);
}

/* ---- SyncState ----------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    gts_buffer *buffer;
} SyncStateObject;

PyObject *gtpy_storage_sync_state(PyObject *obj)
{
    StorageObject *s = STORAGE(obj);
    if (!s->sync_state) {
        SyncStateObject *state = PyObject_New(SyncStateObject, &gtpy_SyncState_Type);
        if (!state)
            return NULL;
        state->buffer = gts_buffer_retain(s->buffer);
        s->sync_state = (PyObject *)state;
    }
    return Py_NewRef(s->sync_state);
}

gts_buffer *gtpy_sync_state_buffer(PyObject *sync_state)
{
    return ((SyncStateObject *)sync_state)->buffer;
}

static void sync_state_dealloc(PyObject *self)
{
    gts_buffer_release(((SyncStateObject *)self)->buffer);
    Py_TYPE(self)->tp_free(self);
}

static const char *const sync_state_names[] = {"SYNC_CLEAN", "SYNC_HOST_DIRTY",
                                               "SYNC_DEVICE_DIRTY"};

static PyObject *sync_state_get_state(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(gts_buffer_sync_state(((SyncStateObject *)self)->buffer));
}

static PyObject *sync_state_repr(PyObject *self)
{
    return PyUnicode_FromFormat("SyncState(%s)",
                                sync_state_names[gts_buffer_sync_state(
                                    ((SyncStateObject *)self)->buffer)]);
}

static PyGetSetDef sync_state_getset[] = {
    {"state", sync_state_get_state, NULL,
     "SYNC_CLEAN, SYNC_HOST_DIRTY or SYNC_DEVICE_DIRTY: which copy of the buffer was modified "
     "last. Host-only storages are always SYNC_CLEAN.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gtpy_SyncState_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.SyncState",
    .tp_doc = "Which copy (host or device) of a buffer is current; shared by every view of "
              "the buffer (storage.sync_state).",
    .tp_basicsize = sizeof(SyncStateObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = sync_state_dealloc,
    .tp_repr = sync_state_repr,
    .tp_getset = sync_state_getset,
};

/* ---- attributes ------------------------------------------------------------- */

PyObject *gtpy_storage_get(PyObject *self, void *closure)
{
    StorageObject *s = STORAGE(self);
    gts_storage g;
    gtpy_storage_load(self, &g);
    int64_t values[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    switch ((int)(intptr_t)closure) {
    case GET_SHAPE: return gtpy_int64_tuple(g.ndim, g.shape);
    case GET_STRIDES: return gtpy_int64_tuple(g.ndim, g.strides);
    case GET_ALIGNED: return gtpy_int64_tuple(g.ndim, g.aligned_index);
    case GET_ORIGIN:
        for (int d = 0; d < g.ndim; ++d)
            values[d] = g.halo[d].lower;
        return gtpy_int64_tuple(g.ndim, values);
    case GET_NDIM: return PyLong_FromLong(s->ndim);
    case GET_SIZE: return PyLong_FromLongLong(gts_storage_size(&g));
    case GET_ITEMSIZE: return PyLong_FromLong(s->dtype.itemsize);
    case GET_NBYTES: return PyLong_FromLongLong(gts_storage_nbytes(&g));
    case GET_DIMS: return gtpy_dims_to_tuple(g.ndim, g.dims);
    case GET_HALO: return gtpy_halo_to_tuple(g.ndim, g.halo);
    case GET_DOMAIN_SHAPE:
        gts_storage_domain_shape(&g, values);
        return gtpy_int64_tuple(g.ndim, values);
    case GET_ALIGNMENT: return PyLong_FromLongLong(s->alignment_size);
    case GET_LAYOUT:
        gts_storage_layout(&g, layout);
        for (int d = 0; d < g.ndim; ++d)
            values[d] = layout[d];
        return gtpy_int64_tuple(g.ndim, values);
    case GET_DTYPE: return gtpy_dtype_object(s->dtype);
    case GET_PRESET: return Py_NewRef(s->preset ? s->preset : Py_None);
    default: Py_RETURN_NONE;
    }
}

static int storage_set_halo(PyObject *self, PyObject *value, void *closure)
{
    (void)closure;
    StorageObject *s = STORAGE(self);
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "halo: cannot be deleted");
        return -1;
    }
    gts_storage g;
    gts_error err;
    gtpy_storage_load(self, &g);
    gts_halo halo[GTS_MAX_NDIM];
    if (gtpy_halo(value, s->ndim, s->ndim, halo) < 0)
        return -1;
    if (gts_storage_set_halo(&g, halo, &err) != 0)
        return gtpy_raise(&err);
    memcpy(FIELD(s, halo), g.halo, (size_t)g.ndim * sizeof *g.halo);
    return 0;
}

static PyObject *storage_domain_view(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g, view;
    gts_error err;
    gtpy_storage_load(self, &g);
    gts_storage_view(&g, &view);
    if (gts_storage_domain(&view, &err) != 0) {
        gts_storage_release(&view);
        return gtpy_raise_null(&err);
    }
    return gtpy_storage_derived(self, &view);
}

/* The host memory; None where there is none (a GPUStorage). */
static PyObject *storage_data(PyObject *self, void *closure)
{
    (void)closure;
    if (!gtpy_has_host_side(STORAGE(self)->buffer))
        Py_RETURN_NONE;
    return PyMemoryView_FromObject(self);
}

static PyObject *storage_sync_state(PyObject *self, void *closure)
{
    (void)closure;
    return gtpy_storage_sync_state(self);
}

#define GETTER(name, which, doc) {name, gtpy_storage_get, NULL, doc, (void *)(intptr_t)(which)}

static PyGetSetDef storage_getset[] = {
    GETTER("shape", GET_SHAPE, "The extent of each dimension, halo included."),
    GETTER("strides", GET_STRIDES, "Byte strides (padding included)."),
    GETTER("ndim", GET_NDIM, "Number of dimensions."),
    GETTER("size", GET_SIZE, "Number of elements."),
    GETTER("itemsize", GET_ITEMSIZE, "Bytes per element."),
    GETTER("nbytes", GET_NBYTES, "Bytes of the elements (padding excluded)."),
    GETTER("dtype", GET_DTYPE, "The element type (a numpy.dtype)."),
    GETTER("dims", GET_DIMS, "Dimension labels: 'I', 'J', 'K' and data dimensions '0', ...."),
    {"halo", gtpy_storage_get, storage_set_halo,
     "((lower, upper), ...) per dimension. Settable with ints (symmetric) or pairs; the "
     "aligned point does not move.",
     (void *)(intptr_t)GET_HALO},
    GETTER("domain_shape", GET_DOMAIN_SHAPE, "The shape without the halo."),
    {"domain_view", storage_domain_view, NULL,
     "A view without the halo: its index 0 is the first domain point.", NULL},
    GETTER("aligned_index", GET_ALIGNED,
           "The index whose element sits at a multiple of alignment_size bytes."),
    GETTER("alignment_size", GET_ALIGNMENT, "Alignment of the aligned point, in bytes."),
    GETTER("layout", GET_LAYOUT,
           "Rank of each dimension in decreasing stride order (the highest is contiguous)."),
    GETTER("defaults", GET_PRESET, "The preset the storage was made with, or None."),
    {"data", storage_data, NULL,
     "A memoryview of the host memory (brought up to date first); None without one.", NULL},
    {"device", gtpy_storage_device, NULL,
     "The device of the device buffer ('cuda:0', 'emulated', ...); None for host storages.",
     NULL},
    {"device_data", gtpy_storage_device_data, NULL,
     "The device buffer: the data of to_ndarray() (a CuPy MemoryPointer on CUDA); None for "
     "host storages.",
     NULL},
    {"__cuda_array_interface__", gtpy_storage_cuda_array_interface, NULL,
     "CUDA array interface, version 3, for storages in CUDA memory only (stream None: "
     "gtstore's work has completed when it returns).",
     NULL},
    {"T", gtpy_storage_T, NULL, "The transposed view (dims reversed), as transpose().", NULL},
    {"__array_priority__", gtpy_storage_array_priority, NULL,
     "11 for the managed storage types, 10 for the others (GDP-3's first draft).", NULL},
    {"sync_state", storage_sync_state, NULL,
     "The SyncState shared by every view of the buffer.", NULL},
    {"__array_interface__", gtpy_storage_array_interface, NULL, "NumPy array interface, version 3.",
     NULL},
    GETTER("__gt_dims__", GET_DIMS, "The dimension labels (GT4Py's dims protocol)."),
    GETTER("__gt_origin__", GET_ORIGIN, "The default origin for stencils: the lower halo."),
    {"__gt_data_interface__", gtpy_storage_gt_data_interface, NULL,
     "{None: buffer info}: shape, typestr, data, strides, dims, halo and the acquire, touch "
     "and release callbacks (GDP-3).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- methods -------------------------------------------------------------------- */

static PyObject *storage_copy(PyObject *self, PyObject *unused)
{
    (void)unused;
    gts_storage g, copy;
    gts_error err;
    int rc;
    gtpy_storage_load(self, &g);
    Py_BEGIN_ALLOW_THREADS
    rc = gts_storage_copy(&g, &copy, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return gtpy_raise_null(&err);
    return gtpy_storage_new(&copy, STORAGE(self)->preset, NULL);
}

static PyObject *storage_deepcopy(PyObject *self, PyObject *memo)
{
    (void)memo;
    return storage_copy(self, NULL);
}

/* transpose(), transpose(None), transpose((1, 0)), transpose(1, 0) or the
 * same with dim labels, transpose("K", "J", "I") (axes.h). */
PyObject *gtpy_storage_transpose(PyObject *self, PyObject *args)
{
    PyObject *axes = args;
    if (PyTuple_GET_SIZE(args) == 1 && !gtpy_is_integer(PyTuple_GET_ITEM(args, 0)) &&
        !PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
        axes = PyTuple_GET_ITEM(args, 0);
    gts_storage g, view;
    gts_error err;
    gtpy_storage_load(self, &g);
    int order[GTS_MAX_NDIM], *given = NULL;
    if (axes != Py_None && !(axes == args && PyTuple_GET_SIZE(args) == 0)) {
        int n, rc = -1;
        PyObject *items = PySequence_Fast(axes, "axes: expected a sequence of axes");
        if (items && PySequence_Fast_GET_SIZE(items) != g.ndim)
            PyErr_Format(PyExc_ValueError, "axes: %.200R don't match array of %d dimensions",
                         axes, g.ndim);
        else if (items)
            rc = gtpy_axes(items, &g, "axes", &n, order);
        Py_XDECREF(items);
        if (rc < 0)
            return NULL;
        given = order;
    }
    gts_storage_view(&g, &view);
    if (gts_storage_transpose(&view, given, &err) != 0) {
        gts_storage_release(&view);
        return gtpy_raise_null(&err);
    }
    return gtpy_storage_derived(self, &view);
}

/* The host/device sync methods (gtstore/sync.h): whole-allocation copies
 * on a mirrored buffer; on a buffer with one side (a CPUStorage) they only
 * check their arguments. */
static const char *const force_names[] = {"force"};

static PyObject *sync_with_force(PyObject *self, gtpy_signature *sig, gts_side to,
                                 PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *values[1];
    int force = 0;
    gts_error err;
    if (gtpy_parse_args(sig, args, nargs, kwnames, values) < 0 ||
        (values[0] && (force = PyObject_IsTrue(values[0])) < 0))
        return NULL;
    if (gts_buffer_sync(STORAGE(self)->buffer, to, force, NULL, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *storage_device_to_host(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames)
{
    static gtpy_signature sig = GTPY_SIGNATURE("device_to_host", force_names, 1, 0, 0);
    return sync_with_force(self, &sig, GTS_SIDE_HOST, args, nargs, kwnames);
}

static PyObject *storage_host_to_device(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames)
{
    static gtpy_signature sig = GTPY_SIGNATURE("host_to_device", force_names, 1, 0, 0);
    return sync_with_force(self, &sig, GTS_SIDE_DEVICE, args, nargs, kwnames);
}

static PyObject *storage_mark(PyObject *self, gts_sync_state state)
{
    gts_error err;
    if (gts_buffer_set_sync_state(STORAGE(self)->buffer, state, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

static PyObject *storage_set_host_modified(PyObject *self, PyObject *unused)
{
    (void)unused;
    return storage_mark(self, GTS_SYNC_HOST_DIRTY);
}

static PyObject *storage_set_device_modified(PyObject *self, PyObject *unused)
{
    (void)unused;
    return storage_mark(self, GTS_SYNC_DEVICE_DIRTY);
}

static PyObject *storage_set_synchronized(PyObject *self, PyObject *unused)
{
    (void)unused;
    return storage_mark(self, GTS_SYNC_CLEAN);
}

/* Whichever side is stale is brought up to date: one copy at most. */
static PyObject *storage_synchronize(PyObject *self, PyObject *unused)
{
    (void)unused;
    gts_buffer *buffer = STORAGE(self)->buffer;
    gts_error err;
    if (gts_buffer_sync(buffer, GTS_SIDE_HOST, false, NULL, &err) != 0 ||
        gts_buffer_sync(buffer, GTS_SIDE_DEVICE, false, NULL, &err) != 0)
        return gtpy_raise_null(&err);
    Py_RETURN_NONE;
}

PyObject *gtpy_storage_host_values(PyObject *self)
{
    gts_storage g, copy;
    gts_error err;
    gtpy_storage_load(self, &g);
    if (gts_buffer_host(g.buffer) || gts_storage_size(&g) == 0)
        return gtpy_storage_ndarray(self, false);
    if (gts_storage_copy_to(gts_device_host(), &g, &copy, &err) != 0)
        return gtpy_raise_null(&err);
    PyObject *host = gtpy_storage_new(&copy, NULL, NULL);
    PyObject *array = host ? gtpy_storage_ndarray(host, false) : NULL;
    Py_XDECREF(host);
    return array;
}

/* Who keeps a GPU storage's sides equal, as managed= names it. */
static PyObject *managed_name(const gts_buffer *buffer)
{
    if (gts_buffer_mirrored(buffer))
        return PyUnicode_FromString("gt4py");
    if (gts_buffer_device(buffer)->kind == GTS_MEMORY_MANAGED)
        return PyUnicode_FromString("cuda");
    Py_RETURN_NONE;
}

/* Pickling: the values (a C-ordered ndarray, read from the current side)
 * and every parameter: dims, halo, aligned point, alignment, layout,
 * preset, read-only flag, the device kind, managed= and the sync state
 * (read after the values, which may have synced the host side). */
static PyObject *storage_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    StorageObject *s = STORAGE(self);
    PyObject *module = PyImport_ImportModule("gtstore._gtstore");
    PyObject *rebuild = module ? PyObject_GetAttrString(module, "_rebuild_storage") : NULL;
    Py_XDECREF(module);
    PyObject *array = rebuild ? gtpy_storage_host_values(self) : NULL;
    PyObject *values = array ? PyObject_CallMethod(array, "copy", NULL) : NULL;
    Py_XDECREF(array);
    if (!values) {
        Py_XDECREF(rebuild);
        return NULL;
    }
    bool gpu = gts_buffer_device_kind(s->buffer) == GTS_DEVICE_GPU;
    return Py_BuildValue("(N(NNNNNNOOsNi))", rebuild, values,
                         gtpy_storage_get(self, (void *)(intptr_t)GET_DIMS),
                         gtpy_storage_get(self, (void *)(intptr_t)GET_HALO),
                         gtpy_storage_get(self, (void *)(intptr_t)GET_ALIGNED),
                         gtpy_storage_get(self, (void *)(intptr_t)GET_ALIGNMENT),
                         gtpy_storage_get(self, (void *)(intptr_t)GET_LAYOUT),
                         s->preset ? s->preset : Py_None, s->readonly ? Py_True : Py_False,
                         gpu ? "gpu" : "cpu", managed_name(s->buffer),
                         (int)gts_buffer_sync_state(s->buffer));
}

static PyObject *storage_repr(PyObject *self)
{
    StorageObject *s = STORAGE(self);
    PyObject *array = gtpy_storage_host_values(self);
    PyObject *array2string = array ? gtpy_numpy("array2string") : NULL;
    const char *type = strrchr(Py_TYPE(self)->tp_name, '.');
    type = type ? type + 1 : Py_TYPE(self)->tp_name;
    PyObject *prefix = PyUnicode_FromFormat("%s(", type);
    PyObject *kwargs = prefix ? Py_BuildValue("{s:s,s:O}", "separator", ", ", "prefix", prefix)
                              : NULL;
    PyObject *values = NULL, *result = NULL;
    if (array2string && kwargs) {
        PyObject *call_args = PyTuple_Pack(1, array);
        values = call_args ? PyObject_Call(array2string, call_args, kwargs) : NULL;
        Py_XDECREF(call_args);
    }
    if (values) {
        PyObject *dtype = gtpy_storage_get(self, (void *)(intptr_t)GET_DTYPE);
        PyObject *dims = gtpy_storage_get(self, (void *)(intptr_t)GET_DIMS);
        PyObject *halo = gtpy_storage_get(self, (void *)(intptr_t)GET_HALO);
        if (dtype && dims && halo)
            result = PyUnicode_FromFormat("%s(%U, dtype=%S, dims=%R, halo=%R, defaults=%R)",
                                          type, values, dtype, dims, halo,
                                          s->preset ? s->preset : Py_None);
        Py_XDECREF(dtype);
        Py_XDECREF(dims);
        Py_XDECREF(halo);
    }
    Py_XDECREF(values);
    Py_XDECREF(kwargs);
    Py_XDECREF(prefix);
    Py_XDECREF(array);
    return result;
}

#define FASTCALL(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL | METH_KEYWORDS
#define REDUCTION_METHOD(name, doc)                                                         \
    {#name, (PyCFunction)(void (*)(void))gtpy_storage_##name, METH_VARARGS | METH_KEYWORDS, \
     #name "($self, /, axis=None, **kwargs)\n--\n\n" doc " NumPy's parameters (axes also by dim " \
     "label, axis='K'); a storage of the remaining dims, or NumPy's scalar where none remain."}

static PyMethodDef storage_methods[] = {
    {"copy", storage_copy, METH_NOARGS,
     "copy()\n--\n\nA new storage with the same parameters (dims, halo, aligned_index, "
     "alignment_size, layout) in new memory, holding a copy of the values."},
    {"__copy__", storage_copy, METH_NOARGS, "__copy__()\n--\n\nThe same as copy()."},
    {"__deepcopy__", storage_deepcopy, METH_O, "__deepcopy__(memo)\n--\n\nThe same as copy()."},
    {"transpose", gtpy_storage_transpose, METH_VARARGS,
     "transpose(*axes)\n--\n\nA view with the dimensions permuted (reversed without axes); "
     "axes are positions or dim labels (transpose('K', 'J', 'I')); dims, halo and "
     "aligned_index move with them."},
    {"to_numpy", gtpy_storage_to_numpy, METH_NOARGS,
     "to_numpy()\n--\n\nA numpy.ndarray viewing the host memory (no copy)."},
    {"to_ndarray", gtpy_storage_to_ndarray, METH_NOARGS,
     "to_ndarray()\n--\n\nThe device buffer if there is one (a CuPy array on CUDA, a "
     "numpy.ndarray of the emulated device's memory), else the host memory as a "
     "numpy.ndarray; no copy. The side returned is marked written."},
    {"to_cupy", gtpy_storage_to_cupy, METH_NOARGS,
     "to_cupy()\n--\n\nThe device buffer as a CuPy array; GTNoSuchBufferError without one."},
    {"__array__", FASTCALL(gtpy_storage_array),
     "__array__(dtype=None, /, *, copy=None)\n--\n\nA numpy.ndarray: a view unless dtype "
     "differs or copy=True; copy=False raises ValueError when a copy is needed."},
    {"__array_function__", gtpy_storage_array_function, METH_VARARGS,
     "__array_function__(func, types, args, kwargs)\n--\n\nNEP 18: numpy.transpose, the "
     "reductions and the functions of the array methods (round, clip, squeeze, ravel, cumsum, "
     "cumprod, argsort; sort: a sorted copy) give what the methods give; other NumPy functions "
     "see ndarray views and return NumPy results."},
    {"__dlpack__", FASTCALL(gtpy_storage_dlpack),
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule viewing the storage (versioned when max_version >= (1, 0))."},
    {"__dlpack_device__", gtpy_storage_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(device type, device id) of the storage's memory: (1, 0) "
     "for the CPU, (2, n) for CUDA, (12, 0) for the emulated device."},
    {"device_to_host", FASTCALL(storage_device_to_host),
     "device_to_host(force=False)\n--\n\nCopies the device buffer to the host if it was "
     "modified (or if force). A no-op for host-only storages."},
    {"host_to_device", FASTCALL(storage_host_to_device),
     "host_to_device(force=False)\n--\n\nCopies the host memory to the device if it was "
     "modified (or if force). A no-op for host-only storages."},
    {"set_host_modified", storage_set_host_modified, METH_NOARGS,
     "set_host_modified()\n--\n\nMarks the host copy as modified (no-op without a device "
     "buffer)."},
    {"set_device_modified", storage_set_device_modified, METH_NOARGS,
     "set_device_modified()\n--\n\nMarks the device copy as modified (no-op without a device "
     "buffer)."},
    {"set_synchronized", storage_set_synchronized, METH_NOARGS,
     "set_synchronized()\n--\n\nMarks host and device copies as equal (no-op without a "
     "device buffer)."},
    {"synchronize", storage_synchronize, METH_NOARGS,
     "synchronize()\n--\n\nCopies whichever side was modified to the other (no-op without a "
     "device buffer)."},
    {"__reduce__", storage_reduce, METH_NOARGS, "__reduce__($self, /)\n--\n\nPickling support."},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))gtpy_storage_array_ufunc,
     METH_VARARGS | METH_KEYWORDS,
     "__array_ufunc__(ufunc, method, *inputs, **kwargs)\n--\n\nNEP 13: ufuncs on storages, "
     "broadcast by dims (docs/storage.md, \"Computing with storages\"). __call__, reduce, "
     "accumulate and at; outer and reduceat raise TypeError."},
    REDUCTION_METHOD(sum, "The sum along axis (None: all), as numpy.sum."),
    REDUCTION_METHOD(prod, "The product along axis (None: all), as numpy.prod."),
    REDUCTION_METHOD(mean, "The mean along axis (None: all), as numpy.mean."),
    REDUCTION_METHOD(std, "The standard deviation along axis (None: all), as numpy.std."),
    REDUCTION_METHOD(var, "The variance along axis (None: all), as numpy.var."),
    REDUCTION_METHOD(min, "The minimum along axis (None: all), as numpy.min."),
    REDUCTION_METHOD(max, "The maximum along axis (None: all), as numpy.max."),
    REDUCTION_METHOD(any, "Whether any element along axis is true, as numpy.any."),
    REDUCTION_METHOD(all, "Whether all elements along axis are true, as numpy.all."),
    {"argmin", (PyCFunction)(void (*)(void))gtpy_storage_argmin, METH_VARARGS | METH_KEYWORDS,
     "argmin(axis=None, out=None, *, keepdims=False)\n--\n\nNumPy's argmin of the values "
     "(indices: NumPy's result, not a storage)."},
    {"argmax", (PyCFunction)(void (*)(void))gtpy_storage_argmax, METH_VARARGS | METH_KEYWORDS,
     "argmax(axis=None, out=None, *, keepdims=False)\n--\n\nNumPy's argmax of the values "
     "(indices: NumPy's result, not a storage)."},
    {"astype", FASTCALL(gtpy_storage_astype),
     "astype(dtype, order='K', casting='unsafe', subok=True, copy=True)\n--\n\nA storage "
     "like this one (dims, halo, layout, device) of another dtype, the values cast by NumPy."},
    {"fill", gtpy_storage_fill, METH_O,
     "fill(value)\n--\n\nSets every element to value (s[...] = value)."},
    {"item", gtpy_storage_item, METH_VARARGS,
     "item(*args)\n--\n\nOne element as a Python scalar, as ndarray.item."},
    {"tolist", gtpy_storage_tolist, METH_NOARGS,
     "tolist()\n--\n\nThe values as nested Python lists, as ndarray.tolist."},
    {"reshape", gtpy_storage_reshape, METH_VARARGS,
     "reshape(*shape)\n--\n\nA view of another shape where it is one: dims of extent 1 "
     "dropped; anything else raises ValueError (dims cannot be regrouped)."},
    {"__complex__", gtpy_storage_complex, METH_NOARGS,
     "__complex__()\n--\n\ncomplex(storage): NumPy's conversion of a size-1 array."},
    GTPY_STORAGE_ARRAY_API_METHODS,
    {NULL, NULL, 0, NULL},
};

PyTypeObject gtpy_Storage_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.Storage",
    .tp_doc = "Base class of gtstore's storages: n-dimensional fields with dimension labels, "
              "a halo and an aligned point, over memory allocated or wrapped by libgtstore. "
              "Made by gtstore.empty, zeros, ones, full, as_storage, storage, from_dlpack and "
              "the *_like functions; exposed for type checks.",
    .tp_basicsize = offsetof(StorageObject, fields),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_dealloc = storage_dealloc,
    .tp_repr = storage_repr,
    .tp_as_number = &gtpy_storage_as_number,
    .tp_as_sequence = &gtpy_storage_as_sequence,
    .tp_as_mapping = &gtpy_storage_as_mapping,
    .tp_as_buffer = &gtpy_storage_as_buffer,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_richcompare = gtpy_storage_richcompare,
    .tp_methods = storage_methods,
    .tp_getset = storage_getset,
};

/* The four storage types of GDP-3's final text, which differ only in where their
 * memory is: the buffer decides (storage_type_of). */
#define STORAGE_TYPE(cname, pyname, doc)                                \
    PyTypeObject cname = {                                              \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gtstore." pyname,     \
        .tp_doc = doc,                                                  \
        .tp_basicsize = offsetof(StorageObject, fields),                \
        .tp_itemsize = 1,                                               \
        .tp_flags = Py_TPFLAGS_DEFAULT,                                 \
        .tp_base = &gtpy_Storage_Type,                                  \
    };

STORAGE_TYPE(gtpy_CPUStorage_Type, "CPUStorage", "A storage with host memory only.")
STORAGE_TYPE(gtpy_GPUStorage_Type, "GPUStorage",
             "A storage with device memory only (managed=None): no host buffer.")
STORAGE_TYPE(gtpy_SoftwareManagedGPUStorage_Type, "SoftwareManagedGPUStorage",
             "A storage with device memory and a host copy that gtstore keeps in sync "
             "(managed='gt4py', the default on a GPU): see sync_state.")
STORAGE_TYPE(gtpy_CudaManagedGPUStorage_Type, "CudaManagedGPUStorage",
             "A storage in CUDA managed (unified) memory (managed='cuda'), which the host and "
             "the GPU both reach; CUDA keeps it coherent.")

