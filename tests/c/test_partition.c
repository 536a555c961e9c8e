/* Domain decomposition: process grids, blocks, ranks and neighbours. */
#include "check.h"

#include "gtstore/partition.h"

static void test_process_grid(void)
{
    int g[3] = {0, 0, 0};
    if (CHECK_OK(gts_process_grid(12, 2, g, ERR)))
        CHECK(g[0] == 4 && g[1] == 3); /* MPI_Dims_create(12, 2): (4, 3) */
    int h[3] = {0, 0, 0};
    if (CHECK_OK(gts_process_grid(6, 2, h, ERR)))
        CHECK(h[0] == 3 && h[1] == 2);
    int one[2] = {0, 0};
    if (CHECK_OK(gts_process_grid(1, 2, one, ERR)))
        CHECK(one[0] == 1 && one[1] == 1);
    int prime[2] = {0, 0};
    if (CHECK_OK(gts_process_grid(7, 2, prime, ERR)))
        CHECK(prime[0] == 7 && prime[1] == 1);
    int three[3] = {0, 0, 0};
    if (CHECK_OK(gts_process_grid(8, 3, three, ERR)))
        CHECK(three[0] == 2 && three[1] == 2 && three[2] == 2);
    int fixed[2] = {0, 2}; /* a given entry is kept */
    if (CHECK_OK(gts_process_grid(8, 2, fixed, ERR)))
        CHECK(fixed[0] == 4 && fixed[1] == 2);
    int all[2] = {2, 3};
    CHECK_OK(gts_process_grid(6, 2, all, ERR));

    int bad[2] = {0, 3};
    CHECK_FAILS(gts_process_grid(8, 2, bad, ERR), GTS_EINVAL, "process_grid");
    int wrong[2] = {2, 2};
    CHECK_FAILS(gts_process_grid(6, 2, wrong, ERR), GTS_EINVAL, "process_grid");
    int negative[2] = {-1, 0};
    CHECK_FAILS(gts_process_grid(4, 2, negative, ERR), GTS_EINVAL, "negative");
    int z[2] = {0, 0};
    CHECK_FAILS(gts_process_grid(0, 2, z, ERR), GTS_EINVAL, "nranks");
    CHECK_FAILS(gts_process_grid(4, 0, z, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_process_grid(4, 4, z, ERR), GTS_EINVAL, "ndim");
}

/* Blocks tile the extent, in order, differing by at most one point. */
static void test_blocks(void)
{
    gts_partition p;
    int64_t shape[2] = {10, 7};
    int nprocs[2] = {3, 2};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, shape, nprocs, NULL, 6, ERR)))
        return;
    int64_t expected_start[3] = {0, 4, 7}, expected_size[3] = {4, 3, 3};
    for (int c = 0; c < 3; ++c) {
        int64_t start, size;
        gts_partition_block(&p, 0, c, &start, &size);
        CHECK_INT_EQ(start, expected_start[c]);
        CHECK_INT_EQ(size, expected_size[c]);
    }
    CHECK_INT_EQ(gts_partition_min_block(&p, 0), 3);
    CHECK_INT_EQ(gts_partition_min_block(&p, 1), 3);
    /* rank 3 = coords (1, 1), row-major, last dimension fastest */
    int coords[2];
    gts_partition_coords(&p, 3, coords);
    CHECK(coords[0] == 1 && coords[1] == 1);
    CHECK_INT_EQ(gts_partition_rank(&p, coords), 3);
    int64_t start[2], size[2];
    gts_partition_subdomain(&p, 3, start, size);
    CHECK(start[0] == 4 && size[0] == 3 && start[1] == 4 && size[1] == 3);
    gts_partition_subdomain(&p, 0, start, size);
    CHECK(start[0] == 0 && size[0] == 4 && start[1] == 0 && size[1] == 4);
    CHECK_INT_EQ(gts_partition_dim_of(&p, GTS_DIM_J), 1);
    CHECK_INT_EQ(gts_partition_dim_of(&p, GTS_DIM_K), -1);
}

static void test_neighbors(void)
{
    gts_partition p;
    int64_t shape[2] = {8, 8};
    int nprocs[2] = {2, 3};
    bool periodic[2] = {false, true};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, shape, nprocs, periodic, 6, ERR)))
        return;
    /* rank 0 = (0, 0): nothing below in I; J wraps to column 2 */
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){-1, 0}), GTS_NO_RANK);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){0, -1}), 2);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){1, -1}), 5);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){1, 1}), 4);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 5, (int[]){0, 1}), 3);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 5, (int[]){1, 0}), GTS_NO_RANK);
    /* far offsets neither overflow nor wrap a non-periodic dimension */
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){0, 2147483647}), 1);
    CHECK_INT_EQ(gts_partition_neighbor(&p, 0, (int[]){-2147483647 - 1, 0}), GTS_NO_RANK);
    CHECK_INT_EQ(gts_partition_rank(&p, (int[]){0, -4}), 2);
    CHECK_INT_EQ(gts_partition_rank(&p, (int[]){2, 0}), GTS_NO_RANK);
}

static void test_bad_partitions(void)
{
    gts_partition p = {0};
    int64_t shape[2] = {3, 8};
    CHECK_FAILS(gts_partition_init(&p, 2, NULL, shape, (int[]){4, 1}, NULL, 4, ERR), GTS_EINVAL,
                "3 points along I cannot be split over 4 ranks");
    CHECK_FAILS(gts_partition_init(&p, 2, (gts_dim[]){GTS_DIM_I, GTS_DIM_I}, shape, NULL, NULL, 1,
                                   ERR),
                GTS_EINVAL, "labels");
    CHECK_FAILS(gts_partition_init(&p, 0, NULL, shape, NULL, NULL, 1, ERR), GTS_EINVAL, "ndim");
    CHECK_FAILS(gts_partition_init(&p, 2, NULL, shape, NULL, NULL, 0, ERR), GTS_EINVAL,
                "nranks");
    CHECK_INT_EQ(p.ndim, 0); /* untouched on failure */
    /* labels other than I and J: a partition of K, and of a data dimension */
    int64_t k[1] = {80};
    if (CHECK_OK(gts_partition_init(&p, 1, (gts_dim[]){GTS_DIM_K}, k, NULL, NULL, 4, ERR)))
        CHECK(p.labels[0] == GTS_DIM_K && p.nprocs[0] == 4);
}

int main(void)
{
    test_process_grid();
    test_blocks();
    test_neighbors();
    test_bad_partitions();
    return check_summary("partition");
}
