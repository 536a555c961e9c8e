/* A rank's storages on a partition: halo and shape
 * (gtstore/partition_halo.h). */
#include "gtstore/partition_halo.h"

#include <stdio.h>

/* A negative side would make a storage smaller than its domain and a
 * message region of negative size: no halo has one, along any dim. */
static bool halo_negative(gts_halo halo)
{
    return halo.lower < 0 || halo.upper < 0;
}

bool gts_partition_halo_fits(const gts_partition *partition, int dim, gts_halo halo)
{
    bool neighbors = partition->nprocs[dim] > 1 || partition->periodic[dim];
    int64_t smallest = gts_partition_min_block(partition, dim);
    return !halo_negative(halo) &&
           (!neighbors || (halo.lower <= smallest && halo.upper <= smallest));
}

int gts_partition_halo(const gts_partition *partition, int ndim, const gts_dim *dims,
                       int64_t width, gts_halo *halo, gts_error *err)
{
    if (width < 0)
        return gts_error_set(err, GTS_EINVAL, "halo: %lld is a negative width",
                             (long long)width);
    for (int a = 0; a < ndim; ++a)
        halo[a] = gts_partition_dim_of(partition, dims[a]) >= 0 ? (gts_halo){width, width}
                                                                 : (gts_halo){0, 0};
    return GTS_OK;
}

int gts_partition_check_halo(const gts_partition *partition, int ndim, const gts_dim *dims,
                             const gts_halo *halo, gts_error *err)
{
    for (int a = 0; a < ndim; ++a) {
        int d = gts_partition_dim_of(partition, dims[a]);
        if (d < 0 ? !halo_negative(halo[a]) : gts_partition_halo_fits(partition, d, halo[a]))
            continue;
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[a], label);
        if (halo_negative(halo[a]))
            return gts_error_set(err, GTS_EINVAL, "halo: (%lld, %lld) along %s: a negative width",
                                 (long long)halo[a].lower, (long long)halo[a].upper, label);
        return gts_error_set(err, GTS_EINVAL,
                             "halo: (%lld, %lld) along %s is wider than the smallest subdomain "
                             "(%lld points), which must fill it",
                             (long long)halo[a].lower, (long long)halo[a].upper, label,
                             (long long)gts_partition_min_block(partition, d));
    }
    return GTS_OK;
}

/* Whether every split label is among `dims`; GTS_EINVAL naming the first
 * that is not. */
static int check_split_dims(const gts_partition *partition, int ndim, const gts_dim *dims,
                            gts_error *err)
{
    for (int d = 0; d < partition->ndim; ++d) {
        bool found = false;
        for (int a = 0; a < ndim && !found; ++a)
            found = dims[a] == partition->labels[d];
        if (!found) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(partition->labels[d], label);
            return gts_error_set(err, GTS_EINVAL,
                                 "dims: the partition splits %s, which the dims lack", label);
        }
    }
    return GTS_OK;
}

/* extent + lower + upper without overflow (all three non-negative). */
static int add_halo(int64_t extent, gts_halo h, int64_t *out, gts_error *err)
{
    if (h.lower > INT64_MAX - extent || h.upper > INT64_MAX - extent - h.lower)
        return gts_error_set(err, GTS_EOVERFLOW,
                             "halo: (%lld, %lld) around %lld points exceeds %lld points",
                             (long long)h.lower, (long long)h.upper, (long long)extent,
                             (long long)INT64_MAX);
    *out = extent + h.lower + h.upper;
    return GTS_OK;
}

int gts_partition_local_shape(const gts_partition *partition, int rank, int ndim,
                              const gts_dim *dims, const int64_t *global_shape,
                              const gts_halo *halo, int64_t *shape, gts_error *err)
{
    if (!partition || ndim < 0 || ndim > GTS_MAX_NDIM ||
        (ndim > 0 && (!dims || !global_shape || !halo || !shape)))
        return gts_error_set(err, GTS_EINVAL, "partition, dims, global_shape, halo, shape: "
                                              "NULL, or ndim %d outside [0, %d]",
                             ndim, GTS_MAX_NDIM);
    if (rank < 0 || rank >= partition->nranks)
        return gts_error_set(err, GTS_EINVAL, "rank: %d is outside [0, %d)", rank,
                             partition->nranks);
    int rc = check_split_dims(partition, ndim, dims, err);
    if (rc == GTS_OK)
        rc = gts_partition_check_halo(partition, ndim, dims, halo, err);
    int64_t start[GTS_PARTITION_MAX_NDIM], size[GTS_PARTITION_MAX_NDIM];
    gts_partition_subdomain(partition, rank, start, size);
    for (int a = 0; rc == GTS_OK && a < ndim; ++a) {
        int d = gts_partition_dim_of(partition, dims[a]);
        char label[GTS_DIM_TEXT_SIZE];
        gts_dim_format(dims[a], label);
        if (d >= 0 && global_shape[a] != partition->global_shape[d])
            return gts_error_set(err, GTS_EINVAL,
                                 "global_shape: %lld points along %s, which the partition splits "
                                 "as %lld",
                                 (long long)global_shape[a], label,
                                 (long long)partition->global_shape[d]);
        if (global_shape[a] < 0) /* a split extent is the partition's: never negative */
            return gts_error_set(err, GTS_EINVAL, "global_shape: %lld points along %s: a "
                                 "negative extent",
                                 (long long)global_shape[a], label);
        rc = add_halo(d >= 0 ? size[d] : global_shape[a], halo[a], &shape[a], err);
    }
    return rc;
}
