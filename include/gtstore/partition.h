/* Domain decomposition: a global domain split over a Cartesian grid of
 * processes (ranks), each rank owning one block, its subdomain.
 *
 * A partition splits up to GTS_PARTITION_MAX_NDIM dimensions of the domain,
 * each named by the storage label it splits (I and J by default: the
 * horizontal dimensions of a weather model; K and data dimensions stay
 * whole on every rank). Ranks are numbered as MPI_Cart_create numbers them:
 * row-major over the process grid, the last dimension fastest. Where an
 * extent does not divide, the first `extent % nprocs` blocks get one point
 * more (as in MPI's and most models' block distributions), so subdomains
 * differ by at most one point. A periodic dimension wraps around: the
 * neighbour past the last block is the first.
 *
 * Nothing here communicates or allocates: every rank computes the same
 * partition from the same arguments, and so knows every other rank's
 * subdomain. That is what lets a rank reject a halo wider than the smallest
 * subdomain without asking the others (gtstore/halo_plan.h). */
#ifndef GTSTORE_PARTITION_H
#define GTSTORE_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most dimensions one partition splits (I, J, K). */
#define GTS_PARTITION_MAX_NDIM 3

/* gts_partition_rank's answer for coordinates past a non-periodic edge. */
#define GTS_NO_RANK (-1)

typedef struct gts_partition {
    int ndim;                                /* the dimensions split, 1..GTS_PARTITION_MAX_NDIM */
    gts_dim labels[GTS_PARTITION_MAX_NDIM];  /* the storage dimension each one splits */
    int64_t global_shape[GTS_PARTITION_MAX_NDIM]; /* domain points (no halo) */
    int nprocs[GTS_PARTITION_MAX_NDIM];      /* blocks (ranks) along each dimension */
    bool periodic[GTS_PARTITION_MAX_NDIM];
    int nranks;                              /* the product of nprocs */
} gts_partition;

/* MPI_Dims_create's choice: fills the entries of `process_grid` (ranks
 * per dimension) that are 0 so
 * that the product of all `ndim` entries is `nranks`, as balanced as
 * possible, the chosen ones in non-increasing order; entries > 0 are kept.
 * GTS_EINVAL for nranks < 1, ndim outside [1, GTS_PARTITION_MAX_NDIM], a
 * negative entry, or fixed entries whose product does not divide nranks. */
int gts_process_grid(int nranks, int ndim, int *process_grid, gts_error *err);

/* A partition of `global_shape` (ndim extents) over `nranks` ranks.
 * `labels`: the label of each split dimension (NULL: I, J, K in order);
 * distinct. `process_grid`: the blocks per dimension, where 0 (NULL: all)
 * leaves the number to gts_process_grid. `periodic`: NULL for none.
 * Errors (GTS_EINVAL, naming the parameter): those of gts_process_grid, a
 * repeated or invalid label, or an extent with fewer points than blocks
 * (every rank must own at least one point). */
int gts_partition_init(gts_partition *partition, int ndim, const gts_dim *labels,
                       const int64_t *global_shape, const int *process_grid, const bool *periodic,
                       int nranks, gts_error *err);

/* Whether `partition` is one gts_partition_init could have made: ndim in
 * [1, GTS_PARTITION_MAX_NDIM], valid distinct labels, every nprocs >= 1
 * with their product nranks, and every extent at least its nprocs.
 * GTS_EINVAL naming the field otherwise (or for NULL). The functions with
 * an error code that take a partition (gts_halo_plan_create, the halo
 * exchange) check it; the queries below trust it: pass them checked ones
 * only. */
int gts_partition_check(const gts_partition *partition, gts_error *err);

/* The grid coordinates of `rank` (0 <= rank < nranks). */
void gts_partition_coords(const gts_partition *partition, int rank, int *coords);

/* The rank at `coords`: periodic dimensions wrap (any integer), others must
 * lie in [0, nprocs): else GTS_NO_RANK. */
int gts_partition_rank(const gts_partition *partition, const int *coords);

/* The rank at `offset` (per dimension, any integer, typically -1, 0, 1)
 * from `rank`; GTS_NO_RANK past a non-periodic edge. */
int gts_partition_neighbor(const gts_partition *partition, int rank, const int *offset);

/* Block `coord` (0 <= coord < nprocs[dim]) of dimension `dim`: its first
 * global index and its number of points. */
void gts_partition_block(const gts_partition *partition, int dim, int coord, int64_t *start,
                         int64_t *size);

/* The subdomain of `rank`: per split dimension its first global index and
 * extent. */
void gts_partition_subdomain(const gts_partition *partition, int rank, int64_t *start,
                             int64_t *size);

/* The smallest block along `dim`: every halo along it must fit in it. */
int64_t gts_partition_min_block(const gts_partition *partition, int dim);

/* The split dimension labelled `label`, or -1 if the partition does not
 * split it. */
int gts_partition_dim_of(const gts_partition *partition, gts_dim label);

#ifdef __cplusplus
}
#endif
#endif
