/* Domain decomposition: process grids, blocks, ranks and neighbours; a
 * rank's storages: their halo and shape. */
#include "check.h"

#include <stdint.h>

#include "gtstore/partition.h"
#include "gtstore/partition_halo.h"

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

static bool shape_is(const int64_t *shape, int64_t a, int64_t b, int64_t c)
{
    return shape[0] == a && shape[1] == b && shape[2] == c;
}

/* A (10, 6) split over 3 x 1 ranks, J periodic, for storages of dims IJK:
 * blocks of 4, 3, 3 along I, J whole. One width goes on I and J, not K;
 * a halo of 4 along I is wider than the smallest block (3), along J
 * (one periodic block of 6) it fits; with no neighbours anything fits
 * that is not negative; no width is negative. */
static void test_storage_halo_and_shape(void)
{
    gts_partition p;
    const gts_dim dims[3] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K};
    gts_halo halo[3];
    int64_t shape[3];
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, (const int64_t[]){10, 6}, (const int[]){3, 1},
                                     (const bool[]){false, true}, 3, ERR)))
        return;
    CHECK_OK(gts_partition_halo(&p, 3, dims, 2, halo, ERR));
    CHECK(halo[0].lower == 2 && halo[0].upper == 2 && halo[1].lower == 2 && halo[2].upper == 0);
    CHECK_OK(gts_partition_check_halo(&p, 3, dims, halo, ERR));
    if (CHECK_OK(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                           shape, ERR)))
        CHECK(shape_is(shape, 4 + 4, 6 + 4, 5));
    if (CHECK_OK(gts_partition_local_shape(&p, 2, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                           shape, ERR)))
        CHECK(shape_is(shape, 3 + 4, 6 + 4, 5));
    /* the same for dims KJI: by label, not position */
    const gts_dim kji[3] = {GTS_DIM_K, GTS_DIM_J, GTS_DIM_I};
    CHECK_OK(gts_partition_halo(&p, 3, kji, 1, halo, ERR));
    CHECK(halo[0].lower == 0 && halo[2].lower == 1);
    if (CHECK_OK(gts_partition_local_shape(&p, 1, 3, kji, (const int64_t[]){5, 6, 10}, halo,
                                           shape, ERR)))
        CHECK(shape_is(shape, 5, 8, 5));
    /* widths: 3 fits I, 4 does not (either side); J's 6 fits 6; K is not split */
    CHECK(gts_partition_halo_fits(&p, 0, (gts_halo){3, 3}));
    CHECK(!gts_partition_halo_fits(&p, 0, (gts_halo){0, 4}));
    CHECK(gts_partition_halo_fits(&p, 1, (gts_halo){6, 6}));
    CHECK(!gts_partition_halo_fits(&p, 1, (gts_halo){7, 0}));
    /* a negative side fits nowhere: a storage smaller than its domain */
    CHECK(!gts_partition_halo_fits(&p, 0, (gts_halo){-2, -2}));
    CHECK(!gts_partition_halo_fits(&p, 1, (gts_halo){1, -1}));
    CHECK_FAILS(gts_partition_halo(&p, 3, dims, -2, halo, ERR), GTS_EINVAL,
                "halo: -2 is a negative width");
    CHECK(halo[0].lower == 0 && halo[2].lower == 1); /* untouched: KJI's above */
    CHECK_FAILS(gts_partition_check_halo(&p, 3, dims, (gts_halo[]){{-2, -2}, {-2, -2}, {0, 0}},
                                         ERR),
                GTS_EINVAL, "halo: (-2, -2) along I: a negative width");
    CHECK_FAILS(gts_partition_check_halo(&p, 3, dims, (gts_halo[]){{1, 1}, {1, 1}, {0, -1}},
                                         ERR),
                GTS_EINVAL, "halo: (0, -1) along K: a negative width"); /* not split: refused */
    gts_halo wide[3] = {{4, 1}, {1, 1}, {9, 9}};
    CHECK_FAILS(gts_partition_check_halo(&p, 3, dims, wide, ERR), GTS_EINVAL,
                "halo: (4, 1) along I is wider than the smallest subdomain (3 points), which "
                "must fill it");
    wide[0] = (gts_halo){1, 1};
    CHECK_OK(gts_partition_check_halo(&p, 3, dims, wide, ERR)); /* K's 9: not split */
    wide[1] = (gts_halo){0, 7};
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){10, 6, 5}, wide,
                                          shape, ERR),
                GTS_EINVAL, "halo: (0, 7) along J is wider than the smallest subdomain (6");
    /* one block, not periodic: no neighbours, any halo that is not negative */
    gts_partition one;
    if (CHECK_OK(gts_partition_init(&one, 1, NULL, (const int64_t[]){2}, NULL, NULL, 1, ERR))) {
        CHECK_OK(gts_partition_check_halo(&one, 1, dims, (gts_halo[]){{5, 5}}, ERR));
        CHECK(!gts_partition_halo_fits(&one, 0, (gts_halo){0, -1}));
    }
    /* refusals */
    halo[0] = halo[1] = halo[2] = (gts_halo){1, 1};
    CHECK_FAILS(gts_partition_local_shape(&p, 3, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                          shape, ERR),
                GTS_EINVAL, "rank: 3 is outside [0, 3)");
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 2, kji, (const int64_t[]){5, 6}, halo, shape,
                                          ERR),
                GTS_EINVAL, "dims: the partition splits I, which the dims lack");
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){11, 6, 5}, halo,
                                          shape, ERR),
                GTS_EINVAL, "global_shape: 11 points along I, which the partition splits as 10");
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){10, 6, -3}, halo,
                                          shape, ERR),
                GTS_EINVAL, "global_shape: -3 points along K: a negative extent");
    halo[2] = (gts_halo){-1, 0};
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                          shape, ERR),
                GTS_EINVAL, "halo: (-1, 0) along K: a negative width");
    halo[2] = (gts_halo){INT64_MAX - 5, 1};
    CHECK_FAILS(gts_partition_local_shape(&p, 0, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                          shape, ERR),
                GTS_EOVERFLOW, "exceeds");
    CHECK_FAILS(gts_partition_local_shape(NULL, 0, 3, dims, (const int64_t[]){10, 6, 5}, halo,
                                          shape, ERR),
                GTS_EINVAL, "NULL");
}

int main(void)
{
    test_process_grid();
    test_blocks();
    test_neighbors();
    test_bad_partitions();
    test_storage_halo_and_shape();
    return check_summary("partition");
}
