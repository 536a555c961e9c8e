/* Fill and copy of strided N-d arrays (byte strides, any sign). Large
 * operations run in parallel with OpenMP when the library is built with it;
 * copies between different contiguous dimensions are cache-blocked. */
#ifndef GTSTORE_KERNELS_H
#define GTSTORE_KERNELS_H

#include <stdint.h>

#include "gtstore/dtype.h"
#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the `itemsize` bytes at `item` into every element. Dimensions of
 * stride 0 are written once. Errors: GTS_EINVAL for a bad ndim, itemsize,
 * extent or NULL pointer; GTS_EOVERFLOW when the element count or the bytes
 * the array spans do not fit in 64 bits. Nothing is written then. */
int gts_fill(void *data, int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
             const void *item, gts_error *err);

/* Stores `value` (see gts_scalar_store) into every element of `dtype`. */
int gts_fill_scalar(void *data, int ndim, const int64_t *shape, const int64_t *strides,
                    gts_dtype dtype, gts_scalar value, gts_error *err);

/* Copies every element of `src` to the same index of `dst`; both have
 * `shape` and elements of `itemsize` bytes. Overlapping arrays are copied as
 * if through a temporary. The errors of gts_fill, and GTS_EINVAL for a
 * destination with stride 0 over more than one element. */
int gts_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides,
             int ndim, const int64_t *shape, int64_t itemsize, gts_error *err);

/* Bytes from which on fills and copies run in parallel. */
#define GTS_PARALLEL_BYTES ((int64_t)1 << 20)

#ifdef __cplusplus
}
#endif
#endif
