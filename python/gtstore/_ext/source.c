/* Array sources: the one reader of array objects. The data or template of
 * a creation function, the memory to wrap, and a stencil call's fields are
 * opened here, through the buffer protocol, NumPy's interfaces, the CUDA
 * array interface, DLPack or __gt_data_interface__, with their shape,
 * strides and dtype read once; and copying a source's values into new
 * memory. */
#include "source.h"
#include "array_interface.h"
#include "convert.h"
#include "dlpack.h"
#include "errors.h"
#include "numpy.h"
#include "storage.h"

#include "gtstore/wrap.h"

#include <stdio.h>
#include <string.h>

void gtpy_source_release(gtpy_source *s)
{
    if (s->have_view)
        PyBuffer_Release(&s->view);
    s->have_view = false;
    Py_CLEAR(s->array);
    Py_CLEAR(s->entry);
}

/* The dtype of a buffer's format: 1 where libgtstore knows it, else 0,
 * with *byteswapped telling a supported dtype in the other byte order (a
 * `strict` reader raises instead, naming the dtype). */
static int view_dtype(const Py_buffer *v, bool strict, gts_dtype *dtype, bool *byteswapped)
{
    const char *format = v->format ? v->format : "B";
    gts_error err;
    *byteswapped = false;
    if (gts_dtype_from_format(format, dtype, &err) == GTS_OK)
        return 1;
    if (strict)
        return gtpy_raise_param("dtype", &err);
    if (format[0] == '>' || format[0] == '<' || format[0] == '!') {
        char native[GTS_DTYPE_TEXT_SIZE + 1] = "=";
        strncat(native, format + 1, GTS_DTYPE_TEXT_SIZE - 1);
        *byteswapped = gts_dtype_from_format(native, dtype, NULL) == 0;
    }
    return 0;
}

int gtpy_view_read(const Py_buffer *v, const char *param, int max_ndim, bool strict,
                   gtpy_array_info *out, bool *byteswapped)
{
    memset(out, 0, sizeof *out);
    if (v->ndim < 0 || v->ndim > max_ndim) {
        PyErr_Format(PyExc_ValueError, "%s%s%d dimensions, more than the %d supported (a "
                     "buffer of %.80s)", param ? param : "", param ? ": " : "", v->ndim,
                     max_ndim, v->obj ? Py_TYPE(v->obj)->tp_name : "?");
        return -1;
    }
    out->ndim = v->ndim;
    out->data = v->buf;
    out->readonly = v->readonly;
    for (int d = 0; d < out->ndim; ++d) {
        out->shape[d] = v->shape ? v->shape[d] : v->itemsize > 0 ? v->len / v->itemsize : 0;
        if (v->strides)
            out->strides[d] = v->strides[d];
    }
    gts_error err;
    if (!v->strides && gts_strides_contiguous(out->ndim, out->shape, v->itemsize, out->strides,
                                              &err))
        return gtpy_raise(&err);
    return view_dtype(v, strict, &out->dtype, byteswapped);
}

/* The source's geometry, memory and dtype from an array's info. */
static void source_from_info(gtpy_source *s, const gtpy_array_info *info)
{
    s->ndim = info->ndim;
    memcpy(s->shape, info->shape, (size_t)info->ndim * sizeof *info->shape);
    memcpy(s->strides, info->strides, (size_t)info->ndim * sizeof *info->strides);
    s->dtype = info->dtype;
    s->data = info->data;
    s->readonly = info->readonly;
}

/* An ndarray (not a subclass, of a dtype storages hold) read from its
 * struct (gtpy_numpy_read), no export opened: the array, which the caller
 * holds in s->array, owns the memory. False for other objects. */
static bool source_from_ndarray(gtpy_source *s, PyObject *obj, int max_ndim)
{
    gtpy_array_info info;
    if (!gtpy_numpy_read(obj, max_ndim, &info))
        return false;
    source_from_info(s, &info);
    s->dtype_known = true;
    s->memory = gts_device_host();
    return true;
}

/* The source's geometry and dtype from its open buffer: any dtype (the
 * creation functions convert), or where `strict` only libgtstore's. */
static int source_from_view(gtpy_source *s, const char *param, int max_ndim, bool strict)
{
    gtpy_array_info info;
    int known = gtpy_view_read(&s->view, param, max_ndim, strict, &info, &s->byteswapped);
    if (known < 0)
        return -1;
    source_from_info(s, &info);
    s->dtype_known = known;
    return 0;
}

/* Shape and strides from the attributes of an array NumPy cannot export. */
static int source_geometry_from_attributes(gtpy_source *s)
{
    PyObject *shape = PyObject_GetAttrString(s->array, "shape");
    PyObject *strides = shape ? PyObject_GetAttrString(s->array, "strides") : NULL;
    int n = -1, rc = -1;
    if (strides && gtpy_int_tuple(shape, s->param, GTS_MAX_NDIM, &s->ndim, s->shape) == 0 &&
        gtpy_int_tuple(strides, s->param, GTS_MAX_NDIM, &n, s->strides) == 0 && n == s->ndim)
        rc = 0;
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    if (rc < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: cannot read %.200R as an array", s->param, s->array);
    return rc;
}

/* Objects that only speak DLPack: NumPy's asarray does not use it. */
static bool dlpack_only(PyObject *obj)
{
    return PyObject_HasAttrString(obj, "__dlpack__") &&
           !PyObject_HasAttrString(obj, "__array_interface__") &&
           !PyObject_HasAttrString(obj, "__array__");
}

PyObject *gtpy_source_import(PyObject *obj, const char *param, bool *found)
{
    static PyObject *cuda_name;
    *found = true;
    /* DLPack first: it names the device, says read-only and owns the
     * lifetime; CuPy, torch and JAX arrays on a GPU export it */
    if (gtpy_dlpack_on_device(obj) || dlpack_only(obj))
        return gtpy_storage_from_dlpack(obj, param);
    PyObject *interface = gtpy_optional_attr(obj, "__cuda_array_interface__", &cuda_name);
    if (interface) {
        PyObject *storage = gtpy_storage_from_cuda_array(obj, interface, param);
        Py_DECREF(interface);
        return storage;
    }
    *found = false;
    return NULL;
}

/* A gtstore storage is read from its own fields, on whatever device it is:
 * no export, so no host access (gtstore/sync.h) and no host side needed. */
/* Every field zero except the shape and strides, which each reader writes
 * for its ndim dimensions: zeroing their GTS_MAX_NDIM entries (1 KiB) cost
 * a stencil call's binding a measurable share of its time per field. */
static void source_init(gtpy_source *s)
{
    s->param = NULL;
    s->array = s->storage = s->entry = NULL;
    s->imported = s->have_view = s->dtype_known = s->byteswapped = s->readonly = false;
    memset(&s->view, 0, sizeof s->view);
    s->ndim = 0;
    s->dtype = (gts_dtype){0};
    s->data = NULL;
    s->memory = NULL;
    s->entry_name = NULL;
    s->entry_ndims = -1;
}

static int source_from_storage(gtpy_source *s, PyObject *obj)
{
    gts_storage g;
    gtpy_storage_load(obj, &g);
    s->array = Py_NewRef(obj);
    s->storage = obj;
    s->ndim = g.ndim;
    memcpy(s->shape, g.shape, (size_t)g.ndim * sizeof *s->shape);
    memcpy(s->strides, g.strides, (size_t)g.ndim * sizeof *s->strides);
    s->dtype = g.dtype;
    s->dtype_known = true;
    return 0;
}

static int open_data_interface(gtpy_source *s, PyObject *obj, gts_device device);

int gtpy_source_open(gtpy_source *s, PyObject *obj, const char *param, gts_device device)
{
    source_init(s);
    s->param = param;
    if (PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an array, got %.200R", param, obj);
        return -1;
    }
    if (gtpy_is_storage(obj))
        return source_from_storage(s, obj);
    if (source_from_ndarray(s, obj, GTS_MAX_NDIM)) {
        s->array = Py_NewRef(obj);
        return 0;
    }
    int interface = open_data_interface(s, obj, device); /* GDP-3: before other interfaces */
    if (interface != 0)
        return interface < 0 ? -1 : 0;
    if (PyObject_CheckBuffer(obj) && PyObject_GetBuffer(obj, &s->view, PyBUF_RECORDS_RO) == 0) {
        s->array = Py_NewRef(obj);
    } else {
        PyErr_Clear();
        bool found;
        PyObject *imported = gtpy_source_import(obj, param, &found);
        if (found) { /* a device array, or DLPack only: a storage over its memory */
            int rc = imported ? source_from_storage(s, imported) : -1;
            s->imported = true;
            Py_XDECREF(imported); /* s->array holds it */
            return rc;
        }
        PyObject *asarray = gtpy_numpy_asarray();
        if (!asarray || !(s->array = PyObject_CallOneArg(asarray, obj)))
            return -1;
        if (PyObject_GetBuffer(s->array, &s->view, PyBUF_RECORDS_RO) < 0) {
            PyErr_Clear();
            return source_geometry_from_attributes(s);
        }
    }
    s->have_view = true;
    s->memory = gts_device_host();
    return source_from_view(s, s->param, GTS_MAX_NDIM, false);
}

/* An interface's dict (`what` names it) read in place; GPU memory located
 * and its stream waited on, as the creation functions do. */
static int read_interface(gtpy_source *s, PyObject *info, const char *what, gts_device device,
                          int max_ndim)
{
    gtpy_array_info a;
    s->memory = gts_device_host();
    if (gtpy_array_info_read(info, what, max_ndim, &a) < 0 ||
        (device == GTS_DEVICE_GPU && gtpy_cuda_memory(&a, what, &s->memory) < 0))
        return -1;
    source_from_info(s, &a);
    s->dtype_known = true;
    return 1;
}

/* ---- GDP-3's data interface ------------------------------------------------------ */

/* The host entry of a __gt_data_interface__ dict (borrowed): None, else
 * "cpu". NULL without an exception where it has none; *name names it. */
static PyObject *host_entry(PyObject *interface, const char **name)
{
    *name = "__gt_data_interface__[None]";
    PyObject *info = PyDict_GetItemWithError(interface, Py_None);
    if (info || PyErr_Occurred())
        return info;
    *name = "__gt_data_interface__['cpu']";
    return PyDict_GetItemString(interface, "cpu");
}

/* Whether a "gpu" entry can be read on a device gtstore has: its memory
 * located and usable beside gtstore's GPU (gtpy_cuda_locate), which the
 * memory of no device (no CUDA driver, pageable host memory) or of another
 * GPU is not. Looked at before its "acquire", which may copy to that
 * device; 1 or 0, -1 with an exception for a malformed entry (a mistake
 * the host entry should not hide). */
static int gpu_entry_usable(PyObject *info, const char *name, int max_ndim)
{
    gtpy_array_info a;
    const gts_device_ops *memory;
    if (!PyMapping_Check(info))
        return 1; /* the read names the entry */
    if (gtpy_array_info_read(info, name, max_ndim, &a) < 0)
        return -1;
    return gtpy_cuda_locate(&a, &memory, NULL) == GTS_OK;
}

/* The entry of a __gt_data_interface__ dict to read for `device` (a new
 * reference, in *info: looking at a "gpu" entry runs the object's code,
 * which may take it out of the dict): the host entry, or the "gpu" entry
 * where it can be read on a device gtstore has or the object has no host
 * entry to take instead (whose read then says why not); *name names it.
 * 1 with the entry; 0 without an exception where there is none for
 * `device` (the caller reads the other device's, as GDP-3's "Choosing the
 * Device" falls back to the host); -1 with an exception. */
static int interface_entry(PyObject *interface, gts_device device, int max_ndim,
                           PyObject **info, const char **name)
{
    if (device != GTS_DEVICE_GPU) {
        *info = Py_XNewRef(host_entry(interface, name));
        return *info ? 1 : PyErr_Occurred() ? -1 : 0;
    }
    const char *other;
    *name = "__gt_data_interface__['gpu']";
    if (!(*info = Py_XNewRef(PyDict_GetItemString(interface, "gpu"))))
        return 0;
    int usable = 1; /* without a host entry, whose read says why not */
    if (host_entry(interface, &other))
        usable = gpu_entry_usable(*info, *name, max_ndim);
    else if (PyErr_Occurred())
        usable = -1;
    if (usable <= 0)
        Py_CLEAR(*info);
    return usable;
}

int gtpy_entry_callback(PyObject *info, const char *key, PyObject **out)
{
    PyObject *value = gtpy_mapping_entry(info, key);
    if (value && value != Py_None && !PyCallable_Check(value)) {
        PyErr_Format(PyExc_TypeError, "__gt_data_interface__['%s']: expected a callable or None, "
                                      "got %.200R", key, value);
        Py_DECREF(value);
        return -1;
    }
    if (value == Py_None)
        Py_CLEAR(value);
    *out = value;
    return PyErr_Occurred() ? -1 : 0;
}

/* The entry's "acquire" called, where it has one: before its memory is
 * read (GDP-3's final text, "Choosing the Device"). */
static int call_acquire(PyObject *info)
{
    PyObject *acquire;
    if (gtpy_entry_callback(info, "acquire", &acquire) < 0)
        return -1;
    PyObject *result = acquire ? PyObject_CallNoArgs(acquire) : Py_NewRef(Py_None);
    Py_XDECREF(acquire);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

/* GDP-3's data interface: the entry for `device` (None or "cpu" for the
 * host, "gpu"), kept for its other keys (s->entry), its "acquire" called
 * first where `acquire` says (a stencil call runs it later, around the
 * run). 1 read, 0 without that entry, -1 with an exception. */
static int read_data_interface(gtpy_source *s, PyObject *interface, gts_device device,
                               int max_ndim, bool acquire)
{
    if (!PyDict_Check(interface)) {
        PyErr_Format(PyExc_TypeError, "__gt_data_interface__: expected a dict, got %.200R",
                     interface);
        return -1;
    }
    PyObject *info;
    int found = interface_entry(interface, device, max_ndim, &info, &s->entry_name);
    if (found <= 0)
        return found;
    if (!PyMapping_Check(info)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a dict, got %.200R", s->entry_name, info);
        Py_DECREF(info);
        return -1;
    }
    s->entry = info; /* the reference interface_entry gave */
    if (acquire && call_acquire(info) < 0)
        return -1;
    return read_interface(s, info, s->entry_name, device, max_ndim);
}

int gtpy_data_interface_unreadable(PyObject *interface)
{
    PyErr_Format(PyExc_ValueError,
                 "__gt_data_interface__ has no buffer on the cpu or the gpu (its keys: %R)",
                 interface);
    return -1;
}

/* Names of another convention (gtpy_foreign_dim_names) label nothing, but
 * still name one dimension each: another count is a mistake in the entry. */
static int foreign_names_fit(PyObject *names, const char *param, int entry_ndim)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(names);
    if (n == entry_ndim)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %.200R: %zd names for %d dimensions", param, names, n,
                 entry_ndim);
    return -1;
}

int gtpy_entry_dims(PyObject *entry, const char *name, int entry_ndim, int *ndim,
                    gts_dim *dims)
{
    PyObject *value = gtpy_mapping_entry(entry, "dims");
    if (!value || value == Py_None) {
        Py_XDECREF(value);
        return PyErr_Occurred() ? -1 : 0;
    }
    char param[64];
    snprintf(param, sizeof param, "%s['dims']", name);
    int rc = gtpy_foreign_dim_names(value) ? foreign_names_fit(value, param, entry_ndim)
             : gtpy_dims(value, param, ndim, dims) < 0 ? -1
                                                       : 1;
    Py_DECREF(value);
    return rc;
}

/* The entry's labels kept (s->entry_ndims, -1 for none). */
static int read_entry_dims(gtpy_source *s)
{
    int rc = gtpy_entry_dims(s->entry, s->entry_name, s->ndim, &s->entry_ndims, s->entry_dims);
    if (rc <= 0)
        s->entry_ndims = -1;
    return rc;
}

/* The data interface of a creation function's data or template: the entry
 * of `device`, else the other one's, its "acquire" called, its memory read
 * and imported as a storage over it (as another library's device array
 * is: it keeps the object alive), and its labels read. 1 when read, 0 for
 * an object without a data interface, -1 with an exception (its getter's
 * own, unchanged). */
static int open_data_interface(gtpy_source *s, PyObject *obj, gts_device device)
{
    static PyObject *name;
    PyObject *interface;
    int found = gtpy_lookup_attr(obj, "__gt_data_interface__", &name, &interface);
    if (found <= 0)
        return found;
    s->array = Py_NewRef(obj);
    int rc = read_data_interface(s, interface, device, GTS_MAX_NDIM, true);
    if (rc == 0)
        rc = read_data_interface(s, interface,
                                 device == GTS_DEVICE_CPU ? GTS_DEVICE_GPU : GTS_DEVICE_CPU,
                                 GTS_MAX_NDIM, true);
    if (rc == 0)
        rc = gtpy_data_interface_unreadable(interface);
    Py_DECREF(interface);
    PyObject *imported = rc < 0 || read_entry_dims(s) < 0 ? NULL : gtpy_source_wrap(s);
    if (!imported)
        return -1;
    Py_CLEAR(s->array); /* the storage's, which keeps obj alive */
    source_from_storage(s, imported);
    Py_DECREF(imported); /* s->array holds it */
    s->imported = true;
    s->data = NULL;
    s->memory = NULL;
    return 1;
}

int gtpy_source_open_interface(gtpy_source *s, PyObject *obj, const char *param,
                               gts_device device)
{
    source_init(s);
    s->param = param;
    return open_data_interface(s, obj, device);
}

/* The standard interfaces in place: the buffer protocol (what NumPy itself
 * tries first) and __array_interface__ on the host,
 * __cuda_array_interface__ on the GPU; else another library's array
 * imported. */
static int read_plain(gtpy_source *s, PyObject *obj, gts_device device, int max_ndim)
{
    static PyObject *host_name, *cuda_name;
    if (device == GTS_DEVICE_CPU && PyObject_CheckBuffer(obj)) {
        if (PyObject_GetBuffer(obj, &s->view, PyBUF_RECORDS_RO) < 0)
            return -1;
        s->have_view = true;
        s->memory = gts_device_host();
        return source_from_view(s, NULL, max_ndim, true) < 0 ? -1 : 1;
    }
    bool host = device == GTS_DEVICE_CPU;
    PyObject *info = host ? gtpy_optional_attr(obj, "__array_interface__", &host_name)
                          : gtpy_optional_attr(obj, "__cuda_array_interface__", &cuda_name);
    if (info) {
        int rc = read_interface(s, info, host ? "__array_interface__"
                                              : "__cuda_array_interface__", device, max_ndim);
        Py_DECREF(info);
        return rc;
    }
    bool found;
    PyObject *imported = gtpy_source_import(obj, "its memory", &found);
    if (!found)
        return 0;
    Py_CLEAR(s->array); /* the imported storage's, which keeps obj alive */
    int rc = imported ? source_from_storage(s, imported) : -1;
    s->imported = true;
    Py_XDECREF(imported); /* s->array holds it */
    return rc < 0 ? -1 : 1;
}

int gtpy_source_read(gtpy_source *s, PyObject *obj, gts_device device, int max_ndim)
{
    static PyObject *interface_name;
    source_init(s);
    if (gtpy_is_storage(obj)) /* its own fields, on either side */
        return source_from_storage(s, obj) < 0 ? -1 : 1;
    s->array = Py_NewRef(obj);
    /* an ndarray has no interface of its own to look up */
    if (device == GTS_DEVICE_CPU && source_from_ndarray(s, obj, max_ndim))
        return 1;
    PyObject *interface;
    if (gtpy_lookup_attr(obj, "__gt_data_interface__", &interface_name, &interface) < 0)
        return -2; /* the getter's own exception, for the caller to pass on */
    if (!interface)
        return read_plain(s, obj, device, max_ndim);
    int rc = read_data_interface(s, interface, device, max_ndim, false);
    Py_DECREF(interface);
    return rc;
}

void gtpy_release_export(void *ctx)
{
    if (!Py_IsInitialized())
        return; /* the interpreter is gone, and the memory with it */
    PyGILState_STATE gil = PyGILState_Ensure();
    PyBuffer_Release(ctx);
    PyMem_RawFree(ctx);
    PyGILState_Release(gil);
}

int gtpy_source_wrap_in(gtpy_source *s, const gts_storage_spec *spec, gts_storage *out,
                        gts_error *err)
{
    Py_buffer *export = NULL;
    if (s->have_view && !(export = PyMem_RawMalloc(sizeof *export)))
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a buffer export");
    if (export)
        *export = s->view;
    int rc = gts_storage_wrap_memory(spec, s->memory, s->data, s->strides, s->readonly,
                                     export ? gtpy_release_export : gtpy_release_object,
                                     export ? (void *)export : (void *)s->array, out, err);
    if (rc != GTS_OK)
        PyMem_RawFree(export); /* not taken over: the source still closes the view */
    else if (export)
        s->have_view = false; /* the memory's now, released with it */
    else
        Py_INCREF(s->array);
    return rc;
}

PyObject *gtpy_source_wrap(gtpy_source *s)
{
    gts_storage_spec spec;
    gts_storage g;
    gts_error err;
    if (gts_storage_spec_init(&spec, s->ndim, s->shape, s->dtype, &err) != GTS_OK ||
        gtpy_source_wrap_in(s, &spec, &g, &err) != GTS_OK)
        return gtpy_raise_null(&err);
    return gtpy_storage_new(&g, NULL, NULL);
}

int gtpy_source_dtype_error(const gtpy_source *s)
{
    PyObject *dtype = PyObject_GetAttrString(s->array, "dtype");
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: %.200R has dtype %.200R, which is not supported; pass "
                 "dtype=", s->param, s->array, dtype ? dtype : (PyObject *)Py_None);
    Py_XDECREF(dtype);
    return -1;
}

int gtpy_copy_source(PyObject *target, void *data, const int64_t *strides, int ndim,
                     const int64_t *shape, gts_dtype dtype, const gtpy_source *src)
{
    if (!src->dtype_known || !gts_dtype_equal(src->dtype, dtype)) /* NumPy casts */
        return PyObject_SetItem(target, Py_Ellipsis, src->array);
    gts_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gts_copy(data, strides, src->data, src->strides, ndim, shape, dtype.itemsize, &err);
    Py_END_ALLOW_THREADS
    return rc ? gtpy_raise(&err) : 0;
}
