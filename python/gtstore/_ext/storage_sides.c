/* as_storage(data, device_data, sync_state=...) and storage(data,
 * device_data, copy=...): one software-managed storage (GDP-3's
 * GT4PySyncedGPUStorage) over, or copied from, a host buffer and a device
 * buffer (GDP-3's final text). Both are read by the one reader (source.c); libgtstore
 * checks their strides against each other and the layout (gtstore/wrap.h).
 *
 * sync_state says which side is current: SyncState.SYNC_CLEAN,
 * SYNC_HOST_DIRTY or SYNC_DEVICE_DIRTY, None for "data is current"
 * (SYNC_HOST_DIRTY: the first use on the device copies it over), or the
 * SyncState of a storage whose buffers `data` and `device_data` were
 * extracted from: the new storage is then a view of that storage's buffer
 * and shares its state. */
#include "allocation.h"
#include "convert.h"
#include "errors.h"
#include "request.h"
#include "source.h"
#include "storage.h"

#include <string.h>

/* One side: its element 0 (a device or host address), strides and flags. */
typedef struct side {
    gtpy_source src;
    gts_buffer *buffer; /* a storage's (borrowed), else NULL (host memory read in place) */
    void *element0;
    bool readonly;
} side;

static int open_side(side *s, PyObject *obj, const char *param, bool device)
{
    memset(s, 0, sizeof *s);
    if (gtpy_source_open(&s->src, obj, param, device ? GTS_DEVICE_GPU : GTS_DEVICE_CPU) < 0)
        return -1;
    if (!s->src.dtype_known)
        return gtpy_source_dtype_error(&s->src);
    if (s->src.storage) {
        gts_storage g;
        gtpy_storage_load(s->src.storage, &g);
        s->buffer = g.buffer;
        s->readonly = g.readonly;
        s->element0 = device ? (char *)gts_buffer_data(g.buffer) + g.offset : gts_storage_data(&g);
        bool reaches = device ? !gts_buffer_device(g.buffer)->host_accessible
                              : gtpy_has_host_side(g.buffer);
        if (reaches && (device || gts_buffer_host(g.buffer)))
            return 0;
    } else if (!device && s->src.memory) { /* host memory read in place */
        s->element0 = s->src.data;
        s->readonly = s->src.readonly;
        return 0;
    }
    PyErr_Format(PyExc_ValueError,
                 device ? "%s: got %.100s, which is not in device memory (a GPU array, or a "
                          "storage on the GPU, is)"
                        : "%s: got %.100s, which is not in host memory",
                 param, Py_TYPE(obj)->tp_name);
    return -1;
}

static void close_side(side *s)
{
    gtpy_source_release(&s->src);
}

/* The two sides must hold the same elements: shape and dtype. */
static int check_same_array(const side *host, const side *device)
{
    const gtpy_source *h = &host->src, *d = &device->src;
    if (h->ndim == d->ndim &&
        memcmp(h->shape, d->shape, (size_t)h->ndim * sizeof *h->shape) == 0 &&
        gts_dtype_equal(h->dtype, d->dtype))
        return 0;
    PyObject *hs = gtpy_int64_tuple(h->ndim, h->shape), *ds = gtpy_int64_tuple(d->ndim, d->shape);
    PyObject *ht = gtpy_dtype_object(h->dtype), *dt = gtpy_dtype_object(d->dtype);
    if (hs && ds && ht && dt)
        PyErr_Format(PyExc_ValueError,
                     "device_data: shape %R and dtype %S, and data has shape %R and dtype %S: "
                     "the two sides of a storage hold the same elements",
                     ds, dt, hs, ht);
    Py_XDECREF(hs);
    Py_XDECREF(ds);
    Py_XDECREF(ht);
    Py_XDECREF(dt);
    return -1;
}

/* sync_state as a state; the SyncState object itself in *shared. */
static int read_state(PyObject *obj, gts_sync_state *state, PyObject **shared)
{
    *shared = NULL;
    *state = GTS_SYNC_HOST_DIRTY;
    if (!obj || obj == Py_None)
        return 0;
    if (PyObject_TypeCheck(obj, &gtpy_SyncState_Type)) {
        *shared = obj;
        *state = gts_buffer_sync_state(gtpy_sync_state_buffer(obj));
        return 0;
    }
    if (gtpy_sync_state_number(obj, state))
        return 0;
    PyErr_Format(gtpy_is_integer(obj) ? PyExc_ValueError : PyExc_TypeError,
                 "sync_state: expected None, SyncState.SYNC_CLEAN, SYNC_HOST_DIRTY, "
                 "SYNC_DEVICE_DIRTY or a storage's SyncState, got %.200R",
                 obj);
    return -1;
}

/* The state of the new storage (read_state), and the SyncState it shares
 * (*shared, a new reference, or NULL). Both sides from one storage's
 * buffer (as_storage(t, t)) are that storage's: their state is its own,
 * not one to declare (its host side may be stale), so the new storage
 * shares its SyncState as if it had been given, and a copy starts from
 * its state. */
static int sides_state(const gtpy_request *r, const side *host, const side *device,
                       gts_sync_state *state, PyObject **shared)
{
    if (read_state(r->sync_state, state, shared) < 0)
        return -1;
    if (*shared || !host->buffer || host->buffer != device->buffer) {
        Py_XINCREF(*shared);
        return 0;
    }
    gts_storage h, d;
    gtpy_storage_load(host->src.storage, &h);
    gtpy_storage_load(device->src.storage, &d);
    if (h.offset != d.offset || h.ndim != d.ndim ||
        memcmp(h.strides, d.strides, (size_t)h.ndim * sizeof *h.strides) != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "device_data: other elements of data's storage; the two sides of a "
                        "storage hold the same elements (give the same view as both)");
        return -1;
    }
    if (r->sync_state && r->sync_state != Py_None) {
        PyErr_SetString(PyExc_ValueError,
                        "sync_state: data and device_data are the two sides of one storage, "
                        "whose state is its own: give its SyncState, or None");
        return -1;
    }
    *state = gts_buffer_sync_state(host->buffer);
    return (*shared = gtpy_storage_sync_state(host->src.storage)) ? 0 : -1;
}

/* What keeps both sides' memory alive: the host side's buffer export, if
 * it was read through one (left open), and the two objects read. Released
 * once, from any thread. */
typedef struct keep_alive {
    Py_buffer view;
    bool have_view;
    PyObject *objects[2];
} keep_alive;

static void release_keep_alive(void *ctx)
{
    if (!Py_IsInitialized())
        return;
    keep_alive *k = ctx;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (k->have_view)
        PyBuffer_Release(&k->view);
    Py_XDECREF(k->objects[0]);
    Py_XDECREF(k->objects[1]);
    PyMem_RawFree(k);
    PyGILState_Release(gil);
}

/* The spec: the request's keywords, data as the template. */
static int spec_of(const gtpy_request *r, side *host, gtpy_resolved *resolved)
{
    return gtpy_request_spec(r, &host->src, resolved);
}

static PyObject *wrap_sides(const gtpy_request *r, side *host, side *device)
{
    gts_sync_state state;
    PyObject *shared;
    gtpy_resolved resolved;
    gts_storage s;
    gts_error err;
    bool readonly = host->readonly || device->readonly;
    if (sides_state(r, host, device, &state, &shared) < 0)
        return NULL;
    if (spec_of(r, host, &resolved) < 0) {
        Py_XDECREF(shared);
        return NULL;
    }
    int rc;
    if (shared) { /* arrays extracted from a storage: a view of its buffer */
        rc = gts_storage_wrap_in(gtpy_spec(&resolved), gtpy_sync_state_buffer(shared),
                                 device->element0, device->src.strides, host->element0,
                                 host->src.strides, readonly, &s, &err);
    } else {
        keep_alive *k = PyMem_RawCalloc(1, sizeof *k);
        if (!k) {
            gtpy_resolved_release(&resolved);
            return PyErr_NoMemory(); /* shared is NULL here */
        }
        rc = gts_storage_wrap_mirrored(gtpy_spec(&resolved), gts_buffer_device(device->buffer),
                                       device->element0, device->src.strides, host->element0,
                                       host->src.strides, readonly, state, release_keep_alive, k,
                                       &s, &err);
        if (rc) {
            PyMem_RawFree(k);
        } else { /* the storage owns them now */
            k->view = host->src.view;
            k->have_view = host->src.have_view;
            host->src.have_view = false;
            k->objects[0] = Py_NewRef(host->src.array);
            k->objects[1] = Py_NewRef(device->src.array);
        }
    }
    gtpy_resolved_release(&resolved);
    PyObject *result = rc ? gtpy_raise_null(&err) : gtpy_storage_new(&s, r->preset, shared);
    Py_XDECREF(shared);
    return result;
}

/* A new software-managed storage on the GPU like data: data's values on
 * its host side (NumPy copies and casts them in), device_data's on its
 * device side (the library's copy, from any device), then the state. */
static PyObject *copy_sides(const gtpy_request *r, side *host, side *device)
{
    gts_sync_state state;
    PyObject *shared;
    gtpy_resolved resolved;
    gts_storage s, from;
    gts_error err;
    if (sides_state(r, host, device, &state, &shared) < 0)
        return NULL;
    Py_XDECREF(shared); /* a copy shares nothing */
    gtpy_request copy = *r;
    copy.fill = FILL_NONE;
    if (!copy.device) {
        copy.device = PyUnicode_FromString("gpu"); /* a device buffer asks for one */
        copy.device_param = "device";
    } else
        Py_INCREF(copy.device);
    if (!copy.device || spec_of(&copy, host, &resolved) < 0) {
        Py_XDECREF(copy.device);
        return NULL;
    }
    PyObject *storage = NULL;
    const gts_storage_spec *spec = gtpy_spec(&resolved);
    if (gts_storage_spec_device(spec) != GTS_DEVICE_GPU || spec->managed != GTS_MANAGED_GT4PY)
        PyErr_SetString(PyExc_ValueError,
                        "device_data: a copy of two buffers is a storage on the GPU whose sides "
                        "gtstore keeps in sync: device='gpu' and managed='gt4py' (the defaults)");
    else if (gtpy_check_gpu(&copy, spec) == 0)
        storage = gtpy_storage_allocate(&copy, &host->src, &resolved, &s);
    gtpy_resolved_release(&resolved);
    Py_DECREF(copy.device);
    PyObject *host_side = storage ? gtpy_storage_ndarray(storage, true) : NULL; /* marked */
    int rc = host_side ? PyObject_SetItem(host_side, Py_Ellipsis, host->src.array) : -1;
    Py_XDECREF(host_side);
    if (rc < 0) {
        Py_XDECREF(storage);
        return NULL;
    }
    gtpy_storage_load(device->src.storage, &from);
    gtpy_storage_load(storage, &s);
    if (gts_storage_assign(&s, &from, &err) != 0 ||
        gts_buffer_set_sync_state(s.buffer, state, &err) != 0) {
        Py_DECREF(storage);
        return gtpy_raise_null(&err);
    }
    return storage;
}

int gtpy_open_device_side(gtpy_source *src, PyObject *obj, const char *param)
{
    side device;
    if (open_side(&device, obj, param, true) < 0) {
        close_side(&device);
        return -1;
    }
    *src = device.src; /* the caller's to release */
    return 0;
}

PyObject *gtpy_storage_sides(const gtpy_request *r, bool copy)
{
    side host, device;
    PyObject *result = NULL;
    memset(&host, 0, sizeof host);
    memset(&device, 0, sizeof device);
    if (open_side(&host, r->source, "data", false) == 0 &&
        open_side(&device, r->device_data, "device_data", true) == 0 &&
        check_same_array(&host, &device) == 0)
        result = copy ? copy_sides(r, &host, &device) : wrap_sides(r, &host, &device);
    close_side(&host);
    close_side(&device);
    return result;
}
