/* Domain decomposition over a Cartesian process grid (gtstore/partition.h). */
#include "gtstore/partition.h"

static int check_ndim(int ndim, gts_error *err)
{
    if (ndim < 1 || ndim > GTS_PARTITION_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: %d is outside [1, %d]", ndim,
                             GTS_PARTITION_MAX_NDIM);
    return 0;
}

/* The prime factors of n, largest first; returns their count. */
static int prime_factors(int n, int *factors)
{
    int count = 0;
    for (int p = 2; (long long)p * p <= n; ++p)
        while (n % p == 0) {
            factors[count++] = p;
            n /= p;
        }
    if (n > 1)
        factors[count++] = n;
    for (int i = 0; i < count / 2; ++i) { /* found smallest first */
        int t = factors[i];
        factors[i] = factors[count - 1 - i];
        factors[count - 1 - i] = t;
    }
    return count;
}

int gts_process_grid(int nranks, int ndim, int *process_grid, gts_error *err)
{
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    if (nranks < 1)
        return gts_error_set(err, GTS_EINVAL, "nranks: %d is not positive", nranks);
    int fixed = 1, nfree = 0;
    for (int d = 0; d < ndim; ++d) {
        if (process_grid[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "process_grid: negative entry %d at position %d",
                                 process_grid[d], d);
        if (process_grid[d] > 0) {
            if ((nranks / fixed) % process_grid[d] != 0) /* fixed divides nranks */
                return gts_error_set(err, GTS_EINVAL,
                                     "process_grid: the given entries do not divide %d ranks", nranks);
            fixed *= process_grid[d]; /* divides nranks: no overflow */
        } else {
            ++nfree;
        }
    }
    int rest = nranks / fixed;
    if (nfree == 0) {
        if (rest != 1)
            return gts_error_set(err, GTS_EINVAL,
                                 "process_grid: the grid has %d ranks, the partition %d", fixed,
                                 nranks);
        return 0;
    }
    /* Greedy: each prime factor, largest first, to the smallest entry. */
    int factors[32], chosen[GTS_PARTITION_MAX_NDIM] = {1, 1, 1};
    int nfactors = prime_factors(rest, factors);
    for (int f = 0; f < nfactors; ++f) {
        int smallest = 0;
        for (int i = 1; i < nfree; ++i)
            if (chosen[i] < chosen[smallest])
                smallest = i;
        chosen[smallest] *= factors[f];
    }
    for (int i = 0; i < nfree; ++i) /* non-increasing, as MPI_Dims_create */
        for (int j = i + 1; j < nfree; ++j)
            if (chosen[j] > chosen[i]) {
                int t = chosen[i];
                chosen[i] = chosen[j];
                chosen[j] = t;
            }
    for (int d = 0, i = 0; d < ndim; ++d)
        if (process_grid[d] == 0)
            process_grid[d] = chosen[i++];
    return 0;
}

static int check_labels(int ndim, const gts_dim *labels, gts_error *err)
{
    gts_error why;
    int rc = gts_dims_check(ndim, labels, &why);
    return rc ? gts_error_set(err, rc, "labels: %s", why.message) : 0;
}

int gts_partition_init(gts_partition *partition, int ndim, const gts_dim *labels,
                       const int64_t *global_shape, const int *process_grid, const bool *periodic,
                       int nranks, gts_error *err)
{
    int rc = check_ndim(ndim, err);
    if (rc)
        return rc;
    static const gts_dim default_labels[GTS_PARTITION_MAX_NDIM] = {GTS_DIM_I, GTS_DIM_J,
                                                                  GTS_DIM_K};
    if (!labels)
        labels = default_labels;
    if ((rc = check_labels(ndim, labels, err)))
        return rc;
    gts_partition p = {.ndim = ndim, .nranks = nranks};
    for (int d = 0; d < ndim; ++d) {
        p.labels[d] = labels[d];
        p.nprocs[d] = process_grid ? process_grid[d] : 0;
        p.periodic[d] = periodic ? periodic[d] : false;
    }
    if ((rc = gts_process_grid(nranks, ndim, p.nprocs, err)))
        return rc;
    for (int d = 0; d < ndim; ++d) {
        if (global_shape[d] < p.nprocs[d]) {
            char label[GTS_DIM_TEXT_SIZE];
            gts_dim_format(labels[d], label);
            return gts_error_set(err, GTS_EINVAL,
                                 "global_shape: %lld points along %s cannot be split over %d "
                                 "ranks (each needs at least one point)",
                                 (long long)global_shape[d], label, p.nprocs[d]);
        }
        p.global_shape[d] = global_shape[d];
    }
    *partition = p;
    return 0;
}

int gts_partition_check(const gts_partition *p, gts_error *err)
{
    if (!p)
        return gts_error_set(err, GTS_EINVAL, "partition: NULL");
    int rc = check_ndim(p->ndim, err);
    if (rc || (rc = check_labels(p->ndim, p->labels, err)))
        return rc;
    int64_t ranks = 1; /* at most nranks before each step: no overflow */
    for (int d = 0; d < p->ndim; ++d) {
        if (p->nprocs[d] < 1 || p->nprocs[d] > p->nranks / ranks)
            return gts_error_set(err, GTS_EINVAL,
                                 "partition: nprocs[%d] is %d: the blocks per dimension must be "
                                 ">= 1, with their product nranks (%d)",
                                 d, p->nprocs[d], p->nranks);
        ranks *= p->nprocs[d];
        if (p->global_shape[d] < p->nprocs[d])
            return gts_error_set(err, GTS_EINVAL,
                                 "partition: global_shape[%d] is %lld, fewer points than its %d "
                                 "blocks",
                                 d, (long long)p->global_shape[d], p->nprocs[d]);
    }
    if (ranks != p->nranks)
        return gts_error_set(err, GTS_EINVAL,
                             "partition: nranks is %d, the product of nprocs %lld", p->nranks,
                             (long long)ranks);
    return 0;
}

void gts_partition_coords(const gts_partition *partition, int rank, int *coords)
{
    for (int d = partition->ndim - 1; d >= 0; --d) {
        coords[d] = rank % partition->nprocs[d];
        rank /= partition->nprocs[d];
    }
}

int gts_partition_rank(const gts_partition *partition, const int *coords)
{
    int rank = 0;
    for (int d = 0; d < partition->ndim; ++d) {
        int n = partition->nprocs[d], c = coords[d];
        if (partition->periodic[d])
            c = ((c % n) + n) % n;
        else if (c < 0 || c >= n)
            return GTS_NO_RANK;
        rank = rank * n + c;
    }
    return rank;
}

int gts_partition_neighbor(const gts_partition *partition, int rank, const int *offset)
{
    int coords[GTS_PARTITION_MAX_NDIM];
    gts_partition_coords(partition, rank, coords);
    for (int d = 0; d < partition->ndim; ++d) {
        /* an offset beyond one lap changes nothing on a periodic dim and
           leaves a non-periodic one: clamp it so the sum cannot overflow */
        int step = offset[d];
        int n = partition->nprocs[d];
        if (step > n || step < -n)
            step = partition->periodic[d] ? step % n : (step > 0 ? n : -n);
        coords[d] += step;
    }
    return gts_partition_rank(partition, coords);
}

void gts_partition_block(const gts_partition *partition, int dim, int coord, int64_t *start,
                         int64_t *size)
{
    int64_t n = partition->global_shape[dim], p = partition->nprocs[dim];
    int64_t base = n / p, extra = n % p;
    *size = base + (coord < extra ? 1 : 0);
    *start = coord * base + (coord < extra ? coord : extra);
}

void gts_partition_subdomain(const gts_partition *partition, int rank, int64_t *start,
                             int64_t *size)
{
    int coords[GTS_PARTITION_MAX_NDIM];
    gts_partition_coords(partition, rank, coords);
    for (int d = 0; d < partition->ndim; ++d)
        gts_partition_block(partition, d, coords[d], &start[d], &size[d]);
}

int64_t gts_partition_min_block(const gts_partition *partition, int dim)
{
    return partition->global_shape[dim] / partition->nprocs[dim];
}

int gts_partition_dim_of(const gts_partition *partition, gts_dim label)
{
    for (int d = 0; d < partition->ndim; ++d)
        if (partition->labels[d] == label)
            return d;
    return -1;
}
