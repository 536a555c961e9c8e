/* The Storage object, shared by the files that implement its type:
 * storage.c (the object, its attributes and methods, the type),
 * storage_index.c (indexing) and storage_interop.c (NumPy and GT4Py
 * interop: ndarray views, conversions, the buffer protocol and the array
 * interfaces). Private to those three. */
#ifndef GTSTORE_EXT_STORAGE_OBJECT_H
#define GTSTORE_EXT_STORAGE_OBJECT_H

#include "ext.h"

#include <string.h>

typedef struct {
    PyObject_VAR_HEAD /* ob_size: bytes in `fields`, ndim * DIM_BYTES */
    gts_buffer *buffer;
    int64_t offset, alignment_size;
    gts_dtype dtype;
    int ndim;
    bool readonly;
    Py_ssize_t exports;   /* open buffer-protocol exports */
    PyObject *sync_state; /* shared by the views of the buffer; NULL until asked for */
    PyObject *preset;     /* the preset's name, or NULL */
    int64_t fields[];     /* the arrays of GTS_STORAGE_DIM_FIELDS, ndim entries each */
} StorageObject;

/* The per-dimension arrays are stored packed, in the order and types of
 * libgtstore's field list: loading and storing a gts_storage is one memcpy
 * per field, and a field added to the list is stored here too. */
#define FIELD_INDEX(type, name, comment) FIELD_##name,
#define FIELD_SIZE(type, name, comment) sizeof(type),
enum { GTS_STORAGE_DIM_FIELDS(FIELD_INDEX) NFIELDS };
static const size_t field_size[NFIELDS] = {GTS_STORAGE_DIM_FIELDS(FIELD_SIZE)};
#define FIELD_BYTES(type, name, comment) +sizeof(type)
#define DIM_BYTES (0 GTS_STORAGE_DIM_FIELDS(FIELD_BYTES))

/* The buffer protocol hands out shape and strides as Py_ssize_t arrays. */
_Static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "Py_ssize_t is 64 bits");

static inline char *field_at(const StorageObject *s, int which)
{
    size_t offset = 0;
    for (int f = 0; f < which; ++f)
        offset += field_size[f] * (size_t)s->ndim;
    return (char *)s->fields + offset;
}

#define FIELD(s, name) ((void *)field_at((s), FIELD_##name))
#define STORAGE(obj) ((StorageObject *)(obj))

/* Attributes by number (storage.c): the getter of each, shared by the
 * attributes of the type and the interfaces that repeat them. */
enum storage_attribute {
    GET_SHAPE, GET_STRIDES, GET_ALIGNED, GET_NDIM, GET_SIZE, GET_ITEMSIZE, GET_NBYTES, GET_DIMS,
    GET_HALO, GET_DOMAIN_SHAPE, GET_ALIGNMENT, GET_LAYOUT, GET_DTYPE, GET_ORIGIN, GET_PRESET,
    GET_AXES, GET_ALIGNMENT_ELEMENTS
};
PyObject *gtpy_storage_get(PyObject *self, void *which);

/* A view made from `self`: same preset, same sync state (storage.c). Takes
 * over `view`'s reference. */
PyObject *gtpy_storage_derived(PyObject *self, gts_storage *view);
/* transpose(*axes) (storage.c), also what np.transpose gives. */
PyObject *gtpy_storage_transpose(PyObject *self, PyObject *args);

/* ---- storage_index.c ---- */
extern PyMappingMethods gtpy_storage_as_mapping;
extern PySequenceMethods gtpy_storage_as_sequence;
PyObject *gtpy_storage_iter(PyObject *self);

/* ---- storage_compute.c ---- */
extern PyNumberMethods gtpy_storage_as_number;
PyObject *gtpy_storage_richcompare(PyObject *a, PyObject *b, int op);
int gtpy_storage_contains(PyObject *self, PyObject *value);
PyObject *gtpy_storage_complex(PyObject *self, PyObject *unused);
#define GTPY_REDUCTION_DECL(name) \
    PyObject *gtpy_storage_##name(PyObject *self, PyObject *args, PyObject *kwargs);
GTPY_REDUCTION_DECL(sum)
GTPY_REDUCTION_DECL(prod)
GTPY_REDUCTION_DECL(mean)
GTPY_REDUCTION_DECL(std)
GTPY_REDUCTION_DECL(var)
GTPY_REDUCTION_DECL(min)
GTPY_REDUCTION_DECL(max)
GTPY_REDUCTION_DECL(any)
GTPY_REDUCTION_DECL(all)
GTPY_REDUCTION_DECL(argmin)
GTPY_REDUCTION_DECL(argmax)
PyObject *gtpy_storage_item(PyObject *self, PyObject *args);
PyObject *gtpy_storage_tolist(PyObject *self, PyObject *unused);
PyObject *gtpy_storage_fill(PyObject *self, PyObject *value);
PyObject *gtpy_storage_astype(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *gtpy_storage_reshape(PyObject *self, PyObject *args);
PyObject *gtpy_storage_T(PyObject *self, void *closure);
PyObject *gtpy_storage_array_priority(PyObject *self, void *closure);

/* ---- storage_interop.c ---- */
extern PyBufferProcs gtpy_storage_as_buffer;
PyObject *gtpy_storage_array_interface(PyObject *self, void *closure);
PyObject *gtpy_storage_gt_data_interface(PyObject *self, void *closure);
PyObject *gtpy_storage_to_numpy(PyObject *self, PyObject *unused);
PyObject *gtpy_storage_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames);
PyObject *gtpy_storage_array_function(PyObject *self, PyObject *args);
/* The host ndarray's flags; None without a host side (storage_host.c). */
PyObject *gtpy_storage_flags(PyObject *self, void *closure);
int gtpy_storage_flags_type_ready(void); /* the record Storage.flags gives */

/* ---- storage_device.c ---- */
PyObject *gtpy_storage_to_cupy(PyObject *self, PyObject *unused);
PyObject *gtpy_storage_device(PyObject *self, void *closure);
/* Whether it has a device buffer (GDP-3's first draft's `gpu`). */
PyObject *gtpy_storage_gpu(PyObject *self, void *closure);
PyObject *gtpy_storage_device_data(PyObject *self, void *closure);
PyObject *gtpy_storage_cuda_array_interface(PyObject *self, void *closure);
/* Its dict; with `access` the device side is brought up to date and marked
 * written first, as for any export (the data interface leaves that to its
 * acquire and touch callbacks). */
PyObject *gtpy_storage_cuda_info(PyObject *self, bool access);

#endif
