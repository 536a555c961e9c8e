/* Array sources: the one reader of array objects (source.c). */
#ifndef GTSTORE_EXT_SOURCE_H
#define GTSTORE_EXT_SOURCE_H

#include "array_interface.h"

/* A data, template or wrap argument, or a stencil call's field: a gtstore
 * storage, read from its own fields (on any device, without an export), or
 * an array read in place (an ndarray's struct, the buffer protocol, an
 * interface's dict), or imported. */
typedef struct gtpy_source {
    const char *param; /* "data" or "a" */
    PyObject *array;   /* the object read (new reference) */
    PyObject *storage; /* the same if it is a gtstore Storage (borrowed), else NULL */
    bool imported;     /* `storage` was made by the reader over another object's memory:
                          it has no dims or halo of its own (its data interface entry's,
                          else the object's __gt_dims__, else the arguments, label it) */
    bool have_view;      /* `view` is an open buffer export of `array` */
    Py_buffer view;
    int ndim;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    bool dtype_known; /* a native dtype libgtstore supports */
    bool byteswapped; /* a supported dtype in the other byte order */
    gts_dtype dtype;
    /* Memory read in place (an ndarray's struct, the buffer protocol or an
     * interface's dict): element 0 on the side read, whether it is
     * read-only, and its device; `memory` NULL for a storage, an import or
     * an object whose memory is not known (gtpy_source_open's fallback
     * through NumPy's asarray without an export). */
    void *data;
    bool readonly;
    const gts_device_ops *memory;
    PyObject *entry; /* the __gt_data_interface__ entry read (new reference), or NULL */
    const char *entry_name; /* "__gt_data_interface__[None]", "...['cpu']" or "...['gpu']" */
    /* gtpy_source_open: the entry's "dims" where they are gtstore labels
     * (entry_ndims of them), else entry_ndims -1 */
    int entry_ndims;
    gts_dim entry_dims[GTS_MAX_NDIM];
} gtpy_source;

/* source.c: the one reader of array objects. A Storage is read from its
 * fields; host memory from an ndarray's struct (gtpy_numpy_read), through
 * the buffer protocol or NumPy (the array interface, __array__); device
 * arrays (__cuda_array_interface__, or a
 * __dlpack__ whose __dlpack_device__ is not the CPU) and objects that only
 * speak DLPack are imported as a storage over their memory (`imported`),
 * which keeps the producer alive. An object with __gt_data_interface__
 * (GDP-3's final text; looked up before the other interfaces) is imported
 * the same way from one entry: the one of `device` (the device the call
 * asks for), else the other one's, a "gpu" entry only where its memory is
 * on a device gtstore has (else the host entry, where there is one: the
 * one decision of every reader); its "acquire" is called before the
 * memory is read, and `entry`, `entry_name` and the entry's labels
 * (`entry_dims`) are kept for the caller (request.c takes its dims and
 * halo). Its getter's own exception is passed on unchanged. */
int gtpy_source_open(gtpy_source *src, PyObject *obj, const char *param, gts_device device);
/* Only the data interface reading of gtpy_source_open: 1 when read, 0
 * (nothing read, no exception) for an object without __gt_data_interface__,
 * -1 with an exception. */
int gtpy_source_open_interface(gtpy_source *src, PyObject *obj, const char *param,
                               gts_device device);
/* A value's or operand's data interface (GDP-3's final text, "Choosing
 * the Device"): a storage over the memory of its "gpu" entry where a
 * device gtstore has reaches it, else its host entry, read as
 * gtstore.as_storage reads it (its "acquire" called
 * once, first; its dims and halo taken), with *labelled telling whether
 * the entry's dims labelled it (else it has the default labels, and the
 * value goes by position). Where `entry` is not NULL, the entry read (a
 * new reference, for its "touch") and its name (`entry_name`, as
 * gtpy_source's) are given too: a ufunc's out= writes it. NULL without an
 * exception for an object without a data interface. storage_api.c. */
PyObject *gtpy_data_interface_storage(PyObject *obj, const char *param, bool *labelled,
                                      PyObject **entry, const char **entry_name);
/* A __gt_data_interface__ entry's callback `key` ("acquire", "touch",
 * "release"): a new reference, NULL for None or none; a TypeError naming
 * the key for anything else that is not callable. */
int gtpy_entry_callback(PyObject *info, const char *key, PyObject **out);
/* A __gt_data_interface__ entry's "dims" (`name` names the entry, as
 * entry_name does; `entry_ndim` is the number of dimensions of its
 * memory): 1 with them in `dims` where they are gtstore labels; 0 where it
 * has none: absent, None, or names of another convention (a sequence of
 * which none is a gtstore label, such as xarray's ("x", "y")), which label
 * nothing: the entry is then taken by position, by the creation functions,
 * assignment, computations and stencil calls alike; -1 with an exception
 * (some gtstore labels among them included, or names of another
 * convention that are not one per dimension). */
int gtpy_entry_dims(PyObject *entry, const char *name, int entry_ndim, int *ndim,
                    gts_dim *dims);
/* The ValueError for a data interface with neither a host nor a "gpu"
 * entry: -1. */
int gtpy_data_interface_unreadable(PyObject *interface);
/* The import of gtpy_source_open on its own: a new storage over the memory
 * of a device array or a DLPack-only object; NULL with *found false and no
 * exception for other objects, NULL with an exception on failure. */
PyObject *gtpy_source_import(PyObject *obj, const char *param, bool *found);
/* The reading of gtpy_source_open in place, for a stencil call on
 * `device` (binding.c), up to `max_ndim` dimensions and only dtypes
 * libgtstore knows: a Storage (its fields, whichever side the stencil
 * uses: the caller accesses it), an ndarray on the host (its struct:
 * gtpy_numpy_read; `array` keeps it, no buffer is exported), else the object's
 * __gt_data_interface__ entry for the device (None or "cpu", "gpu"), the
 * buffer protocol (host), __array_interface__ (host) or
 * __cuda_array_interface__ (GPU, its memory located and its stream waited
 * on), else the import of gtpy_source_open. Nothing is converted or copied.
 * 1 when read; 0 without an exception for an object with none of these
 * interfaces for `device` (a data interface without its entry included);
 * -1 with an exception; -2 with the exception of the object's own
 * __gt_data_interface__ getter (which a caller passes on unchanged). */
int gtpy_source_read(gtpy_source *src, PyObject *obj, gts_device device, int max_ndim);
/* A storage of `spec` over the memory read in place (`memory` set: not a
 * Storage or an import), without a copy: it takes over the source's open
 * buffer export, else keeps the object alive. libgtstore's status, with
 * `err` filled on failure (the source is then unchanged). */
int gtpy_source_wrap_in(gtpy_source *src, const gts_storage_spec *spec, gts_storage *out,
                        gts_error *err);
/* A new Storage over the memory gtpy_source_read read in place, as
 * gtpy_source_wrap_in: its dims are the default ones (the object's labels
 * are the caller's to apply). */
PyObject *gtpy_source_wrap(gtpy_source *src);
/* The release callback of a buffer export that gtstore memory took over
 * (ctx: a PyMem_RawMalloc'ed Py_buffer); any thread may run it. */
void gtpy_release_export(void *ctx);
void gtpy_source_release(gtpy_source *src);
/* The one reading of the buffer protocol (creation and binding): an open
 * buffer's geometry, element 0 and read-only flag, up to `max_ndim`
 * dimensions (C order where it gives no strides), and its dtype: 1 where
 * libgtstore knows it, else 0 with *byteswapped telling a supported dtype
 * in the other byte order, or where `strict` a ValueError naming the
 * dtype; -1 with an exception ("param: ..."; param may be NULL). */
int gtpy_view_read(const Py_buffer *view, const char *param, int max_ndim, bool strict,
                   gtpy_array_info *out, bool *byteswapped);
/* TypeError: the source's dtype is not one gtstore supports. */
int gtpy_source_dtype_error(const gtpy_source *src);
/* Copies the source's values into new memory (`data` with these strides,
 * viewed by `target`, an ndarray or a storage): libgtstore's kernel for the
 * same dtype, NumPy's casting assignment otherwise. */
int gtpy_copy_source(PyObject *target, void *data, const int64_t *strides, int ndim,
                     const int64_t *shape, gts_dtype dtype, const gtpy_source *src);

#endif
