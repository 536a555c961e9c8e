/* The halo exchange over MPI, run by tests/mpi/mpirun.sh on N ranks: the
 * scenarios of halo_helpers.h that have N ranks, exchanged twice (start,
 * then wait), fields in device memory only through pinned and through
 * device messages, and bad input failing on every rank alike, without a
 * hang. With an argument (`test_halo_exchange_mpi FAKE_CUDA_LIBRARY`):
 * fields of CUDA device memory instead, the fake driver of fake_cuda.c
 * standing in for CUDA. */
#define _POSIX_C_SOURCE 200809L /* setenv, nanosleep */
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "halo_helpers.h"

#include "gtstore/halo_exchange.h"

static int rank, size;

static void make_fields(const scenario *sc, const gts_partition *p, gts_storage *fields)
{
    for (int f = 0; f < sc->nfields; ++f)
        if (CHECK_OK(make_field(sc, p, rank, f, &fields[f])))
            visit(sc, p, rank, f, &fields[f], false);
}

static void release_fields(const scenario *sc, gts_storage *fields)
{
    for (int f = 0; f < sc->nfields; ++f)
        gts_storage_release(&fields[f]);
}

/* What one exchange cost on the emulated device: nothing allocated; for
 * fields all in device memory only, exactly the bytes of the messages that
 * travel across with pinned messages (none for the rank's own neighbours,
 * whose halos are copied on the device), none with device messages; for a
 * plan mixing device and host memory, the bytes of one kind of field
 * either way. */
static void check_costs(const scenario *sc, gts_halo_exchange *ex, gts_halo_device_aware aware)
{
    const gts_halo_messages *m = gts_halo_exchange_messages(ex);
    const gts_halo_plan *plan = gts_halo_exchange_plan(ex);
    gts_halo_memory expected = aware == GTS_HALO_AWARE_YES ? GTS_HALO_MEMORY_DEVICE
                                                           : GTS_HALO_MEMORY_PINNED;
    CHECK(gts_halo_messages_memory(m) == expected);
    gts_transfer_counts c;
    gts_pinned_counts pc;
    gts_device_emulated_reset_counts();
    CHECK_OK(gts_halo_exchange_run(ex, ERR));
    gts_device_emulated_counts(&c);
    gts_device_emulated_pinned_counts(&pc);
    CHECK_INT_EQ(c.allocs + pc.allocs + c.frees + pc.frees, 0);
    int64_t across = c.to_host_bytes + c.to_device_bytes, travel = 0;
    for (int i = 0; i < gts_halo_plan_neighbor_count(plan); ++i) {
        const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, i);
        bool local = gts_halo_messages_local(m, i);
        CHECK(local == (n->rank == rank)); /* every message to itself pairs */
        travel += local ? 0 : n->send_bytes + n->recv_bytes;
    }
    if (sc->device == 1)
        CHECK_INT_EQ(across, expected == GTS_HALO_MEMORY_DEVICE ? 0 : travel);
    else
        CHECK(travel == 0 ? across == 0 : across > 0 && across < travel);
}

static void run_scenario(const scenario *sc, gts_halo_device_aware aware)
{
    gts_partition p;
    if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs, sc->periodic,
                                     size, ERR)))
        return;
    gts_storage fields[MAX_FIELDS];
    make_fields(sc, &p, fields);
    gts_halo_exchange *ex = NULL;
    if (!CHECK_OK(gts_halo_exchange_create_aware(&p, MPI_COMM_WORLD, sc->nfields, fields, aware,
                                                 &ex, ERR)))
        return;
    bool on_device = sc->device == 1 || sc->device == 3;
    if (!on_device)
        CHECK(gts_halo_messages_memory(gts_halo_exchange_messages(ex)) == GTS_HALO_MEMORY_HOST);
    for (int round = 0; round < 2; ++round) {
        for (int f = 0; f < sc->nfields; ++f) /* halos back to UNSET: filled anew */
            visit(sc, &p, rank, f, &fields[f], false);
        CHECK_OK(gts_halo_exchange_start(ex, ERR));
        CHECK_FAILS(gts_halo_exchange_start(ex, ERR), GTS_EINVAL, "already started");
        CHECK_FAILS(gts_halo_exchange_run(ex, ERR), GTS_EINVAL, "already started");
        CHECK_OK(gts_halo_exchange_wait(ex, ERR));
        int bad = 0;
        for (int f = 0; f < sc->nfields; ++f)
            bad += visit(sc, &p, rank, f, &fields[f], true);
        CHECK_INT_EQ(bad, 0);
    }
    CHECK_FAILS(gts_halo_exchange_wait(ex, ERR), GTS_EINVAL, "not started");
    CHECK_OK(gts_halo_exchange_run(ex, ERR));
    if (on_device)
        check_costs(sc, ex, aware);
    gts_halo_exchange_destroy(ex);
    release_fields(sc, fields);
}

/* Exchanges in the stream order on the asynchronous emulated device
 * (gts_halo_exchange_start_on / wait_on): each round fills the fields with
 * junk, then copies their values in on a producer stream, exchanges on
 * another (or the same) stream and copies them out on a third, with no
 * synchronisation in between; the host checks the copies. A missing wait
 * (packing before the producer's copy, MPI before the packing, the
 * consumer before the unpacking) reads junk. */
static void run_on_streams(const scenario *sc, gts_halo_device_aware aware, gts_stream *s)
{
    gts_partition p;
    if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs, sc->periodic,
                                     size, ERR)))
        return;
    /* the domain's reference and UNSET halos, in device memory only: the
     * producer's copy out of them is queued like any device work */
    gts_storage fields[MAX_FIELDS], on_host[MAX_FIELDS], values[MAX_FIELDS];
    scenario host_scenario = *sc;
    host_scenario.device = 0;
    make_fields(&host_scenario, &p, on_host);
    for (int f = 0; f < sc->nfields; ++f)
        CHECK_OK(gts_storage_copy_to(gts_device_emulated(), &on_host[f], &values[f], ERR));
    release_fields(sc, on_host);
    for (int f = 0; f < sc->nfields; ++f)
        CHECK_OK(make_field(sc, &p, rank, f, &fields[f]));
    gts_halo_exchange *ex = NULL;
    if (!CHECK_OK(gts_halo_exchange_create_aware(&p, MPI_COMM_WORLD, sc->nfields, fields, aware,
                                                 &ex, ERR)))
        return;
    const double junk = 7.0;
    for (int round = 0; round < 6; ++round) {
        gts_stream producer = s[round % 3], exchange = s[(round / 3 + round) % 3],
                   consumer = s[(round + 2) % 3];
        for (int f = 0; f < sc->nfields; ++f) {
            for (int n = 0; n < 4; ++n)
                CHECK_OK(gts_storage_fill_item_on(&fields[f], &junk, producer, ERR));
            CHECK_OK(gts_storage_assign_on(&fields[f], &values[f], producer, ERR));
        }
        CHECK_OK(gts_halo_exchange_start_on(ex, exchange, ERR));
        CHECK_OK(gts_halo_exchange_wait_on(ex, exchange, ERR));
        int bad = 0;
        for (int f = 0; f < sc->nfields; ++f) {
            gts_storage copy, host;
            if (!CHECK_OK(gts_storage_copy_on(&fields[f], consumer, &copy, ERR)))
                continue;
            if (CHECK_OK(gts_storage_copy_to(gts_device_host(), &copy, &host, ERR))) {
                bad += visit(sc, &p, rank, f, &host, true);
                gts_storage_release(&host);
            }
            gts_storage_release(&copy);
        }
        CHECK_INT_EQ(bad, 0);
    }
    gts_halo_exchange_destroy(ex);
    release_fields(sc, fields);
    release_fields(sc, values);
}

static void test_streams(void)
{
    const gts_device_ops *emulated = gts_device_emulated();
    gts_stream s[3];
    for (int i = 0; i < 3; ++i)
        CHECK_OK(gts_device_stream_create(emulated, &s[i], ERR));
    for (size_t i = 0; i < NSCENARIOS; ++i) {
        const scenario *sc = &scenarios[i];
        if (scenario_ranks(sc) != size || sc->device == 0)
            continue;
        run_on_streams(sc, GTS_HALO_AWARE_NO, s);
        if (sc->device != 2)
            run_on_streams(sc, GTS_HALO_AWARE_YES, s);
    }
    for (int i = 0; i < 3; ++i) {
        CHECK_OK(gts_device_synchronize(emulated, s[i], ERR));
        gts_device_stream_destroy(emulated, s[i]);
    }
}

/* Fields that do not fit on one rank, or differ between ranks: an error on
 * every rank (each returns, none hangs). */
static void test_bad_input(void)
{
    scenario sc = {"bad", 2, {8, 8}, {size, 1}, {true, true}, 1, {{{1, 1}, {1, 1}}}, 2,
                   {0, 0}, false, 0};
    gts_partition p;
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, sc.global, sc.nprocs, sc.periodic, size, ERR)))
        return;
    gts_storage field;
    gts_halo_exchange *ex = NULL;
    scenario other = sc;
    other.halo[0][1] = (gts_halo){2, 2}; /* a wider J halo on the last rank */
    if (size > 1 && CHECK_OK(make_field(rank == size - 1 ? &other : &sc, &p, rank, 0, &field))) {
        CHECK_FAILS(gts_halo_exchange_create(&p, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, "differ between ranks");
        gts_storage_release(&field);
    }
    other = sc;
    other.global[0] = 64; /* rank 0's field is made for another partition */
    gts_partition q;
    CHECK_OK(gts_partition_init(&q, 2, NULL, other.global, sc.nprocs, sc.periodic, size, ERR));
    if (CHECK_OK(make_field(rank == 0 ? &other : &sc, rank == 0 ? &q : &p, rank, 0, &field))) {
        CHECK_FAILS(gts_halo_exchange_create(&p, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, rank == 0 ? "a field of another partition" : "rank 0 could not");
        gts_storage_release(&field);
    }
    /* device messages asked for by the environment, badly, on rank 0 only */
    sc.device = 1;
    if (CHECK_OK(make_field(&sc, &p, rank, 0, &field))) {
        if (rank == 0)
            setenv("GTSTORE_DEVICE_AWARE_MPI", "true", 1);
        CHECK_FAILS(gts_halo_exchange_create(&p, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, rank == 0 ? "GTSTORE_DEVICE_AWARE_MPI" : "rank 0 could not");
        unsetenv("GTSTORE_DEVICE_AWARE_MPI");
        gts_storage_release(&field);
    }
    sc.device = 0;
    gts_partition wrong;
    CHECK_OK(gts_partition_init(&wrong, 2, NULL, sc.global, NULL, NULL, size + 1, ERR));
    if (CHECK_OK(make_field(&sc, &p, rank, 0, &field))) {
        CHECK_FAILS(gts_halo_exchange_create(&wrong, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, "comm");
        wrong = p; /* hand-made: no blocks along J (it divided by zero) */
        wrong.nprocs[1] = 0;
        CHECK_FAILS(gts_halo_exchange_create(&wrong, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, "nprocs[1] is 0");
        CHECK_FAILS(gts_halo_exchange_create(NULL, MPI_COMM_WORLD, 1, &field, &ex, ERR),
                    GTS_EINVAL, "partition: NULL");
        gts_storage_release(&field);
    }
    CHECK(ex == NULL);
}

/* gts_halo_exchange_destroy between start and wait (an error path's): it
 * completes the messages before their buffers go, and a later exchange on
 * the same fields works. Rank 0 destroys at once, the others start later,
 * so that their messages reach rank 0 after its destroy: MPI wrote them
 * into freed buffers, which AddressSanitizer reports (build/asan). */
static void test_destroy_while_started(void)
{
    const scenario *sc = NULL;
    for (size_t i = 0; i < NSCENARIOS && !sc; ++i)
        if (scenario_ranks(&scenarios[i]) == size && scenarios[i].device == 0)
            sc = &scenarios[i];
    gts_partition p;
    if (!CHECK(sc != NULL) || !CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global,
                                                           sc->nprocs, sc->periodic, size, ERR)))
        return;
    gts_storage fields[MAX_FIELDS];
    make_fields(sc, &p, fields);
    gts_halo_exchange *ex = NULL;
    if (CHECK_OK(gts_halo_exchange_create(&p, MPI_COMM_WORLD, sc->nfields, fields, &ex, ERR))) {
        if (rank != 0)
            nanosleep(&(struct timespec){0, 300000000}, NULL);
        CHECK_OK(gts_halo_exchange_start(ex, ERR));
        gts_halo_exchange_destroy(ex);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* late messages arrive while MPI progresses */
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (CHECK_OK(gts_halo_exchange_create(&p, MPI_COMM_WORLD, sc->nfields, fields, &ex, ERR))) {
        for (int f = 0; f < sc->nfields; ++f)
            visit(sc, &p, rank, f, &fields[f], false);
        CHECK_OK(gts_halo_exchange_run(ex, ERR));
        int bad = 0;
        for (int f = 0; f < sc->nfields; ++f)
            bad += visit(sc, &p, rank, f, &fields[f], true);
        CHECK_INT_EQ(bad, 0);
        gts_halo_exchange_destroy(ex);
    }
    release_fields(sc, fields);
}

/* The scenario's fields, those in device memory only moved to CUDA GPU
 * 0, or to GPU f % 2 for field f where `two_gpus`. */
static bool make_cuda_fields(const scenario *sc, const gts_partition *p, bool two_gpus,
                             gts_storage *fields)
{
    make_fields(sc, p, fields);
    for (int f = 0; f < sc->nfields; ++f) {
        const gts_device_ops *gpu;
        gts_storage moved;
        if (gts_buffer_device(fields[f].buffer) != gts_device_emulated())
            continue; /* host memory stays */
        if (!CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, two_gpus ? f % 2 : 0}, &gpu,
                                     ERR)) ||
            !CHECK_OK(gts_storage_copy_to(gpu, &fields[f], &moved, ERR)))
            return false;
        gts_storage_release(&fields[f]);
        gts_storage_move(&fields[f], &moved);
    }
    return true;
}

/* The halos after an exchange, read through a host copy. */
static int check_cuda_fields(const scenario *sc, const gts_partition *p, gts_storage *fields)
{
    int bad = 0;
    for (int f = 0; f < sc->nfields; ++f) {
        gts_storage host;
        if (CHECK_OK(gts_storage_copy_to(gts_device_host(), &fields[f], &host, ERR))) {
            bad += visit(sc, p, rank, f, &host, true);
            gts_storage_release(&host);
        }
    }
    return bad;
}

/* CUDA device memory over MPI (the fake driver): pinned messages in
 * cuda_host:0 give the reference halos; device messages are refused on
 * every rank, since this MPI reads no CUDA memory, even where one rank
 * alone asks for them; fields on two GPUs travel pinned. */
static int test_fake_cuda(void)
{
    int ran = 0;
    for (size_t i = 0; i < NSCENARIOS; ++i) {
        const scenario *sc = &scenarios[i];
        if (scenario_ranks(sc) != size || (sc->device != 1 && sc->device != 3))
            continue;
        ++ran;
        gts_partition p;
        if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs,
                                         sc->periodic, size, ERR)))
            continue;
        for (int two = 0; two < (sc->nfields > 1 && sc->device == 1 ? 2 : 1); ++two) {
            gts_storage fields[MAX_FIELDS];
            if (!make_cuda_fields(sc, &p, two, fields))
                continue;
            gts_halo_exchange *ex = NULL;
            CHECK_FAILS(gts_halo_exchange_create_aware(&p, MPI_COMM_WORLD, sc->nfields, fields,
                                                       rank == 0 ? GTS_HALO_AWARE_YES
                                                                 : GTS_HALO_AWARE_AUTO,
                                                       &ex, ERR),
                        GTS_EINVAL,
                        rank != 0 ? "rank 0 could not"
                        : two     ? "on cuda:0 and cuda:1"
                                  : "cannot read cuda:0 memory");
            if (CHECK_OK(gts_halo_exchange_create(&p, MPI_COMM_WORLD, sc->nfields, fields, &ex,
                                                  ERR))) {
                const gts_halo_messages *m = gts_halo_exchange_messages(ex);
                CHECK(gts_halo_messages_memory(m) == GTS_HALO_MEMORY_PINNED);
                CHECK_STR_EQ(gts_halo_messages_device(m)->name, "cuda_host:0");
                CHECK_OK(gts_halo_exchange_run(ex, ERR));
                CHECK_OK(gts_halo_exchange_run(ex, ERR));
                CHECK_INT_EQ(check_cuda_fields(sc, &p, fields), 0);
                gts_halo_exchange_destroy(ex);
            }
            release_fields(sc, fields);
        }
    }
    return ran;
}

int main(int argc, char **argv)
{
    if (argc > 1) { /* before anything loads the driver */
        setenv("GTSTORE_LIBCUDA", argv[1], 1);
        setenv("FAKE_CUDA", "devices=2", 1);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) {
        int ran = test_fake_cuda();
        CHECK(ran > 0);
        int failures = check_failures, total;
        MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("halo_exchange_mpi (fake CUDA) on %d ranks: %d scenarios, %d checks per "
                   "rank, %d failed\n", size, ran, check_count, total);
        MPI_Finalize();
        return total ? 1 : 0;
    }
    int ran = 0;
    for (size_t i = 0; i < NSCENARIOS; ++i)
        if (scenario_ranks(&scenarios[i]) == size) {
            const scenario *sc = &scenarios[i];
            run_scenario(sc, GTS_HALO_AWARE_AUTO);
            if (sc->device == 1 || sc->device == 3) { /* device memory only: both ways */
                run_scenario(sc, GTS_HALO_AWARE_NO);
                run_scenario(sc, GTS_HALO_AWARE_YES);
            }
            ++ran;
        }
    CHECK(ran > 0); /* every rank count the tests run on has scenarios */
    test_bad_input();
    test_destroy_while_started();
    test_streams();
    /* this Open MPI (the wheel's) reads no device memory; a CUDA-aware one
       would say GTS_DL_CUDA */
    int32_t reads = gts_halo_exchange_mpi_reads();
    CHECK(reads == 0 || reads == GTS_DL_CUDA);
    if (rank == 0)
        printf("this MPI reads device memory of type %d (0: none)\n", (int)reads);
    int failures = check_failures, total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("halo_exchange_mpi on %d ranks: %d scenarios, %d checks per rank, %d failed\n",
               size, ran, check_count, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
