/* The device side of a Storage: which device it is on (device,
 * __dlpack_device__), its device buffer as an array (to_ndarray, to_cupy,
 * device_data) and __cuda_array_interface__. Every export of the device
 * side may be written, so it brings that side up to date and marks it
 * written first (gtstore/sync.h). */
#include "dlpack.h"
#include "engine.h"
#include "errors.h"
#include "storage.h"
#include "stream.h"
#include "storage_object.h"

#include "gtstore/sync.h"

static const gts_device_ops *device_of(PyObject *self)
{
    return gts_buffer_device(STORAGE(self)->buffer);
}

/* The device side exported, the consumer being free to write it: on
 * `stream` (NULL: the host waits for the buffer's device work; else the
 * stream waits on the device). Nothing is recorded: the work that follows
 * on the stream is the consumer's, which gtstore does not see. */
static int device_write_access(PyObject *self, gts_stream stream)
{
    gts_storage g;
    gts_error err;
    void *data;
    gtpy_storage_load(self, &g);
    gts_access access = g.readonly ? GTS_ACCESS_READ : GTS_ACCESS_WRITE;
    if (gts_storage_access(&g, GTS_SIDE_DEVICE, access, stream, &data, &err) != 0)
        return gtpy_raise(&err);
    return 0;
}

static void release_buffer(void *buffer)
{
    gts_buffer_release(buffer);
}

/* The emulated device's memory as NumPy sees it: a CPU storage over the
 * host memory behind the device addresses, which keeps the device buffer
 * alive, and an ndarray of it. For tests, which read and write the device
 * side through it as a kernel would. */
static PyObject *emulated_ndarray(PyObject *self)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    char *device_base = gts_buffer_data(g.buffer);
    void *host = gts_device_host_alias(gts_buffer_device(g.buffer), device_base);
    gts_buffer *wrapped;
    gts_error err;
    if (device_write_access(self, NULL) < 0) /* the host reads and writes it */
        return NULL;
    if (gts_buffer_wrap_host(host, gts_buffer_size(g.buffer), release_buffer,
                             gts_buffer_retain(g.buffer), &wrapped, &err) != 0) {
        gts_buffer_release(g.buffer);
        return gtpy_raise_null(&err);
    }
    gts_storage view = g;
    view.buffer = wrapped; /* the wrapper's one reference moves into the object */
    PyObject *owner = gtpy_storage_new(&view, NULL, NULL);
    PyObject *array = owner ? gtpy_storage_ndarray(owner, true) : NULL;
    Py_XDECREF(owner);
    return array;
}

PyObject *gtpy_storage_to_cupy(PyObject *self, PyObject *unused)
{
    (void)unused;
    const gts_device_ops *device = device_of(self);
    if (!device->cuda_array_interface) {
        PyErr_Format(gtpy_NoSuchBufferError,
                     "to_cupy: this storage has no CUDA buffer (its memory is on the %s "
                     "device)%s",
                     device->name,
                     device->host_alias ? "; to_ndarray() gives the emulated device's "
                                          "memory as NumPy"
                                        : "");
        return NULL;
    }
    /* the engine's array over the buffer (engine_view.c: one construction,
     * no __cuda_array_interface__ round trip), on CuPy's current stream,
     * which waits for the buffer's device work; the device side is marked
     * written, as for every export */
    gtpy_engine e;
    const gts_device_ops *gpu = device->owner ? device->owner : device;
    if (gtpy_engine_get(gpu, &e) < 0) {
        gtpy_prefix_error("to_cupy");
        return NULL;
    }
    PyObject *array = gtpy_engine_storage_view(&e, self, 0, NULL, NULL, true, false);
    if (gtpy_engine_finish(&e) < 0)
        Py_CLEAR(array);
    return array;
}

PyObject *gtpy_storage_to_ndarray(PyObject *self, PyObject *unused)
{
    const gts_device_ops *device = device_of(self);
    /* the host, emulated managed and pinned memory */
    if (device->host_accessible && !device->cuda_array_interface)
        return gtpy_storage_ndarray(self, true);
    if (device->host_alias) /* the emulated device */
        return emulated_ndarray(self);
    return gtpy_storage_to_cupy(self, unused);
}

PyObject *gtpy_storage_device(PyObject *self, void *closure)
{
    (void)closure;
    const gts_device_ops *device = device_of(self);
    if (device->kind == GTS_MEMORY_HOST)
        Py_RETURN_NONE;
    return PyUnicode_FromString(device->name);
}

PyObject *gtpy_storage_gpu(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(device_of(self)->kind != GTS_MEMORY_HOST);
}

PyObject *gtpy_storage_device_data(PyObject *self, void *closure)
{
    (void)closure;
    if (device_of(self)->kind == GTS_MEMORY_HOST)
        Py_RETURN_NONE;
    PyObject *array = gtpy_storage_to_ndarray(self, NULL);
    PyObject *data = array ? PyObject_GetAttrString(array, "data") : NULL;
    Py_XDECREF(array);
    return data;
}

PyObject *gtpy_storage_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    gts_device_id id = device_of(self)->id;
    return Py_BuildValue("(ii)", (int)id.type, (int)id.id);
}

/* __cuda_array_interface__ (version 3), for storages in CUDA memory only:
 * elsewhere the attribute does not exist, so that no consumer takes the
 * emulated device's or the host's addresses for GPU memory. "stream" is the
 * protocol's: the current stream (stream.h), which was made to wait for the
 * buffer's device work and which the consumer synchronises or queues on;
 * None where that is the default stream, for which the host waited (never
 * 0, which the protocol forbids). */
PyObject *gtpy_storage_cuda_array_interface(PyObject *self, void *closure)
{
    (void)closure;
    return gtpy_storage_cuda_info(self, true);
}

PyObject *gtpy_storage_cuda_info(PyObject *self, bool access)
{
    if (!device_of(self)->cuda_array_interface) {
        PyErr_SetString(PyExc_AttributeError,
                        "__cuda_array_interface__: this storage is not in CUDA memory");
        return NULL;
    }
    gts_stream stream = NULL;
    if (access && (gtpy_current_stream(device_of(self), &stream) < 0 ||
                   device_write_access(self, stream) < 0))
        return NULL;
    gts_storage g;
    gtpy_storage_load(self, &g);
    char typestr[GTS_DTYPE_TEXT_SIZE];
    gts_dtype_typestr(g.dtype, typestr);
    char *base = gts_buffer_data(g.buffer);
    PyObject *strides = gts_storage_contiguous(&g, 'C')
                            ? Py_NewRef(Py_None)
                            : gtpy_storage_get(self, (void *)(intptr_t)GET_STRIDES);
    return Py_BuildValue("{s:N,s:s,s:(NO),s:N,s:i,s:N}", "shape",
                         gtpy_storage_get(self, (void *)(intptr_t)GET_SHAPE), "typestr", typestr,
                         "data", PyLong_FromVoidPtr(base ? base + g.offset : NULL),
                         g.readonly ? Py_True : Py_False, "strides", strides, "version", 3,
                         "stream",
                         stream ? PyLong_FromVoidPtr(stream) : Py_NewRef(Py_None));
}
