/* Helpers shared between the library's source files; not installed. */
#ifndef GTSTORE_INTERNAL_H
#define GTSTORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/copy_batch.h"
#include "gtstore/device.h"
#include "gtstore/spec.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

/* The CUDA devices (device_cuda.c), which load the driver on first use.
 * gts__cuda_get: the device of a CUDA type (GTS_DL_CUDA, GTS_DL_CUDA_HOST,
 * GTS_DL_CUDA_MANAGED) with the errors of gts_device_get. gts__cuda_list:
 * writes up to `capacity` of the CUDA devices to `out` and returns how many
 * there are (0 where CUDA cannot be reached). */
int gts__cuda_get(gts_device_id id, const gts_device_ops **out, gts_error *err);
size_t gts__cuda_list(const gts_device_ops **out, size_t capacity);
/* The CUDA device whose memory `address` is, as the driver says
 * (gts_device_locate); GTS_ENOTFOUND where it is not CUDA memory. */
int gts__cuda_locate(const void *address, const gts_device_ops **out, gts_error *err);

/* The bytes a strided array touches, [element 0 + *low, element 0 +
 * *high), for devices that move or check them (geometry.c). Arguments the
 * kernels refuse before touching memory (ndim, shape, itemsize, NULL
 * strides) and arrays that touch nothing give *valid false, and the caller
 * hands them to the kernel, which says why. */
int gts__strided_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       bool *valid, int64_t *low, int64_t *high, gts_error *err);

/* gts_copy_batch_create (gtstore/copy_batch.h), where `check_sides` may be
 * false for callers that know their copies independent (a halo plan's
 * regions never share an element, though their byte ranges interleave). */
int gts__copy_batch_create(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                           bool check_sides, gts_copy_batch **out, gts_error *err);

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

/* Makes a wrapped buffer of device memory mirrored (gtstore/sync.h) over
 * `host`, non-NULL host memory of the buffer's size that its owner keeps
 * (the buffer never frees it), in sync state `state` (sync.c). */
void gts__buffer_wrap_host_side(gts_buffer *buffer, void *host, gts_sync_state state);

/* Sets the release callback of a wrapped buffer after the fact: importers
 * take ownership of foreign memory only once the storage over it exists. */
void gts__buffer_set_release(gts_buffer *buffer, gts_release_fn release, void *ctx);

/* Runs a layout function (a preset's or a spec's) and gives a failure a
 * message naming `owner` where the function left none. The result is not
 * checked: callers know what it may hold. */
int gts__layout_call(gts_layout_fn fn, void *ctx, const char *owner, int ndim,
                     const gts_dim *dims, int *layout, gts_error *err);

/* What every storage the library makes satisfies, checked for a storage a
 * C caller describes (a public value struct): valid unrepeated dims,
 * extents >= 0, halo and aligned point inside them; with `memory`, also a
 * buffer, and every element inside it. `who` names it in the message. */
int gts__storage_check(const gts_storage *s, const char *who, bool memory, gts_error *err);

/* Each side of each dimension's halo >= 0, their sum at most the extent. */
int gts__halo_check(int ndim, const int64_t *shape, const gts_halo *halo, gts_error *err);

/* ---- spec resolution (spec.c), in two steps for gts_storage_wrap --------- */

/* Where a resolved layout came from: wrapping compares a layout asked for
 * (given or the preset's) with the memory, and reads the memory's own where
 * nothing asked for one. */
typedef enum gts__layout_source {
    GTS__LAYOUT_GIVEN,
    GTS__LAYOUT_PRESET,
    GTS__LAYOUT_TEMPLATE,
    GTS__LAYOUT_FALLBACK
} gts__layout_source;

typedef struct gts__resolution {
    int64_t alignment;
    gts__layout_source layout_source;
    bool halo_from_template;
    gts_halo halo[GTS_MAX_NDIM]; /* the template's, until committed */
} gts__resolution;

/* Fills every parameter nobody gave (has_* false) from the preset, the
 * template and the fallbacks and checks them all, except what the geometry
 * checks. Only slots nobody gave are written (and GTS_DIM_NEXT /
 * GTS_LAYOUT_OUTER entries): the caller commits once everything passed,
 * so a failure changes no meaning. */
int gts__spec_resolve_parameters(gts_storage_spec *spec, gts__resolution *out, gts_error *err);
/* Marks everything given and drops the template and layout function. */
void gts__spec_commit(gts_storage_spec *spec, const gts__resolution *resolution);

#endif
