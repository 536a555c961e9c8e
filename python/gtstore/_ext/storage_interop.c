/* A Storage with NumPy and GT4Py: ndarray views of its memory, bool(),
 * float(), int() and complex() as NumPy's, the buffer protocol, the array
 * interface, GDP-3's data interface, __array__ and __array_function__.
 * Host access and ndarray views are storage_host.c's. */
#include "args.h"
#include "convert.h"
#include "numpy.h"
#include "storage.h"
#include "storage_object.h"
#include "ufunc.h"

static PyObject *typestr(gts_dtype dtype)
{
    char text[GTS_DTYPE_TEXT_SIZE];
    gts_dtype_typestr(dtype, text);
    return PyUnicode_FromString(text);
}

/* (address, read-only) of the host side. As an export that may be written
 * (`access`), the host side is brought up to date and marked written
 * first; the data interface leaves that to its acquire and touch. */
static PyObject *data_pair(PyObject *self, bool access)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    if (access && gtpy_storage_host_access(&g, true) < 0)
        return NULL;
    return Py_BuildValue("(NO)", PyLong_FromVoidPtr(gts_storage_data(&g)),
                         g.readonly ? Py_True : Py_False);
}

PyObject *gtpy_storage_array_interface(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g;
    gtpy_storage_load(self, &g);
    if (!gtpy_has_host_side(g.buffer)) {
        /* no host side (a GPUStorage): absent, as the CUDA array interface
         * is away from CUDA, so that hasattr() probes answer False */
        PyErr_SetString(PyExc_AttributeError,
                        "__array_interface__: this storage has no host buffer");
        return NULL;
    }
    PyObject *strides = gts_storage_contiguous(&g, 'C')
                            ? Py_NewRef(Py_None)
                            : gtpy_storage_get(self, (void *)(intptr_t)GET_STRIDES);
    return Py_BuildValue("{s:N,s:N,s:N,s:N,s:i}", "shape",
                         gtpy_storage_get(self, (void *)(intptr_t)GET_SHAPE), "typestr",
                         typestr(g.dtype), "data", data_pair(self, true), "strides", strides,
                         "version", 3);
}

/* GDP-3's data interface: {None: the host buffer, "gpu": the CUDA buffer},
 * each entry present where the storage has that side, with the callbacks
 * that keep the sides in sync (gtstore/sync.h): "acquire" brings the side
 * up to date, "touch" marks it written. */
static int add_side(PyObject *interface, PyObject *key, PyObject *info, PyObject *self,
                    const char *acquire, const char *touch)
{
    PyObject *dims = gtpy_storage_get(self, (void *)(intptr_t)GET_DIMS);
    PyObject *halo = gtpy_storage_get(self, (void *)(intptr_t)GET_HALO);
    PyObject *on_acquire = PyObject_GetAttrString(self, acquire);
    PyObject *on_touch = PyObject_GetAttrString(self, touch);
    int rc = -1;
    if (dims && halo && on_acquire && on_touch && PyDict_SetItemString(info, "dims", dims) == 0 &&
        PyDict_SetItemString(info, "halo", halo) == 0 &&
        PyDict_SetItemString(info, "acquire", on_acquire) == 0 &&
        PyDict_SetItemString(info, "touch", on_touch) == 0 &&
        PyDict_SetItemString(info, "release", Py_None) == 0)
        rc = PyDict_SetItem(interface, key, info);
    Py_XDECREF(dims);
    Py_XDECREF(halo);
    Py_XDECREF(on_acquire);
    Py_XDECREF(on_touch);
    return rc;
}

PyObject *gtpy_storage_gt_data_interface(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g;
    gtpy_storage_load(self, &g);
    PyObject *interface = PyDict_New();
    if (!interface)
        return NULL;
    if (gtpy_has_host_side(g.buffer)) {
        PyObject *host = Py_BuildValue("{s:N,s:N,s:N,s:N}", "shape",
                                       gtpy_storage_get(self, (void *)(intptr_t)GET_SHAPE),
                                       "typestr", typestr(g.dtype), "data", data_pair(self, false),
                                       "strides",
                                       gtpy_storage_get(self, (void *)(intptr_t)GET_STRIDES));
        int rc = host ? add_side(interface, Py_None, host, self, "device_to_host",
                                 "set_host_modified")
                      : -1;
        Py_XDECREF(host);
        if (rc < 0)
            return Py_DECREF(interface), NULL;
    }
    PyObject *gpu = gtpy_storage_cuda_info(self, false);
    if (!gpu && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear(); /* not CUDA memory: no "gpu" entry */
        return interface;
    }
    PyObject *key = gpu ? PyUnicode_FromString("gpu") : NULL;
    int rc = key ? add_side(interface, key, gpu, self, "host_to_device", "set_device_modified")
                 : -1;
    Py_XDECREF(key);
    Py_XDECREF(gpu);
    if (rc < 0)
        Py_CLEAR(interface);
    return interface;
}

/* What a buffer-protocol export of a storage hands out. */
typedef struct buffer_export {
    char *data;
    gts_dtype dtype;
    int ndim;
    Py_ssize_t *shape, *strides;
    bool readonly, c_contiguous, f_contiguous;
    int64_t nbytes;
} buffer_export;

/* Fills `view` (flags checked, `view->obj` set; on failure BufferError and
 * view->obj = NULL). */
static int refuse(Py_buffer *view, const char *why)
{
    view->obj = NULL;
    PyErr_Format(PyExc_BufferError, "gtstore buffer: %s", why);
    return -1;
}

static int export_buffer(PyObject *exporter, const buffer_export *e, Py_buffer *view, int flags)
{
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && e->readonly)
        return refuse(view, "the array is read-only");
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !e->c_contiguous)
        return refuse(view, "the array is not C-contiguous");
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !e->f_contiguous)
        return refuse(view, "the array is not Fortran-contiguous");
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !e->c_contiguous &&
        !e->f_contiguous)
        return refuse(view, "the array is not contiguous");
    if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !e->c_contiguous)
        return refuse(view, "the array is not C-contiguous; request strides");
    view->buf = e->data;
    view->obj = Py_NewRef(exporter);
    view->len = (Py_ssize_t)e->nbytes;
    view->itemsize = e->dtype.itemsize;
    view->readonly = e->readonly;
    view->ndim = e->ndim;
    view->format = (flags & PyBUF_FORMAT) ? (char *)gts_dtype_format(e->dtype) : NULL;
    view->shape = (flags & PyBUF_ND) ? e->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? e->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

/* ---- buffer protocol ---------------------------------------------------------- */

static int storage_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    StorageObject *s = STORAGE(self);
    gts_storage g;
    gtpy_storage_load(self, &g);
    /* The view is writable whatever the consumer asked for: it may write. */
    if (gtpy_storage_host_access(&g, true) < 0) {
        view->obj = NULL;
        return -1;
    }
    buffer_export e = {gts_storage_data(&g),
                     s->dtype,
                     s->ndim,
                     FIELD(s, shape),
                     FIELD(s, strides),
                     s->readonly,
                     gts_storage_contiguous(&g, 'C'),
                     gts_storage_contiguous(&g, 'F'),
                     gts_storage_nbytes(&g)};
    if (export_buffer(self, &e, view, flags) < 0)
        return -1;
    ++s->exports;
    return 0;
}

static void storage_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    --STORAGE(self)->exports;
}

PyObject *gtpy_storage_to_numpy(PyObject *self, PyObject *unused)
{
    (void)unused;
    return gtpy_storage_ndarray(self, true);
}

/* __array__(dtype=None, /, *, copy=None) with NumPy 2's copy rules. */
PyObject *gtpy_storage_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "copy"};
    static gtpy_signature sig = GTPY_SIGNATURE("__array__", names, 1, 0, 1);
    PyObject *values[2];
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0)
        return NULL;
    PyObject *dtype = values[0] == Py_None ? NULL : values[0];
    int copy;
    if (gtpy_copy_flag(values[1], -1, -1, &copy) < 0)
        return NULL;
    PyObject *array = gtpy_storage_ndarray(self, true);
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
        return gtpy_storage_ndarray(obj, true); /* NumPy functions may write (out=) */
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

/* NEP 18: np.transpose, the reductions and the functions of the Storage
 * methods (np.cumsum, np.clip, ...) give what the methods give; every other
 * function runs on ndarray views of the storages and returns NumPy's
 * result. */
/* The reduction a NumPy function is, by the name of the Storage method
 * that does it (ufunc.c), or NULL. */
static const char *reduction_of(PyObject *func)
{
    static const char *const names[][2] = {
        {"sum", "sum"}, {"prod", "prod"}, {"mean", "mean"}, {"std", "std"}, {"var", "var"},
        {"min", "min"}, {"max", "max"}, {"amin", "min"}, {"amax", "max"}, {"any", "any"},
        {"all", "all"}, {"argmin", "argmin"}, {"argmax", "argmax"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (func == gtpy_numpy(names[i][0]))
            return names[i][1];
    PyErr_Clear();
    return NULL;
}

/* The Storage method a NumPy function is (np.cumsum(s, ...) is
 * s.cumsum(...); storage_array_api.c), or NULL. np.sort is a sorted copy. */
static const char *method_of(PyObject *func)
{
    static const char *const names[][2] = {
        {"round", "round"},     {"around", "round"},   {"clip", "clip"},
        {"squeeze", "squeeze"}, {"ravel", "ravel"},    {"cumsum", "cumsum"},
        {"cumprod", "cumprod"}, {"argsort", "argsort"}, {"sort", "sort"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (func == gtpy_numpy(names[i][0]))
            return names[i][1];
    PyErr_Clear();
    return NULL;
}

/* np.sort(s, ...): a sorted copy, a storage; along no axis (axis=None)
 * NumPy's sorted 1-d array of the values. */
static PyObject *sorted_copy(PyObject *self, PyObject *rest, PyObject *kw)
{
    PyObject *axis = PyTuple_GET_SIZE(rest) > 0 ? PyTuple_GET_ITEM(rest, 0)
                                                : PyDict_GetItemString(kw, "axis");
    if (axis == Py_None) {
        PyObject *values = gtpy_storage_host_values(self);
        PyObject *first = values ? PyTuple_Pack(1, values) : NULL;
        PyObject *all = first ? PySequence_Concat(first, rest) : NULL;
        PyObject *result = all ? PyObject_Call(gtpy_numpy("sort"), all, kw) : NULL;
        Py_XDECREF(all);
        Py_XDECREF(first);
        Py_XDECREF(values);
        return result;
    }
    PyObject *copy = PyObject_CallMethod(self, "copy", NULL);
    PyObject *sort = copy ? PyObject_GetAttrString(copy, "sort") : NULL;
    PyObject *done = sort ? PyObject_Call(sort, rest, kw) : NULL;
    Py_XDECREF(sort);
    if (!done)
        Py_CLEAR(copy);
    Py_XDECREF(done);
    return copy;
}

/* np.<function>(s, ...) as the Storage method `name`: s.<name>(...), clip's
 * a_min= and a_max= as min= and max=. */
static PyObject *as_method(PyObject *self, const char *name, PyObject *rest, PyObject *kw)
{
    static const char *const renamed[][2] = {{"a_min", "min"}, {"a_max", "max"}};
    for (size_t i = 0; strcmp(name, "clip") == 0 && i < 2; ++i) {
        PyObject *value = PyDict_GetItemString(kw, renamed[i][0]);
        if (value && PyDict_GetItemString(kw, renamed[i][1]))
            return PyErr_Format(PyExc_TypeError, "clip: %s and %s are the same bound; pass one",
                                renamed[i][0], renamed[i][1]);
        if (value && (PyDict_SetItemString(kw, renamed[i][1], value) < 0 ||
                      PyDict_DelItemString(kw, renamed[i][0]) < 0))
            return NULL;
    }
    if (strcmp(name, "sort") == 0)
        return sorted_copy(self, rest, kw);
    PyObject *method = PyObject_GetAttrString(self, name);
    PyObject *result = method ? PyObject_Call(method, rest, kw) : NULL;
    Py_XDECREF(method);
    return result;
}

PyObject *gtpy_storage_array_function(PyObject *self, PyObject *args)
{
    static const char *const names[] = {"func", "types", "args", "kwargs"};
    static gtpy_signature sig = GTPY_SIGNATURE("__array_function__", names, 4, 4, 4);
    PyObject *v[4];
    if (gtpy_parse_tuple(&sig, args, NULL, v) < 0)
        return NULL;
    PyObject *func = v[0], *fargs = v[2], *fkwargs = v[3];
    if (!PyTuple_Check(fargs) || !PyDict_Check(fkwargs)) {
        PyErr_Format(PyExc_TypeError, "__array_function__(func, types, args, kwargs): args must "
                     "be a tuple and kwargs a dict, got %.100R and %.100R", fargs, fkwargs);
        return NULL;
    }
    PyObject *array = PyTuple_GET_SIZE(fargs) >= 1 ? PyTuple_GET_ITEM(fargs, 0)
                                                   : PyDict_GetItemString(fkwargs, "a");
    if (func == gtpy_numpy("transpose") && array == self) {
        PyObject *axes = PyTuple_GET_SIZE(fargs) > 1 ? PyTuple_GET_ITEM(fargs, 1)
                                                     : PyDict_GetItemString(fkwargs, "axes");
        PyObject *call = PyTuple_Pack(1, axes ? axes : Py_None);
        PyObject *result = call ? gtpy_storage_transpose(self, call) : NULL;
        Py_XDECREF(call);
        return result;
    }
    const char *reduction = array == self ? reduction_of(func) : NULL;
    const char *method = array == self && !reduction ? method_of(func) : NULL;
    if (reduction || method) { /* np.sum(s, ...) is s.sum(...): a storage of the remaining dims */
        PyObject *rest = PyTuple_GetSlice(fargs, PyTuple_GET_SIZE(fargs) >= 1 ? 1 : 0,
                                          PyTuple_GET_SIZE(fargs));
        PyObject *kw = PyDict_Copy(fkwargs);
        bool ok = rest && kw && (PyDict_DelItemString(kw, "a") == 0 || (PyErr_Clear(), 1));
        PyObject *result = !ok       ? NULL
                           : method ? as_method(self, method, rest, kw)
                                    : gtpy_storage_reduction(self, reduction, rest, kw);
        Py_XDECREF(rest);
        Py_XDECREF(kw);
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

PyBufferProcs gtpy_storage_as_buffer = {
    .bf_getbuffer = storage_getbuffer,
    .bf_releasebuffer = storage_releasebuffer,
};
