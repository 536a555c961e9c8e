/* DLPack: exchanging storages with other libraries without copying.
 *
 * The structs below have the memory layout of DLPack 1.x's DLDevice,
 * DLDataType, DLTensor, DLManagedTensor and DLManagedTensorVersioned
 * (dlpack.h); a program that includes dlpack.h converts pointers between the
 * two. They carry a gts_ prefix so that both headers can be included. */
#ifndef GTSTORE_DLPACK_H
#define GTSTORE_DLPACK_H

#include <stdint.h>

#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DLPack version gtstore produces; it consumes every 1.x. */
#define GTS_DLPACK_MAJOR 1
#define GTS_DLPACK_MINOR 1

/* Device types (DLDeviceType): the GTS_DL_* codes of gtstore/device.h,
 * the one device id space of the library. */

/* Flags of the versioned struct. */
#define GTS_DLPACK_READ_ONLY ((uint64_t)1 << 0)
#define GTS_DLPACK_IS_COPIED ((uint64_t)1 << 1)
/* Not a DLPack flag: asks gts_storage_to_dlpack for the host side, a CPU
 * tensor: of a mirrored buffer (gtstore/sync.h), or memory of a device
 * the host reaches itself (managed or pinned memory, whose host address is
 * its own). The caller has brought that side up to date (gts_buffer_sync /
 * gts_buffer_prepare_write; managed memory: the device synchronized). */
#define GTS_DLPACK_HOST_SIDE ((uint64_t)1 << 32)

/* DLDevice; the same layout as gts_device_id. */
typedef struct gts_dl_device {
    int32_t device_type;
    int32_t device_id;
} gts_dl_device;

typedef struct gts_dl_dtype {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} gts_dl_dtype;

typedef struct gts_dl_tensor {
    void *data;
    gts_dl_device device;
    int32_t ndim;
    gts_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means C order */
    uint64_t byte_offset;
} gts_dl_tensor;

typedef struct gts_dl_managed {
    gts_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct gts_dl_managed *self);
} gts_dl_managed;

typedef struct gts_dl_version {
    uint32_t major;
    uint32_t minor;
} gts_dl_version;

typedef struct gts_dl_managed_versioned {
    gts_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct gts_dl_managed_versioned *self);
    uint64_t flags;
    gts_dl_tensor dl_tensor;
} gts_dl_managed_versioned;

/* What an export of a buffer serves a consumer that names a device
 * (__dlpack__'s dl_device and copy): its own memory, its host side (a
 * mirrored buffer's, or memory the host reaches itself: managed, pinned),
 * or a copy in host memory. */
typedef enum gts_dlpack_serve {
    GTS_DLPACK_SERVE_OWN,
    GTS_DLPACK_SERVE_HOST_SIDE,
    GTS_DLPACK_SERVE_HOST_COPY
} gts_dlpack_serve;

/* Which side of `buffer` an export serves for the device `asked` (the pair
 * device type, device id; NULL: none named) and `copy` (1 a copy is asked
 * for, 0 it is forbidden, -1 either): its own memory where asked is NULL
 * or its device; for the CPU (GTS_DL_CPU, 0) the host side, or a copy where
 * copy is 1 or where copy is -1 and there is no host side. Anything else
 * is GTS_ENOTSUP ("dl_device: (2, 0) cannot be served[ without a copy
 * (copy=False)]; the storage is on (1, 0)"); another `copy` is
 * GTS_EINVAL naming it. */
int gts_dlpack_serve_side(const gts_buffer *buffer, const int64_t *asked, int copy,
                          gts_dlpack_serve *out, gts_error *err);

/* Exports a view of `storage` (the export holds a reference to its buffer
 * until its deleter runs). The tensor's device is the buffer's (for the
 * emulated device GTS_DL_EXT_DEV, which no host library takes for host
 * memory). data points at element 0 on that device, byte_offset is 0 and
 * strides are always filled. Of `flags` GTS_DLPACK_IS_COPIED is taken (the
 * caller says the storage is a copy) and GTS_DLPACK_HOST_SIDE (the host
 * side of a mirrored buffer instead; GTS_EINVAL for any other buffer);
 * GTS_DLPACK_READ_ONLY is set exactly for read-only storages. */
int gts_storage_to_dlpack(const gts_storage *storage, uint64_t flags,
                          gts_dl_managed_versioned **out, gts_error *err);

/* The same as an unversioned (pre-1.0) DLManagedTensor, which cannot say
 * read-only: a read-only storage is refused (GTS_EREADONLY). */
int gts_storage_to_dlpack_legacy(const gts_storage *storage, gts_dl_managed **out,
                                 gts_error *err);

/* A storage over the memory of a DLPack tensor, without copying. `options`
 * (may be NULL) gives the other parameters, applied and checked as in
 * gts_storage_wrap; its ndim, shape and dtype are ignored (the tensor's
 * count). On success the storage owns the tensor: its deleter runs when the
 * last view of the memory is released; on failure the caller still owns it.
 * Host memory (CPU and CUDA host) and the memory of any device
 * gts_device_get reaches (the emulated device; CUDA device and managed
 * memory where a driver is present); other devices give GTS_ENOTSUP. */
int gts_storage_from_dlpack(gts_dl_managed_versioned *tensor, const gts_storage_spec *options,
                            gts_storage *out, gts_error *err);
int gts_storage_from_dlpack_legacy(gts_dl_managed *tensor, const gts_storage_spec *options,
                                   gts_storage *out, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
