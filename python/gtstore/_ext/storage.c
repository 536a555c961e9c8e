/* gtstore.Storage: a view of a libgtstore buffer with dims, halo and an
 * aligned point (GDP-3). The object stores what libgtstore's gts_storage
 * holds, compactly (its field list, ndim entries each); every operation
 * loads it into a gts_storage, lets libgtstore compute, and stores the
 * result in a new object. CPUStorage is the kind with host memory only.
 * This file is the core (load, store, new, transpose, attributes); the
 * type's tables and methods are in storage_type.c, indexing and NumPy
 * interop in storage_index.c and storage_interop.c. */
#include "storage.h"
#include "axes.h"
#include "convert.h"
#include "engine_spares.h"
#include "errors.h"
#include "storage_object.h"

#include <limits.h>
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
    PyObject *engine; /* the engine's objects over the buffer (engine_view.c), or NULL */
} SyncStateObject;

PyObject *gtpy_storage_sync_state(PyObject *obj)
{
    StorageObject *s = STORAGE(obj);
    if (!s->sync_state) {
        SyncStateObject *state = PyObject_New(SyncStateObject, &gtpy_SyncState_Type);
        if (!state)
            return NULL;
        state->buffer = gts_buffer_retain(s->buffer);
        state->engine = NULL;
        s->sync_state = (PyObject *)state;
    }
    return Py_NewRef(s->sync_state);
}

gts_buffer *gtpy_sync_state_buffer(PyObject *sync_state)
{
    return ((SyncStateObject *)sync_state)->buffer;
}

PyObject *gtpy_storage_create(gts_storage_spec *spec, unsigned flags, PyObject *preset)
{
    gts_storage g;
    gts_error err;
    PyObject *taken = NULL;
    int rc = gts_storage_create_reusing(spec, flags, gtpy_spare_take, &taken, &g, &err);
    gtpy_spare_stats spares;
    gtpy_spares_stats(&spares);
    if (rc == GTS_ENOMEM && spares.blocks > 0) {
        /* the spares may hold what is missing: released, and the caches
         * their blocks went to cleared (a device's pool may keep them) */
        gtpy_spares_trim(0);
        gts_cache_clear();
        rc = gts_storage_create_reusing(spec, flags, NULL, NULL, &g, &err);
    }
    if (rc) {
        Py_XDECREF(taken);
        return gtpy_raise_null(&err);
    }
    PyObject *storage = gtpy_storage_new(&g, preset, NULL), **slot = NULL;
    if (storage && taken && gtpy_storage_engine_slot(storage, &slot) < 0)
        Py_CLEAR(storage);
    if (storage && slot) {
        *slot = taken; /* the reference moves into the SyncState */
        taken = NULL;
    }
    Py_XDECREF(taken);
    return storage;
}

int gtpy_storage_engine_slot(PyObject *storage, PyObject ***slot)
{
    PyObject *sync = gtpy_storage_sync_state(storage);
    if (!sync)
        return -1;
    Py_DECREF(sync); /* the storage holds it */
    SyncStateObject *state = (SyncStateObject *)sync;
    *slot = state->buffer == STORAGE(storage)->buffer ? &state->engine : NULL;
    return 0;
}

static void sync_state_dealloc(PyObject *self)
{
    SyncStateObject *state = (SyncStateObject *)self;
    /* first, so that the engine's block may hold the buffer's only
     * reference: then the two may serve the next storage of its size */
    gts_buffer_release(state->buffer);
    if (state->engine)
        gtpy_spare_offer(state->engine);
    Py_TYPE(self)->tp_free(self);
}

bool gtpy_sync_state_number(PyObject *obj, gts_sync_state *state)
{
    int64_t value;
    bool number = gtpy_is_integer(obj) && gtpy_int(obj, "sync_state", &value) == 0 &&
                  value >= INT_MIN && value <= INT_MAX &&
                  gts_sync_state_name((gts_sync_state)value);
    if (!number) {
        PyErr_Clear();
        return false;
    }
    *state = (gts_sync_state)value;
    return true;
}

PyObject *gtpy_sync_state_text(PyObject *obj)
{
    gts_sync_state state;
    if (gtpy_sync_state_number(obj, &state))
        return PyUnicode_FromFormat("SyncState.%s", gts_sync_state_name(state));
    return PyObject_Repr(obj);
}

static PyObject *sync_state_get_state(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(gts_buffer_sync_state(((SyncStateObject *)self)->buffer));
}

static PyObject *sync_state_repr(PyObject *self)
{
    return PyUnicode_FromFormat(
        "SyncState(%s)",
        gts_sync_state_name(gts_buffer_sync_state(((SyncStateObject *)self)->buffer)));
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
    case GET_ALIGNMENT_ELEMENTS:
        return PyLong_FromLongLong(gts_alignment_elements(s->alignment_size, s->dtype.itemsize));
    case GET_AXES: {
        char text[GTS_MAX_NDIM + 1];
        gts_error err;
        if (gts_dims_format(g.ndim, g.dims, text, &err) != 0)
            return gtpy_raise_param("axes", &err), NULL;
        return PyUnicode_FromString(text);
    }
    default: Py_RETURN_NONE;
    }
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


/* The type's core; its protocols, attributes and methods are bound by
 * gtpy_storage_type_ready (storage_type.c), which depends on this file. */
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
    .tp_hash = PyObject_HashNotImplemented,
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

