/* The array interfaces' dicts (array_interface.c). */
#ifndef GTSTORE_EXT_ARRAY_INTERFACE_H
#define GTSTORE_EXT_ARRAY_INTERFACE_H

#include "ext.h"

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
/* The device of the CUDA memory `info` describes (the GPU's for an empty
 * array), checked usable with gtstore's GPU: libgtstore's status, with
 * `err` (may be NULL) saying why not. Nothing is waited on. */
int gtpy_cuda_locate(const gtpy_array_info *info, const gts_device_ops **device,
                     gts_error *err);
/* The device of the CUDA memory `info` describes, checked usable with
 * gtstore's GPU, after waiting on its stream (libgtstore decides each);
 * errors name `param`. */
int gtpy_cuda_memory(const gtpy_array_info *info, const char *param,
                     const gts_device_ops **device);
/* The release callback of memory another object owns (ctx: a reference to
 * it); any thread may run it. */
void gtpy_release_object(void *ctx);
/* A storage over the memory `interface` (obj's __cuda_array_interface__)
 * describes, without a copy; it keeps `obj` alive. */
PyObject *gtpy_storage_from_cuda_array(PyObject *obj, PyObject *interface, const char *param);

#endif
