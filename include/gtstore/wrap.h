/* Storages over memory others allocated: another library's array on any
 * device, the two sides of a software-managed storage given apart, and a
 * view of an existing mirrored buffer found from the addresses of its two
 * sides. Nothing is copied; only a buffer header is allocated.
 *
 * Every function checks the memory against the spec as gts_storage_wrap
 * does (shape and dtype are the spec's, the elements must lie in the
 * memory, a layout asked for must agree with the strides, the aligned
 * point must be aligned). */
#ifndef GTSTORE_WRAP_H
#define GTSTORE_WRAP_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/spec.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A storage over `device` memory whose element 0 is at `element0` with byte
 * `strides` (the spec's shape and dtype): the bytes of its elements wrapped
 * (gts_buffer_wrap_elements) and the storage made as gts_storage_wrap makes
 * it. `release(ctx)` (may be NULL) runs when the last view of the memory is
 * released, and only after success: on failure the caller still owns ctx. */
int gts_storage_wrap_memory(const gts_storage_spec *spec, const gts_device_ops *device,
                            void *element0, const int64_t *strides, bool readonly,
                            gts_release_fn release, void *ctx, gts_storage *out, gts_error *err);

/* A software-managed storage (gtstore/sync.h) over two existing copies of
 * the same elements: `device_element0` in `device` memory the host cannot
 * reach and `host_element0` in host memory, with the same byte strides on
 * both sides (a mirrored buffer has one layout: every element sits at the
 * same offset on either side; dims of extent 1 may differ, and so may
 * every stride of an array of no elements), in sync
 * state `state` (which side holds writes the other lacks). The spec's
 * managed must be GTS_MANAGED_GT4PY. GTS_EINVAL for host-accessible
 * `device` memory, different strides or an invalid state. `release(ctx)`
 * runs once for both sides, as in gts_storage_wrap_memory. */
int gts_storage_wrap_mirrored(const gts_storage_spec *spec, const gts_device_ops *device,
                              void *device_element0, const int64_t *device_strides,
                              void *host_element0, const int64_t *host_strides, bool readonly,
                              gts_sync_state state, gts_release_fn release, void *ctx,
                              gts_storage *out, gts_error *err);

/* A view of the mirrored `buffer` (retained) whose element 0 is at
 * `device_element0` on its device side and `host_element0` on its host side:
 * arrays extracted from a software-managed storage (its host ndarray and
 * its device array) wrapped again, sharing its memory and its sync state.
 * The two must be the same elements: the same byte offset into either side
 * and the same strides. GTS_EINVAL for a buffer without a host side or
 * addresses that are not the same elements (or not in the buffer). */
int gts_storage_wrap_in(const gts_storage_spec *spec, gts_buffer *buffer,
                        const void *device_element0, const int64_t *device_strides,
                        const void *host_element0, const int64_t *host_strides, bool readonly,
                        gts_storage *out, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
