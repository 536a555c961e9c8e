/* The call side: Python objects read as the fields of a stencil call, bound
 * by libgtstore's gts_bind, and the acquire / touch / release protocol of
 * the __gt_interface__ sketch around a run. Every number and check is gts_bind's; this file
 * turns what the one reader of array objects (source.c gtpy_source_read)
 * finds into fields, in the order of notes/protocols.md:
 *   1. a gtstore Storage: its own fields (what its __gt_data_interface__
 *      would say, without building the dict), synced through gtstore/sync.h;
 *   2. __gt_data_interface__: the entry of the compute device (None or
 *      "cpu" for the host, "gpu"), with its dims, halo and callbacks;
 *   3. else the buffer protocol, __array_interface__ (host) or
 *      __cuda_array_interface__ (gpu), with __gt_dims__ and __gt_origin__;
 *   4. else another library's array as the creation functions import it
 *      (a device __dlpack__ or __cuda_array_interface__, or DLPack only):
 *      its host memory, a copy in and out of its device memory for a
 *      stencil on the host, or its device memory on the GPU;
 *   5. else, with __array__, the array np.asarray makes of it, read as
 *      above, and assigned back to the object after a run that writes it.
 * Labels: the object's own, else the annotation's (the No-Storage work plan). */
#include "array_interface.h"
#include "binding_object.h"
#include "convert.h"
#include "engine.h"
#include "errors.h"
#include "numpy.h"
#include "source.h"
#include "storage.h"
#include "stream.h"

#include <stdio.h>
#include <string.h>

PyObject *gtpy_FieldWarning;

/* ---- reading one object ----------------------------------------------------- */

void gtpy_slot_clear(bind_slot *slot)
{
    if (slot->have_view)
        PyBuffer_Release(&slot->view);
    slot->have_view = slot->in_place = false;
    Py_CLEAR(slot->obj);
    Py_CLEAR(slot->storage);
    Py_CLEAR(slot->copy_back);
    Py_CLEAR(slot->converted);
    Py_CLEAR(slot->acquire);
    Py_CLEAR(slot->touch);
    Py_CLEAR(slot->release);
}

/* A gtstore Storage with a host side (`g`): its own fields. */
static int load_storage(bind_slot *slot, PyObject *storage, const gts_storage *storage_fields)
{
    const gts_storage *g = storage_fields;
    if (g->ndim > GTS_BIND_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%d dimensions, at most %d", g->ndim, GTS_BIND_MAX_NDIM);
        return -1;
    }
    size_t n = (size_t)g->ndim;
    memcpy(slot->shape, g->shape, n * sizeof *g->shape);
    memcpy(slot->strides, g->strides, n * sizeof *g->strides);
    memcpy(slot->dims, g->dims, n * sizeof *g->dims);
    memcpy(slot->halo, g->halo, n * sizeof *g->halo);
    slot->storage = Py_NewRef(storage);
    slot->desc = (gts_field_desc){.data = gts_storage_data(storage_fields),
                                  .device = GTS_DEVICE_CPU,
                                  .dtype = g->dtype,
                                  .ndim = g->ndim,
                                  .shape = slot->shape,
                                  .strides = slot->strides,
                                  .dims = slot->dims,
                                  .halo = slot->halo,
                                  .readonly = g->readonly};
    return 0;
}

/* Memory the reader found in place (its shape and strides copied); the
 * slot keeps the source's buffer export. */
static void load_memory(bind_slot *slot, gtpy_source *src, gts_device device)
{
    memcpy(slot->shape, src->shape, (size_t)src->ndim * sizeof *src->shape);
    memcpy(slot->strides, src->strides, (size_t)src->ndim * sizeof *src->strides);
    slot->desc.data = src->data;
    slot->desc.dtype = src->dtype;
    slot->desc.readonly = src->readonly;
    slot->desc.ndim = src->ndim;
    slot->desc.device = device;
    slot->desc.shape = slot->shape;
    slot->desc.strides = slot->strides;
    slot->view = src->view;
    slot->have_view = src->have_view;
    slot->in_place = true;
    src->have_view = false;
}

/* An object's labels (`ndim` of them, named `param` in errors), one per
 * dimension of the memory read. */
static int set_dims(bind_slot *slot, int ndim, const gts_dim *labels, const char *param)
{
    if (ndim != slot->desc.ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %d labels for %d dimensions", param, ndim,
                     slot->desc.ndim);
        return -1;
    }
    memcpy(slot->dims, labels, (size_t)ndim * sizeof *labels);
    slot->desc.dims = slot->dims;
    return 0;
}

/* Labels given as `dims` (__gt_dims__). */
static int load_dims(bind_slot *slot, PyObject *dims, const char *param)
{
    gts_dim labels[GTS_MAX_NDIM];
    int ndim;
    return gtpy_dims(dims, param, &ndim, labels) < 0 ? -1
                                                    : set_dims(slot, ndim, labels, param);
}

/* __gt_origin__ (else default_origin): the object's default origin, in
 * its own order. */
static int load_gt_origin(bind_slot *slot, PyObject *obj)
{
    PyObject *origin;
    const char *name;
    int found = gtpy_gt_origin(obj, &origin, &name);
    if (found <= 0)
        return found;
    int n;
    int rc = gtpy_int_tuple(origin, name, GTS_BIND_MAX_NDIM, &n, slot->origin);
    Py_DECREF(origin);
    if (rc == 0 && n != slot->desc.ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %d entries for %d dimensions", name, n,
                     slot->desc.ndim);
        rc = -1;
    }
    if (rc == 0)
        slot->desc.origin = slot->origin;
    return rc;
}

static int load_gt_dims(bind_slot *slot, PyObject *obj)
{
    PyObject *dims;
    if (gtpy_gt_dims(obj, &dims) < 0)
        return -1;
    int rc = dims && dims != Py_None ? load_dims(slot, dims, "__gt_dims__") : 0;
    Py_XDECREF(dims);
    return rc;
}

/* The keys of a __gt_data_interface__ entry (`name`) besides its memory:
 * the callbacks, dims (where they are gtstore labels, as the creation
 * functions read them: gtpy_entry_dims) and halo; and the object's
 * __gt_origin__. */
static int load_entry(bind_slot *slot, PyObject *obj, PyObject *info, const char *name)
{
    gts_dim labels[GTS_MAX_NDIM];
    int ndim;
    if (gtpy_entry_callback(info, "acquire", &slot->acquire) < 0 ||
        gtpy_entry_callback(info, "touch", &slot->touch) < 0 ||
        gtpy_entry_callback(info, "release", &slot->release) < 0)
        return -1;
    int labelled = gtpy_entry_dims(info, name, slot->desc.ndim, &ndim, labels);
    if (labelled < 0)
        return -1;
    char param[64];
    snprintf(param, sizeof param, "%s['dims']", name);
    if (labelled && set_dims(slot, ndim, labels, param) < 0)
        return -1;
    PyObject *halo = gtpy_mapping_entry(info, "halo");
    int rc = PyErr_Occurred() ? -1 : 0;
    if (rc == 0 && halo && halo != Py_None) {
        rc = gtpy_halo(halo, "halo", slot->desc.ndim, slot->desc.ndim, slot->halo);
        slot->desc.halo = slot->halo;
    }
    Py_XDECREF(halo);
    return rc < 0 ? -1 : load_gt_origin(slot, obj);
}

static int load_copy_in(bind_slot *slot, PyObject *storage, const gts_storage *g,
                        gts_device device);

/* A Storage's device side, for a stencil on the GPU: the device address
 * of its element 0, accessed in the stream order around the run
 * (gtpy_slots_acquire). */
static int load_device_side(bind_slot *slot, PyObject *storage, const gts_storage *g)
{
    if (load_storage(slot, storage, g) < 0)
        return -1;
    char *base = gts_buffer_data(g->buffer); /* NULL for an empty storage over no memory */
    slot->desc.data = base ? base + g->offset : NULL;
    slot->desc.device = GTS_DEVICE_GPU;
    slot->device_side = true;
    slot->memory = gts_buffer_device(g->buffer);
    return 0;
}

/* Whether a stencil on `device` reaches the storage's memory in place: on
 * the host its host side, on the GPU its device memory (a GPU kernel
 * cannot reach host memory). */
static bool reaches(const gts_storage *g, gts_device device)
{
    return device == GTS_DEVICE_GPU ? gts_buffer_device_kind(g->buffer) == GTS_DEVICE_GPU
                                    : gtpy_has_host_side(g->buffer);
}

/* A Storage's memory where the stencil computes, else a copy there (GDP-3's
 * final text: copy-in, copy-out). */
static int load_side(bind_slot *slot, PyObject *storage, const gts_storage *g, gts_device device)
{
    if (!reaches(g, device))
        return load_copy_in(slot, storage, g, device);
    return device == GTS_DEVICE_GPU ? load_device_side(slot, storage, g)
                                    : load_storage(slot, storage, g);
}

/* Memory the reader made a storage over (`storage`: another library's
 * array it imported, or memory it read in place on the other device): it
 * carries no labels or halo of its own (the object's __gt_dims__, else the
 * annotation's), and the object (slot->obj) keeps the memory alive. On the
 * GPU it is a buffer of this call only, with no device work of gtstore's
 * to order: the producer's protocol ordered the memory when it was read. */
static int load_imported(bind_slot *slot, PyObject *storage, gts_device device)
{
    gts_storage g;
    gtpy_storage_load(storage, &g);
    int rc = load_side(slot, storage, &g, device);
    if (rc == 0 && !slot->copy_back) {
        slot->device_side = false;
        if (device == GTS_DEVICE_GPU)
            Py_CLEAR(slot->storage);
    }
    slot->desc.dims = NULL;
    slot->desc.halo = NULL;
    return rc;
}

/* A field with no buffer on the device where the stencil computes (GDP-3's
 * final text): its values copied into a storage there that the stencil
 * uses, and copied back after a run that writes it, with a warning: two
 * transfers per call. The storage is only made here: its values are copied
 * in when the call runs (acquire_slot), after the object's acquire and
 * whatever changed it since binding, so a Binding entered once copies once.
 * The field stays as read-only as the object's memory. */
static int load_copy_in(bind_slot *slot, PyObject *storage, const gts_storage *g,
                        gts_device device)
{
    const gts_device_ops *target = gts_device_host();
    gts_storage copy;
    gts_error err;
    if ((device == GTS_DEVICE_GPU && gts_device_gpu(&target, &err) != GTS_OK) ||
        gts_storage_like_to(target, g, &copy, &err) != GTS_OK)
        return gtpy_raise(&err);
    PyObject *staging = gtpy_storage_new(&copy, NULL, NULL);
    if (!staging)
        return -1;
    gtpy_storage_load(staging, &copy);
    int rc = device == GTS_DEVICE_GPU ? load_device_side(slot, staging, &copy)
                                      : load_storage(slot, staging, &copy);
    Py_DECREF(staging); /* the slot holds it */
    if (rc < 0)
        return -1;
    slot->desc.readonly = g->readonly;
    slot->copy_back = Py_NewRef(storage);
    return 0; /* its warning comes once the binding is accepted (warn_copies) */
}

/* What the reader found as the slot's field: a Storage (its memory where
 * the stencil computes, else a copy there), an imported array, or memory
 * in place, which `other` says is on the other device (copied in). */
static int load_source(bind_slot *slot, gtpy_source *src, gts_device device, bool other)
{
    if (src->imported)
        return load_imported(slot, src->storage, device);
    if (!src->storage && !other) {
        load_memory(slot, src, device);
        return 0;
    }
    if (!src->storage) {
        PyObject *wrapped = gtpy_source_wrap(src);
        int rc = wrapped ? load_imported(slot, wrapped, device) : -1;
        Py_XDECREF(wrapped); /* the slot holds it */
        return rc;
    }
    gts_storage g;
    gtpy_storage_load(src->storage, &g);
    return load_side(slot, src->storage, &g, device);
}

/* What the object says besides its memory: a data interface entry's keys,
 * else __gt_dims__ and __gt_origin__ (a Storage's fields say it all). */
static int load_labels(bind_slot *slot, PyObject *obj, const gtpy_source *src)
{
    /* an ndarray has neither attribute: its type defines none, and its
     * instances have no __dict__ */
    if ((src->storage && !src->imported) || gtpy_numpy_is_ndarray(obj))
        return 0;
    if (src->entry)
        return load_entry(slot, obj, src->entry, src->entry_name);
    return load_gt_dims(slot, obj) < 0 ? -1 : load_gt_origin(slot, obj);
}

/* The error for an object the reader cannot read on either device: a data
 * interface without either entry, else a TypeError. */
static int unreadable(PyObject *obj)
{
    static PyObject *name;
    PyObject *interface = gtpy_optional_attr(obj, "__gt_data_interface__", &name);
    if (interface) {
        gtpy_data_interface_unreadable(interface);
        Py_DECREF(interface);
        return -1;
    }
    if (PyErr_Occurred())
        return -1;
    PyErr_Format(PyExc_TypeError,
                 "got %.100s, which cannot be read as a field: it has no "
                 "__gt_data_interface__, buffer protocol, __array_interface__, "
                 "__cuda_array_interface__, __dlpack__ or __array__",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* Whether obj[...] = values can reach the object: its type assigns items. */
static bool assigns_items(PyObject *obj)
{
    PyMappingMethods *mapping = Py_TYPE(obj)->tp_as_mapping;
    return mapping && mapping->mp_ass_subscript;
}

/* A written field's converted array that NumPy made read-only (a view the
 * object protects, as copy-on-write arrays are): the object takes the
 * values by item assignment anyway, so the stencil writes a copy. 1, or
 * -1 with an error. */
static int writable_conversion(bind_slot *slot)
{
    PyObject *flags = PyObject_GetAttrString(slot->converted, "flags");
    PyObject *writeable = flags ? PyObject_GetAttrString(flags, "writeable") : NULL;
    int rc = writeable ? PyObject_IsTrue(writeable) : -1;
    Py_XDECREF(flags);
    Py_XDECREF(writeable);
    if (rc != 0)
        return rc;
    Py_XSETREF(slot->converted, PyObject_CallMethod(slot->converted, "copy", NULL));
    return slot->converted ? 1 : -1;
}

/* An object with none of the interfaces read in place but __array__ (spec
 * 004: whatever np.asarray understands is a field): the array NumPy makes
 * of it becomes the object read (slot->converted). Nothing tells whether
 * that array is a copy, so a written field's values are assigned back to
 * the object after the run (gtpy_slots_touch), which needs item
 * assignment: without it, a written field is refused before anything
 * runs. 1 when converted; 0 for an object without __array__, or with a
 * data interface that has no buffer (unreadable's error, not a detour). */
static int convert(bind_slot *slot, PyObject *obj, const gts_field_spec *spec)
{
    static PyObject *name, *interface_name;
    PyObject *method, *interface;
    if (gtpy_lookup_attr(obj, "__array__", &name, &method) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    Py_DECREF(method);
    if (gtpy_lookup_attr(obj, "__gt_data_interface__", &interface_name, &interface) != 0) {
        Py_XDECREF(interface);
        return PyErr_Occurred() ? -1 : 0;
    }
    if (spec->written && !assigns_items(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "the stencil writes this field, and a field of type %.100s is read "
                     "through __array__, whose array may be a copy: the values would go back "
                     "by item assignment (obj[...] = values), which the type does not "
                     "support; give it __setitem__, or pass an array the stencil writes in "
                     "place (buffer protocol, __array_interface__, DLPack)",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *asarray = gtpy_numpy_asarray();
    slot->converted = asarray ? PyObject_CallOneArg(asarray, obj) : NULL;
    if (!slot->converted)
        return -1;
    return spec->written ? writable_conversion(slot) : 1;
}

/* The object read on the compute device, else on the other one (*other). */
static int read_either(gtpy_source *src, PyObject *obj, gts_device device, bool *other)
{
    int rc = gtpy_source_read(src, obj, device, GTS_BIND_MAX_NDIM);
    *other = rc == 0; /* nothing on the compute device: the other one's, copied in */
    if (*other) {
        gtpy_source_release(src);
        rc = gtpy_source_read(src, obj, device == GTS_DEVICE_CPU ? GTS_DEVICE_GPU
                                                                  : GTS_DEVICE_CPU,
                              GTS_BIND_MAX_NDIM);
    }
    return rc;
}

int gtpy_slot_load(bind_slot *slot, PyObject *obj, const gts_field_spec *spec, gts_device device)
{
    memset(&slot->desc, 0, sizeof slot->desc);
    slot->obj = Py_NewRef(obj);
    gtpy_source src;
    bool other;
    int rc = read_either(&src, obj, device, &other);
    if (rc == 0 && (rc = convert(slot, obj, spec)) > 0) {
        gtpy_source_release(&src);
        rc = read_either(&src, slot->converted, device, &other);
    }
    if (rc == 0)
        rc = unreadable(obj);
    else if (rc > 0)
        rc = load_source(slot, &src, device, other) < 0 ||
                     load_labels(slot, obj, &src) < 0
                 ? -1
                 : 0;
    gtpy_source_release(&src);
    if (rc == -2)
        return -1; /* the object's getter's exception, unchanged */
    return rc < 0 ? gtpy_prefix_error(spec->name) : 0;
}

/* ---- origins and the domain of a call --------------------------------------- */

/* A per-field origin (canonical order): ndim entries, or one per cartesian
 * dimension (data dimensions then start at 0). */
static int read_field_origin(PyObject *value, const gts_field_spec *spec, int64_t *origin)
{
    int n, ncart = 0;
    for (int d = 0; d < spec->ndim; ++d)
        ncart += spec->dims[d] < 0;
    if (gtpy_int_tuple(value, "origin", GTS_BIND_MAX_NDIM, &n, origin) < 0)
        return gtpy_prefix_error(spec->name);
    if (n != spec->ndim && n != ncart) {
        PyErr_Format(PyExc_ValueError,
                     "origin: %d entries for field %s, which has %d dimensions (%d of them I, J "
                     "or K)",
                     n, spec->name, spec->ndim, ncart);
        return -1;
    }
    for (int d = n; d < spec->ndim; ++d)
        origin[d] = 0;
    return 0;
}

static int read_three(PyObject *value, const char *param, int64_t out[3])
{
    int n;
    if (gtpy_int_tuple(value, param, 3, &n, out) < 0)
        return -1;
    if (n != 3) {
        PyErr_Format(PyExc_ValueError, "%s: expected 3 entries (I, J, K), got %R", param, value);
        return -1;
    }
    return 0;
}

/* origin=: a dict of field names (and "_all_") or one sequence for all. */
static int read_origins(const SignatureObject *s, PyObject *origin, bind_slot *slots,
                        const int64_t **origins, int64_t all[3], gts_bind_args *args)
{
    if (!PyDict_Check(origin)) {
        if (read_three(origin, "origin", all) < 0)
            return -1;
        args->origin_all = all;
        return 0;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(origin, &pos, &key, &value)) {
        if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "_all_") == 0) {
            if (read_three(value, "origin['_all_']", all) < 0)
                return -1;
            args->origin_all = all;
            continue;
        }
        int f = gtpy_signature_index(s, key);
        if (f < 0) {
            PyErr_Format(PyExc_ValueError, "origin: no field named %R", key);
            return -1;
        }
        if (read_field_origin(value, &s->fields[f], slots[f].call_origin) < 0)
            return -1;
        origins[f] = slots[f].call_origin;
        args->origins = origins;
    }
    return 0;
}

/* The memory of a slot's field, each side of it: the object's own where a
 * copy of it is bound, and both sides of a storage with two (a mirrored
 * buffer puts each element at the same offset in both). Returns how many
 * (0 for a storage over no memory); `storage` holds what `sides` point
 * into. */
static int field_memory(const bind_slot *slot, gts_field_desc sides[2], gts_storage *storage)
{
    PyObject *obj = slot->copy_back ? slot->copy_back : slot->storage;
    if (!obj) {
        sides[0] = slot->desc;
        return 1;
    }
    gtpy_storage_load(obj, storage);
    gts_field_desc side = {.dtype = storage->dtype,
                           .ndim = storage->ndim,
                           .shape = storage->shape,
                           .strides = storage->strides};
    char *device = gts_buffer_data(storage->buffer);
    char *host = gts_buffer_mirrored(storage->buffer) ? gts_buffer_host(storage->buffer) : NULL;
    int n = 0;
    if (device) {
        side.data = device + storage->offset;
        sides[n++] = side;
    }
    if (host && host != device) {
        side.data = host + storage->offset;
        sides[n++] = side;
    }
    return n;
}

static bool share_memory(const gts_field_desc *a, int na, const gts_field_desc *b, int nb)
{
    for (int i = 0; i < na; ++i)
        for (int j = 0; j < nb; ++j)
            if (gts_fields_may_share_memory(&a[i], &b[j]))
                return true;
    return false;
}

/* A field bound as a copy (no buffer where the stencil computes, or an
 * object read through __array__, whose array may be one) that shares
 * memory with another field, either of them written: the run would read a
 * copy of what it writes, or a copy back would undo the other's writes,
 * where the same call on the memory itself would not. Refused, whichever
 * device the stencil runs on. The other field's memory counts on either
 * side (a mirrored storage bound by its host side, the copy made from its
 * device side); an object read through __array__ shares the memory of
 * the same object bound again (nothing tells where its own memory is). */
static bool is_copy(const bind_slot *slot)
{
    return slot->copy_back || slot->converted;
}

/* Fields c and o, one of them a copy and one written, apart (else a
 * ValueError naming the copy first). */
static int copies_apart(const SignatureObject *s, const bind_slot *slots, int c, int o)
{
    if ((slots[c].converted || slots[o].converted) && slots[c].obj == slots[o].obj) {
        PyErr_Format(PyExc_ValueError,
                     "%s and %s are the same %.100s, read through __array__, whose arrays may "
                     "be copies that would not see one another's writes; pass separate fields",
                     s->fields[c].name, s->fields[o].name, Py_TYPE(slots[c].obj)->tp_name);
        return -1;
    }
    if (!slots[c].copy_back && !slots[o].copy_back)
        return 0;
    int copy = slots[c].copy_back ? c : o, other = copy == c ? o : c;
    gts_storage copied, other_storage;
    gts_field_desc home[2], others[2];
    int nhome = field_memory(&slots[copy], home, &copied);
    int nother = field_memory(&slots[other], others, &other_storage);
    if (!share_memory(home, nhome, others, nother))
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s and %s share memory, and the stencil computes on a copy of %s (no buffer "
                 "on the %s), which would not see the other's writes; pass separate fields",
                 s->fields[copy].name, s->fields[other].name, s->fields[copy].name,
                 gtpy_device_name(s->sig.device));
    return -1;
}

static int check_copies_apart(const SignatureObject *s, const bind_slot *slots)
{
    int n = s->sig.nfields;
    for (int c = 0; c < n; ++c)
        for (int o = c + 1; o < n; ++o)
            if ((is_copy(&slots[c]) || is_copy(&slots[o])) &&
                (s->fields[c].written || s->fields[o].written) &&
                copies_apart(s, slots, c, o) < 0)
                return -1;
    return 0;
}

/* The warning of each field bound as a copy (load_copy_in), and of each
 * written field read through __array__ (its values assigned back to the
 * object on every call), given only for a binding that is accepted: a
 * refused call warns of no copy it never makes. */
static int warn_copies(const SignatureObject *s, const bind_slot *slots)
{
    gts_device device = s->sig.device;
    for (int f = 0; f < s->sig.nfields; ++f) {
        bool written = s->fields[f].written;
        bool assigned = slots[f].converted && written;
        int rc = 0;
        if (slots[f].copy_back)
            rc = PyErr_WarnFormat(gtpy_FieldWarning, 1,
                                  "%s: no buffer on the %s, where the stencil computes: copied "
                                  "to %s memory%s%s (slow: transfers on every call)",
                                  s->fields[f].name, gtpy_device_name(device),
                                  device == GTS_DEVICE_GPU ? "device" : "host",
                                  written ? " and back after the run" : "",
                                  assigned ? ", then assigned to the object (obj[...] = values)"
                                           : "");
        else if (assigned)
            rc = PyErr_WarnFormat(gtpy_FieldWarning, 1,
                                  "%s: read through __array__, whose array may be a copy: its "
                                  "values assigned to the object (obj[...] = values) after the "
                                  "run (slow: a copy on every call)",
                                  s->fields[f].name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int gtpy_bind_slots(const SignatureObject *s, bind_slot *slots, PyObject *domain,
                    PyObject *origin, gts_binding *out)
{
    int n = s->sig.nfields, rc = -1;
    gts_field_desc descs[GTPY_BIND_STACK_FIELDS], *desc = descs;
    gts_bound_field bound_stack[GTPY_BIND_STACK_FIELDS], *bound = bound_stack;
    const int64_t *origins_stack[GTPY_BIND_STACK_FIELDS], **origins = origins_stack;
    if (n > GTPY_BIND_STACK_FIELDS) {
        desc = PyMem_Malloc((size_t)n * sizeof *desc);
        bound = PyMem_Malloc((size_t)n * sizeof *bound);
        origins = PyMem_Malloc((size_t)n * sizeof *origins);
        if (!desc || !bound || !origins) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t domain_values[3], all[3];
    gts_bind_args args = {NULL, NULL, NULL};
    for (int f = 0; f < n; ++f) {
        desc[f] = slots[f].desc;
        origins[f] = NULL;
    }
    if (domain && domain != Py_None) {
        if (read_three(domain, "domain", domain_values) < 0)
            goto done;
        args.domain = domain_values;
    }
    if (origin && origin != Py_None && read_origins(s, origin, slots, origins, all, &args) < 0)
        goto done;
    gts_error err;
    if (gts_bind(&s->sig, desc, &args, out, bound, &err) != GTS_OK) {
        gtpy_raise(&err);
        goto done;
    }
    if (check_copies_apart(s, slots) < 0 || warn_copies(s, slots) < 0)
        goto done;
    for (int f = 0; f < n; ++f)
        slots[f].bound = bound[f];
    rc = 0;
    for (int w = 0; w < out->nwarnings && w < GTS_BIND_MAX_WARNINGS && rc == 0; ++w)
        rc = PyErr_WarnEx(gtpy_FieldWarning, out->warnings[w].message, 1);
    if (rc == 0 && out->nwarnings > GTS_BIND_MAX_WARNINGS)
        rc = PyErr_WarnFormat(gtpy_FieldWarning, 1, "%d more warnings of this binding",
                              out->nwarnings - GTS_BIND_MAX_WARNINGS);
done:
    if (desc != descs) {
        PyMem_Free(desc);
        PyMem_Free(bound);
        PyMem_Free((void *)origins);
    }
    return rc;
}

/* ---- acquire, touch, release ----------------------------------------------------- */

static int call_callback(PyObject *callback)
{
    if (!callback)
        return 0;
    PyObject *result = PyObject_CallNoArgs(callback);
    Py_XDECREF(result);
    return result ? 0 : -1;
}

/* The device of a slot's Storage. */
static const gts_device_ops *slot_device(const bind_slot *slot)
{
    gts_storage g;
    gtpy_storage_load(slot->storage, &g);
    return gts_buffer_device(g.buffer);
}

const gts_device_ops *gtpy_slots_gpu(const bind_slot *slots, int n)
{
    for (int f = 0; f < n; ++f)
        if (slots[f].device_side) {
            const gts_device_ops *device = slot_device(&slots[f]);
            return device->owner ? device->owner : device; /* a GPU's, for its managed memory */
        }
    const gts_device_ops *gpu;
    return gts_device_gpu(&gpu, NULL) == GTS_OK ? gpu : NULL;
}

int gtpy_slots_stream(bind_slot *slots, int n, gts_device device, bool engine, gts_stream *out)
{
    *out = NULL;
    const gts_device_ops *gpu = device == GTS_DEVICE_GPU ? gtpy_slots_gpu(slots, n) : NULL;
    if (!gpu)
        return 0; /* no GPU: no stream but the default one */
    if ((engine ? gtpy_engine_stream(gpu, out) : gtpy_current_stream(gpu, out)) < 0)
        return -1;
    /* memory of another device than the stream's (a GPU's managed memory)
     * is ordered by the host: libgtstore's own work on it waits for the
     * whole device and completes on return, and so does the call's */
    for (int f = 0; f < n; ++f)
        if (slots[f].device_side) {
            slots[f].stream = *out;
            slots[f].host_ordered = slot_device(&slots[f]) != gpu;
        }
    return 0;
}

/* A Storage's side, by the rules of gtstore/access.h: the host side for a
 * stencil on the CPU (acquire brings it up to date, touch marks it
 * written); the device side for one on the GPU, on the slot's stream
 * (acquire orders the stream after the buffer's device work, touch marks
 * it written). */
static int storage_side(bind_slot *slot, bool write)
{
    gts_storage g;
    gtpy_storage_load(slot->storage, &g);
    if (!slot->device_side)
        return gtpy_storage_host_access(&g, write);
    gts_error err;
    void *data;
    gts_access access = write ? GTS_ACCESS_WRITE : GTS_ACCESS_READ;
    if (gts_storage_access(&g, GTS_SIDE_DEVICE, access, slot->host_ordered ? NULL : slot->stream,
                           &data, &err) != GTS_OK)
        return gtpy_raise(&err);
    slot->accessed = true;
    return 0;
}

/* Values from one storage into another (a copied-in field's copy and the
 * object's memory, either way). */
static int copy_values(PyObject *to, PyObject *from)
{
    gts_storage dst, src;
    gts_error err;
    gtpy_storage_load(to, &dst);
    gtpy_storage_load(from, &src);
    return gts_storage_assign(&dst, &src, &err) == GTS_OK ? 0 : gtpy_raise(&err);
}

/* One field's acquire: the object's own (a data interface's callback);
 * for a copy of its memory, the values, after that callback (which may
 * change them); a Storage's side. A failure after the callback releases
 * the object again, keeping the error. */
static int acquire_slot(bind_slot *slot)
{
    if (call_callback(slot->acquire) < 0)
        return -1;
    int rc = slot->copy_back ? copy_values(slot->storage, slot->copy_back) : 0;
    if (rc == 0 && slot->storage)
        rc = storage_side(slot, false);
    if (rc < 0 && slot->release) {
        PyObject *error = gtpy_error_take();
        if (call_callback(slot->release) < 0)
            PyErr_Clear();
        gtpy_error_put(error);
    }
    return rc;
}

int gtpy_slots_acquire(bind_slot *slots, int n)
{
    for (int f = 0; f < n; ++f) {
        int rc = acquire_slot(&slots[f]);
        if (rc < 0) {
            /* release what was acquired, keeping this error */
            PyObject *error = gtpy_error_take();
            gtpy_slots_release(slots, f);
            PyErr_Clear();
            gtpy_error_put(error);
            return -1;
        }
    }
    return 0;
}

/* An object read through __array__, converted again for a Binding
 * entered: the array bound (whose address the Binding holds) takes the
 * values of np.asarray(obj) now, else a stale copy would be read, and,
 * written, assigned back over the object's newer values. The same shape
 * and dtype, else a ValueError; a read-only array bound cannot take
 * values, so it must still hold them. */
static int reconvert(bind_slot *slot)
{
    PyObject *asarray = gtpy_numpy_asarray();
    PyObject *now = asarray ? PyObject_CallOneArg(asarray, slot->obj) : NULL;
    if (!now || now == slot->converted) {
        Py_XDECREF(now);
        return now ? 0 : -1;
    }
    PyObject *shape = PyObject_GetAttrString(slot->converted, "shape");
    PyObject *dtype = shape ? PyObject_GetAttrString(slot->converted, "dtype") : NULL;
    PyObject *now_shape = dtype ? PyObject_GetAttrString(now, "shape") : NULL;
    PyObject *now_dtype = now_shape ? PyObject_GetAttrString(now, "dtype") : NULL;
    int same = now_dtype ? PyObject_RichCompareBool(shape, now_shape, Py_EQ) : -1;
    if (same == 1)
        same = PyObject_RichCompareBool(dtype, now_dtype, Py_EQ);
    int rc = same < 0 ? -1 : 0;
    if (same == 0) {
        PyErr_Format(PyExc_ValueError,
                     "np.asarray(obj) is now of shape %R and dtype %S, and the Binding was made "
                     "for shape %R and dtype %S: bind the call again",
                     now_shape, now_dtype, shape, dtype);
        rc = -1;
    } else if (same == 1 && slot->desc.readonly) {
        PyObject *equal = gtpy_numpy("array_equal");
        PyObject *result = equal ? PyObject_CallFunctionObjArgs(equal, now, slot->converted, NULL)
                                 : NULL;
        int kept = result ? PyObject_IsTrue(result) : -1;
        Py_XDECREF(result);
        if (kept == 0)
            PyErr_SetString(PyExc_ValueError,
                            "np.asarray(obj) has new values since the call was bound, and the "
                            "read-only array bound cannot take them: bind the call again");
        rc = kept == 1 ? 0 : -1;
    } else if (same == 1)
        rc = PyObject_SetItem(slot->converted, Py_Ellipsis, now);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(now_shape);
    Py_XDECREF(now_dtype);
    Py_DECREF(now);
    return rc;
}

int gtpy_slots_reread(const SignatureObject *s, bind_slot *slots)
{
    /* (a copy to the other device takes its values in acquire_slot) */
    for (int f = 0; f < s->sig.nfields; ++f)
        if (slots[f].converted && reconvert(&slots[f]) < 0)
            return gtpy_prefix_error(s->fields[f].name);
    return 0;
}

static int release_side(bind_slot *slot);

/* The result of a copied-in field back to the object's memory. A copy on
 * the GPU first records the kernel's work on its stream (its release), so
 * that the copy waits for it. */
static int copy_back(bind_slot *slot)
{
    return release_side(slot) < 0 ? -1 : copy_values(slot->copy_back, slot->storage);
}

int gtpy_slots_touch(const SignatureObject *s, bind_slot *slots)
{
    /* the first error is held aside while the others are touched (they
     * run Python code, which must not start with an exception pending),
     * and is the one raised, as in gtpy_slots_release */
    PyObject *error = NULL;
    int rc = 0;
    for (int f = 0; f < s->sig.nfields; ++f) {
        if (!s->fields[f].written)
            continue;
        /* a Storage's side marked written, a copy's values back, those of
         * an object read through __array__ into it, then the object's own
         * touch (a data interface's callback) */
        int done = slots[f].storage ? storage_side(&slots[f], true) : 0;
        if (done == 0 && slots[f].copy_back)
            done = copy_back(&slots[f]);
        if (done == 0 && slots[f].converted &&
            (done = PyObject_SetItem(slots[f].obj, Py_Ellipsis, slots[f].converted)) < 0)
            gtpy_prefix_error(s->fields[f].name); /* the object's error, from the touch */
        if (done == 0)
            done = call_callback(slots[f].touch);
        if (done < 0 && rc == 0)
            error = gtpy_error_take(); /* the first error wins; the others are still touched */
        else if (done < 0)
            PyErr_Clear();
        rc = done < 0 ? -1 : rc;
    }
    if (rc < 0)
        gtpy_error_put(error);
    return rc;
}

/* After a run on the GPU: the buffer's event recorded on the call's
 * stream, after the kernel's work there (read fields too, so that a later
 * write waits for the reads), as libgtstore's own copies do; for memory
 * ordered by the host, that work completed. */
static int release_side(bind_slot *slot)
{
    if (!slot->accessed)
        return 0;
    slot->accessed = false;
    gts_storage g;
    gts_error err;
    gtpy_storage_load(slot->storage, &g);
    const gts_device_ops *device = gts_buffer_device(g.buffer);
    int rc = !slot->host_ordered
                 ? gts_storage_access_end(&g, GTS_SIDE_DEVICE, GTS_ACCESS_READ, slot->stream, &err)
             : slot->stream
                 ? gts_device_synchronize(device->owner ? device->owner : device, slot->stream,
                                          &err)
                 : GTS_OK;
    return rc == GTS_OK ? 0 : gtpy_raise(&err);
}

int gtpy_slots_release(bind_slot *slots, int n)
{
    /* every field is released; the first error is the one raised */
    PyObject *error = NULL;
    int rc = 0;
    for (int f = 0; f < n; ++f) {
        if (release_side(&slots[f]) == 0 && call_callback(slots[f].release) == 0)
            continue;
        if (rc == 0)
            error = gtpy_error_take();
        else
            PyErr_Clear();
        rc = -1;
    }
    if (rc < 0)
        gtpy_error_put(error);
    return rc;
}
