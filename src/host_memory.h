/* The host allocator (host_memory.c); not installed.
 *
 * Host memory for buffers and for callers that hold raw blocks (the host
 * device's alloc and free, staging for copies between devices, host sides
 * and pinned pages): 64-byte aligned heap blocks, and for blocks of at
 * least GTS_LARGE_BLOCK bytes huge-page mappings, populated when made.
 * Freed mappings are cached for the next request of a similar size, up to
 * gts_cache_limit() bytes (the environment's GTSTORE_CACHE_LIMIT, else
 * GTS_DEFAULT_CACHE_LIMIT), oldest unmapped first. The lowest layer of the
 * library's memory: it calls nothing but the kernels. */
#ifndef GTSTORE_HOST_MEMORY_H
#define GTSTORE_HOST_MEMORY_H

#include <stdint.h>

#include "gtstore/buffer.h"
#include "gtstore/error.h"


#define GTS__HEAP_ALIGNMENT 64

/* GTS_EINVAL for a negative size, GTS_EOVERFLOW beyond what can be
 * allocated (so that no size computation overflows). */
int gts__host_check_size(int64_t size, gts_error *err);
/* GTS_ENOMEM naming `size`. */
int gts__host_out_of_memory(gts_error *err, int64_t size);

/* A raw block: heap, or large ones from the huge-page cache (a cached
 * mapping larger than asked for is trimmed, so that the size given to free
 * tells the mapping's length). `size` at free is the size allocated. */
int gts__host_alloc(int64_t size, unsigned flags, void **out, gts_error *err);
void gts__host_free(void *block, int64_t size);

/* A huge-page mapping of at least `size` bytes (whole huge pages, at most a
 * quarter more where it comes from the cache; its length in *mapped),
 * zeroed for GTS_ALLOC_ZERO: a fresh one reads as zeros already. Back to
 * the cache with gts__host_unmap(base, *mapped). */
int gts__host_map(int64_t size, unsigned flags, void **base, int64_t *mapped, gts_error *err);
void gts__host_unmap(void *base, int64_t mapped);

/* The cache of mappings: its limit set (evicting what no longer fits),
 * emptied, and its share of gts_memory_stats (cached_* and cache_*). */
void gts__host_cache_set_limit(int64_t bytes);
void gts__host_cache_clear(void);
void gts__host_cache_stats(gts_memory_stats *stats);


#endif
