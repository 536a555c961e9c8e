/* Geometry of an allocation: padded shape, byte strides, size and the offset
 * that aligns one grid point. Bit-for-bit the algorithm of GT4Py's
 * allocators (and GridTools before it):
 *
 *   A = alignment in bytes, B = max(A / itemsize, 1) elements;
 *   1. only the contiguous dimension is padded, up to a multiple of B;
 *   2. strides are products of padded extents in layout order;
 *   3. the block needs itemsize * prod(padded) + A - 1 bytes;
 *   4. element 0 sits at the offset from the block base that makes the
 *      address of the element at `aligned_index` a multiple of A.
 *
 * Every stride but the contiguous one is a multiple of A, so only the
 * contiguous component of `aligned_index` matters: every point sharing it is
 * aligned too. Every product is checked for overflow. */
#ifndef GTSTORE_GEOMETRY_H
#define GTSTORE_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gts_geometry {
    int ndim;
    int64_t itemsize;  /* bytes */
    int64_t alignment; /* bytes */
    int layout[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    int64_t padded_shape[GTS_MAX_NDIM];
    int64_t strides[GTS_MAX_NDIM]; /* bytes */
    int64_t aligned_index[GTS_MAX_NDIM];
    int64_t span;       /* itemsize * prod(padded_shape): bytes from element 0 */
    int64_t alloc_size; /* span + alignment - 1: bytes to allocate */
} gts_geometry;

/* Computes the geometry. `aligned_index` may be NULL (all zeros). An empty
 * extent counts as 1 in the strides (never 0, as in NumPy) and as 0 in the
 * span. Checks:
 * shape >= 0, layout a permutation, alignment >= 1 and either a multiple or a
 * divisor of itemsize, 0 <= aligned_index[d] < shape[d] (0 for an empty
 * dimension), and every size in 64 bits (GTS_EOVERFLOW naming
 * alignment_size where the shape alone fits, else the shape). */
int gts_geometry_init(gts_geometry *geometry, int ndim, const int64_t *shape, const int *layout,
                      int64_t itemsize, int64_t alignment, const int64_t *aligned_index,
                      gts_error *err);

/* The byte offset of element 0 from a block at `base` (0 <= offset < A). */
int64_t gts_geometry_offset(const gts_geometry *geometry, uintptr_t base);

/* An alignment of `alignment` bytes in elements of `itemsize` bytes (> 0):
 * B above, max(alignment / itemsize, 1) (a storage's alignment in GDP-3's
 * first draft, whose constructor takes it in elements). */
int64_t gts_alignment_elements(int64_t alignment, int64_t itemsize);

/* Number of elements prod(shape) (without padding), checked at init. */
int64_t gts_geometry_size(const gts_geometry *geometry);

/* The bytes a strided array touches, relative to element 0: [*low, *high).
 * An empty array touches none (both 0). GTS_EINVAL for a negative extent or
 * a non-positive itemsize, GTS_EOVERFLOW if a distance does not fit in 64
 * bits. */
int gts_strided_extent(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       int64_t *low, int64_t *high, gts_error *err);

/* Byte strides of a C-order (last index fastest) contiguous array: strides[d]
 * = itemsize * prod(shape[d+1:]), an empty extent counting as 1 (as in
 * NumPy and gts_geometry_init) so that no stride collapses to 0. `shape` may
 * be NULL for ndim 0. GTS_EINVAL for an ndim outside [0, GTS_MAX_NDIM], a
 * negative extent or a non-positive itemsize; GTS_EOVERFLOW if the size
 * itemsize * prod(shape), each extent counted as at least 1, does not fit
 * in 64 bits (every stride then fits too). `strides` is written on success
 * only. */
int gts_strides_contiguous(int ndim, const int64_t *shape, int64_t itemsize, int64_t *strides,
                           gts_error *err);

/* Checked 64-bit arithmetic: true (and *out untouched) on overflow.
 * Inline: every size computation calls them, and a call into the shared
 * library for one multiplication is waste (GCC's and Clang's builtins). */
static inline bool gts_mul_overflow(int64_t a, int64_t b, int64_t *out)
{
    int64_t result;
    if (__builtin_mul_overflow(a, b, &result))
        return true;
    *out = result;
    return false;
}

static inline bool gts_add_overflow(int64_t a, int64_t b, int64_t *out)
{
    int64_t result;
    if (__builtin_add_overflow(a, b, &result))
        return true;
    *out = result;
    return false;
}

#ifdef __cplusplus
}
#endif
#endif
