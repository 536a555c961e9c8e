/* The host side of a storage: host access by the rule of gtstore/sync.h,
 * ndarray views of host memory, and host copies of memory without a host
 * side (staging for values on their way in, values to read). */
#include "errors.h"
#include "numpy.h"
#include "storage.h"

int gtpy_storage_host_access(const gts_storage *g, bool write)
{
    gts_buffer *buffer = g->buffer;
    gts_error err;
    if (!gtpy_has_host_side(buffer)) {
        PyErr_SetString(gtpy_NoSuchBufferError,
                        "this storage has no host buffer (a GPUStorage, managed=None): read it "
                        "on the device (to_ndarray, to_cupy, DLPack) or copy it to the host");
        return -1;
    }
    void *data;
    gts_access access = write && !g->readonly ? GTS_ACCESS_WRITE : GTS_ACCESS_READ;
    return gts_storage_access(g, GTS_SIDE_HOST, access, NULL, &data, &err) ? gtpy_raise(&err)
                                                                           : 0;
}

PyObject *gtpy_storage_host_staging(const gts_storage *g, gts_storage *host)
{
    gts_storage_spec spec;
    gts_error err;
    if (gts_storage_spec_init(&spec, g->ndim, g->shape, g->dtype, &err) != 0)
        return gtpy_raise_null(&err);
    /* the view's dims: a value with dims is assigned into it by them */
    memcpy(spec.dims, g->dims, (size_t)g->ndim * sizeof *g->dims);
    spec.has_dims = true;
    if (gts_storage_create(&spec, 0, host, &err) != 0)
        return gtpy_raise_null(&err);
    PyObject *staging = gtpy_storage_new(host, NULL, NULL);
    if (staging)
        gtpy_storage_load(staging, host);
    return staging;
}

/* An ndarray over the host memory of `g` (access already taken). */
static PyObject *array_over(gts_storage *g, PyObject *base, bool readonly)
{
    if (gtpy_numpy_capi()) {
        Py_ssize_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
        for (int d = 0; d < g->ndim; ++d) {
            shape[d] = (Py_ssize_t)g->shape[d];
            strides[d] = (Py_ssize_t)g->strides[d];
        }
        return gtpy_numpy_capi_array(g->dtype, g->ndim, shape, strides, gts_storage_data(g),
                                     readonly, base);
    }
    /* Without NumPy's C API: through the buffer protocol of a storage. */
    PyObject *asarray = gtpy_numpy_asarray();
    if (!asarray)
        return NULL;
    gts_storage view;
    gts_storage_view(g, &view);
    view.readonly = readonly;
    PyObject *exporter = gtpy_storage_new(&view, NULL, NULL);
    PyObject *array = exporter ? PyObject_CallOneArg(asarray, exporter) : NULL;
    Py_XDECREF(exporter);
    return array;
}

PyObject *gtpy_storage_ndarray_over(gts_storage *g, PyObject *base, bool write)
{
    if (gtpy_storage_host_access(g, write) < 0)
        return NULL;
    return array_over(g, base, g->readonly || !write);
}

/* The flags of the host ndarray (writeable unless the storage is
 * read-only), brought up to date as `data` is; None without a host side. */
/* Storage.flags: NumPy's flags of the host memory, as a read-only record
 * (a flags object of a temporary array would take `s.flags.writeable =
 * False` and drop it: a storage is made read-only when it is created). */
static PyStructSequence_Field flag_fields[] = {
    {"c_contiguous", NULL}, {"f_contiguous", NULL}, {"writeable", NULL},
    {"aligned", NULL},      {"owndata", NULL},      {NULL, NULL},
};
static PyStructSequence_Desc flags_desc = {"gtstore.StorageFlags",
                                           "The flags of a storage's host memory (read-only).",
                                           flag_fields, 5};
static PyTypeObject flags_type;

int gtpy_storage_flags_type_ready(void)
{
    return flags_type.tp_name ? 0 : PyStructSequence_InitType2(&flags_type, &flags_desc);
}

PyObject *gtpy_storage_flags(PyObject *self, void *closure)
{
    (void)closure;
    gts_storage g;
    gtpy_storage_load(self, &g);
    if (!gtpy_has_host_side(g.buffer))
        Py_RETURN_NONE;
    if (gtpy_storage_host_access(&g, false) < 0)
        return NULL;
    PyObject *array = array_over(&g, self, g.readonly);
    PyObject *flags = array ? PyObject_GetAttrString(array, "flags") : NULL;
    PyObject *record = flags ? PyStructSequence_New(&flags_type) : NULL;
    for (int i = 0; record && i < flags_desc.n_in_sequence; ++i) {
        PyObject *value = PyObject_GetAttrString(flags, flag_fields[i].name);
        if (!value)
            Py_CLEAR(record);
        else
            PyStructSequence_SET_ITEM(record, i, value);
    }
    Py_XDECREF(flags);
    Py_XDECREF(array);
    return record;
}

PyObject *gtpy_storage_ndarray(PyObject *self, bool write)
{
    gts_storage g;
    gtpy_storage_load(self, &g);
    return gtpy_storage_ndarray_over(&g, self, write);
}

PyObject *gtpy_storage_host_values(PyObject *self)
{
    gts_storage g, copy;
    gts_error err;
    gtpy_storage_load(self, &g);
    if (gts_buffer_host(g.buffer) || gts_storage_size(&g) == 0)
        return gtpy_storage_ndarray(self, false);
    if (gts_storage_copy_to(gts_device_host(), &g, &copy, &err) != 0)
        return gtpy_raise_null(&err);
    PyObject *host = gtpy_storage_new(&copy, NULL, NULL);
    PyObject *array = host ? gtpy_storage_ndarray(host, false) : NULL;
    Py_XDECREF(host);
    return array;
}
