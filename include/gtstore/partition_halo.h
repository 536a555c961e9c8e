/* A rank's storages on a partition (gtstore/partition.h): their halo and
 * their shape.
 *
 * A storage of a partitioned field has dims of its own, among them every
 * dimension the partition splits (found by label); along a split dimension
 * it holds the rank's subdomain, along the others the whole extent, and
 * around both its halo. Along a split dimension with neighbours (more than
 * one block, or periodic) the halo is filled from the neighbours' domains,
 * so neither side may be wider than the smallest block: the check that
 * gts_halo_plan_create makes of each field, made here before any storage
 * exists, alike on every rank. */
#ifndef GTSTORE_PARTITION_HALO_H
#define GTSTORE_PARTITION_HALO_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/layout.h"
#include "gtstore/partition.h"
#include "gtstore/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether `halo` fits split dimension `dim` (0 <= dim < ndim): neither
 * side is negative, and either it has no neighbours there or neither side
 * is wider than the smallest block. */
bool gts_partition_halo_fits(const gts_partition *partition, int dim, gts_halo halo);

/* The halo of one width for a storage of `ndim` dims labelled `dims`:
 * `width` on both sides of each dimension the partition splits, none
 * along the others. GTS_EINVAL for a negative width ("halo: -2 is a
 * negative width"), `halo` left as it was. */
int gts_partition_halo(const gts_partition *partition, int ndim, const gts_dim *dims,
                       int64_t width, gts_halo *halo, gts_error *err);

/* Checks a storage's halo (one pair per dim of `dims`) against the
 * partition: GTS_EINVAL naming the first pair with a negative side, along
 * any dim ("halo: (-1, 0) along K: a negative width"), or along a split
 * dim the first that does not fit (gts_partition_halo_fits: "halo: (3, 3)
 * along I is wider than the smallest subdomain (2 points), which must
 * fill it"). */
int gts_partition_check_halo(const gts_partition *partition, int ndim, const gts_dim *dims,
                             const gts_halo *halo, gts_error *err);

/* The shape of `rank`'s storage of dims `dims` over a domain of
 * `global_shape` (one extent per dim; along the split dims the
 * partition's): the rank's subdomain along the split dimensions, the
 * global extent along the others, plus `halo` on both sides. GTS_EINVAL
 * for a rank outside [0, nranks), a split label missing from `dims`, a
 * halo gts_partition_check_halo refuses (a negative width among them), or
 * a global extent that is negative or, along a split dim, not the
 * partition's; GTS_EOVERFLOW where an extent exceeds INT64_MAX. */
int gts_partition_local_shape(const gts_partition *partition, int rank, int ndim,
                              const gts_dim *dims, const int64_t *global_shape,
                              const gts_halo *halo, int64_t *shape, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
