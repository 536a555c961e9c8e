/* A halo exchange of a 2-d float64 field over MPI, on any number of ranks:
 *
 *   tests/mpi/mpirun.sh 4 60 build/release/examples/halo_exchange_mpi
 *
 *   1. split a 24 x 18 domain over the ranks (process grid chosen as
 *      MPI_Dims_create does), periodic in I, not in J;
 *   2. create this rank's storage: its subdomain with a halo of 2 points;
 *   3. write each domain point's global index, i * 100 + j, and -1 into
 *      the halo;
 *   4. make the exchange once, then start it, (compute the interior here),
 *      and wait;
 *   5. check that every halo point holds its neighbour's value (-1 past
 *      the non-periodic edges, corners included), and report.
 *
 * Build against an installed gtstore with
 *   mpicc $(pkg-config --cflags gtstore-mpi) halo_exchange_mpi.c $(pkg-config --libs gtstore-mpi) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "gtstore/gtstore.h"
#include "gtstore/halo_exchange.h"

static void check(int rc, const char *what, const gts_error *err)
{
    if (rc != GTS_OK) {
        fprintf(stderr, "%s failed (%s): %s\n", what, gts_status_name(rc), err->message);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static double *at(const gts_storage *s, int64_t i, int64_t j)
{
    return (double *)((char *)gts_storage_data(s) + i * s->strides[0] + j * s->strides[1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gts_error err;

    /* 1. the partition */
    gts_partition p;
    int64_t global[2] = {24, 18};
    bool periodic[2] = {true, false};
    check(gts_partition_init(&p, 2, NULL, global, NULL, periodic, size, &err), "partition", &err);
    int64_t start[2], n[2];
    gts_partition_subdomain(&p, rank, start, n);

    /* 2. the storage: subdomain + halo 2 (labels I and J by default) */
    const int64_t h = 2;
    int64_t shape[2] = {n[0] + 2 * h, n[1] + 2 * h};
    gts_storage_spec spec;
    gts_storage u;
    check(gts_storage_spec_init(&spec, 2, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, &err), "spec",
          &err);
    spec.has_halo = true;
    spec.halo[0] = spec.halo[1] = (gts_halo){h, h};
    check(gts_storage_create(&spec, 0, &u, &err), "storage", &err);

    /* 3. the global index in the domain, -1 in the halo */
    for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j) {
            bool inside = i >= h && i < h + n[0] && j >= h && j < h + n[1];
            *at(&u, i, j) = inside ? (double)((start[0] + i - h) * 100 + start[1] + j - h) : -1;
        }

    /* 4. the exchange: made once (collective), then run */
    gts_halo_exchange *exchange;
    check(gts_halo_exchange_create(&p, MPI_COMM_WORLD, 1, &u, &exchange, &err), "exchange",
          &err);
    check(gts_halo_exchange_start(exchange, &err), "start", &err);
    /* ... compute on the interior here ... */
    check(gts_halo_exchange_wait(exchange, &err), "wait", &err);

    /* 5. every point against the global field */
    long wrong = 0;
    for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j) {
            int64_t gi = ((start[0] + i - h) % global[0] + global[0]) % global[0]; /* periodic */
            int64_t gj = start[1] + j - h;
            double expected = gj < 0 || gj >= global[1] ? -1 : (double)(gi * 100 + gj);
            wrong += *at(&u, i, j) != expected;
        }
    long total_wrong;
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const gts_halo_plan *plan = gts_halo_exchange_plan(exchange);
    if (rank == 0)
        printf("%d ranks (grid %d x %d): rank 0 exchanged %d messages, %lld bytes received; "
               "%ld wrong points\n",
               size, p.nprocs[0], p.nprocs[1], gts_halo_plan_neighbor_count(plan),
               (long long)gts_halo_plan_recv_bytes(plan), total_wrong);
    gts_halo_exchange_destroy(exchange);
    gts_storage_release(&u);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
