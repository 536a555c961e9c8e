/* The array interfaces' dicts, read once into C values: NumPy's
 * __array_interface__, the CUDA array interface (versions 2 and 3) and the
 * entries of __gt_data_interface__, which share their keys. And storages
 * over the memory a CUDA array interface describes: its device is located
 * and checked by libgtstore, its stream waited on, the producer kept alive. */
#include "array_interface.h"
#include "convert.h"
#include "errors.h"
#include "storage.h"

#include <string.h>

PyObject *gtpy_mapping_entry(PyObject *map, const char *key)
{
    PyObject *value;
    if (PyDict_Check(map)) {
        value = PyDict_GetItemString(map, key);
        return Py_XNewRef(value);
    }
    value = PyMapping_GetItemString(map, key);
    if (!value && PyErr_ExceptionMatches(PyExc_KeyError))
        PyErr_Clear();
    return value;
}

static int read_dtype(PyObject *typestr, const char *what, gts_dtype *out)
{
    if (!PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_TypeError, "%s['typestr']: expected a str, got %.200R", what, typestr);
        return -1;
    }
    const char *text = gtpy_text(typestr, "typestr");
    gts_error err;
    if (!text)
        return -1;
    return gts_dtype_from_typestr(text, out, &err) == GTS_OK ? 0 : gtpy_raise_param("typestr", &err);
}

static int read_data(PyObject *data, const char *what, gtpy_array_info *out)
{
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        PyErr_Format(PyExc_TypeError, "%s['data']: expected (address, read_only), got %.200R",
                     what, data);
        return -1;
    }
    PyObject *address = PyTuple_GET_ITEM(data, 0);
    out->data = PyLong_AsVoidPtr(address);
    if (!out->data && PyErr_Occurred()) {
        /* Python's own message ("int too large to convert") names neither;
         * an int out of range stays a value error, anything else a type one */
        PyObject *kind = PyErr_ExceptionMatches(PyExc_OverflowError) ? PyExc_ValueError
                                                                      : PyExc_TypeError;
        PyErr_Clear();
        PyErr_Format(kind, "%s['data']: the address %.200R is no pointer", what, address);
        return -1;
    }
    int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (readonly < 0)
        return -1;
    out->readonly = readonly;
    return 0;
}

static int read_strides(PyObject *strides, const char *what, int max_ndim, gtpy_array_info *out)
{
    gts_error err;
    char param[64];
    int n;
    if (!strides || strides == Py_None) /* C order */
        return gts_strides_contiguous(out->ndim, out->shape, out->dtype.itemsize, out->strides,
                                      &err) == GTS_OK
                   ? 0
                   : gtpy_raise_param("shape", &err);
    snprintf(param, sizeof param, "%s['strides']", what);
    if (gtpy_int_tuple(strides, param, max_ndim, &n, out->strides) < 0)
        return -1;
    if (n != out->ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %d strides for %d dimensions", param, n, out->ndim);
        return -1;
    }
    return 0;
}

/* stream (CUDA array interface v3): None, or the number of the stream on
 * which the producer's work on the memory is queued. */
static int read_stream(PyObject *stream, const char *what, gtpy_array_info *out)
{
    out->has_stream = stream && stream != Py_None;
    if (!out->has_stream)
        return 0;
    if (gtpy_int(stream, "stream", &out->stream) < 0 || out->stream <= 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "%s['stream']: %.200R is not a stream (None, 1, 2 or a stream handle; "
                         "0 is forbidden)",
                         what, stream);
        }
        return -1;
    }
    return 0;
}

int gtpy_array_info_read(PyObject *info, const char *what, int max_ndim, gtpy_array_info *out)
{
    memset(out, 0, sizeof *out);
    if (!PyMapping_Check(info)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a dict, got %.200R", what, info);
        return -1;
    }
    PyObject *shape = gtpy_mapping_entry(info, "shape");
    PyObject *typestr = gtpy_mapping_entry(info, "typestr");
    PyObject *data = gtpy_mapping_entry(info, "data");
    PyObject *strides = gtpy_mapping_entry(info, "strides");
    PyObject *mask = gtpy_mapping_entry(info, "mask");
    PyObject *stream = gtpy_mapping_entry(info, "stream");
    char param[64];
    int rc = -1;
    snprintf(param, sizeof param, "%s['shape']", what);
    if (PyErr_Occurred())
        goto done;
    if (!shape || !typestr || !data) {
        PyErr_Format(PyExc_TypeError, "%s: needs 'shape', 'typestr' and 'data'", what);
        goto done;
    }
    if (mask && mask != Py_None) {
        PyErr_Format(PyExc_ValueError, "%s['mask']: masked arrays are not supported", what);
        goto done;
    }
    if (gtpy_int_tuple(shape, param, max_ndim, &out->ndim, out->shape) < 0 ||
        read_dtype(typestr, what, &out->dtype) < 0 || read_data(data, what, out) < 0 ||
        read_strides(strides, what, max_ndim, out) < 0 || read_stream(stream, what, out) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(shape);
    Py_XDECREF(typestr);
    Py_XDECREF(data);
    Py_XDECREF(strides);
    Py_XDECREF(mask);
    Py_XDECREF(stream);
    return rc;
}

static bool has_elements(const gtpy_array_info *info)
{
    for (int d = 0; d < info->ndim; ++d)
        if (info->shape[d] == 0)
            return false;
    return true;
}

int gtpy_cuda_locate(const gtpy_array_info *info, const gts_device_ops **device,
                     gts_error *err)
{
    /* an empty array has no memory to locate (its address may be 0): the GPU's */
    int rc = has_elements(info) ? gts_device_locate(info->data, device, err)
                                : gts_device_gpu(device, err);
    return rc == GTS_OK ? gts_device_check_usable(*device, err) : rc;
}

int gtpy_cuda_memory(const gtpy_array_info *info, const char *param,
                     const gts_device_ops **device)
{
    gts_error err;
    int rc = gtpy_cuda_locate(info, device, &err);
    if (rc == GTS_OK && info->has_stream)
        rc = gts_device_wait_stream(*device, info->stream, &err);
    if (rc == GTS_ENOTFOUND) /* memory nobody gtstore reaches: a bad value, not a lookup */
        err.code = GTS_EINVAL;
    return rc == GTS_OK ? 0 : gtpy_raise_param(param, &err);
}

void gtpy_release_object(void *ctx)
{
    if (!Py_IsInitialized())
        return; /* the interpreter is gone, and the object with it */
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(gil);
}

PyObject *gtpy_storage_from_cuda_array(PyObject *obj, PyObject *interface, const char *param)
{
    char what[64];
    snprintf(what, sizeof what, "%s.__cuda_array_interface__", param);
    gtpy_array_info info;
    const gts_device_ops *device;
    gts_storage_spec spec;
    gts_storage s;
    gts_error err;
    if (gtpy_array_info_read(interface, what, GTS_MAX_NDIM, &info) < 0 ||
        gtpy_cuda_memory(&info, param, &device) < 0)
        return NULL;
    if (gts_storage_spec_init(&spec, info.ndim, info.shape, info.dtype, &err) != GTS_OK ||
        gts_storage_wrap_memory(&spec, device, info.data, info.strides, info.readonly,
                                gtpy_release_object, obj, &s, &err) != GTS_OK)
        return gtpy_raise_param(param, &err), NULL;
    Py_INCREF(obj); /* the storage's now, released with its memory */
    return gtpy_storage_new(&s, NULL, NULL);
}
