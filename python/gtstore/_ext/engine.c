/* The array library that computes on a GPU: NumPy over the emulated
 * device's memory, CuPy over CUDA memory (engine.h). */
#include "engine.h"
#include "convert.h"
#include "numpy.h"
#include "errors.h"
#include "storage.h"
#include "stream.h"

#include "gtstore/access.h"


static PyObject *import_numpy(void)
{
    static PyObject *numpy;
    return numpy ? numpy : (numpy = PyImport_ImportModule("numpy"));
}

/* cupy and the types engine_view.c constructs, imported once (the current
 * stream is stream.c's). */
static int import_cupy(gtpy_engine *e)
{
    static PyObject *cupy, *ndarray, *memory_pointer, *unowned_memory;
    if (!cupy) {
        PyObject *module = PyImport_ImportModule("cupy");
        if (!module && PyErr_ExceptionMatches(PyExc_ImportError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_RuntimeError,
                            "computing with storages on a CUDA GPU needs CuPy, which is not "
                            "installed (pip install cupy-cuda13x, or cupy-cuda12x for a CUDA 12 "
                            "driver); or copy the storages to the "
                            "host (gtstore.storage(s, device='cpu'))");
        }
        PyObject *memory = module ? PyImport_ImportModule("cupy.cuda.memory") : NULL;
        ndarray = module ? PyObject_GetAttrString(module, "ndarray") : NULL;
        memory_pointer = memory && ndarray ? PyObject_GetAttrString(memory, "MemoryPointer")
                                           : NULL;
        unowned_memory = memory_pointer ? PyObject_GetAttrString(memory, "UnownedMemory") : NULL;
        Py_XDECREF(memory);
        if (!unowned_memory) {
            Py_XDECREF(module);
            Py_CLEAR(ndarray);
            Py_CLEAR(memory_pointer);
            Py_CLEAR(unowned_memory);
            return -1;
        }
        cupy = module;
    }
    e->module = cupy;
    e->cupy.ndarray = ndarray;
    e->cupy.memory_pointer = memory_pointer;
    e->cupy.unowned_memory = unowned_memory;
    return 0;
}

int gtpy_engine_get(const gts_device_ops *gpu, gtpy_engine *out)
{
    out->gpu = gpu;
    out->cuda = gpu->engine == GTS_ENGINE_CUPY && gpu->kind == GTS_MEMORY_GPU;
    out->name = out->cuda ? "CuPy" : "NumPy";
    out->cupy.ndarray = out->cupy.memory_pointer = out->cupy.unowned_memory = NULL;
    out->stream = NULL;
    out->nbuffers = 0;
    out->unrecorded = false;
    if (!out->cuda && (gpu->engine != GTS_ENGINE_NUMPY ||
                       (gpu->kind != GTS_MEMORY_GPU && gpu->kind != GTS_MEMORY_HOST))) {
        PyErr_Format(PyExc_NotImplementedError, "computing on the %s device is not supported",
                     gpu->name);
        return -1;
    }
    if (out->cuda)
        return import_cupy(out) < 0 ? -1 : gtpy_cupy_stream(gpu, &out->stream);
    out->module = import_numpy();
    return out->module ? 0 : -1;
}

int gtpy_engine_stream(const gts_device_ops *gpu, gts_stream *out)
{
    *out = NULL;
    return gpu->engine == GTS_ENGINE_CUPY && gpu->kind == GTS_MEMORY_GPU
               ? gtpy_cupy_stream(gpu, out)
               : 0;
}

bool gtpy_engine_reaches(const gtpy_engine *e, const gts_device_ops *device)
{
    /* a GPU's memory or one that a GPU owns (managed, pinned) */
    const gts_device_ops *gpu = device->owner ? device->owner : device;
    if (device->kind == GTS_MEMORY_HOST || gpu->kind != GTS_MEMORY_GPU)
        return false;
    if (!e->cuda) /* a GPU NumPy computes on (the emulated device) and its memories */
        return gpu->engine == GTS_ENGINE_NUMPY;
    return gpu == e->gpu && device->kind != GTS_MEMORY_PINNED; /* and its managed memory */
}

PyObject *gtpy_engine_asarray(const gtpy_engine *e, PyObject *obj)
{
    return PyObject_CallMethod(e->module, "asarray", "O", obj);
}

PyObject *gtpy_engine_copy(const gtpy_engine *e, PyObject *obj)
{
    return PyObject_CallMethod(e->module, "array", "O", obj);
}

PyObject *gtpy_engine_empty_like(const gtpy_engine *e, PyObject *array)
{
    return PyObject_CallMethod(e->module, "empty_like", "O", array);
}

int gtpy_engine_to_host(const gtpy_engine *e, PyObject *host, PyObject *array)
{
    PyObject *values = e->cuda ? PyObject_CallMethod(e->module, "asnumpy", "O", array)
                               : Py_NewRef(array);
    PyObject *done = values ? PyObject_CallFunctionObjArgs(gtpy_numpy("copyto"), host, values,
                                                           NULL)
                            : NULL;
    Py_XDECREF(values);
    Py_XDECREF(done);
    return done ? 0 : -1;
}

PyObject *gtpy_engine_function(const gtpy_engine *e, PyObject *numpy_function)
{
    static PyObject *found; /* NumPy's function -> CuPy's, once looked up */
    if (!e->cuda)
        return Py_NewRef(numpy_function);
    if (!found && !(found = PyDict_New()))
        return NULL;
    PyObject *function = PyDict_GetItemWithError(found, numpy_function); /* borrowed */
    if (function || PyErr_Occurred())
        return Py_XNewRef(function);
    PyObject *name = PyObject_GetAttrString(numpy_function, "__name__");
    function = name ? PyObject_GetAttr(e->module, name) : NULL;
    if (function && PyDict_SetItem(found, numpy_function, function) < 0)
        Py_CLEAR(function);
    if (name && !function && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%S: CuPy, which computes on CUDA GPUs, has no %S; copy the storages to "
                     "the host (gtstore.storage(s, device='cpu'))",
                     numpy_function, name);
    }
    Py_XDECREF(name);
    return function;
}

int gtpy_engine_check_keywords(const gtpy_engine *e, PyObject *ufunc, PyObject *kwargs)
{
    if (!e->cuda || !kwargs)
        return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        if (PyUnicode_CompareWithASCIIString(key, "dtype") == 0 ||
            PyUnicode_CompareWithASCIIString(key, "casting") == 0)
            continue;
        PyErr_Format(PyExc_TypeError,
                     "%S: %U= is not supported on a CUDA GPU (CuPy's ufuncs take out=, where=, "
                     "dtype= and casting=)",
                     ufunc, key);
        return -1;
    }
    return 0;
}

void gtpy_engine_add_buffer(gtpy_engine *e, gts_buffer *buffer)
{
    for (int i = 0; i < e->nbuffers; ++i)
        if (e->buffers[i] == buffer)
            return;
    if (e->nbuffers < GTPY_ENGINE_MAX_BUFFERS)
        e->buffers[e->nbuffers++] = gts_buffer_retain(buffer);
    else
        e->unrecorded = true;
}

int gtpy_engine_finish(gtpy_engine *e)
{
    /* Also after a failure (whose work may be queued in part): its
     * exception is the one raised. */
    gts_error err;
    int rc = gts_buffers_order_record(e->buffers, e->nbuffers, e->stream, &err);
    for (int i = 0; i < e->nbuffers; ++i)
        gts_buffer_release(e->buffers[i]);
    e->nbuffers = 0;
    /* Where nothing records the work, it completes here: buffers beyond the
     * list, managed memory (CuPy's stream is never NULL: its stream 0 is
     * the legacy default stream, gts_device_legacy_stream). */
    if (rc == GTS_OK && e->cuda && (e->unrecorded || !e->stream))
        rc = gts_device_synchronize(e->gpu, e->stream, &err);
    e->unrecorded = false;
    if (PyErr_Occurred())
        return -1;
    return rc == GTS_OK ? 0 : gtpy_raise(&err);
}

bool gtpy_is_cuda_array(PyObject *obj)
{
    static PyObject *interned;
    if (gtpy_is_storage(obj) || PyFloat_Check(obj) || PyLong_Check(obj) || PyComplex_Check(obj) ||
        Py_IS_TYPE(obj, (PyTypeObject *)gtpy_numpy("ndarray")))
        return false;
    PyObject *interface = gtpy_optional_attr(obj, "__cuda_array_interface__", &interned);
    Py_XDECREF(interface);
    return interface != NULL;
}
