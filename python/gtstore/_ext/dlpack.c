/* DLPack from Python: Storage.__dlpack__ / __dlpack_device__ (producer)
 * and storages over what other producers export (consumer). The structs and
 * their lifetimes are libgtstore's (gtstore/dlpack.h); this file handles the
 * capsules and the protocol's keywords. */
#include "dlpack.h"
#include "args.h"
#include "convert.h"
#include "errors.h"
#include "storage.h"
#include "stream.h"

#include <limits.h>

#include "gtstore/access.h"
#include "gtstore/dlpack.h"
#include "gtstore/sync.h"

static const char VERSIONED[] = "dltensor_versioned", LEGACY[] = "dltensor";
static const char USED_VERSIONED[] = "used_dltensor_versioned", USED_LEGACY[] = "used_dltensor";

/* A capsule nobody consumed still owns its tensor. The deleter needs no GIL
 * for our own exports, and producers' deleters take it themselves. */
static void capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, VERSIONED)) {
        gts_dl_managed_versioned *m = PyCapsule_GetPointer(capsule, VERSIONED);
        if (m->deleter)
            m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, LEGACY)) {
        gts_dl_managed *m = PyCapsule_GetPointer(capsule, LEGACY);
        if (m->deleter)
            m->deleter(m);
    }
}

/* ---- producer ------------------------------------------------------------------ */

/* An int as a C long, saturated: any value beyond the range of a long is
 * as good as its end for the checks below. -1 with TypeError if `obj` is
 * not an int. */
static int saturated_long(PyObject *obj, long *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj))
        return -1;
    int overflow;
    *out = PyLong_AsLongAndOverflow(obj, &overflow);
    if (overflow)
        *out = overflow > 0 ? LONG_MAX : LONG_MIN;
    return 0;
}

/* max_version=(major, minor): the newest version the consumer reads. Any
 * major >= 1 gets the versioned struct, however large. */
static int read_version(PyObject *obj, long *major)
{
    *major = -1; /* legacy */
    if (!obj || obj == Py_None)
        return 0;
    long minor;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
        saturated_long(PyTuple_GET_ITEM(obj, 0), major) < 0 ||
        saturated_long(PyTuple_GET_ITEM(obj, 1), &minor) < 0) {
        PyErr_Format(PyExc_TypeError, "max_version: expected a tuple (major, minor) of ints, got "
                     "%.200R", obj);
        return -1;
    }
    if (*major < 0 || minor < 0) {
        PyErr_Format(PyExc_ValueError, "max_version: %.200R has a negative part", obj);
        return -1;
    }
    return 0;
}

/* dl_device: None or a tuple (device_type, device_id) of ints, which
 * gts_dlpack_serve_side answers with the side served. `copy` is -1 for
 * None. */
static int read_device(PyObject *obj, const gts_buffer *buffer, int copy, gts_dlpack_serve *kind)
{
    long type = 0, id = 0;
    bool given = obj && obj != Py_None;
    if (given && (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
                  saturated_long(PyTuple_GET_ITEM(obj, 0), &type) < 0 ||
                  saturated_long(PyTuple_GET_ITEM(obj, 1), &id) < 0)) {
        PyErr_Format(PyExc_TypeError, "dl_device: expected a tuple (device_type, device_id) of "
                     "ints, got %.200R", obj);
        return -1;
    }
    const int64_t asked[2] = {type, id};
    gts_error err;
    if (gts_dlpack_serve_side(buffer, given ? asked : NULL, copy, kind, &err) == 0)
        return 0;
    PyErr_SetString(PyExc_BufferError, err.message);
    return -1;
}

/* Brings the memory an export gives up to date, the consumer being free to
 * write it, and describes it in `out`: `g` itself, a host copy (a new
 * reference in `*keep`, which `out` borrows) or a copy on the device. The
 * device side is ordered on the consumer's `stream` (the protocol's): that
 * stream waits for the buffer's device work, and a copy runs on it; on the
 * default stream (NULL) the host waits. */
static int prepare_export(const gts_storage *g, gts_dlpack_serve kind, int copy, gts_stream stream,
                          gts_storage *out, PyObject **keep)
{
    gts_error err;
    *keep = NULL;
    *out = *g;
    if (kind == GTS_DLPACK_SERVE_HOST_SIDE)
        return gtpy_storage_host_access(g, true);
    if (kind == GTS_DLPACK_SERVE_HOST_COPY) {
        *keep = gtpy_storage_host_staging(g, out);
        if (*keep && gts_storage_assign(out, g, &err) != 0) {
            Py_CLEAR(*keep);
            return gtpy_raise(&err);
        }
        return *keep ? 0 : -1;
    }
    void *data;
    gts_access access = g->readonly ? GTS_ACCESS_READ : GTS_ACCESS_WRITE;
    /* no access_end: what follows on `stream` is the consumer's work, which
     * gtstore does not see (docs/storage.md, writing behind its back) */
    if (gts_storage_access(g, GTS_SIDE_DEVICE, access, stream, &data, &err) != 0 ||
        (copy > 0 && gts_storage_copy_on(g, stream, out, &err) != 0))
        return gtpy_raise(&err);
    if (copy <= 0)
        return 0;
    if (!(*keep = gtpy_storage_new(out, NULL, NULL))) /* owns the copy's reference */
        return -1;
    gtpy_storage_load(*keep, out);
    return 0;
}

PyObject *gtpy_storage_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    static const char *const names[] = {"stream", "max_version", "dl_device", "copy"};
    static gtpy_signature sig = GTPY_SIGNATURE("__dlpack__", names, 0, 0, 0);
    PyObject *values[4], *keep;
    long major;
    gts_dlpack_serve kind;
    gts_storage g, source;
    gts_error err;
    gtpy_storage_load(self, &g);
    if (gtpy_parse_args(&sig, args, nargs, kwnames, values) < 0 ||
        read_version(values[1], &major) < 0)
        return NULL;
    int copy;
    gts_stream stream;
    if (gtpy_copy_flag(values[3], -1, -1, &copy) < 0 ||
        read_device(values[2], g.buffer, copy, &kind) < 0 ||
        gtpy_stream_number(kind == GTS_DLPACK_SERVE_OWN ? gts_buffer_device(g.buffer)
                                                        : gts_device_host(),
                           values[0], "stream", &stream) < 0)
        return NULL;
    if (kind == GTS_DLPACK_SERVE_HOST_SIDE && major < 1) {
        PyErr_SetString(PyExc_BufferError,
                        "max_version: the host side of a storage on a GPU is exported as DLPack "
                        "1.0 or later only");
        return NULL;
    }
    if (prepare_export(&g, kind, copy, stream, &source, &keep) < 0)
        return NULL;
    bool copied = keep != NULL;
    PyObject *capsule = NULL;
    int rc;
    if (major >= 1) {
        uint64_t flags = (copied ? GTS_DLPACK_IS_COPIED : 0) |
                         (kind == GTS_DLPACK_SERVE_HOST_SIDE ? GTS_DLPACK_HOST_SIDE : 0);
        gts_dl_managed_versioned *m;
        rc = gts_storage_to_dlpack(&source, flags, &m, &err);
        if (rc == 0 && !(capsule = PyCapsule_New(m, VERSIONED, capsule_destructor)))
            m->deleter(m);
    } else {
        gts_dl_managed *m;
        rc = gts_storage_to_dlpack_legacy(&source, &m, &err);
        if (rc == 0 && !(capsule = PyCapsule_New(m, LEGACY, capsule_destructor)))
            m->deleter(m);
    }
    Py_XDECREF(keep); /* the export holds its own reference */
    if (rc != 0)
        PyErr_SetString(PyExc_BufferError, err.message);
    return capsule;
}

/* ---- consumer ------------------------------------------------------------------ */

/* The device __dlpack_device__ names (type 0 where it names none). */
static gts_device_id producer_device(PyObject *producer)
{
    static PyObject *interned;
    PyObject *method = gtpy_optional_attr(producer, "__dlpack_device__", &interned);
    PyObject *device = method ? PyObject_CallNoArgs(method) : NULL;
    long type = 0, id = 0;
    if (device && PyTuple_Check(device) && PyTuple_GET_SIZE(device) == 2 &&
        (saturated_long(PyTuple_GET_ITEM(device, 0), &type) < 0 ||
         saturated_long(PyTuple_GET_ITEM(device, 1), &id) < 0 || id < 0 || id > INT_MAX))
        type = 0;
    Py_XDECREF(device);
    Py_XDECREF(method);
    PyErr_Clear();
    return (gts_device_id){(int)(type > 0 && type <= INT_MAX ? type : 0), (int)id};
}

static long producer_device_type(PyObject *producer)
{
    return producer_device(producer).type;
}

/* Whether __dlpack_device__ says CUDA (or CUDA managed) memory. */
static bool cuda_producer(PyObject *producer)
{
    long type = producer_device_type(producer);
    return type == GTS_DL_CUDA || type == GTS_DL_CUDA_MANAGED;
}

bool gtpy_dlpack_on_device(PyObject *obj)
{
    long type = producer_device_type(obj);
    return type != 0 && type != GTS_DL_CPU && type != GTS_DL_CUDA_HOST;
}

/* The stream a CUDA producer orders its export on: the current stream of
 * its GPU (stream.h; the legacy default stream unless another is
 * current). *device: that GPU (NULL for other producers). */
static int consumer_stream(PyObject *producer, const gts_device_ops **device, gts_stream *out)
{
    gts_device_id id = producer_device(producer);
    gts_error err;
    *device = NULL;
    *out = NULL;
    if (id.type != GTS_DL_CUDA || gts_device_get(id, device, &err) != GTS_OK) {
        *device = NULL;
        return 0;
    }
    return gtpy_current_stream(*device, out);
}

/* producer.__dlpack__(max_version=..., stream=...) (on `stream`; stream=1,
 * the legacy default stream, where it is NULL, for CUDA producers), or the
 * call without keywords for producers that predate them. */
static PyObject *export_capsule(PyObject *producer, const char *param, gts_stream stream)
{
    PyObject *method = PyObject_GetAttrString(producer, "__dlpack__");
    if (!method) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %.200R does not implement __dlpack__", param,
                     (PyObject *)Py_TYPE(producer));
        return NULL;
    }
    /* CUDA memory: the producer orders its work before the consumer's
     * stream, gtstore's current stream (never NULL for a CUDA GPU: 1
     * stands in for a NULL from elsewhere). */
    PyObject *kwargs = cuda_producer(producer)
                           ? Py_BuildValue("{s:(ii),s:N}", "max_version", GTS_DLPACK_MAJOR,
                                           GTS_DLPACK_MINOR, "stream",
                                           stream ? PyLong_FromVoidPtr(stream)
                                                  : PyLong_FromLong(1))
                           : Py_BuildValue("{s:(ii)}", "max_version", GTS_DLPACK_MAJOR,
                                           GTS_DLPACK_MINOR);
    PyObject *empty = PyTuple_New(0);
    PyObject *capsule = kwargs && empty ? PyObject_Call(method, empty, kwargs) : NULL;
    if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        capsule = PyObject_CallNoArgs(method);
    }
    Py_XDECREF(empty);
    Py_XDECREF(kwargs);
    Py_DECREF(method);
    return capsule;
}

static PyObject *import_capsule(PyObject *capsule, const char *param)
{
    gts_storage s;
    gts_error err;
    int rc;
    const char *used;
    if (PyCapsule_IsValid(capsule, VERSIONED)) {
        rc = gts_storage_from_dlpack(PyCapsule_GetPointer(capsule, VERSIONED), NULL, &s, &err);
        used = USED_VERSIONED;
    } else if (PyCapsule_IsValid(capsule, LEGACY)) {
        rc = gts_storage_from_dlpack_legacy(PyCapsule_GetPointer(capsule, LEGACY), NULL, &s, &err);
        used = USED_LEGACY;
    } else {
        PyErr_Format(PyExc_TypeError,
                     "%s: __dlpack__ returned %.200R, not an unused DLPack capsule", param,
                     capsule);
        return NULL;
    }
    if (rc != 0) {
        if (rc == GTS_ENOTSUP)
            PyErr_SetString(PyExc_BufferError, err.message);
        return rc == GTS_ENOTSUP ? NULL : gtpy_raise_null(&err);
    }
    if (PyCapsule_SetName(capsule, used) < 0) { /* the storage owns the tensor now */
        gts_storage_release(&s);
        return NULL;
    }
    /* gtstore copies and computes on its GPU only */
    if (gts_device_check_usable(gts_buffer_device(s.buffer), &err) != GTS_OK) {
        gts_storage_release(&s);
        return gtpy_raise_param(param, &err), NULL;
    }
    return gtpy_storage_new(&s, NULL, NULL);
}

PyObject *gtpy_storage_from_dlpack(PyObject *producer, const char *param)
{
    const gts_device_ops *device;
    gts_stream stream;
    if (consumer_stream(producer, &device, &stream) < 0)
        return NULL;
    PyObject *capsule = export_capsule(producer, param, stream);
    if (!capsule)
        return NULL;
    PyObject *storage = import_capsule(capsule, param);
    Py_DECREF(capsule);
    /* the producer's work is ordered before `stream`: so is the buffer's,
     * for accesses on other streams and the host */
    gts_storage g;
    gts_error err;
    if (storage && stream) {
        gtpy_storage_load(storage, &g);
        if (gts_buffer_device(g.buffer) == device &&
            gts_buffer_order_record(g.buffer, stream, &err) != GTS_OK) {
            Py_CLEAR(storage);
            gtpy_raise(&err);
        }
    }
    return storage;
}
