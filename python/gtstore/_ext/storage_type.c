/* The Storage type's tables: its attributes, methods and protocols, each
 * implemented in the file of its concept (storage_index.c, storage_interop.c,
 * storage_compute.c, ufunc.c, ...), bound to the type's core (storage.c) by
 * gtpy_storage_type_ready when the module is initialised. */
#include "api.h"
#include "args.h"
#include "convert.h"
#include "dlpack.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"
#include "stream.h"
#include "storage_array_api.h"
#include "storage_object.h"
#include "ufunc.h"

#include <string.h>

/* ---- attributes ------------------------------------------------------------- */

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
    if (gtpy_halo(value, "halo", s->ndim, s->ndim, halo) < 0)
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
    GETTER("axes", GET_AXES,
           "The dims as a string (GDP-3's first draft), e.g. 'JI': one character per label; "
           "ValueError for a data dimension from 10 on."),
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
    GETTER("alignment", GET_ALIGNMENT_ELEMENTS,
           "Alignment of the aligned point in elements (GDP-3's first draft): "
           "max(alignment_size // itemsize, 1)."),
    GETTER("layout", GET_LAYOUT,
           "Rank of each dimension in decreasing stride order (the highest is contiguous)."),
    GETTER("defaults", GET_PRESET, "The preset the storage was made with, or None."),
    {"data", storage_data, NULL,
     "A memoryview of the host memory (brought up to date first); None without one.", NULL},
    {"flags", gtpy_storage_flags, NULL,
     "The flags of the host ndarray (brought up to date first) as a read-only record "
     "(c_contiguous, f_contiguous, writeable, aligned, owndata); None without one.", NULL},
    {"gpu", gtpy_storage_gpu, NULL, "Whether the storage has a device (GPU) buffer.", NULL},
    {"device", gtpy_storage_device, NULL,
     "The device of the device buffer ('cuda:0', 'emulated', ...); None for host storages.",
     NULL},
    {"device_data", gtpy_storage_device_data, NULL,
     "The device buffer: the data of to_ndarray() (a CuPy MemoryPointer on CUDA); None for "
     "host storages.",
     NULL},
    {"__cuda_array_interface__", gtpy_storage_cuda_array_interface, NULL,
     "CUDA array interface, version 3, for storages in CUDA memory only; its stream is the "
     "current stream, on which the consumer's work is ordered after gtstore's (1 for the "
     "legacy default stream).",
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
    gtpy_storage_load(self, &g);
    if (gtpy_stream_copy(&g, &copy) < 0)
        return NULL;
    return gtpy_storage_new(&copy, STORAGE(self)->preset, NULL);
}

/* memo is optional (GDP-3's __deepcopy__(self, memo=None)) and unused. */
static PyObject *storage_deepcopy(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    static const char *const names[] = {"memo"};
    static gtpy_signature sig = GTPY_SIGNATURE("__deepcopy__", names, 1, 0, 0);
    PyObject *values[1];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0)
        return NULL;
    return storage_copy(self, NULL);
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
    /* on the default stream the sync also makes the host wait for the
     * device work, on a buffer with one side too (which has nothing to
     * copy): a GPU stencil's acquire, or a reader behind gtstore's back,
     * relies on it */
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

/* Whichever side is stale is brought up to date: one copy at most; and
 * the host waits for the device work (as sync_with_force). */
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
    {"__deepcopy__", FASTCALL(storage_deepcopy),
     "__deepcopy__(memo=None)\n--\n\nThe same as copy()."},
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
    {"set_device_synchronized", storage_set_synchronized, METH_NOARGS,
     "set_device_synchronized()\n--\n\nThe same as set_synchronized() (GDP-3's first "
     "draft's name)."},
    {"synchronize", storage_synchronize, METH_NOARGS,
     "synchronize()\n--\n\nCopies whichever side was modified to the other (no-op without a "
     "device buffer)."},
    {"__reduce__", storage_reduce, METH_NOARGS, "__reduce__($self, /)\n--\n\nPickling support."},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))gtpy_storage_array_ufunc,
     METH_VARARGS | METH_KEYWORDS,
     "__array_ufunc__(ufunc, method, *inputs, **kwargs)\n--\n\nNEP 13: ufuncs on storages, "
     "broadcast by dims (docs/storage.md, \"Computing with storages\"). __call__, reduce, "
     "accumulate and at; outer and reduceat raise TypeError. A call's out= may be a storage, "
     "an ndarray or an object with __gt_data_interface__ (its entry written by dims, "
     "acquired before and touched after; the object is returned)."},
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
     "dropped (one extent may be -1, the rest, as in NumPy); anything else raises ValueError "
     "(dims cannot be regrouped)."},
    {"__complex__", gtpy_storage_complex, METH_NOARGS,
     "__complex__()\n--\n\ncomplex(storage): NumPy's conversion of a size-1 array."},
    GTPY_STORAGE_ARRAY_API_METHODS,
    {NULL, NULL, 0, NULL},
};

int gtpy_storage_type_ready(void)
{
    PyTypeObject *t = &gtpy_Storage_Type;
    t->tp_repr = storage_repr;
    t->tp_as_number = &gtpy_storage_as_number;
    t->tp_as_sequence = &gtpy_storage_as_sequence;
    t->tp_as_mapping = &gtpy_storage_as_mapping;
    t->tp_iter = gtpy_storage_iter;
    t->tp_as_buffer = &gtpy_storage_as_buffer;
    t->tp_richcompare = gtpy_storage_richcompare;
    t->tp_methods = storage_methods;
    t->tp_getset = storage_getset;
    return gtpy_storage_flags_type_ready() < 0 ? -1 : PyType_Ready(t);
}
