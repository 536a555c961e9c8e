/* The array library that computes on a GPU: NumPy over the emulated
 * device's memory, CuPy over CUDA memory (engine.h). */
#include "engine.h"
#include "convert.h"
#include "numpy.h"
#include "storage.h"


static PyObject *import_numpy(void)
{
    static PyObject *numpy;
    return numpy ? numpy : (numpy = PyImport_ImportModule("numpy"));
}

static PyObject *import_cupy(void)
{
    static PyObject *cupy;
    if (cupy)
        return cupy;
    cupy = PyImport_ImportModule("cupy");
    if (!cupy && PyErr_ExceptionMatches(PyExc_ImportError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError,
                        "computing with storages on a CUDA GPU needs CuPy, which is not "
                        "installed (pip install cupy-cuda12x); or copy the storages to the "
                        "host (gtstore.storage(s, device='cpu'))");
    }
    return cupy;
}

/* CuPy computes on its current device: it must be the storages'. */
static int check_cupy_device(PyObject *cupy, const gts_device_ops *gpu)
{
    PyObject *cuda = PyObject_GetAttrString(cupy, "cuda");
    PyObject *runtime = cuda ? PyObject_GetAttrString(cuda, "runtime") : NULL;
    PyObject *current = runtime ? PyObject_CallMethod(runtime, "getDevice", NULL) : NULL;
    long id = current ? PyLong_AsLong(current) : -1;
    Py_XDECREF(current);
    Py_XDECREF(runtime);
    Py_XDECREF(cuda);
    if (PyErr_Occurred())
        return -1;
    if (id != gpu->id.id) {
        PyErr_Format(PyExc_ValueError,
                     "the storages are on CUDA device %d, but CuPy's current device is %ld: "
                     "compute inside `with cupy.cuda.Device(%d):`",
                     (int)gpu->id.id, id, (int)gpu->id.id);
        return -1;
    }
    return 0;
}

int gtpy_engine_get(const gts_device_ops *gpu, gtpy_engine *out)
{
    out->gpu = gpu;
    out->cuda = gpu->engine == GTS_ENGINE_CUPY && gpu->kind == GTS_MEMORY_GPU;
    out->name = out->cuda ? "CuPy" : "NumPy";
    if (!out->cuda && (gpu->engine != GTS_ENGINE_NUMPY ||
                       (gpu->kind != GTS_MEMORY_GPU && gpu->kind != GTS_MEMORY_HOST))) {
        PyErr_Format(PyExc_NotImplementedError, "computing on the %s device is not supported",
                     gpu->name);
        return -1;
    }
    out->module = out->cuda ? import_cupy() : import_numpy();
    if (!out->module)
        return -1;
    return out->cuda ? check_cupy_device(out->module, gpu) : 0;
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

static PyObject *tuple_of(int n, const Py_ssize_t *values)
{
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; tuple && i < n; ++i) {
        PyObject *item = PyLong_FromSsize_t(values[i]);
        if (!item)
            return Py_DECREF(tuple), NULL;
        PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}

/* An object with the engine's array interface (version 3) over `data`,
 * holding `owner`: the array made from it keeps it, and so the memory,
 * alive. */
static PyObject *interface_holder(const gtpy_engine *e, void *data, gts_dtype dtype, int ndim,
                                  const Py_ssize_t *shape, const Py_ssize_t *strides,
                                  bool readonly, PyObject *owner)
{
    static PyObject *namespace_type;
    if (!namespace_type) {
        PyObject *types = PyImport_ImportModule("types");
        namespace_type = types ? PyObject_GetAttrString(types, "SimpleNamespace") : NULL;
        Py_XDECREF(types);
        if (!namespace_type)
            return NULL;
    }
    char typestr[GTS_DTYPE_TEXT_SIZE];
    gts_dtype_typestr(dtype, typestr);
    PyObject *interface = Py_BuildValue(
        "{s:N,s:s,s:(NO),s:N,s:i}", "shape", tuple_of(ndim, shape), "typestr", typestr, "data",
        PyLong_FromVoidPtr(data), readonly ? Py_True : Py_False, "strides",
        tuple_of(ndim, strides), "version", 3);
    /* CUDA: every gtstore operation has completed, nothing to wait for */
    if (interface && e->cuda && PyDict_SetItemString(interface, "stream", Py_None) < 0)
        Py_CLEAR(interface);
    PyObject *kwargs = interface ? Py_BuildValue("{s:O,s:O}",
                                                 e->cuda ? "__cuda_array_interface__"
                                                         : "__array_interface__",
                                                 interface, "owner", owner)
                                 : NULL;
    Py_XDECREF(interface);
    PyObject *empty = kwargs ? PyTuple_New(0) : NULL;
    PyObject *holder = empty ? PyObject_Call(namespace_type, empty, kwargs) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(kwargs);
    return holder;
}

PyObject *gtpy_engine_view(const gtpy_engine *e, void *data, gts_dtype dtype, int ndim,
                           const Py_ssize_t *shape, const Py_ssize_t *strides, bool readonly,
                           PyObject *owner)
{
    PyObject *holder = interface_holder(e, data, dtype, ndim, shape, strides, readonly, owner);
    PyObject *array = holder ? gtpy_engine_asarray(e, holder) : NULL;
    Py_XDECREF(holder);
    return array;
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
    if (!e->cuda)
        return Py_NewRef(numpy_function);
    PyObject *name = PyObject_GetAttrString(numpy_function, "__name__");
    PyObject *function = name ? PyObject_GetAttr(e->module, name) : NULL;
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

int gtpy_engine_finish(const gtpy_engine *e)
{
    if (!e->cuda)
        return 0;
    /* Also after a failure, whose exception must survive the calls below
     * (Python code must not run with one pending: it would be lost). */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *cuda = PyObject_GetAttrString(e->module, "cuda");
    PyObject *stream = cuda ? PyObject_CallMethod(cuda, "get_current_stream", NULL) : NULL;
    PyObject *done = stream ? PyObject_CallMethod(stream, "synchronize", NULL) : NULL;
    Py_XDECREF(done);
    Py_XDECREF(stream);
    Py_XDECREF(cuda);
    if (type) { /* the first failure is the one raised */
        PyErr_Clear();
        PyErr_Restore(type, value, traceback);
        return -1;
    }
    return done ? 0 : -1;
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
