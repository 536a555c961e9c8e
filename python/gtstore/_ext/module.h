/* Shared declarations of the _gtstore extension: converting Python objects
 * to libgtstore's C types and back. All layout arithmetic is libgtstore's. */
#ifndef GTSTORE_EXT_MODULE_H
#define GTSTORE_EXT_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gtstore/gtstore.h"

/* ---- module state (module.c) ------------------------------------------ */

extern PyObject *gtpy_UnknownPresetError;
extern PyObject *gtpy_NoSuchBufferError;

/* Raises the Python exception for a libgtstore error (ValueError for invalid
 * values, TypeError for types, OverflowError for values out of a dtype's
 * range, MemoryError, UnknownPresetError) and returns -1 / NULL. If a Python
 * exception is already set (a Python callback failed), it is kept. */
int gtpy_raise(const gts_error *err);
/* The same, with the message prefixed by "param: " unless it names it. */
int gtpy_raise_param(const char *param, const gts_error *err);
PyObject *gtpy_raise_null(const gts_error *err);

/* numpy.<name>, imported on first use and cached (a borrowed reference). */
PyObject *gtpy_numpy(const char *name);
PyObject *gtpy_numpy_asarray(void);

/* NumPy's C API bound at run time (numpy_api.c): whether it is usable, and
 * an ndarray over `data` whose base becomes `base` (new reference). */
bool gtpy_numpy_capi(void);
PyObject *gtpy_numpy_capi_array(gts_dtype dtype, int ndim, const Py_ssize_t *shape,
                                const Py_ssize_t *strides, void *data, bool readonly,
                                PyObject *base);

/* ---- conversions (convert.c) ------------------------------------------ */

/* The UTF-8 text of a str (the caller checked the type). A str holding a
 * NUL character is refused with a ValueError naming `param`: C would read
 * it as its end, and "IJ\0K" would silently mean "IJ". */
const char *gtpy_text(PyObject *str, const char *param);

/* The attribute `name` of `obj` (a new reference), or NULL without an
 * exception where it has none or reading it fails: for the optional
 * protocol attributes (__gt_dims__, __gt_axis_name__). It does not build
 * the AttributeError a plain getattr would (a microsecond on an ndarray).
 * `interned` caches the name. */
PyObject *gtpy_optional_attr(PyObject *obj, const char *name, PyObject **interned);
/* The same for a protocol attribute whose getter is user code (a class's
 * __gt_data_interface__): 1 with the value, 0 where it has none (an
 * AttributeError), -1 with the getter's exception as it raised it. */
int gtpy_lookup_attr(PyObject *obj, const char *name, PyObject **interned, PyObject **value);

/* An integer (int or an object with __index__; not bool). */
int gtpy_int(PyObject *obj, const char *param, int64_t *out);

/* Whether `obj` is one integer rather than a sequence: an int, or an object
 * with __index__ that has no length (a NumPy integer, a 0-d integer array). */
bool gtpy_is_integer(PyObject *obj);

/* An int or a sequence of ints, each >= 0. */
int gtpy_shape(PyObject *obj, const char *param, int *ndim, int64_t *shape);

/* A sequence of `ndim` ints (any sign; callers check ranges). */
int gtpy_int_tuple(PyObject *obj, const char *param, int max_ndim, int *ndim, int64_t *values);

/* A string of one-character labels ("IJK0") or a sequence of labels ("I",
 * "12", or objects with __gt_axis_name__). */
int gtpy_dims(PyObject *obj, const char *param, int *ndim, gts_dim *dims);
PyObject *gtpy_dims_to_tuple(int ndim, const gts_dim *dims);

/* A dtype-like accepted by numpy.dtype. A subarray dtype such as
 * ("f8", (3,)) yields its base dtype and the trailing shape. */
typedef struct gtpy_dtype {
    gts_dtype base;
    int nsub;
    int64_t sub_shape[GTS_MAX_NDIM];
} gtpy_dtype;
int gtpy_dtype_parse(PyObject *obj, gtpy_dtype *out);
/* The numpy.dtype object for a dtype (new reference). */
PyObject *gtpy_dtype_object(gts_dtype dtype);

/* A Python number (bool, int, float, complex or a NumPy scalar). */
int gtpy_scalar(PyObject *obj, const char *param, gts_scalar *out);

/* halo=: `ndim` entries (`nbase` accepted: the rest are zero), each an int
 * (the same on both sides) or a pair (lower, upper). Signs and sizes are
 * checked by libgtstore. */
int gtpy_halo(PyObject *obj, int ndim, int nbase, gts_halo *halo);
PyObject *gtpy_halo_to_tuple(int ndim, const gts_halo *halo);

/* A tuple of Python ints. */
PyObject *gtpy_int64_tuple(int n, const int64_t *values);

/* layout=: a permutation (tuple/list of ints), an axis string such as "KJI",
 * or a callable taking the dims tuple and returning either. `dims` includes
 * the `nsub` trailing dims of a subarray dtype; a permutation may leave them
 * out: their entries are then GTS_LAYOUT_OUTER, for libgtstore. */
int gtpy_layout(PyObject *obj, int ndim, const gts_dim *dims, int nsub, int *layout);

/* Device kinds by name, "cpu" and "gpu": parsed (anything else is a
 * ValueError naming device, whose list of choices starts with None where
 * `none_ok`: the caller takes None as "the preset's") and formatted. */
int gtpy_device(PyObject *obj, bool none_ok, gts_device *out);
const char *gtpy_device_name(gts_device device);

/* The index of `obj`, a str, among the `n` `choices`; else -1 with a
 * ValueError "param: expected <expected>, got <obj>". */
int gtpy_choice(PyObject *obj, const char *param, const char *const *choices, int n,
                const char *expected);

/* `n` entries of `obj` (`what`: "entries", "labels") for `ndim` dims must
 * be one per dim or one per base dim (the first `nbase`; the others are a
 * subarray's): else a ValueError. */
int gtpy_check_entries(const char *param, PyObject *obj, Py_ssize_t n, const char *what,
                       int nbase, int ndim);

/* Fast argument parsing for METH_FASTCALL | METH_KEYWORDS functions.
 * `names` lists every parameter, the first `npositional` may be passed by
 * position, the first `nrequired` are required, the first `nposonly` can
 * only be passed by position. Missing ones are NULL. */
typedef struct gtpy_signature {
    const char *function;
    const char *const *names;
    int nnames;
    int npositional;
    int nrequired;
    int nposonly;
    PyObject **interned;                  /* filled on first use */
    const struct gtpy_keyword **keywords; /* creation functions: see gtpy_request_parse */
} gtpy_signature;
#define GTPY_SIGNATURE(function, names, npositional, nrequired, nposonly)                  \
    {function, names, (int)(sizeof(names) / sizeof *(names)), npositional, nrequired, nposonly, \
     NULL, NULL}
int gtpy_parse_args(gtpy_signature *sig, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values);

/* ---- allocation requests (request.c) ----------------------------------- */

typedef enum gtpy_fill { FILL_NONE, FILL_ZEROS, FILL_ONES, FILL_VALUE, FILL_COPY } gtpy_fill;

/* What a call asks for. Borrowed references; NULL when absent (or None,
 * for the parameters where None means absent). */
typedef struct gtpy_request {
    PyObject *shape, *dtype, *fill_value;
    PyObject *source;    /* data to copy or wrap, or a template */
    bool source_is_data; /* from_array, storage, as_storage (else *_like) */
    bool storage_api;    /* gtstore.*: templates also give halo, aligned point, alignment */
    bool relabel;        /* dims= may differ from a wrapped storage's (a fresh import) */
    PyObject *preset, *aligned_index, *dims, *alignment_size, *layout, *device, *halo;
    PyObject *managed, *copy, *device_data, *sync_state; /* checked by the caller */
    const char *preset_param; /* the keyword used: "backend" or "defaults" */
    const char *dims_param;   /* "dims", "dimensions" or "axes" */
    gtpy_fill fill;
} gtpy_request;

/* The arguments of a creation function, read into `r` (whose other fields
 * the caller set) as the keyword table says (keywords.c): each parameter
 * named in `sig` has an entry there, with the field of gtpy_request it
 * fills. Aliases (backend/defaults, dims/dimensions/axes) fill one field:
 * the first given, in the order of `sig`, names it (`preset_param`,
 * `dims_param`), and the others must agree with it. */
#define GTPY_MAX_ARGS 16
int gtpy_request_parse(gtpy_request *r, gtpy_signature *sig, PyObject *const *args,
                       Py_ssize_t nargs, PyObject *kwnames);

/* A data, template or wrap argument: a gtstore storage, read from its own
 * fields (on any device, without an export), or an array read through the
 * buffer protocol. */
typedef struct gtpy_source {
    const char *param; /* "data" or "a" */
    PyObject *array;   /* the object read (new reference) */
    PyObject *storage; /* the same if it is a gtstore Storage (borrowed), else NULL */
    bool imported;     /* `storage` was made by the reader over another object's memory:
                          it has no dims or halo of its own (the object's __gt_dims__, else
                          the arguments, label it) */
    bool have_view;      /* false for a storage */
    Py_buffer view;
    int ndim;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    bool dtype_known; /* a native dtype libgtstore supports */
    bool byteswapped; /* a supported dtype in the other byte order */
    gts_dtype dtype;
} gtpy_source;

/* source.c: the one reader of array objects. A Storage is read from its
 * fields; host memory through the buffer protocol or NumPy (the array
 * interface, __array__); device arrays (__cuda_array_interface__, or a
 * __dlpack__ whose __dlpack_device__ is not the CPU) and objects that only
 * speak DLPack are imported as a storage over their memory (`imported`),
 * which keeps the producer alive. */
int gtpy_source_open(gtpy_source *src, PyObject *obj, const char *param);
/* The import of gtpy_source_open on its own: a new storage over the memory
 * of a device array or a DLPack-only object; NULL with *found false and no
 * exception for other objects, NULL with an exception on failure. */
PyObject *gtpy_source_import(PyObject *obj, const char *param, bool *found);
void gtpy_source_release(gtpy_source *src);
/* TypeError: the source's dtype is not one gtstore supports. */
int gtpy_source_dtype_error(const gtpy_source *src);
/* Copies the source's values into new memory (`data` with these strides,
 * viewed by `target`, an ndarray or a storage): libgtstore's kernel for the
 * same dtype, NumPy's casting assignment otherwise. */
int gtpy_copy_source(PyObject *target, void *data, const int64_t *strides, int ndim,
                     const int64_t *shape, gts_dtype dtype, const gtpy_source *src);

/* The request converted into a spec, with what the spec points at: the
 * preset (a counted copy), the template and the layout= argument, which
 * libgtstore runs on the resolved dims. The struct points into itself:
 * copy it only once resolved (resolution drops the template and the
 * layout function), and then renew the preset pointer with gtpy_spec(). */
typedef struct gtpy_resolved {
    gts_storage_spec spec;
    gts_preset preset;
    bool has_preset;
    PyObject *layout;               /* borrowed: the request's */
    gts_template like;
    gts_dim like_dims[GTS_MAX_NDIM]; /* an array's __gt_dims__ */
    gts_storage like_storage;       /* a storage template's fields (buffer borrowed) */
} gtpy_resolved;

static inline gts_storage_spec *gtpy_spec(gtpy_resolved *r)
{
    r->spec.preset = r->has_preset ? &r->preset : NULL;
    return &r->spec;
}

/* Fills `out` (parameters left open stay open for libgtstore). On success
 * `out` holds the preset, which stays valid (even if unregistered by user
 * code meanwhile) until gtpy_resolved_release; on failure there is nothing
 * to release. */
int gtpy_request_spec(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out);
/* The same, then resolved completely with the allocation geometry. */
int gtpy_request_resolve(const gtpy_request *r, const gtpy_source *src, gtpy_resolved *out,
                         gts_geometry *geometry);

static inline void gtpy_resolved_release(gtpy_resolved *r)
{
    if (r->has_preset)
        gts_preset_release(&r->preset);
    r->has_preset = false;
    r->spec.preset = NULL;
}
/* The fill value as one element of the spec's dtype (ones: 1). */
int gtpy_request_fill_item(const gtpy_request *r, gts_dtype dtype, unsigned char item[16]);

/* ---- storages (storage.c) ------------------------------------------------ */

extern PyTypeObject gtpy_Storage_Type, gtpy_CPUStorage_Type, gtpy_GPUStorage_Type,
    gtpy_SoftwareManagedGPUStorage_Type, gtpy_CudaManagedGPUStorage_Type, gtpy_SyncState_Type;

static inline bool gtpy_is_storage(PyObject *obj)
{
    return PyObject_TypeCheck(obj, &gtpy_Storage_Type);
}

/* The storage as a libgtstore struct; the buffer reference is borrowed. */
void gtpy_storage_load(PyObject *storage, gts_storage *out);
/* The preset name a storage was made with (borrowed; NULL if none). */
PyObject *gtpy_storage_preset(PyObject *storage);
/* Sets the recorded preset name and the read-only flag (unpickling). */
void gtpy_storage_restore(PyObject *storage, PyObject *preset, bool readonly);
/* The SyncState shared by the views of `storage` (new reference). */
PyObject *gtpy_storage_sync_state(PyObject *storage);
/* The buffer whose state a SyncState reads (borrowed; the caller checked
 * the type). */
gts_buffer *gtpy_sync_state_buffer(PyObject *sync_state);
/* as_storage / storage with device_data (storage_sides.c): one
 * software-managed storage over (copy false) or copied from (copy true)
 * the request's data and device_data, in the state sync_state says. */
PyObject *gtpy_storage_sides(const gtpy_request *r, bool copy);
/* A new Python storage that takes over `s`'s buffer reference (released on
 * failure too). `preset` and `sync_state` may be NULL. */
PyObject *gtpy_storage_new(gts_storage *s, PyObject *preset, PyObject *sync_state);
/* Whether memory in `buffer` has a host side: host or host-accessible
 * memory, or a mirrored buffer (not a GPUStorage's). */
static inline bool gtpy_has_host_side(const gts_buffer *buffer)
{
    return gts_buffer_device(buffer)->host_accessible || gts_buffer_mirrored(buffer);
}

/* The mirrored buffers one call writes, held as writes in flight while
 * NumPy or the engine writes them (gtstore/sync.h): add the storages
 * written, begin just before the write, end after it. write_hold.c. */
#define GTPY_MAX_HOLDS 16
typedef struct gtpy_holds {
    int n, begun;
    gts_buffer *buffers[GTPY_MAX_HOLDS];
} gtpy_holds;
void gtpy_holds_init(gtpy_holds *h);
void gtpy_holds_add(gtpy_holds *h, const gts_storage *g);
/* Begins each write (its side synced, marked and held): -1 with an
 * exception, nothing held, on failure. */
int gtpy_holds_begin(gtpy_holds *h, gts_side side);
void gtpy_holds_end(gtpy_holds *h);
/* Lets the GIL go while libgtstore waits for another thread's write. */
void gtpy_write_hold_init(void);

/* Before the host touches a storage's memory (the rule of gtstore/sync.h):
 * its host side brought up to date, and for a `write` (of a writable
 * storage) marked written. GTNoSuchBufferError where there is no host side
 * (a GPUStorage). storage_interop.c. */
int gtpy_storage_host_access(const gts_storage *g, bool write);
/* A new host storage in C order of the shape, dtype and dims of `g`, for values
 * on their way to memory without a host side; `host` describes it (its
 * buffer borrowed from the returned object). storage_interop.c. */
PyObject *gtpy_storage_host_staging(const gts_storage *g, gts_storage *host);
/* An ndarray viewing the storage (its base is the storage), after host
 * access: writable only for a `write` of a writable storage, so that reads
 * (repr, scalars, pickling) do not mark the host side written. */
PyObject *gtpy_storage_ndarray(PyObject *storage, bool write);
/* The values on the host, to be read (display, pickling, a value NumPy
 * assigns): a read-only ndarray of the host side, or of a host copy of
 * memory without one (a GPUStorage's). storage.c. */
PyObject *gtpy_storage_host_values(PyObject *storage);
/* The same over the elements of `g` with base `base`. */
PyObject *gtpy_storage_ndarray_over(gts_storage *g, PyObject *base, bool write);
/* A new host storage for a request resolved into `resolved` (a spec the
 * library resolves), filled or copied as the request says: the one
 * allocation path of both APIs (storage_api.c). `s` is the scratch struct
 * it is made in; on success it describes the storage, whose buffer
 * reference the returned object holds. */
PyObject *gtpy_storage_allocate(const gtpy_request *r, gtpy_source *src, gtpy_resolved *resolved,
                                gts_storage *s);

/* A storage of the GPU kind needs a device that plays the GPU: where there
 * is none, NotImplementedError with the reason, naming what asked for the
 * GPU (storage_api.c). */
int gtpy_check_gpu(const gtpy_request *r, const gts_storage_spec *spec);
/* The device buffer as an array (storage_device.c): CuPy for CUDA memory,
 * NumPy over the emulated device's memory, the host ndarray for host
 * storages. */
PyObject *gtpy_storage_to_ndarray(PyObject *storage, PyObject *unused);

/* DLPack (dlpack.c): a storage over the memory a DLPack producer exports
 * (the parameters come after, from as_storage's checks; memory of another
 * GPU than gtstore's is refused, naming `param`), and Storage.__dlpack__
 * and __dlpack_device__. */
PyObject *gtpy_storage_from_dlpack(PyObject *producer, const char *param);
/* Whether `obj` exports DLPack memory on a device other than the host
 * (its __dlpack_device__), which NumPy cannot read. */
bool gtpy_dlpack_on_device(PyObject *obj);

/* The array interfaces (array_interface.c): __array_interface__,
 * __cuda_array_interface__ (v2 and v3) and __gt_data_interface__'s entries
 * read into C values ("what" names the dict in errors). */
typedef struct gtpy_array_info {
    int ndim;
    int64_t shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    gts_dtype dtype;
    void *data; /* element 0 */
    bool readonly;
    bool has_stream; /* "stream" given (not None) */
    int64_t stream;
} gtpy_array_info;
int gtpy_array_info_read(PyObject *info, const char *what, int max_ndim, gtpy_array_info *out);
/* An optional entry of a mapping (a dict, or any mapping): a new
 * reference, or NULL without an error where the key is absent. */
PyObject *gtpy_mapping_entry(PyObject *map, const char *key);
/* The device of the CUDA memory `info` describes, checked usable with
 * gtstore's GPU, after waiting on its stream (libgtstore decides each);
 * errors name `param`. */
int gtpy_cuda_memory(const gtpy_array_info *info, const char *param,
                     const gts_device_ops **device);
/* A storage over the memory `interface` (obj's __cuda_array_interface__)
 * describes, without a copy; it keeps `obj` alive. */
PyObject *gtpy_storage_from_cuda_array(PyObject *obj, PyObject *interface, const char *param);
PyObject *gtpy_storage_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *gtpy_storage_dlpack_device(PyObject *self, PyObject *unused);

/* ---- Python API functions (arrays.c, presets.c, memory.c, storage_api.c) - */

extern PyMethodDef gtpy_arrays_methods[];
extern PyMethodDef gtpy_presets_methods[];
extern PyMethodDef gtpy_memory_methods[];
extern PyMethodDef gtpy_devices_methods[];
extern PyMethodDef gtpy_storage_api_methods[];
extern PyTypeObject gtpy_Plan_Type;
/* gtstore.distributed's Partition and HaloPlan (distributed.c), and the
 * plan's message buffers (halo_messages.c). */
extern PyTypeObject gtpy_Partition_Type, gtpy_HaloPlan_Type;
extern PyTypeObject gtpy_HaloMessages_Type, gtpy_HaloMessage_Type;
/* The cubed sphere's partition (cube_partition.c); HaloPlan makes its plans. */
extern PyTypeObject gtpy_CubePartition_Type;
const gts_cube_partition *gtpy_cube_partition_of(PyObject *partition);
/* The plan of a HaloPlan (the caller checked the type). */
const gts_halo_plan *gtpy_halo_plan_of(PyObject *plan);

/* The call side (binding.c): Signature, Binding, FieldWarning, stencils. */
int gtpy_binding_init(PyObject *module);

#endif
