/* Halo exchange from Fortran (module gtstore_mpi): a partition over the
 * ranks of an MPI communicator given as Fortran's integer handle (MPI_Fint,
 * the handle `use mpi` gives and mpi_f08's comm%MPI_VAL holds), converted
 * with MPI_Comm_f2c, and exchanges of several fields. The partition and the
 * exchange are gtstore/partition.h's and gtstore/halo_exchange.h's. */
#include <stdlib.h>

#include "gtsf.h"
#include "gtstore/halo_exchange.h"

/* A partition and this rank's place in it. */
typedef struct gtsf_partition {
    gts_partition partition;
    MPI_Comm comm;
    int rank;
} gtsf_partition;

/* The partition of `global_shape` (ndim extents of domain points) over the
 * ranks of `comm`: process_grid entries 0 (or NULL) are chosen as
 * MPI_Dims_create would, periodic (NULL: none) per dimension, labels ("":
 * I, J, K). */
int gtsf_partition_create(MPI_Fint comm, int32_t ndim, const int64_t *global_shape,
                          const int32_t *process_grid, const int32_t *periodic,
                          const char *labels, gtsf_partition **out, gts_error *err)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        return gts_error_set(err, GTS_EINVAL, "comm: MPI is not initialized (MPI_Init first)");
    if (ndim < 1 || ndim > GTS_PARTITION_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "global_shape: %d dimensions, 1 to %d split",
                             (int)ndim, GTS_PARTITION_MAX_NDIM);
    MPI_Comm c = MPI_Comm_f2c(comm);
    int nranks, rank;
    if (c == MPI_COMM_NULL || MPI_Comm_size(c, &nranks) != MPI_SUCCESS ||
        MPI_Comm_rank(c, &rank) != MPI_SUCCESS)
        return gts_error_set(err, GTS_EINVAL, "comm: %d is no communicator", (int)comm);
    gts_dim dims[GTS_MAX_NDIM];
    int nlabels = 0, rc = GTS_OK;
    if (labels && labels[0]) {
        rc = gts_dims_parse(labels, dims, &nlabels, err);
        if (!rc && nlabels != ndim)
            rc = gts_error_set(err, GTS_EINVAL, "labels: \"%s\" for %d dimensions", labels,
                               (int)ndim);
    }
    int grid[GTS_PARTITION_MAX_NDIM];
    bool wrap[GTS_PARTITION_MAX_NDIM];
    for (int d = 0; d < ndim; ++d) {
        grid[d] = process_grid ? process_grid[d] : 0;
        wrap[d] = periodic && periodic[d];
    }
    gtsf_partition *p = NULL;
    if (!rc) {
        p = malloc(sizeof *p);
        if (!p)
            rc = gts_error_set(err, GTS_ENOMEM, "out of memory for a partition");
    }
    if (!rc)
        rc = gts_partition_init(&p->partition, ndim, nlabels ? dims : NULL, global_shape, grid,
                                wrap, nranks, err);
    if (rc) {
        free(p);
        return rc;
    }
    p->comm = c;
    p->rank = rank;
    *out = p;
    return GTS_OK;
}

void gtsf_partition_free(gtsf_partition *partition)
{
    free(partition);
}

/* This rank's subdomain: per split dimension its first global index,
 * counted from 1 as Fortran counts, and its extent; the rank, the number
 * of ranks and of split dimensions. */
void gtsf_partition_subdomain(const gtsf_partition *p, int64_t *start, int64_t *size,
                              int32_t *rank, int32_t *nranks, int32_t *ndim)
{
    gts_partition_subdomain(&p->partition, p->rank, start, size);
    for (int d = 0; d < p->partition.ndim; ++d)
        start[d] += 1;
    *rank = p->rank;
    *nranks = p->partition.nranks;
    *ndim = p->partition.ndim;
}

/* The exchange of the `nfields` fields (handles) on the partition's
 * communicator: collective, as gts_halo_exchange_create. */
int gtsf_exchange_create(const gtsf_partition *p, int32_t nfields, gts_storage *const *fields,
                         gts_halo_exchange **out, gts_error *err)
{
    if (nfields < 1)
        return gts_error_set(err, GTS_EINVAL, "fields: %d given", (int)nfields);
    gts_storage *views = malloc((size_t)nfields * sizeof *views);
    if (!views)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for %d fields", (int)nfields);
    int rc = GTS_OK;
    for (int f = 0; f < nfields && !rc; ++f)
        if (!fields[f])
            rc = gts_error_set(err, GTS_EINVAL, "fields(%d): not allocated", f + 1);
    /* shallow copies: the exchange takes its own views of them */
    for (int f = 0; f < nfields && !rc; ++f)
        views[f] = *fields[f];
    if (!rc)
        rc = gts_halo_exchange_create(&p->partition, p->comm, nfields, views, out, err);
    free(views);
    return rc;
}

int gtsf_exchange_start(gts_halo_exchange *exchange, gts_error *err)
{
    return gts_halo_exchange_start(exchange, err);
}

int gtsf_exchange_wait(gts_halo_exchange *exchange, gts_error *err)
{
    return gts_halo_exchange_wait(exchange, err);
}

void gtsf_exchange_destroy(gts_halo_exchange *exchange)
{
    gts_halo_exchange_destroy(exchange);
}
