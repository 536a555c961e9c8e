/* The cubed sphere's halo exchange over MPI (gts_cube_halo_exchange_create)
 * on 6 ranks (one tile each) or 24 (2x2 per tile): a scalar and a vector
 * pair, start and wait, twice, every cell checked against the cube's wrap
 * (gts_cube_wrap, cell by cell) with the vector rule, the cube's corners
 * untouched; and bad input (one rank's U without its V) failing on every
 * rank. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "check.h"
#include "storage_helpers.h"

#include "gtstore/halo_exchange.h"

static int rank, size;

static double reference(int f, int tile, int64_t x, int64_t y, int64_t k)
{
    return ((((f + 1) * 10.0 + tile) * 100 + (double)x) * 100 + (double)y) * 10 + (double)k;
}

static int make(const gts_cube_partition *p, int64_t h, gts_storage *out)
{
    int64_t start[2], size2[2];
    gts_cube_partition_subdomain(p, rank, start, size2);
    int64_t shape[3] = {size2[0] + 2 * h, size2[1] + 2 * h, 3};
    gts_storage_spec spec;
    int rc = gts_storage_spec_init(&spec, 3, shape, F8, ERR);
    if (rc)
        return rc;
    spec.has_dims = spec.has_halo = true;
    spec.dims[0] = GTS_DIM_I, spec.dims[1] = GTS_DIM_J, spec.dims[2] = GTS_DIM_K;
    spec.halo[0] = spec.halo[1] = (gts_halo){h, h};
    spec.halo[2] = (gts_halo){0, 0};
    return gts_storage_create(&spec, 0, out, ERR);
}

/* Fills the domain (NAN in the halo), or counts the cells that differ from
 * the wrap's value (NAN at the cube's corners). */
static int visit(const gts_cube_partition *p, int64_t h, gts_storage *fields,
                 const gts_cube_component *components, bool check)
{
    int64_t start[2], n[2], idx[3];
    gts_cube_partition_subdomain(p, rank, start, n);
    int tile = rank / p->ranks_per_tile, bad = 0;
    for (int f = 0; f < 3; ++f)
        for (idx[0] = 0; idx[0] < fields[f].shape[0]; ++idx[0])
            for (idx[1] = 0; idx[1] < fields[f].shape[1]; ++idx[1])
                for (idx[2] = 0; idx[2] < 3; ++idx[2]) {
                    int64_t x = start[0] + idx[0] - h, y = start[1] + idx[1] - h, wx, wy;
                    bool domain = x >= start[0] && x < start[0] + n[0] && y >= start[1] &&
                                  y < start[1] + n[1];
                    int t, turns, source[2], sign[2];
                    double want = NAN;
                    if ((domain || check) &&
                        gts_cube_wrap(p, tile, x, y, &t, &wx, &wy, &turns, NULL)) {
                        int c = components[f] == GTS_CUBE_U ? 0 : 1; /* u: 0, v: 2 */
                        gts_cube_vector_rule(turns, source, sign);
                        want = components[f] == GTS_CUBE_SCALAR
                                   ? reference(f, t, wx, wy, idx[2])
                                   : sign[c] * reference(source[c] ? 2 : 0, t, wx, wy, idx[2]);
                    }
                    double *at = (double *)address(&fields[f], idx);
                    if (!check)
                        *at = want;
                    else if (!(*at == want || (isnan(*at) && isnan(want))))
                        ++bad;
                }
    return bad;
}

static void test_exchange(int64_t n, int64_t h)
{
    int side = size == 24 ? 2 : 1;
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, n, side, side, ERR)))
        return;
    gts_cube_component components[3] = {GTS_CUBE_U, GTS_CUBE_SCALAR, GTS_CUBE_V};
    gts_storage fields[3];
    for (int f = 0; f < 3; ++f)
        CHECK_OK(make(&p, h, &fields[f]));
    visit(&p, h, fields, components, false);
    gts_halo_exchange *ex = NULL;
    if (CHECK_OK(gts_cube_halo_exchange_create(&p, MPI_COMM_WORLD, 3, fields, components,
                                               GTS_HALO_AWARE_AUTO, &ex, ERR))) {
        for (int round = 0; round < 2; ++round) {
            CHECK_OK(gts_halo_exchange_start(ex, ERR));
            CHECK_OK(gts_halo_exchange_wait(ex, ERR));
        }
        const gts_halo_plan *plan = gts_halo_exchange_plan(ex);
        if (side == 1) /* four edges, one message each way, all three fields */
            CHECK_INT_EQ(gts_halo_plan_neighbor_count(plan), 4);
        CHECK_INT_EQ(visit(&p, h, fields, components, true), 0);
        gts_halo_exchange_destroy(ex);
    }
    /* one rank's U without its V: every rank fails, no hang */
    gts_cube_component lone[3] = {GTS_CUBE_U, GTS_CUBE_SCALAR, GTS_CUBE_SCALAR};
    ex = NULL;
    CHECK_FAILS(gts_cube_halo_exchange_create(&p, MPI_COMM_WORLD, 3, fields,
                                              rank == 1 ? lone : components,
                                              GTS_HALO_AWARE_AUTO, &ex, ERR),
                GTS_EINVAL, rank == 1 ? "without a V" : "rank 1");
    CHECK(ex == NULL);
    gts_cube_partition wrong;
    if (CHECK_OK(gts_cube_partition_init(&wrong, n, 1, side == 1 ? 2 : 1, ERR)))
        CHECK_FAILS(gts_cube_halo_exchange_create(&wrong, MPI_COMM_WORLD, 3, fields, NULL,
                                                  GTS_HALO_AWARE_AUTO, &ex, ERR),
                    GTS_EINVAL, "comm");
    for (int f = 0; f < 3; ++f)
        gts_storage_release(&fields[f]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size == 6 || size == 24) {
        test_exchange(8, 3);
        test_exchange(6, 2);
    }
    int failures = check_failures, total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("cube_exchange_mpi on %d ranks: %d checks per rank, %d failed%s\n", size,
               check_count, total, size == 6 || size == 24 ? "" : " (runs on 6 or 24 ranks)");
    MPI_Finalize();
    return total ? 1 : 0;
}
