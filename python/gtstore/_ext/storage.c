/* gtstore.Storage: a view of a libgtstore buffer with dims, halo and an
 * aligned point (GDP-3). The object stores what libgtstore's gts_storage
 * holds, compactly (ndim-sized arrays); every operation loads it into a
 * gts_storage, lets libgtstore compute, and stores the result in a new
 * object. CPUStorage is the kind with host memory only. */
#include "module.h"

#include <stddef.h>
#include <string.h>

typedef struct {
    PyObject_VAR_HEAD /* ob_size: NFIELDS * ndim entries in `extents` */
    gts_buffer *buffer;
    int64_t offset, alignment_size;
    gts_dtype dtype;
    int ndim;
    bool readonly;
    Py_ssize_t exports;   /* open buffer-protocol exports */
    PyObject *sync_state; /* shared by the views of the buffer; NULL until asked for */
    PyObject *preset;     /* the preset's name, or NULL */
    Py_ssize_t extents[]; /* shape, strides, aligned_index, halo lower and upper, dims, layout */
} StorageObject;

enum { SHAPE, STRIDES, ALIGNED, HALO_LOWER, HALO_UPPER, DIMS, LAYOUT, NFIELDS };

static Py_ssize_t *field(const StorageObject *s, int which)
{
    return (Py_ssize_t *)s->extents + which * s->ndim;
}

#define STORAGE(obj) ((StorageObject *)(obj))

void gtpy_storage_load(PyObject *obj, gts_storage *out)
{
    const StorageObject *s = STORAGE(obj);
    out->buffer = s->buffer;
    out->offset = s->offset;
    out->dtype = s->dtype;
    out->ndim = s->ndim;
    out->readonly = s->readonly;
    out->alignment_size = s->alignment_size;
    for (int d = 0; d < s->ndim; ++d) {
        out->shape[d] = field(s, SHAPE)[d];
        out->strides[d] = field(s, STRIDES)[d];
        out->aligned_index[d] = field(s, ALIGNED)[d];
        out->halo[d] = (gts_halo){field(s, HALO_LOWER)[d], field(s, HALO_UPPER)[d]};
        out->dims[d] = (gts_dim)field(s, DIMS)[d];
        out->layout[d] = (int)field(s, LAYOUT)[d];
    }
}

PyObject *gtpy_storage_new(gts_storage *g, PyObject *preset, PyObject *sync_state)
{
    StorageObject *s = PyObject_NewVar(StorageObject, &gtpy_CPUStorage_Type, NFIELDS * g->ndim);
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
    for (int d = 0; d < g->ndim; ++d) {
        field(s, SHAPE)[d] = (Py_ssize_t)g->shape[d];
        field(s, STRIDES)[d] = (Py_ssize_t)g->strides[d];
        field(s, ALIGNED)[d] = (Py_ssize_t)g->aligned_index[d];
        field(s, HALO_LOWER)[d] = (Py_ssize_t)g->halo[d].lower;
        field(s, HALO_UPPER)[d] = (Py_ssize_t)g->halo[d].upper;
        field(s, DIMS)[d] = g->dims[d];
        field(s, LAYOUT)[d] = g->layout[d];
    }
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
static PyObject *derived(PyObject *self, gts_storage *view)
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

/* ---- NumPy views ----------------------------------------------------------- */

/* An ndarray over the elements of `g` whose base is `base`. */
static PyObject *ndarray_over(gts_storage *g, PyObject *base)
{
    if (gtpy_numpy_capi()) {
        Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
        for (int d = 0; d < g->ndim; ++d) {
            shape[d] = (Py_ssize_t)g->shape[d];
            strides[d] = (Py_ssize_t)g->strides[d];
        }
        return gtpy_numpy_capi_array(g->dtype, g->ndim, shape, strides, gts_storage_data(g),
                                     g->readonly, base);
    }
    /* Without NumPy's C API: through the buffer protocol of a storage. */
    PyObject *asarray = gtpy_numpy_asarray();
    if (!asarray)
        return NULL;
    gts_storage view;
    gts_storage_view(g, &view);
    PyObject *exporter = gtpy_storage_new(&view, NULL, NULL);
    PyObject *array = exporter ? PyObject_CallOneArg(asarray, exporter) : NULL;
    Py_XDECREF(exporter);
    return array;
}

PyObject *gtpy_storage_ndarray(PyObject *self)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    return ndarray_over(&g, self);
}

/* ---- attributes ------------------------------------------------------------- */

static PyObject *ssize_tuple(int n, const Py_ssize_t *values)
{
    int64_t copy[GTS_MAX_NDIM];
    for (int i = 0; i < n; ++i)
        copy[i] = values[i];
    return gtpy_int64_tuple(n, copy);
}

enum {
    GET_SHAPE, GET_STRIDES, GET_ALIGNED, GET_NDIM, GET_SIZE, GET_ITEMSIZE, GET_NBYTES, GET_DIMS,
    GET_HALO, GET_DOMAIN_SHAPE, GET_ALIGNMENT, GET_LAYOUT, GET_DTYPE, GET_ORIGIN, GET_PRESET,
    GET_NONE
};

static PyObject *storage_get(PyObject *self, void *closure)
{
    StorageObject *s = STORAGE(self);
    gts_storage g;
    gtpy_storage_load(self, &g);
    int64_t values[GTS_MAX_NDIM];
    int layout[GTS_MAX_NDIM];
    switch ((int)(intptr_t)closure) {
    case GET_SHAPE: return ssize_tuple(s->ndim, field(s, SHAPE));
    case GET_STRIDES: return ssize_tuple(s->ndim, field(s, STRIDES));
    case GET_ALIGNED: return ssize_tuple(s->ndim, field(s, ALIGNED));
    case GET_ORIGIN: return ssize_tuple(s->ndim, field(s, HALO_LOWER));
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
    for (int d = 0; d < s->ndim; ++d) {
        field(s, HALO_LOWER)[d] = (Py_ssize_t)halo[d].lower;
        field(s, HALO_UPPER)[d] = (Py_ssize_t)halo[d].upper;
    }
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
    return derived(self, &view);
}

static PyObject *storage_data(PyObject *self, void *closure)
{
    (void)closure;
    return PyMemoryView_FromObject(self);
}

static PyObject *storage_sync_state(PyObject *self, void *closure)
{
    (void)closure;
    return gtpy_storage_sync_state(self);
}

static PyObject *typestr(gts_dtype dtype)
{
    char text[GTS_DTYPE_TEXT_SIZE];
    gts_dtype_typestr(dtype, text);
    return PyUnicode_FromString(text);
}

static PyObject *data_pair(PyObject *self)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    return Py_BuildValue("(NO)", PyLong_FromVoidPtr(gts_storage_data(&g)),
                         g.readonly ? Py_True : Py_False);
}

static PyObject *storage_array_interface(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g;
    gtpy_storage_load(self, &g);
    PyObject *strides = gts_storage_contiguous(&g, 'C')
                            ? Py_NewRef(Py_None)
                            : storage_get(self, (void *)(intptr_t)GET_STRIDES);
    return Py_BuildValue("{s:N,s:N,s:N,s:N,s:i}", "shape",
                         storage_get(self, (void *)(intptr_t)GET_SHAPE), "typestr",
                         typestr(g.dtype), "data", data_pair(self), "strides", strides, "version",
                         3);
}

static PyObject *storage_gt_data_interface(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g;
    gtpy_storage_load(self, &g);
    PyObject *host = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:O}", "shape",
        storage_get(self, (void *)(intptr_t)GET_SHAPE), "typestr", typestr(g.dtype), "data",
        data_pair(self), "strides", storage_get(self, (void *)(intptr_t)GET_STRIDES), "dims",
        storage_get(self, (void *)(intptr_t)GET_DIMS), "halo",
        storage_get(self, (void *)(intptr_t)GET_HALO), "acquire",
        PyObject_GetAttrString(self, "device_to_host"), "touch",
        PyObject_GetAttrString(self, "set_host_modified"), "release", Py_None);
    if (!host)
        return NULL;
    PyObject *interface = PyDict_New();
    if (!interface || PyDict_SetItem(interface, Py_None, host) < 0)
        Py_CLEAR(interface);
    Py_DECREF(host);
    return interface;
}

#define GETTER(name, which, doc) {name, storage_get, NULL, doc, (void *)(intptr_t)(which)}

static PyGetSetDef storage_getset[] = {
    GETTER("shape", GET_SHAPE, "The extent of each dimension, halo included."),
    GETTER("strides", GET_STRIDES, "Byte strides (padding included)."),
    GETTER("ndim", GET_NDIM, "Number of dimensions."),
    GETTER("size", GET_SIZE, "Number of elements."),
    GETTER("itemsize", GET_ITEMSIZE, "Bytes per element."),
    GETTER("nbytes", GET_NBYTES, "Bytes of the elements (padding excluded)."),
    GETTER("dtype", GET_DTYPE, "The element type (a numpy.dtype)."),
    GETTER("dims", GET_DIMS, "Dimension labels: 'I', 'J', 'K' and data dimensions '0', ...."),
    {"halo", storage_get, storage_set_halo,
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
    {"data", storage_data, NULL, "A memoryview of the host memory.", NULL},
    GETTER("device", GET_NONE, "The device of the device buffer: None (host only)."),
    GETTER("device_data", GET_NONE, "The device buffer: None (host only)."),
    {"sync_state", storage_sync_state, NULL,
     "The SyncState shared by every view of the buffer.", NULL},
    {"__array_interface__", storage_array_interface, NULL, "NumPy array interface, version 3.",
     NULL},
    GETTER("__gt_dims__", GET_DIMS, "The dimension labels (GT4Py's dims protocol)."),
    GETTER("__gt_origin__", GET_ORIGIN, "The default origin for stencils: the lower halo."),
    {"__gt_data_interface__", storage_gt_data_interface, NULL,
     "{None: buffer info}: shape, typestr, data, strides, dims, halo and the acquire, touch "
     "and release callbacks (GDP-3).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- indexing --------------------------------------------------------------- */

typedef enum item_kind { ITEM_INDEX, ITEM_SLICE, ITEM_NEWAXIS, ITEM_ELLIPSIS } item_kind;

/* The kind of a basic index; false for anything NumPy treats as advanced. */
static bool basic_item(PyObject *item, item_kind *kind)
{
    if (PySlice_Check(item))
        *kind = ITEM_SLICE;
    else if (item == Py_None)
        *kind = ITEM_NEWAXIS;
    else if (item == Py_Ellipsis)
        *kind = ITEM_ELLIPSIS;
    else if (!PyBool_Check(item) && gtpy_is_integer(item))
        *kind = ITEM_INDEX;
    else
        return false;
    return true;
}

static int index_error(PyObject *item, int axis, int64_t extent)
{
    PyErr_Format(PyExc_IndexError, "index %R is out of bounds for axis %d with size %lld", item,
                 axis, (long long)extent);
    return -1;
}

/* Applies one index, slice or ellipsis; new axes come after all of them
 * (apply_key), so `dim` counts the dims of the view without them. */
static int apply_item(gts_storage *view, PyObject *item, item_kind kind, int *dim, int *axis,
                      int ellipsis_dims)
{
    gts_error err;
    int rc = 0;
    int64_t extent = *dim < view->ndim ? view->shape[*dim] : 0;
    if (kind == ITEM_INDEX) {
        Py_ssize_t i = PyNumber_AsSsize_t(item, NULL);
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < -extent || i >= extent)
            return index_error(item, *axis, extent);
        rc = gts_storage_index(view, *dim, i < 0 ? i + extent : i, &err);
        ++*axis;
    } else if (kind == ITEM_SLICE) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(item, &start, &stop, &step) < 0)
            return -1;
        Py_ssize_t count = PySlice_AdjustIndices((Py_ssize_t)extent, &start, &stop, step);
        rc = gts_storage_slice(view, (*dim)++, start, step, count, &err);
        ++*axis;
    } else {
        *dim += ellipsis_dims;
        *axis += ellipsis_dims;
    }
    return rc ? gtpy_raise(&err) : 0;
}

typedef enum key_result { KEY_ERROR = -1, KEY_VIEW, KEY_SCALAR, KEY_ADVANCED } key_result;

/* Applies a basic-indexing key to a view of `self` (NumPy's rules). */
static key_result apply_key(PyObject *self, PyObject *key, gts_storage *view)
{
    PyObject *single[1] = {key};
    PyObject *const *items = single;
    Py_ssize_t nitems = 1;
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        nitems = PyTuple_GET_SIZE(key);
    }
    item_kind kinds[2 * GTS_MAX_NDIM];
    int consumed = 0, ellipses = 0, indices = 0, ndim = STORAGE(self)->ndim;
    if (nitems > 2 * GTS_MAX_NDIM)
        return KEY_ADVANCED; /* NumPy says what is wrong with it */
    for (Py_ssize_t i = 0; i < nitems; ++i) {
        if (!basic_item(items[i], &kinds[i]))
            return KEY_ADVANCED;
        consumed += kinds[i] == ITEM_INDEX || kinds[i] == ITEM_SLICE;
        indices += kinds[i] == ITEM_INDEX;
        ellipses += kinds[i] == ITEM_ELLIPSIS;
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return KEY_ERROR;
    }
    if (consumed > ndim) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     ndim, consumed);
        return KEY_ERROR;
    }
    if (ndim - indices + (int)(nitems - consumed - ellipses) > GTS_MAX_NDIM) {
        PyErr_Format(PyExc_IndexError, "number of dimensions must be within [0, %d]",
                     GTS_MAX_NDIM);
        return KEY_ERROR;
    }
    gts_storage g;
    gtpy_storage_load(self, &g);
    gts_storage_view(&g, view);
    /* Indices and slices first, then the new axes at their places in the
     * result: a new axis is labelled after the indexed dims are gone, so
     * that s[None, ..., 0] and s[..., 0][None] agree. */
    int dim = 0, axis = 0, nnew = 0, new_at[2 * GTS_MAX_NDIM];
    for (Py_ssize_t i = 0; i < nitems; ++i) {
        if (kinds[i] == ITEM_NEWAXIS) {
            new_at[nnew] = dim + nnew; /* its index in the result */
            ++nnew;
        } else if (apply_item(view, items[i], kinds[i], &dim, &axis, ndim - consumed) < 0) {
            gts_storage_release(view);
            return KEY_ERROR;
        }
    }
    gts_error err;
    for (int k = 0; k < nnew; ++k) {
        if (gts_storage_insert_dim(view, new_at[k], &err) != 0) {
            gts_storage_release(view);
            return gtpy_raise(&err), KEY_ERROR;
        }
    }
    return indices == ndim && (Py_ssize_t)indices == nitems ? KEY_SCALAR : KEY_VIEW;
}

static PyObject *storage_getitem(PyObject *self, PyObject *key)
{
    gts_storage view;
    key_result kind = apply_key(self, key, &view);
    if (kind == KEY_ERROR)
        return NULL;
    if (kind == KEY_VIEW)
        return derived(self, &view);
    /* A scalar like NumPy's, or advanced indexing: NumPy selects (a copy). */
    PyObject *array = kind == KEY_SCALAR ? ndarray_over(&view, self) : gtpy_storage_ndarray(self);
    if (kind == KEY_SCALAR)
        gts_storage_release(&view);
    if (!array)
        return NULL;
    PyObject *empty = kind == KEY_SCALAR ? PyTuple_New(0) : NULL;
    PyObject *result = PyObject_GetItem(array, empty ? empty : key);
    Py_XDECREF(empty);
    Py_DECREF(array);
    return result;
}

static int storage_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    PyObject *array = gtpy_storage_ndarray(self);
    if (!array)
        return -1;
    int rc = PyObject_SetItem(array, key, value); /* NumPy's broadcasting and casting */
    Py_DECREF(array);
    return rc;
}

static Py_ssize_t storage_length(PyObject *self)
{
    StorageObject *s = STORAGE(self);
    if (s->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return field(s, SHAPE)[0];
}

static PyObject *storage_item(PyObject *self, Py_ssize_t i)
{
    PyObject *index = PyLong_FromSsize_t(i);
    PyObject *result = index ? storage_getitem(self, index) : NULL;
    Py_XDECREF(index);
    return result;
}

/* bool(), float(), int() and complex() are NumPy's on an ndarray view: a
 * size-1 storage converts (with NumPy's warnings), any other raises NumPy's
 * error. (Without them, Python read the buffer as text or bytes.) */
static int storage_bool(PyObject *self)
{
    PyObject *array = gtpy_storage_ndarray(self);
    int truth = array ? PyObject_IsTrue(array) : -1;
    Py_XDECREF(array);
    return truth;
}

static PyObject *through_ndarray(PyObject *self, PyObject *(*convert)(PyObject *))
{
    PyObject *array = gtpy_storage_ndarray(self);
    PyObject *result = array ? convert(array) : NULL;
    Py_XDECREF(array);
    return result;
}

static PyObject *storage_float(PyObject *self)
{
    return through_ndarray(self, PyNumber_Float);
}

static PyObject *storage_int(PyObject *self)
{
    return through_ndarray(self, PyNumber_Long);
}

static PyObject *call_complex(PyObject *array)
{
    return PyObject_CallOneArg((PyObject *)&PyComplex_Type, array);
}

static PyObject *storage_complex(PyObject *self, PyObject *unused)
{
    (void)unused;
    return through_ndarray(self, call_complex);
}

/* ---- buffer protocol ---------------------------------------------------------- */

static int storage_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    StorageObject *s = STORAGE(self);
    gts_storage g;
    gtpy_storage_load(self, &g);
    gtpy_export e = {gts_storage_data(&g),
                     s->dtype,
                     s->ndim,
                     field(s, SHAPE),
                     field(s, STRIDES),
                     s->readonly,
                     gts_storage_contiguous(&g, 'C'),
                     gts_storage_contiguous(&g, 'F')};
    if (gtpy_export_buffer(self, &e, view, flags) < 0)
        return -1;
    ++s->exports;
    return 0;
}

static void storage_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    --STORAGE(self)->exports;
}

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

/* transpose(), transpose(None), transpose((1, 0)) or transpose(1, 0). */
static PyObject *storage_transpose(PyObject *self, PyObject *args)
{
    StorageObject *s = STORAGE(self);
    PyObject *axes = args;
    if (PyTuple_GET_SIZE(args) == 1 && !gtpy_is_integer(PyTuple_GET_ITEM(args, 0)))
        axes = PyTuple_GET_ITEM(args, 0);
    int order[GTS_MAX_NDIM], *given = NULL;
    if (axes != Py_None && !(axes == args && PyTuple_GET_SIZE(args) == 0)) {
        int64_t values[GTS_MAX_NDIM];
        int n;
        if (gtpy_int_tuple(axes, "axes", GTS_MAX_NDIM, &n, values) < 0)
            return NULL;
        if (n != s->ndim) {
            PyErr_Format(PyExc_ValueError, "axes: %.200R don't match array of %d dimensions",
                         axes, s->ndim);
            return NULL;
        }
        for (int i = 0; i < n; ++i) {
            if (values[i] < -n || values[i] >= n) {
                PyErr_Format(PyExc_ValueError, "axes: axis %lld in %.200R is out of bounds for a "
                             "storage of %d dimensions", (long long)values[i], axes, n);
                return NULL;
            }
            order[i] = (int)(values[i] < 0 ? values[i] + n : values[i]);
        }
        given = order;
    }
    gts_storage g, view;
    gts_error err;
    gtpy_storage_load(self, &g);
    gts_storage_view(&g, &view);
    if (gts_storage_transpose(&view, given, &err) != 0) {
        gts_storage_release(&view);
        PyErr_Format(PyExc_ValueError, "axes: %.200R repeats an axis", axes);
        return NULL;
    }
    return derived(self, &view);
}

static PyObject *storage_to_numpy(PyObject *self, PyObject *unused)
{
    (void)unused;
    return gtpy_storage_ndarray(self);
}

static PyObject *storage_to_cupy(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyErr_SetString(gtpy_NoSuchBufferError,
                    "to_cupy: this storage has no device buffer (it is a CPUStorage)");
    return NULL;
}

/* __array__(dtype=None, /, *, copy=None) with NumPy 2's copy rules. */
static PyObject *storage_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "copy"};
    static gtpy_signature sig = {"__array__", names, 2, 1, 0, NULL, 1};
    PyObject *values[2];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0)
        return NULL;
    PyObject *dtype = values[0] == Py_None ? NULL : values[0];
    int copy = values[1] && values[1] != Py_None ? PyObject_IsTrue(values[1]) : -1;
    PyObject *array = gtpy_storage_ndarray(self);
    if (!array || (dtype == NULL && copy != 1))
        return array;
    PyObject *result = NULL;
    int same = 1;
    if (dtype) {
        PyObject *wanted = PyObject_CallOneArg(gtpy_numpy("dtype"), dtype);
        PyObject *have = wanted ? PyObject_GetAttrString(array, "dtype") : NULL;
        same = have ? PyObject_RichCompareBool(have, wanted, Py_EQ) : -1;
        Py_XDECREF(have);
        Py_XDECREF(wanted);
    }
    if (same < 0) {
        /* error set */
    } else if (!same && copy == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "Unable to avoid copy while creating an array as requested.");
    } else if (!same) {
        result = PyObject_CallMethod(array, "astype", "O", dtype);
    } else if (copy == 1) {
        result = PyObject_CallMethod(array, "copy", NULL);
    } else {
        result = Py_NewRef(array);
    }
    Py_DECREF(array);
    return result;
}

/* Storages anywhere in lists and tuples as ndarray views. A container is
 * copied only where it holds a storage. `seen` (created on first need)
 * maps the containers visited to their results, so that shared ones cost
 * one visit and a self-referencing one ends; NumPy takes no array deeper
 * than its 64 dimensions, so deeper objects are passed on as they are, for
 * NumPy to refuse with its own error (a list nested 200,000 deep once
 * overflowed the C stack here). */
static PyObject *storages_as_ndarrays_in(PyObject *obj, PyObject **seen, int depth)
{
    if (gtpy_is_storage(obj))
        return gtpy_storage_ndarray(obj);
    if ((!PyList_Check(obj) && !PyTuple_Check(obj)) || depth > GTS_MAX_NDIM)
        return Py_NewRef(obj);
    PyObject *key = PyLong_FromVoidPtr(obj), *done;
    if (!key || (!*seen && !(*seen = PyDict_New()))) {
        Py_XDECREF(key);
        return NULL;
    }
    if ((done = PyDict_GetItemWithError(*seen, key)) || PyErr_Occurred() ||
        PyDict_SetItem(*seen, key, obj) < 0) { /* in progress: a cycle stays as it is */
        Py_DECREF(key);
        return PyErr_Occurred() ? NULL : Py_NewRef(done);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *item = PySequence_Fast_GET_ITEM(obj, i);
        PyObject *plain = storages_as_ndarrays_in(item, seen, depth + 1);
        if (!plain || (plain != item && !result && !(result = PySequence_List(obj)))) {
            Py_XDECREF(plain);
            Py_CLEAR(result);
            Py_DECREF(key);
            return NULL;
        }
        if (result)
            PyList_SetItem(result, i, plain); /* steals plain */
        else
            Py_DECREF(plain);
    }
    if (!result)
        result = Py_NewRef(obj);
    else if (PyTuple_Check(obj))
        Py_SETREF(result, PyList_AsTuple(result));
    if (result && PyDict_SetItem(*seen, key, result) < 0)
        Py_CLEAR(result);
    Py_DECREF(key);
    return result;
}

static PyObject *storages_as_ndarrays(PyObject *obj, PyObject **seen)
{
    return storages_as_ndarrays_in(obj, seen, 0);
}

/* NEP 18: np.transpose gives a storage; every other function runs on
 * ndarray views of the storages and returns NumPy's result. */
static PyObject *storage_array_function(PyObject *self, PyObject *args)
{
    PyObject *func, *types, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OOO!O!:__array_function__", &func, &types, &PyTuple_Type,
                          &fargs, &PyDict_Type, &fkwargs))
        return NULL;
    PyObject *array = PyTuple_GET_SIZE(fargs) >= 1 ? PyTuple_GET_ITEM(fargs, 0)
                                                   : PyDict_GetItemString(fkwargs, "a");
    if (func == gtpy_numpy("transpose") && array == self) {
        PyObject *axes = PyTuple_GET_SIZE(fargs) > 1 ? PyTuple_GET_ITEM(fargs, 1)
                                                     : PyDict_GetItemString(fkwargs, "axes");
        PyObject *call = PyTuple_Pack(1, axes ? axes : Py_None);
        PyObject *result = call ? storage_transpose(self, call) : NULL;
        Py_XDECREF(call);
        return result;
    }
    PyObject *seen = NULL;
    PyObject *plain_args = storages_as_ndarrays(fargs, &seen);
    PyObject *plain_kwargs = PyDict_New(), *key, *value, *result = NULL;
    Py_ssize_t pos = 0;
    while (plain_args && plain_kwargs && PyDict_Next(fkwargs, &pos, &key, &value)) {
        PyObject *plain = storages_as_ndarrays(value, &seen);
        if (!plain || PyDict_SetItem(plain_kwargs, key, plain) < 0)
            Py_CLEAR(plain_kwargs);
        Py_XDECREF(plain);
    }
    Py_XDECREF(seen); /* before the call: it holds the converted views */
    if (plain_args && plain_kwargs)
        result = PyObject_Call(func, plain_args, plain_kwargs);
    Py_XDECREF(plain_args);
    Py_XDECREF(plain_kwargs);
    return result;
}

/* The host/device sync methods: CPUStorage has one copy, so they only check
 * their arguments. */
static const char *const force_names[] = {"force"};

static PyObject *sync_with_force(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    PyObject *values[1];
    if (gtpy_parse_args(sig, args, nargs, kwnames, values) < 0 ||
        (values[0] && PyObject_IsTrue(values[0]) < 0))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *storage_device_to_host(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames)
{
    (void)self;
    static gtpy_signature sig = {"device_to_host", force_names, 1, 1, 0, NULL, 0};
    return sync_with_force(&sig, args, nargs, kwnames);
}

static PyObject *storage_host_to_device(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                        PyObject *kwnames)
{
    (void)self;
    static gtpy_signature sig = {"host_to_device", force_names, 1, 1, 0, NULL, 0};
    return sync_with_force(&sig, args, nargs, kwnames);
}

static PyObject *storage_mark(PyObject *self, gts_sync_state state)
{
    gts_buffer_set_sync_state(STORAGE(self)->buffer, state);
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

static PyObject *storage_synchronize(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_RETURN_NONE;
}

/* Pickling: the values (a C-ordered ndarray) and every parameter. */
static PyObject *storage_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    StorageObject *s = STORAGE(self);
    PyObject *module = PyImport_ImportModule("gtstore._gtstore");
    PyObject *rebuild = module ? PyObject_GetAttrString(module, "_rebuild_storage") : NULL;
    Py_XDECREF(module);
    PyObject *array = rebuild ? gtpy_storage_ndarray(self) : NULL;
    PyObject *values = array ? PyObject_CallMethod(array, "copy", NULL) : NULL;
    Py_XDECREF(array);
    if (!values) {
        Py_XDECREF(rebuild);
        return NULL;
    }
    return Py_BuildValue("(N(NNNNNNOO))", rebuild, values,
                         storage_get(self, (void *)(intptr_t)GET_DIMS),
                         storage_get(self, (void *)(intptr_t)GET_HALO),
                         storage_get(self, (void *)(intptr_t)GET_ALIGNED),
                         storage_get(self, (void *)(intptr_t)GET_ALIGNMENT),
                         storage_get(self, (void *)(intptr_t)GET_LAYOUT),
                         s->preset ? s->preset : Py_None, s->readonly ? Py_True : Py_False);
}

static PyObject *storage_repr(PyObject *self)
{
    StorageObject *s = STORAGE(self);
    PyObject *array = gtpy_storage_ndarray(self);
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
        PyObject *dtype = storage_get(self, (void *)(intptr_t)GET_DTYPE);
        PyObject *dims = storage_get(self, (void *)(intptr_t)GET_DIMS);
        PyObject *halo = storage_get(self, (void *)(intptr_t)GET_HALO);
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

static PyMethodDef storage_methods[] = {
    {"copy", storage_copy, METH_NOARGS,
     "copy()\n--\n\nA new storage with the same parameters (dims, halo, aligned_index, "
     "alignment_size, layout) in new memory, holding a copy of the values."},
    {"__copy__", storage_copy, METH_NOARGS, "__copy__()\n--\n\nThe same as copy()."},
    {"__deepcopy__", storage_deepcopy, METH_O, "__deepcopy__(memo)\n--\n\nThe same as copy()."},
    {"transpose", storage_transpose, METH_VARARGS,
     "transpose(*axes)\n--\n\nA view with the dimensions permuted (reversed without axes); "
     "dims, halo and aligned_index move with them."},
    {"to_numpy", storage_to_numpy, METH_NOARGS,
     "to_numpy()\n--\n\nA numpy.ndarray viewing the host memory (no copy)."},
    {"to_ndarray", storage_to_numpy, METH_NOARGS,
     "to_ndarray()\n--\n\nThe device buffer as a CuPy array if there is one, else the host "
     "memory as a numpy.ndarray (no copy)."},
    {"to_cupy", storage_to_cupy, METH_NOARGS,
     "to_cupy()\n--\n\nThe device buffer as a CuPy array; GTNoSuchBufferError without one."},
    {"__array__", FASTCALL(storage_array),
     "__array__(dtype=None, /, *, copy=None)\n--\n\nA numpy.ndarray: a view unless dtype "
     "differs or copy=True; copy=False raises ValueError when a copy is needed."},
    {"__array_function__", storage_array_function, METH_VARARGS,
     "__array_function__(func, types, args, kwargs)\n--\n\nNEP 18: numpy.transpose returns a "
     "storage; other NumPy functions see ndarray views and return NumPy results."},
    {"__dlpack__", FASTCALL(gtpy_storage_dlpack),
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule viewing the storage (versioned when max_version >= (1, 0))."},
    {"__dlpack_device__", gtpy_storage_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(device type, device id): (1, 0), the CPU."},
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
    {"__reduce__", storage_reduce, METH_NOARGS, "Pickling support."},
    {"__complex__", storage_complex, METH_NOARGS,
     "__complex__()\n--\n\ncomplex(storage): NumPy's conversion of a size-1 array."},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods storage_as_mapping = {
    .mp_length = storage_length,
    .mp_subscript = storage_getitem,
    .mp_ass_subscript = storage_setitem,
};

static PySequenceMethods storage_as_sequence = {
    .sq_length = storage_length,
    .sq_item = storage_item,
};

static PyNumberMethods storage_as_number = {
    .nb_bool = storage_bool,
    .nb_int = storage_int,
    .nb_float = storage_float,
};

static PyBufferProcs storage_as_buffer = {
    .bf_getbuffer = storage_getbuffer,
    .bf_releasebuffer = storage_releasebuffer,
};

PyTypeObject gtpy_Storage_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.Storage",
    .tp_doc = "Base class of gtstore's storages: n-dimensional fields with dimension labels, "
              "a halo and an aligned point, over memory allocated or wrapped by libgtstore. "
              "Made by gtstore.empty, zeros, ones, full, as_storage, storage, from_dlpack and "
              "the *_like functions; exposed for type checks.",
    .tp_basicsize = offsetof(StorageObject, extents),
    .tp_itemsize = sizeof(Py_ssize_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_dealloc = storage_dealloc,
    .tp_repr = storage_repr,
    .tp_as_number = &storage_as_number,
    .tp_as_sequence = &storage_as_sequence,
    .tp_as_mapping = &storage_as_mapping,
    .tp_as_buffer = &storage_as_buffer,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_methods = storage_methods,
    .tp_getset = storage_getset,
};

PyTypeObject gtpy_CPUStorage_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore.CPUStorage",
    .tp_doc = "A storage with host memory only.",
    .tp_basicsize = offsetof(StorageObject, extents),
    .tp_itemsize = sizeof(Py_ssize_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_base = &gtpy_Storage_Type,
};
