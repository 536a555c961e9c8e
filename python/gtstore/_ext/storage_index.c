/* Indexing a Storage: basic keys (ints, slices, None, Ellipsis) give views
 * made with libgtstore's view operations; advanced keys and every
 * assignment go to NumPy on an ndarray view. */
#include "convert.h"
#include "engine.h"
#include "errors.h"
#include "numpy.h"
#include "source.h"
#include "storage.h"
#include "stream.h"
#include "storage_object.h"
#include "ufunc.h"
#include "write_hold.h"

#include "gtstore/sync.h"

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
        return gtpy_storage_derived(self, &view);
    /* A scalar like NumPy's, or advanced indexing: NumPy selects (a copy). */
    PyObject *array = kind == KEY_SCALAR ? gtpy_storage_ndarray_over(&view, self, false)
                                         : gtpy_storage_ndarray(self, false);
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

/* Where an assignment writes (GDP-3's final text, "Choosing the Device"): on the
 * device if the storage has no host side, or if the value is on the GPU: a
 * storage in device memory whose device side is current. Else on the
 * host, through NumPy. */
static bool value_on_device(PyObject *value)
{
    if (!gtpy_is_storage(value))
        return false;
    gts_buffer *buffer = STORAGE(value)->buffer;
    if (gts_buffer_device(buffer)->kind == GTS_MEMORY_HOST)
        return false;
    return !gts_buffer_mirrored(buffer) || gts_buffer_sync_state(buffer) != GTS_SYNC_HOST_DIRTY;
}

/* The assignment on the device: a basic key, and a number (filled there) or
 * a storage of the view's shape (copied there, from any device). 0 when
 * it does not apply, with nothing done. */
static int assign_on_device(PyObject *self, PyObject *key, PyObject *value)
{
    gts_storage view;
    gts_scalar number;
    bool is_storage = gtpy_is_storage(value);
    if (!is_storage && gtpy_scalar(value, "value", &number) < 0) {
        PyErr_Clear();
        return 0;
    }
    key_result kind = apply_key(self, key, &view);
    if (kind == KEY_ERROR)
        return -1;
    if (kind == KEY_ADVANCED)
        return 0;
    int rc;
    if (is_storage) {
        gts_storage source;
        gtpy_storage_load(value, &source);
        bool same_shape =
            source.ndim == view.ndim &&
            memcmp(source.shape, view.shape, (size_t)view.ndim * sizeof(int64_t)) == 0;
        if (!same_shape || !gts_dtype_equal(source.dtype, view.dtype)) {
            gts_storage_release(&view);
            return 0; /* broadcasting and casting are NumPy's */
        }
        rc = gtpy_stream_assign(&view, &source);
    } else {
        rc = gtpy_stream_fill(&view, number);
    }
    gts_storage_release(&view);
    return rc ? -1 : 1;
}

/* Into memory without a host side, a value only NumPy can convert (an
 * array, a list, another dtype) or an advanced key: set in host memory
 * with NumPy's indexing, broadcasting and casting, then copied to the
 * device. A basic key stages the selection only; an advanced one the whole
 * storage, read from the device first (NumPy's key may touch any element). */
static int assign_through_host(PyObject *self, PyObject *key, PyObject *value)
{
    gts_storage view, host;
    key_result kind = apply_key(self, key, &view);
    if (kind == KEY_ERROR)
        return -1;
    bool advanced = kind == KEY_ADVANCED;
    if (advanced) {
        gts_storage whole;
        gtpy_storage_load(self, &whole);
        gts_storage_view(&whole, &view);
    }
    PyObject *staging = gtpy_storage_host_staging(&view, &host);
    int rc = staging ? 0 : -1;
    if (rc == 0 && advanced)
        rc = gtpy_stream_assign(&host, &view);
    if (rc == 0)
        rc = PyObject_SetItem(staging, advanced ? key : Py_Ellipsis, value);
    if (rc == 0)
        rc = gtpy_stream_assign(&view, &host);
    Py_XDECREF(staging);
    gts_storage_release(&view);
    return rc;
}

static int storage_setitem(PyObject *self, PyObject *key, PyObject *value);

/* A storage value that is the selection's transpose by dims (the same
 * labels and extents, in another order): assigned transposed back, as a
 * value of the selection's dims is (on a device by libgtstore's strided
 * copy, no engine needed). 1 when done, 0 when it does not apply. */
static int assign_transposed(PyObject *self, PyObject *key, const gts_storage *view,
                             PyObject *value, const gts_storage *source)
{
    gts_storage arranged;
    gts_storage_view(source, &arranged);
    if (gts_storage_transpose_like(&arranged, view, NULL) != GTS_OK) {
        gts_storage_release(&arranged);
        return 0;
    }
    PyObject *transposed = gtpy_storage_derived(value, &arranged);
    int rc = transposed ? storage_setitem(self, key, transposed) : -1;
    Py_XDECREF(transposed);
    return rc < 0 ? -1 : 1;
}

/* A storage value whose dims differ from the selection's is assigned by
 * dims (GDP-3's first draft), not by position; so is another library's CUDA array,
 * which only the GPU's engine can read (GDP-3's first draft's rules for arrays
 * without dims). 1 when done, 0 when it does not apply. */
static int assign_by_dims(PyObject *self, PyObject *key, PyObject *value)
{
    bool cuda_array = gtpy_is_cuda_array(value);
    if (!gtpy_is_storage(value) && !cuda_array)
        return 0;
    gts_storage view, source;
    key_result kind = apply_key(self, key, &view);
    if (kind == KEY_ERROR)
        return -1;
    if (kind == KEY_ADVANCED)
        return 0;
    if (!cuda_array)
        gtpy_storage_load(value, &source);
    bool same = !cuda_array &&
                (kind == KEY_SCALAR ||
                 (source.ndim == view.ndim &&
                  memcmp(source.dims, view.dims, (size_t)view.ndim * sizeof *view.dims) == 0));
    int done = same || cuda_array ? 0 : assign_transposed(self, key, &view, value, &source);
    if (same || done != 0) {
        gts_storage_release(&view);
        return done;
    }
    PyObject *target = gtpy_storage_derived(self, &view);
    int rc = target ? gtpy_storage_assign_by_dims(target, value) : -1;
    Py_XDECREF(target);
    return rc < 0 ? -1 : 1;
}

/* Host values NumPy reads: no other library's array to import. */
static bool host_value(PyObject *value)
{
    return gtpy_is_storage(value) || PyFloat_Check(value) || PyLong_Check(value) ||
           PyComplex_Check(value) || PyList_Check(value) || PyTuple_Check(value);
}

/* A storage over another object's memory, without labels of its own, as
 * the value: of the selection's shape and dtype it is copied by libgtstore
 * from its device. 1 when done, 0 when it does not apply. */
static int assign_same_shape(PyObject *self, PyObject *key, PyObject *imported)
{
    gts_storage view, source;
    key_result kind = apply_key(self, key, &view);
    if (kind == KEY_ERROR)
        return -1;
    if (kind == KEY_ADVANCED)
        return 0;
    int rc = 0;
    gtpy_storage_load(imported, &source);
    if (source.ndim == view.ndim && gts_dtype_equal(source.dtype, view.dtype) &&
        memcmp(source.shape, view.shape, (size_t)view.ndim * sizeof *view.shape) == 0)
        rc = gtpy_stream_assign(&view, &source) ? -1 : 1;
    gts_storage_release(&view);
    return rc;
}

/* Another library's GPU array (or a DLPack-only one) as the value: read as
 * the creation functions read it (gtpy_source_import), a storage over its
 * memory without labels, copied where it has the selection's shape and
 * dtype; else (broadcasting, casting, an advanced key) the object goes on
 * to the rules below. 1 when done, 0 when it does not apply. */
static int assign_imported(PyObject *self, PyObject *key, PyObject *value)
{
    if (host_value(value) || PyObject_CheckBuffer(value)) /* host values: NumPy's */
        return 0;
    bool found;
    PyObject *imported = gtpy_source_import(value, "value", &found);
    if (!found || !imported)
        return found ? -1 : 0;
    int rc = assign_same_shape(self, key, imported);
    Py_DECREF(imported);
    return rc;
}

/* A value with GDP-3's data interface ("Choosing the Device": on the GPU
 * if and only if it has a "gpu" entry, its "acquire" called before it is
 * read; a "gpu" entry whose memory no device gtstore has reaches gives way
 * to the host entry: gtpy_data_interface_storage): a storage over that
 * entry's memory. Labelled by the entry, it is
 * assigned as a storage value is (by dims, on the device where it is);
 * else by position: of the selection's shape and dtype copied by
 * libgtstore from its device, otherwise its host values through NumPy's
 * broadcasting and casting. 1 when done, 0 when it does not apply. */
static int assign_data_interface(PyObject *self, PyObject *key, PyObject *value)
{
    if (host_value(value) || gtpy_numpy_is_ndarray(value))
        return 0;
    bool labelled;
    PyObject *storage = gtpy_data_interface_storage(value, "value", &labelled, NULL, NULL);
    if (!storage)
        return PyErr_Occurred() ? -1 : 0;
    int rc = labelled ? (storage_setitem(self, key, storage) < 0 ? -1 : 1)
                      : assign_same_shape(self, key, storage);
    if (rc == 0) {
        PyObject *host = gtpy_storage_host_values(storage);
        rc = host ? storage_setitem(self, key, host) : -1;
        Py_XDECREF(host);
    }
    Py_DECREF(storage);
    return rc < 0 ? -1 : 1;
}

static int storage_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    int interface = assign_data_interface(self, key, value);
    if (interface != 0)
        return interface < 0 ? -1 : 0;
    int imported = assign_imported(self, key, value);
    if (imported != 0)
        return imported < 0 ? -1 : 0;
    int by_dims = assign_by_dims(self, key, value);
    if (by_dims != 0)
        return by_dims < 0 ? -1 : 0;
    if (!gtpy_has_host_side(STORAGE(self)->buffer) || value_on_device(value)) {
        int done = assign_on_device(self, key, value);
        if (done != 0)
            return done < 0 ? -1 : 0;
        if (!gtpy_has_host_side(STORAGE(self)->buffer))
            return assign_through_host(self, key, value);
    }
    gts_storage g;
    gtpy_holds holds;
    gtpy_storage_load(self, &g);
    gtpy_holds_init(&holds);
    gtpy_holds_add(&holds, &g);
    /* a storage value read on the host before the write is held (its sync
     * may wait for another thread): its host side, or a host copy where it
     * has none (a GPUStorage of another dtype) */
    PyObject *host_value = gtpy_is_storage(value) ? gtpy_storage_host_values(value)
                                                  : Py_NewRef(value);
    PyObject *array = host_value ? gtpy_storage_ndarray(self, true) : NULL;
    int rc = array && gtpy_holds_begin(&holds, GTS_SIDE_HOST, NULL) == 0 ? 0 : -1;
    if (rc == 0) {
        rc = PyObject_SetItem(array, key, host_value); /* NumPy's broadcasting and casting */
        gtpy_holds_end(&holds);
    }
    Py_XDECREF(array);
    Py_XDECREF(host_value);
    return rc;
}

static Py_ssize_t storage_length(PyObject *self)
{
    StorageObject *s = STORAGE(self);
    if (s->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return ((const int64_t *)FIELD(s, shape))[0];
}

static PyObject *storage_item(PyObject *self, Py_ssize_t i)
{
    PyObject *index = PyLong_FromSsize_t(i);
    PyObject *result = index ? storage_getitem(self, index) : NULL;
    Py_XDECREF(index);
    return result;
}

/* Iteration over the first dimension, as NumPy's; a 0-d storage has none
 * to iterate (without this, Python's fallback calls s[0], whose
 * IndexError would end the loop at once: an empty list, not an error). */
PyObject *gtpy_storage_iter(PyObject *self)
{
    if (STORAGE(self)->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d storage");
        return NULL;
    }
    return PySeqIter_New(self);
}

PyMappingMethods gtpy_storage_as_mapping = {
    .mp_length = storage_length,
    .mp_subscript = storage_getitem,
    .mp_ass_subscript = storage_setitem,
};

PySequenceMethods gtpy_storage_as_sequence = {
    .sq_length = storage_length,
    .sq_item = storage_item,
    .sq_contains = gtpy_storage_contains,
};
