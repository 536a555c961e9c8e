/* The engine's arrays over storages' device memory (engine.h).
 *
 * Building a CuPy array from an object with __cuda_array_interface__ costs
 * 5-8 us (a namespace, a dict, CuPy's parsing of it); a cupy.ndarray over a
 * MemoryPointer costs about 2 us. So each buffer gets, once, an `Engine`
 * object kept in the SyncState its views share (storage.c):
 * - a Block: holds the buffer and exports the block's host memory through
 *   the buffer protocol (the emulated device's host alias). Every array of
 *   the engine keeps it alive (NumPy's base, the owner of CuPy's
 *   UnownedMemory), so the memory outlives the storage where an array does.
 * - for CuPy, the UnownedMemory over the block and the last MemoryPointer
 *   made (with its offset into the block);
 * - the last operand view of each kind (read-only, writable) with its shape,
 *   strides and offset: a ufunc called again on the same storages builds
 *   nothing.
 * None of these objects refers back to the Engine or the SyncState, so
 * there are no reference cycles, and none is ever handed to the user but
 * through a new array (the cached views are used only inside one call).
 * Shapes, strides and offsets are libgtstore's: nothing here decides one. */
#include "engine.h"
#include "engine_objects.h"

#include "convert.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"
#include "storage_object.h"

#include "gtstore/access.h"
#include "gtstore/geometry.h"

/* ---- the block -------------------------------------------------------------------------- */

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BlockObject *b = (BlockObject *)self;
    if (!b->host) {
        view->obj = NULL;
        PyErr_SetString(PyExc_BufferError, "a block of CUDA memory has no host buffer");
        return -1;
    }
    return PyBuffer_FillInfo(view, self, b->base, b->size, 0, flags);
}

static void block_dealloc(PyObject *self)
{
    gts_buffer_release(((BlockObject *)self)->buffer);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs block_as_buffer = {.bf_getbuffer = block_getbuffer};

static PyTypeObject Block_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore._EngineBlock",
    .tp_doc = "A buffer's memory as the array library computing on it sees it; keeps the "
              "buffer alive.",
    .tp_basicsize = sizeof(BlockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = block_dealloc,
    .tp_as_buffer = &block_as_buffer,
};

/* ---- the engine's objects of one buffer -------------------------------------------------- */

static void engine_dealloc(PyObject *self)
{
    EngineObject *o = (EngineObject *)self;
    Py_XDECREF(o->views[0]);
    Py_XDECREF(o->views[1]);
    Py_XDECREF(o->pointer);
    Py_XDECREF(o->memory);
    Py_XDECREF(o->block);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject Engine_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gtstore._EngineCache",
    .tp_doc = "The array library's objects over one buffer, made once.",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = engine_dealloc,
};

static int types_ready(void)
{
    static bool ready;
    if (!ready && (PyType_Ready(&Block_Type) < 0 || PyType_Ready(&Engine_Type) < 0))
        return -1;
    ready = true;
    return 0;
}

/* cupy.cuda.memory.UnownedMemory(ptr, size, owner, device_id): device_id
 * given, else CuPy asks the driver which device the pointer is on. */
static PyObject *unowned_memory(const gtpy_engine *e, char *base, Py_ssize_t size,
                                PyObject *owner)
{
    PyObject *args = Py_BuildValue("(NnOi)", PyLong_FromVoidPtr(base), size, owner,
                                   (int)e->gpu->id.id);
    PyObject *memory = args ? PyObject_Call(e->cupy.unowned_memory, args, NULL) : NULL;
    Py_XDECREF(args);
    return memory;
}

/* cupy.cuda.memory.MemoryPointer(memory, offset). */
static PyObject *memory_pointer(const gtpy_engine *e, PyObject *memory, Py_ssize_t offset)
{
    PyObject *number = PyLong_FromSsize_t(offset);
    PyObject *args[2] = {memory, number};
    PyObject *pointer = number ? PyObject_Vectorcall(e->cupy.memory_pointer, args, 2, NULL)
                               : NULL;
    Py_XDECREF(number);
    return pointer;
}

static EngineObject *engine_new(const gtpy_engine *e, const gts_buffer *buffer)
{
    if (types_ready() < 0)
        return NULL;
    BlockObject *block = PyObject_New(BlockObject, &Block_Type);
    if (!block)
        return NULL;
    block->buffer = gts_buffer_retain((gts_buffer *)buffer);
    block->size = (Py_ssize_t)gts_buffer_size(buffer);
    block->host = !e->cuda;
    block->base = gts_buffer_data(buffer);
    if (block->host) /* the host address behind emulated device memory */
        block->base = gts_device_host_alias(gts_buffer_device(buffer), block->base);
    if (block->host && !block->base && gts_buffer_data(buffer)) { /* not a live block */
        PyErr_Format(PyExc_RuntimeError, "the %s device's memory at %p has no host address",
                     gts_buffer_device(buffer)->name, gts_buffer_data(buffer));
        Py_DECREF(block);
        return NULL;
    }
    EngineObject *o = PyObject_New(EngineObject, &Engine_Type);
    if (!o) {
        Py_DECREF(block);
        return NULL;
    }
    o->block = block;
    o->memory = o->pointer = o->views[0] = o->views[1] = NULL;
    if (e->cuda && !(o->memory = unowned_memory(e, block->base, block->size, (PyObject *)block)))
        Py_CLEAR(o);
    return o;
}

/* The Engine of `storage`'s buffer (a new reference): the one its SyncState
 * keeps, made there on first use. */
static EngineObject *engine_of(const gtpy_engine *e, PyObject *storage, const gts_storage *g)
{
    PyObject **slot;
    if (gtpy_storage_engine_slot(storage, &slot) < 0)
        return NULL;
    if (slot && *slot)
        return (EngineObject *)Py_NewRef(*slot);
    EngineObject *o = engine_new(e, g->buffer);
    if (o && slot)
        *slot = Py_NewRef((PyObject *)o);
    return o;
}

/* ---- arrays ----------------------------------------------------------------------------- */

/* A tuple of `n` sizes (Py_ssize_t is int64_t's size: storage_object.h). */
static PyObject *sizes_tuple(int n, const Py_ssize_t *values)
{
    return gtpy_int64_tuple(n, (const int64_t *)values);
}

/* numpy.ndarray(shape, dtype, buffer=block, offset=, strides=): NumPy's
 * constructor where its C API is unavailable (GTSTORE_NUMPY_CAPI=0). */
static PyObject *numpy_constructed(BlockObject *block, const view_key *k, bool readonly)
{
    PyObject *dtype = gtpy_dtype_object(k->dtype);
    PyObject *kwargs =
        dtype ? Py_BuildValue("{s:N,s:O,s:O,s:n,s:N}", "shape", sizes_tuple(k->ndim, k->shape),
                              "dtype", dtype, "buffer", (PyObject *)block, "offset", k->offset,
                              "strides", sizes_tuple(k->ndim, k->strides))
              : NULL;
    PyObject *empty = kwargs ? PyTuple_New(0) : NULL;
    PyObject *array = empty ? PyObject_Call(gtpy_numpy("ndarray"), empty, kwargs) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(kwargs);
    Py_XDECREF(dtype);
    if (array && readonly) {
        PyObject *flags = PyObject_GetAttrString(array, "flags");
        if (!flags || PyObject_SetAttrString(flags, "writeable", Py_False) < 0)
            Py_CLEAR(array);
        Py_XDECREF(flags);
    }
    return array;
}

/* An ndarray over the block: one construction through NumPy's C API. */
static PyObject *numpy_view(BlockObject *block, const view_key *k, bool readonly)
{
    if (!gtpy_numpy_capi())
        return numpy_constructed(block, k, readonly);
    char *data = block->base ? block->base + k->offset : NULL; /* NULL: no memory */
    return gtpy_numpy_capi_array(k->dtype, k->ndim, k->shape, k->strides, data, readonly,
                                 (PyObject *)block);
}

/* cupy.ndarray(shape, dtype, pointer, strides). */
static PyObject *cupy_array(const gtpy_engine *e, PyObject *pointer, const view_key *k)
{
    PyObject *shape = sizes_tuple(k->ndim, k->shape);
    PyObject *strides = shape ? sizes_tuple(k->ndim, k->strides) : NULL;
    PyObject *dtype = strides ? gtpy_dtype_object(k->dtype) : NULL;
    PyObject *array = NULL;
    if (dtype) {
        PyObject *args[4] = {shape, dtype, pointer, strides};
        array = PyObject_Vectorcall(e->cupy.ndarray, args, 4, NULL);
    }
    Py_XDECREF(dtype);
    Py_XDECREF(strides);
    Py_XDECREF(shape);
    return array;
}

/* A CuPy array over the block, the MemoryPointer reused while the offset
 * repeats. CuPy has no read-only arrays. */
static PyObject *cupy_view(const gtpy_engine *e, EngineObject *o, const view_key *k)
{
    if (!o->pointer || o->pointer_offset != k->offset) {
        PyObject *pointer = memory_pointer(e, o->memory, k->offset);
        if (!pointer)
            return NULL;
        Py_XSETREF(o->pointer, pointer);
        o->pointer_offset = k->offset;
    }
    return cupy_array(e, o->pointer, k);
}

static bool same_view(const view_key *a, const view_key *b)
{
    size_t n = (size_t)a->ndim * sizeof(Py_ssize_t);
    return a->offset == b->offset && a->ndim == b->ndim && a->dtype.kind == b->dtype.kind &&
           a->dtype.itemsize == b->dtype.itemsize && memcmp(a->shape, b->shape, n) == 0 &&
           memcmp(a->strides, b->strides, n) == 0;
}

static PyObject *view_of(const gtpy_engine *e, EngineObject *o, const view_key *k, bool readonly,
                         bool operand)
{
    PyObject **last = &o->views[readonly], *other = o->views[!readonly];
    if (operand && *last && same_view(&o->keys[readonly], k))
        return Py_NewRef(*last);
    /* CuPy has no read-only arrays, and copies an input that is another
     * object over its output's memory first (an in-place `c += a` would
     * allocate and copy c): the same array serves reading and writing */
    if (operand && e->cuda && other && same_view(&o->keys[!readonly], k))
        return Py_NewRef(other);
    PyObject *array = e->cuda ? cupy_view(e, o, k) : numpy_view(o->block, k, readonly);
    if (array && operand) {
        Py_XSETREF(*last, Py_NewRef(array));
        o->keys[readonly] = *k;
    }
    return array;
}

/* A key of `dtype` whose element 0 is at `element0` in `buffer` (its
 * distance from the block, in the device's addresses; NULL for an empty
 * storage over no memory), without shape yet (same_view reads the first
 * ndim entries only: nothing else is cleared). */
static void key_init(view_key *k, gts_dtype dtype, const void *element0, const gts_buffer *buffer)
{
    k->ndim = 0;
    k->dtype = dtype;
    k->offset = element0 ? (Py_ssize_t)((const char *)element0 -
                                        (const char *)gts_buffer_data(buffer))
                         : 0;
}

PyObject *gtpy_engine_storage_view(gtpy_engine *e, PyObject *storage, int ndim,
                                   const Py_ssize_t *shape, const Py_ssize_t *strides, bool write,
                                   bool operand)
{
    gts_storage g;
    gts_error err;
    void *data;
    gtpy_storage_load(storage, &g);
    bool readonly = !write || g.readonly;
    /* on the engine's stream where it is the buffer's device's (else the
     * default stream: the host waits) */
    gts_stream stream = gts_buffer_device(g.buffer) == e->gpu ? e->stream : NULL;
    if (gts_storage_access(&g, GTS_SIDE_DEVICE, readonly ? GTS_ACCESS_READ : GTS_ACCESS_WRITE,
                           stream, &data, &err) != 0)
        return gtpy_raise_null(&err);
    if (stream)
        gtpy_engine_add_buffer(e, g.buffer);
    else if (e->stream) /* managed memory, ordered by the host: the work completes */
        e->unrecorded = true;
    view_key k;
    key_init(&k, g.dtype, data, g.buffer);
    k.ndim = shape ? ndim : g.ndim;
    for (int d = 0; d < k.ndim; ++d) {
        k.shape[d] = shape ? shape[d] : (Py_ssize_t)g.shape[d];
        k.strides[d] = shape ? strides[d] : (Py_ssize_t)g.strides[d];
    }
    EngineObject *o = engine_of(e, storage, &g);
    PyObject *array = o ? view_of(e, o, &k, readonly, operand) : NULL;
    Py_XDECREF(o);
    return array;
}

/* ---- arrays over a stencil's bound fields ---------------------------------------------- */

/* An array over memory of `device` that no Storage holds, kept alive by
 * `owner`: NumPy's over the host address behind it, CuPy's over the bytes
 * the array spans. */
static PyObject *foreign_array(const gtpy_engine *e, const gts_device_ops *device,
                               PyObject *owner, char *element0, const view_key *k,
                               bool readonly)
{
    if (!e->cuda) {
        char *host = device->host_accessible || !element0
                         ? element0
                         : gts_device_host_alias(device, element0);
        if (element0 && !host) {
            PyErr_Format(PyExc_RuntimeError, "the %s device's memory at %p has no host address",
                         device->name, (void *)element0);
            return NULL;
        }
        return gtpy_numpy_capi_array(k->dtype, k->ndim, k->shape, k->strides, host, readonly,
                                     owner);
    }
    int64_t low, high;
    gts_error err;
    if (gts_strided_extent(k->ndim, (const int64_t *)k->shape, (const int64_t *)k->strides,
                           k->dtype.itemsize, &low, &high, &err) != GTS_OK)
        return gtpy_raise_null(&err);
    char *lowest = element0 ? element0 + low : NULL; /* NULL: an empty array over no memory */
    PyObject *memory = unowned_memory(e, lowest, (Py_ssize_t)(high - low), owner);
    PyObject *pointer = memory ? memory_pointer(e, memory, (Py_ssize_t)-low) : NULL;
    PyObject *array = pointer ? cupy_array(e, pointer, k) : NULL;
    Py_XDECREF(pointer);
    Py_XDECREF(memory);
    return array;
}

PyObject *gtpy_engine_field_array(const gtpy_engine *e, PyObject *storage, PyObject *owner,
                                  const gts_device_ops *device, char *element0, gts_dtype dtype,
                                  int ndim, const int64_t *shape, const int64_t *strides,
                                  bool readonly)
{
    gts_storage g;
    view_key k;
    if (storage)
        gtpy_storage_load(storage, &g);
    key_init(&k, dtype, storage ? element0 : NULL, storage ? g.buffer : NULL);
    k.ndim = ndim;
    for (int d = 0; d < ndim; ++d) {
        k.shape[d] = (Py_ssize_t)shape[d];
        k.strides[d] = (Py_ssize_t)strides[d];
    }
    if (!storage)
        return foreign_array(e, device ? device : e->gpu, owner, element0, &k, readonly);
    EngineObject *o = engine_of(e, storage, &g);
    PyObject *array = o ? view_of(e, o, &k, readonly || g.readonly, false) : NULL;
    Py_XDECREF(o);
    return array;
}
