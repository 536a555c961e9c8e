/* DLPack from Python: Storage.__dlpack__ / __dlpack_device__ (producer)
 * and storages over what other producers export (consumer). The structs and
 * their lifetimes are libgtstore's (gtstore/dlpack.h); this file handles the
 * capsules and the protocol's keywords. */
#include "dlpack.h"
#include "args.h"
#include "convert.h"
#include "errors.h"
#include "storage.h"

#include <limits.h>

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

/* stream: the consumer's stream, which may use the data at once: every
 * gtstore operation has completed when it returns. CUDA takes any stream
 * but 0 (forbidden by the protocol); other memory None or -1 ("no
 * synchronization"). */
static int check_stream(PyObject *stream, const gts_device_ops *own)
{
    long value = 0;
    if (!stream || stream == Py_None)
        return 0;
    bool cuda = own->cuda_array_interface; /* CUDA memory takes CUDA streams */
    bool is_int = saturated_long(stream, &value) == 0;
    PyErr_Clear();
    bool pointer = value != 0 && value != LONG_MAX && value != LONG_MIN; /* not saturated */
    if (is_int && (value == -1 || (cuda && pointer)))
        return 0;
    PyErr_Format(PyExc_ValueError,
                 cuda ? "stream: %.200R is not valid (0 is forbidden by the DLPack protocol)"
                      : "stream: %.200R is not valid for this memory (only None or -1 are)",
                 stream);
    return -1;
}

/* Brings the memory an export gives up to date, the consumer being free to
 * write it, and describes it in `out`: `g` itself, a host copy (a new
 * reference in `*keep`, which `out` borrows) or a copy on the device. */
static int prepare_export(const gts_storage *g, gts_dlpack_serve kind, int copy, gts_storage *out,
                          PyObject **keep)
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
    if (gts_storage_access(g, GTS_SIDE_DEVICE, access, NULL, &data, &err) != 0 ||
        (copy > 0 && gts_storage_copy(g, out, &err) != 0))
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
    int copy = values[3] && values[3] != Py_None ? PyObject_IsTrue(values[3]) : -1;
    if ((values[3] && values[3] != Py_None && copy < 0) ||
        read_device(values[2], g.buffer, copy, &kind) < 0 ||
        check_stream(values[0], kind == GTS_DLPACK_SERVE_OWN ? gts_buffer_device(g.buffer)
                                                   : gts_device_host()) < 0)
        return NULL;
    if (kind == GTS_DLPACK_SERVE_HOST_SIDE && major < 1) {
        PyErr_SetString(PyExc_BufferError,
                        "max_version: the host side of a storage on a GPU is exported as DLPack "
                        "1.0 or later only");
        return NULL;
    }
    if (prepare_export(&g, kind, copy, &source, &keep) < 0)
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

/* The device type __dlpack_device__ names (0 where it names none). */
static long producer_device_type(PyObject *producer)
{
    static PyObject *interned;
    PyObject *method = gtpy_optional_attr(producer, "__dlpack_device__", &interned);
    PyObject *device = method ? PyObject_CallNoArgs(method) : NULL;
    long type = 0;
    if (device && PyTuple_Check(device) && PyTuple_GET_SIZE(device) == 2 &&
        saturated_long(PyTuple_GET_ITEM(device, 0), &type) < 0)
        type = 0;
    Py_XDECREF(device);
    Py_XDECREF(method);
    PyErr_Clear();
    return type;
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

/* producer.__dlpack__(max_version=...), or the legacy call for producers
 * that predate the keyword. */
static PyObject *export_capsule(PyObject *producer, const char *param)
{
    PyObject *method = PyObject_GetAttrString(producer, "__dlpack__");
    if (!method) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %.200R does not implement __dlpack__", param,
                     (PyObject *)Py_TYPE(producer));
        return NULL;
    }
    /* CUDA memory: the producer orders its work before the legacy default
     * stream (1), on which gtstore's CUDA operations run and complete. */
    PyObject *kwargs = cuda_producer(producer)
                           ? Py_BuildValue("{s:(ii),s:i}", "max_version", GTS_DLPACK_MAJOR,
                                           GTS_DLPACK_MINOR, "stream", 1)
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
    PyObject *capsule = export_capsule(producer, param);
    if (!capsule)
        return NULL;
    PyObject *storage = import_capsule(capsule, param);
    Py_DECREF(capsule);
    return storage;
}
