/* The one allocation path of both APIs: a new host or device storage for a
 * resolved request, filled, or copied from its data (the source's values
 * cast by NumPy where the dtypes differ). */
#include "allocation.h"
#include "errors.h"
#include "request.h"
#include "source.h"
#include "storage.h"
#include "stream.h"

/* The preset name a new storage records: the one given, else its data's. */
PyObject *gtpy_preset_name(const gtpy_request *r, const gtpy_source *src)
{
    if (r->preset)
        return r->preset;
    return src->storage ? gtpy_storage_preset(src->storage) : NULL;
}

static int copy_into(PyObject *storage, const gts_storage *s, gtpy_source *src);

/* Values of another dtype from a storage or an imported array (another
 * library's memory, `from`): NumPy casts them from an ndarray, which it
 * reads by position (the new storage may label the dims anew, as a copy
 * of the same dtype does), over a host copy where they are in device
 * memory. */
static int copy_cast(PyObject *storage, const gts_storage *s, const gtpy_source *src,
                     const gts_storage *from)
{
    gts_storage copy;
    gts_error err;
    PyObject *host = NULL;
    if (!gtpy_has_host_side(from->buffer)) {
        if (gts_storage_copy_to(gts_device_host(), from, &copy, &err) != 0)
            return gtpy_raise(&err);
        if (!(host = gtpy_storage_new(&copy, NULL, NULL)))
            return -1;
    }
    PyObject *array = gtpy_storage_ndarray(host ? host : src->storage, false);
    Py_XDECREF(host); /* the ndarray's base */
    if (!array)
        return -1;
    gtpy_source staged = *src;
    staged.array = array;
    staged.storage = NULL;
    staged.imported = false;
    staged.have_view = false;
    int rc = copy_into(storage, s, &staged);
    Py_DECREF(array);
    return rc;
}

/* The source's values into the new storage `s` (the object `storage`):
 * from a storage of the same dtype by the library's copy (from and to any
 * device); else on its host side where it has one (marked written,
 * gtstore/sync.h), else through host memory and one copy to the device. */
static int copy_into(PyObject *storage, const gts_storage *s, gtpy_source *src)
{
    gts_error err;
    if (src->storage && gts_dtype_equal(src->dtype, s->dtype)) { /* from any device */
        gts_storage from;
        gtpy_storage_load(src->storage, &from);
        return gtpy_stream_assign(s, &from);
    }
    if (src->storage) { /* another dtype */
        gts_storage from;
        gtpy_storage_load(src->storage, &from);
        return copy_cast(storage, s, src, &from);
    }
    void *data;
    if (gts_storage_data(s)) {
        if (gts_storage_access(s, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &data, &err) != 0)
            return gtpy_raise(&err);
        return gtpy_copy_source(storage, data, s->strides, s->ndim, s->shape, s->dtype, src);
    }
    gts_storage host;
    PyObject *staging = gtpy_storage_host_staging(s, &host);
    if (!staging)
        return -1;
    int rc = gtpy_copy_source(staging, gts_storage_data(&host), host.strides, host.ndim,
                              host.shape, host.dtype, src);
    if (rc == 0)
        rc = gtpy_stream_assign(s, &host);
    Py_DECREF(staging);
    return rc;
}

PyObject *gtpy_storage_allocate(const gtpy_request *r, gtpy_source *src, gtpy_resolved *resolved,
                                gts_storage *s)
{
    unsigned char item[16];
    bool fill = r->fill == FILL_VALUE || r->fill == FILL_ONES;
    if (fill && gtpy_request_fill_item(r, resolved->spec.dtype, item) < 0)
        return NULL;
    PyObject *storage = gtpy_storage_create(gtpy_spec(resolved),
                                            r->fill == FILL_ZEROS ? GTS_ALLOC_ZERO : 0,
                                            gtpy_preset_name(r, src));
    if (!storage)
        return NULL;
    gtpy_storage_load(storage, s); /* the object's buffer reference, borrowed */
    if ((fill && gtpy_stream_fill_item(s, item) < 0) ||
        (r->fill == FILL_COPY && copy_into(storage, s, src) < 0))
        Py_CLEAR(storage);
    return storage;
}
