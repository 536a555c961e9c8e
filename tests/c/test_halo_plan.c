/* Halo plans, checked by running a whole exchange in one process: every
 * rank's fields are made (halo_helpers.h), each message packed by its
 * sender and unpacked by the receiver that the tags name. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "halo_helpers.h"

#include "gtstore/halo_messages.h"
#include "gtstore/halo_plan.h"

/* How run_exchange moves messages: buffers of the test's own, or the
 * plan's message buffers (gtstore/halo_messages.h) in one memory. */
enum { OWN_BUFFERS = -1 };

static int find_receiver(gts_halo_plan *const *plans, const gts_halo_neighbor *sent, int sender)
{
    const gts_halo_plan *to = plans[sent->rank];
    for (int j = 0; j < gts_halo_plan_neighbor_count(to); ++j) {
        const gts_halo_neighbor *n = gts_halo_plan_neighbor(to, j);
        if (n->rank == sender && n->recv_tag == sent->send_tag)
            return j;
    }
    return -1;
}

/* One message from rank r's neighbour i to its receiver: through a buffer
 * of the test's own, or from the sender's message buffer to the
 * receiver's, by their MPI addresses, as MPI would. */
static void deliver(gts_halo_plan *const *plans, gts_halo_messages *const *messages, int r, int i,
                    int j, int64_t bytes)
{
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
    if (!messages[r]) {
        char *message = malloc((size_t)bytes);
        CHECK_OK(gts_halo_plan_pack(plans[r], i, message, bytes, ERR));
        CHECK_OK(gts_halo_plan_unpack(plans[n->rank], j, message, bytes, ERR));
        free(message);
        return;
    }
    const gts_halo_message *send = gts_halo_messages_send(messages[r], i);
    const gts_halo_message *recv = gts_halo_messages_recv(messages[n->rank], j);
    CHECK_INT_EQ(send->bytes, bytes);
    CHECK_INT_EQ(recv->bytes, bytes);
    CHECK_OK(gts_halo_messages_pack(messages[r], i, ERR));
    memcpy(recv->mpi, send->mpi, (size_t)bytes);
    CHECK_OK(gts_halo_messages_unpack(messages[n->rank], j, ERR));
}

/* As an exchange moves them: each rank packs all messages at once (its
 * own delivered in passing), or (each) delivers its own and packs each
 * other one by itself; those travel; each rank unpacks all at once, or
 * each. */
static void deliver_all(gts_halo_plan *const *plans, gts_halo_messages *const *messages,
                        int nranks, bool each)
{
    for (int r = 0; r < nranks; ++r) {
        if (!each) {
            CHECK_OK(gts_halo_messages_pack_all(messages[r], ERR));
            continue;
        }
        CHECK_OK(gts_halo_messages_pack_local(messages[r], ERR));
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i)
            if (!gts_halo_messages_local(messages[r], i) &&
                gts_halo_plan_neighbor(plans[r], i)->send_bytes > 0)
                CHECK_OK(gts_halo_messages_pack(messages[r], i, ERR));
    }
    for (int r = 0; r < nranks; ++r)
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
            const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
            int j = find_receiver(plans, n, r);
            if (n->send_bytes == 0 || !CHECK(j >= 0))
                continue;
            bool local = gts_halo_messages_local(messages[r], i);
            CHECK(local == gts_halo_messages_local(messages[n->rank], j));
            if (!local)
                memcpy(gts_halo_messages_recv(messages[n->rank], j)->mpi,
                       gts_halo_messages_send(messages[r], i)->mpi, (size_t)n->send_bytes);
        }
    for (int r = 0; r < nranks; ++r) {
        if (!each) {
            CHECK_OK(gts_halo_messages_unpack_all(messages[r], ERR));
            continue;
        }
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i)
            if (!gts_halo_messages_local(messages[r], i) &&
                gts_halo_plan_neighbor(plans[r], i)->recv_bytes > 0)
                CHECK_OK(gts_halo_messages_unpack(messages[r], i, ERR));
    }
}

/* How run_exchange moves the messages (with the plan's message buffers). */
enum { ONE_BY_ONE, AT_ONCE, LOCAL_THEN_EACH };

static void run_exchange(const scenario *sc, int memory, int how)
{
    gts_partition p;
    int nranks = scenario_ranks(sc);
    if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs, sc->periodic,
                                     nranks, ERR)))
        return;
    gts_storage fields[MAX_RANKS][MAX_FIELDS];
    gts_halo_plan *plans[MAX_RANKS] = {0};
    gts_halo_messages *messages[MAX_RANKS] = {0};
    for (int r = 0; r < nranks; ++r) {
        for (int f = 0; f < sc->nfields; ++f)
            if (CHECK_OK(make_field(sc, &p, r, f, &fields[r][f])))
                visit(sc, &p, r, f, &fields[r][f], false);
        CHECK_OK(gts_halo_plan_create(&p, r, sc->nfields, fields[r], &plans[r], ERR));
        if (memory != OWN_BUFFERS &&
            CHECK_OK(gts_halo_messages_create(plans[r], memory, &messages[r], ERR)))
            CHECK((int)gts_halo_messages_memory(messages[r]) == memory);
    }
    for (int r = 0; r < nranks; ++r)
        CHECK(gts_halo_plan_signature(plans[r]) == gts_halo_plan_signature(plans[0]));
    /* Twice: a second exchange over the same plan gives the same result. */
    for (int round = 0; round < 2 && how != ONE_BY_ONE; ++round)
        deliver_all(plans, messages, nranks, how == LOCAL_THEN_EACH);
    for (int round = 0; round < 2 && how == ONE_BY_ONE; ++round)
        for (int r = 0; r < nranks; ++r)
            for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
                const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
                if (n->send_bytes == 0)
                    continue;
                int j = find_receiver(plans, n, r);
                if (!CHECK(j >= 0))
                    continue;
                CHECK_INT_EQ(gts_halo_plan_neighbor(plans[n->rank], j)->recv_bytes, n->send_bytes);
                deliver(plans, messages, r, i, j, n->send_bytes);
            }
    int bad = 0;
    for (int r = 0; r < nranks; ++r)
        for (int f = 0; f < sc->nfields; ++f)
            bad += visit(sc, &p, r, f, &fields[r][f], true);
    if (bad)
        fprintf(stderr, "%s (messages: %d, moved %d): %d points wrong\n", sc->name, memory,
                how, bad);
    CHECK(bad == 0);
    for (int r = 0; r < nranks; ++r) {
        gts_halo_messages_destroy(messages[r]);
        gts_halo_plan_destroy(plans[r]);
        for (int f = 0; f < sc->nfields; ++f)
            gts_storage_release(&fields[r][f]);
    }
}

static void test_plan_shape(void)
{
    /* 3x3 ranks, open: the centre has 8 neighbours, a corner 3; sizes per
       offset: an edge sends a strip, a corner a halo x halo block. */
    gts_partition p;
    int64_t global[2] = {9, 9};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){3, 3}, NULL, 9, ERR)))
        return;
    scenario sc = {"shape", 2, {9, 9}, {3, 3}, {false, false}, 1, {{{2, 1}, {1, 2}}}, 4,
                   {0, 0}, false, 0};
    gts_storage centre, corner;
    gts_halo_plan *pc = NULL, *pk = NULL;
    if (!CHECK_OK(make_field(&sc, &p, 4, 0, &centre)) || !CHECK_OK(make_field(&sc, &p, 0, 0, &corner)))
        return;
    CHECK_OK(gts_halo_plan_create(&p, 4, 1, &centre, &pc, ERR));
    CHECK_OK(gts_halo_plan_create(&p, 0, 1, &corner, &pk, ERR));
    CHECK_INT_EQ(gts_halo_plan_neighbor_count(pc), 8);
    CHECK_INT_EQ(gts_halo_plan_neighbor_count(pk), 3);
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(pc, 0); /* offset (-1, -1) */
    CHECK(n->offset[0] == -1 && n->offset[1] == -1 && n->rank == 0);
    CHECK_INT_EQ(n->send_tag, 0);
    CHECK_INT_EQ(n->recv_tag, 8);
    CHECK_INT_EQ(n->recv_bytes, 2 * 1 * 4 * 8); /* lower halos 2 (I) x 1 (J) x K */
    CHECK_INT_EQ(n->send_bytes, 1 * 2 * 4 * 8); /* upper halos 1 (I) x 2 (J) x K */
    n = gts_halo_plan_neighbor(pc, 1);          /* offset (-1, 0): a strip of 3 in J */
    CHECK_INT_EQ(n->recv_bytes, 2 * 3 * 4 * 8);
    int64_t sum = 0;
    for (int i = 0; i < 8; ++i)
        sum += gts_halo_plan_neighbor(pc, i)->recv_bytes;
    CHECK_INT_EQ(gts_halo_plan_recv_bytes(pc), sum);
    CHECK_INT_EQ(sum, ((3 + 3) * (3 + 3) - 9) * 4 * 8); /* the whole halo ring, nothing else */
    CHECK(gts_halo_plan_neighbor(pc, 8) == NULL);
    /* messages of the wrong size or index are refused, nothing written */
    char small[8];
    CHECK_FAILS(gts_halo_plan_pack(pc, 0, small, 8, ERR), GTS_EINVAL, "nbytes");
    CHECK_FAILS(gts_halo_plan_unpack(pc, 8, small, 8, ERR), GTS_EINVAL, "index");
    CHECK_FAILS(gts_halo_plan_pack(pc, 0, NULL, 64, ERR), GTS_EINVAL, "buffer");
    gts_halo_plan_destroy(pc);
    gts_halo_plan_destroy(pk);
    gts_storage_release(&centre);
    gts_storage_release(&corner);
}

static void test_bad_fields(void)
{
    gts_partition p;
    int64_t global[2] = {8, 6};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){4, 1}, (bool[]){false, true},
                                     4, ERR)))
        return;
    gts_halo_plan *plan = NULL;
    int64_t before = live_buffers();
    scenario sc = {"bad", 2, {8, 6}, {4, 1}, {false, true}, 1, {{{2, 2}, {1, 1}}}, 0, {0, 0},
                   false, 0};
    gts_storage ok, wide, other;
    if (!CHECK_OK(make_field(&sc, &p, 1, 0, &ok)))
        return;
    CHECK_FAILS(gts_halo_plan_create(&p, 4, 1, &ok, &plan, ERR), GTS_EINVAL, "rank");
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 0, &ok, &plan, ERR), GTS_EINVAL, "nfields");
    /* rank 0's subdomain is 2 wide in I as well: a field of rank 1 fits;
       made for another rank count (3 points), it does not */
    sc.global[0] = 12;
    gts_partition p3;
    CHECK_OK(gts_partition_init(&p3, 2, NULL, sc.global, (int[]){4, 1}, NULL, 4, ERR));
    if (CHECK_OK(make_field(&sc, &p3, 0, 0, &other))) {
        CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &other, &plan, ERR), GTS_EINVAL,
                    "fields[0]: its domain has 3 points along I, this rank's subdomain 2");
        gts_storage_release(&other);
    }
    /* a halo of 3 in I, but subdomains of 2 points */
    sc.global[0] = 8;
    sc.halo[0][0] = (gts_halo){1, 3};
    if (CHECK_OK(make_field(&sc, &p, 0, 0, &wide))) {
        gts_storage two[2];
        gts_storage_view(&ok, &two[0]);
        gts_storage_view(&wide, &two[1]);
        CHECK_FAILS(gts_halo_plan_create(&p, 0, 2, two, &plan, ERR), GTS_EINVAL,
                    "fields[1]: its halo (1, 3) along I is wider than the smallest subdomain");
        gts_storage_release(&two[0]);
        gts_storage_release(&two[1]);
        gts_storage_release(&wide);
    }
    /* a field without J; a read-only field */
    gts_storage flat;
    gts_storage_view(&ok, &flat);
    CHECK_OK(gts_storage_index(&flat, 1, 0, ERR));
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &flat, &plan, ERR), GTS_EINVAL,
                "fields[0]: has no dimension labelled J");
    gts_storage_release(&flat);
    gts_storage ro;
    gts_storage_view(&ok, &ro);
    ro.readonly = true;
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &ro, &plan, ERR), GTS_EREADONLY, "fields[0]");
    gts_storage_release(&ro);
    CHECK(plan == NULL);
    gts_storage_release(&ok);
    CHECK_INT_EQ(live_buffers(), before); /* nothing kept after a failure */
}

/* Public value structs a caller made by hand are checked on entry: a
 * partition with no blocks (it divided by zero), too many dimensions (it
 * indexed past its arrays) or a product of blocks other than its ranks;
 * a field with too many dimensions, no buffer, elements outside it, a
 * layout that is no permutation (packing misplaced values, or failed with
 * a message about its own strides) or an unsupported dtype. */
static void test_hand_made_structs(void)
{
    gts_partition good;
    if (!CHECK_OK(gts_partition_init(&good, 2, NULL, (const int64_t[]){8, 6}, (int[]){2, 1},
                                     NULL, 2, ERR)))
        return;
    scenario sc = {"hand-made", 2, {8, 6}, {2, 1}, {false, false}, 1, {{{1, 1}, {1, 1}}}, 0,
                   {0, 0}, false, 0};
    gts_storage field;
    if (!CHECK_OK(make_field(&sc, &good, 0, 0, &field)))
        return;
    int64_t before = live_buffers();
    gts_halo_plan *plan = NULL;
    CHECK_OK(gts_partition_check(&good, ERR));
    gts_partition p = good;
    p.nprocs[1] = 0;
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR), GTS_EINVAL, "nprocs[1] is 0");
    p = good;
    p.ndim = 9;
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR), GTS_EINVAL, "ndim: 9");
    p.ndim = 0;
    CHECK_FAILS(gts_partition_check(&p, ERR), GTS_EINVAL, "ndim: 0");
    p = good;
    p.nranks = 3;
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR), GTS_EINVAL,
                "nranks is 3, the product of nprocs 2");
    p = good;
    p.nprocs[0] = -2;
    p.nprocs[1] = -1;
    CHECK_FAILS(gts_partition_check(&p, ERR), GTS_EINVAL, "nprocs[0] is -2");
    p = good;
    p.nprocs[0] = 1 << 30;
    p.nprocs[1] = 1 << 30;
    p.nranks = 1 << 30; /* the product overflows int: never computed */
    p.global_shape[0] = p.global_shape[1] = (int64_t)1 << 40;
    CHECK_FAILS(gts_partition_check(&p, ERR), GTS_EINVAL, "nprocs[1]");
    p = good;
    p.labels[1] = p.labels[0];
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR), GTS_EINVAL, "labels");
    p = good;
    p.global_shape[0] = 1;
    CHECK_FAILS(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR), GTS_EINVAL,
                "global_shape[0] is 1");
    CHECK_FAILS(gts_halo_plan_create(NULL, 0, 1, &field, &plan, ERR), GTS_EINVAL,
                "partition: NULL");
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, NULL, &plan, ERR), GTS_EINVAL, "fields: NULL");
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &field, NULL, ERR), GTS_EINVAL, "out: NULL");
    /* hand-made fields: struct copies of a good one, changed */
    gts_storage bad = field;
    bad.ndim = 70;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "fields[0]: its dims are not valid");
    bad = field;
    bad.halo[0].upper = 99;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "fields[0]: dimension 0 has extent");
    bad = field;
    bad.buffer = NULL;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "fields[0]: has no buffer");
    bad = field;
    bad.strides[0] *= 1000; /* unpacking would write far past the buffer */
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "reach outside its buffer");
    bad = field;
    bad.offset = -8;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "reach outside its buffer");
    bad = field;
    bad.layout[0] = 1000000;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "fields[0]: layout (1000000, 1) is not a permutation of 0..1");
    bad.layout[0] = 1; /* a repeated rank */
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_EINVAL,
                "fields[0]: layout (1, 1)");
    bad = field;
    bad.dtype.kind = 'x';
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_ETYPE,
                "fields[0]: dtype: unsupported kind 'x' with itemsize 8");
    bad = field;
    bad.dtype.itemsize = 0;
    CHECK_FAILS(gts_halo_plan_create(&good, 0, 1, &bad, &plan, ERR), GTS_ETYPE,
                "fields[0]: dtype: unsupported kind 'f' with itemsize 0");
    CHECK(plan == NULL);
    CHECK_INT_EQ(live_buffers(), before); /* nothing kept after a failure */
    gts_storage_release(&field);
}

/* Device memory without a host side is packed on the device: a message
 * costs one strided copy on the device and one transfer of its own bytes
 * per field, never a copy of the whole allocation; the staging memory goes
 * with the plan. */
static void test_device_packing_moves_only_the_message(void)
{
    gts_partition p;
    int64_t global[2] = {8, 8};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){2, 2}, (bool[]){true, true},
                                     4, ERR)))
        return;
    scenario sc = {"counts", 2, {8, 8}, {2, 2}, {true, true}, 2, {{{2, 2}, {2, 2}}, {{1, 1}, {1, 1}}},
                   5, {0, 0}, false, 1};
    gts_transfer_counts before, after;
    gts_device_emulated_counts(&before);
    gts_storage fields[2];
    gts_halo_plan *plan = NULL;
    if (!CHECK_OK(make_field(&sc, &p, 0, 0, &fields[0])) ||
        !CHECK_OK(make_field(&sc, &p, 0, 1, &fields[1])) ||
        !CHECK_OK(gts_halo_plan_create(&p, 0, 2, fields, &plan, ERR)))
        return;
    gts_device_emulated_counts(&after);
    CHECK_INT_EQ(after.live_blocks, before.live_blocks + 4); /* 2 fields + 2 staging blocks */
    gts_device_emulated_reset_counts();
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, 1); /* offset (-1, 0): an edge */
    char *message = malloc((size_t)n->send_bytes);
    CHECK_OK(gts_halo_plan_pack(plan, 1, message, n->send_bytes, ERR));
    gts_device_emulated_counts(&after);
    CHECK_INT_EQ(after.copies, 2);
    CHECK_INT_EQ(after.to_host, 2);
    CHECK_INT_EQ(after.to_host_bytes, n->send_bytes);
    CHECK_INT_EQ(after.to_device, 0);
    gts_device_emulated_reset_counts();
    CHECK_OK(gts_halo_plan_unpack(plan, 1, message, n->recv_bytes, ERR));
    gts_device_emulated_counts(&after);
    CHECK_INT_EQ(after.to_device_bytes, n->recv_bytes);
    CHECK_INT_EQ(after.copies, 2);
    free(message);
    gts_halo_plan_destroy(plan);
    gts_storage_release(&fields[0]);
    gts_storage_release(&fields[1]);
    gts_device_emulated_counts(&after);
    CHECK_INT_EQ(after.live_blocks, before.live_blocks);
}

/* Which memory a plan's messages get, as asked and as detected. */
static void test_message_memory_choice(void)
{
    gts_partition p;
    int64_t global[2] = {8, 8};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){2, 2}, (bool[]){true, true},
                                     4, ERR)))
        return;
    scenario host_sc = {"host", 2, {8, 8}, {2, 2}, {true, true}, 1, {{{1, 1}, {1, 1}}}, 2,
                        {0, 0}, false, 0};
    scenario device_sc = host_sc, mirrored_sc = host_sc;
    device_sc.device = 1;
    mirrored_sc.device = 2;
    gts_storage host, device, mirrored;
    gts_halo_plan *hp = NULL, *dp = NULL, *mp = NULL;
    if (!CHECK_OK(make_field(&host_sc, &p, 0, 0, &host)) ||
        !CHECK_OK(make_field(&device_sc, &p, 0, 0, &device)) ||
        !CHECK_OK(make_field(&mirrored_sc, &p, 0, 0, &mirrored)))
        return;
    CHECK_OK(gts_halo_plan_create(&p, 0, 1, &host, &hp, ERR));
    CHECK_OK(gts_halo_plan_create(&p, 0, 1, &device, &dp, ERR));
    CHECK_OK(gts_halo_plan_create(&p, 0, 1, &mirrored, &mp, ERR));
    if (!hp || !dp || !mp)
        return;
    const gts_device_ops *gpus[2] = {NULL, NULL};
    CHECK_INT_EQ(gts_halo_plan_devices(hp, gpus, 2), 0);
    CHECK_INT_EQ(gts_halo_plan_devices(mp, gpus, 2), 0); /* a host side: packed there */
    CHECK_INT_EQ(gts_halo_plan_devices(dp, NULL, 0), 1);
    CHECK_INT_EQ(gts_halo_plan_devices(dp, gpus, 2), 1);
    CHECK(gpus[0] == gts_device_emulated() && gpus[1] == NULL);
    unsetenv("GTSTORE_DEVICE_AWARE_MPI");
    gts_halo_memory m;
    /* fields with a host side: host messages, whatever is asked */
    const gts_halo_device_aware all[] = {GTS_HALO_AWARE_AUTO, GTS_HALO_AWARE_NO,
                                         GTS_HALO_AWARE_YES};
    for (size_t a = 0; a < 3; ++a) {
        if (CHECK_OK(gts_halo_memory_choose(hp, all[a], GTS_DL_CUDA, &m, ERR)))
            CHECK(m == GTS_HALO_MEMORY_HOST);
        if (CHECK_OK(gts_halo_memory_choose(mp, all[a], 0, &m, ERR)))
            CHECK(m == GTS_HALO_MEMORY_HOST);
    }
    /* device memory only: detection never picks the emulated device */
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, GTS_DL_CUDA, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_NO, GTS_DL_EXT_DEV, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_YES, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_DEVICE);
    /* the environment decides for AUTO, not against an explicit choice */
    setenv("GTSTORE_DEVICE_AWARE_MPI", "1", 1);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_DEVICE);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_NO, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    setenv("GTSTORE_DEVICE_AWARE_MPI", "0", 1);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    setenv("GTSTORE_DEVICE_AWARE_MPI", "auto", 1);
    if (CHECK_OK(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, 0, &m, ERR)))
        CHECK(m == GTS_HALO_MEMORY_PINNED);
    setenv("GTSTORE_DEVICE_AWARE_MPI", "yes", 1);
    CHECK_FAILS(gts_halo_memory_choose(dp, GTS_HALO_AWARE_AUTO, 0, &m, ERR), GTS_EINVAL,
                "GTSTORE_DEVICE_AWARE_MPI: expected '1', '0' or 'auto', got 'yes'");
    unsetenv("GTSTORE_DEVICE_AWARE_MPI");
    CHECK_FAILS(gts_halo_memory_choose(dp, (gts_halo_device_aware)2, 0, &m, ERR), GTS_EINVAL,
                "device_aware: 2");
    CHECK_FAILS(gts_halo_memory_choose(NULL, GTS_HALO_AWARE_NO, 0, &m, ERR), GTS_EINVAL, "plan");
    /* buffers in a memory the plan cannot use */
    gts_halo_messages *msgs = NULL;
    CHECK_FAILS(gts_halo_messages_create(hp, GTS_HALO_MEMORY_PINNED, &msgs, ERR), GTS_EINVAL,
                "pinned messages, but no field of the plan is in device memory only");
    CHECK_FAILS(gts_halo_messages_create(hp, GTS_HALO_MEMORY_DEVICE, &msgs, ERR), GTS_EINVAL,
                "device messages");
    CHECK_FAILS(gts_halo_messages_create(hp, (gts_halo_memory)7, &msgs, ERR), GTS_EINVAL,
                "memory: 7");
    CHECK(msgs == NULL);
    /* a message in device memory for a plan without device fields */
    char buffer[64];
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(hp, 0);
    CHECK_FAILS(gts_halo_plan_pack_on(hp, 0, gts_device_emulated(), buffer, n->send_bytes, ERR),
                GTS_EINVAL, "messages in emulated memory need every field");
    CHECK_STR_EQ(gts_halo_memory_name(GTS_HALO_MEMORY_PINNED), "pinned");
    gts_halo_plan_destroy(hp);
    gts_halo_plan_destroy(dp);
    gts_halo_plan_destroy(mp);
    gts_storage_release(&host);
    gts_storage_release(&device);
    gts_storage_release(&mirrored);
}

/* The two ways of device memory only: pinned messages cost the message's
 * bytes across, once per field and message, in pinned buffers made once;
 * device messages cost no byte across, and no staging copy. */
static void test_message_memory_costs(void)
{
    gts_partition p;
    int64_t global[2] = {8, 8};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){2, 2}, (bool[]){true, true},
                                     4, ERR)))
        return;
    scenario sc = {"costs", 2, {8, 8}, {2, 2}, {true, true}, 2,
                   {{{2, 2}, {2, 2}}, {{1, 1}, {1, 1}}}, 5, {0, 0}, false, 1};
    gts_storage fields[2];
    gts_halo_plan *plan = NULL;
    if (!CHECK_OK(make_field(&sc, &p, 0, 0, &fields[0])) ||
        !CHECK_OK(make_field(&sc, &p, 0, 1, &fields[1])) ||
        !CHECK_OK(gts_halo_plan_create(&p, 0, 2, fields, &plan, ERR)))
        return;
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, 1); /* an edge */
    for (int memory = GTS_HALO_MEMORY_PINNED; memory <= GTS_HALO_MEMORY_DEVICE; ++memory) {
        gts_transfer_counts c;
        gts_pinned_counts pc, before;
        gts_device_emulated_counts(&c);
        gts_device_emulated_pinned_counts(&before);
        int64_t blocks = c.live_blocks;
        gts_halo_messages *m = NULL;
        if (!CHECK_OK(gts_halo_messages_create(plan, memory, &m, ERR)))
            continue;
        bool pinned = memory == GTS_HALO_MEMORY_PINNED;
        const gts_device_ops *pinned_memory = NULL;
        CHECK_OK(gts_device_pinned(gts_device_emulated(), &pinned_memory, ERR));
        CHECK(gts_halo_messages_device(m) == (pinned ? pinned_memory : gts_device_emulated()));
        gts_device_emulated_counts(&c);
        gts_device_emulated_pinned_counts(&pc);
        /* a send block and a receive block, in the chosen memory */
        CHECK_INT_EQ(pc.live_blocks - before.live_blocks, pinned ? 2 : 0);
        CHECK_INT_EQ(pc.live_bytes - before.live_bytes,
                     pinned ? gts_halo_plan_send_bytes(plan) + gts_halo_plan_recv_bytes(plan) : 0);
        /* in device memory: the two blocks, or (pinned) the device's staging
           blocks that mirror them, where every message is packed at once */
        CHECK_INT_EQ(c.live_blocks - blocks, 2);
        const gts_halo_message *send = gts_halo_messages_send(m, 1);
        if (pinned)
            CHECK(send->mpi == send->data);
        else
            CHECK(send->mpi == gts_device_emulated_host_address(send->data));
        CHECK(gts_halo_messages_send(m, -1) == NULL && gts_halo_messages_recv(m, 99) == NULL);
        CHECK_FAILS(gts_halo_messages_pack(m, 99, ERR), GTS_EINVAL, "index: 99");
        CHECK_FAILS(gts_halo_messages_unpack(m, -1, ERR), GTS_EINVAL, "index: -1");
        gts_device_emulated_reset_counts();
        CHECK_OK(gts_halo_messages_pack(m, 1, ERR));
        CHECK_OK(gts_halo_messages_unpack(m, 1, ERR));
        gts_device_emulated_counts(&c);
        gts_device_emulated_pinned_counts(&pc);
        CHECK_INT_EQ(c.to_host_bytes, pinned ? n->send_bytes : 0);
        CHECK_INT_EQ(c.to_device_bytes, pinned ? n->recv_bytes : 0);
        CHECK_INT_EQ(c.to_host + c.to_device, pinned ? 4 : 0); /* per field and direction */
        CHECK_INT_EQ(c.copies, 4); /* one strided copy per field and direction */
        CHECK_INT_EQ(c.allocs + pc.allocs, 0); /* nothing made per message */
        gts_halo_messages_destroy(m);
        gts_device_emulated_counts(&c);
        gts_device_emulated_pinned_counts(&pc);
        CHECK_INT_EQ(c.live_blocks, blocks);
        CHECK_INT_EQ(pc.live_blocks, before.live_blocks);
    }
    gts_halo_plan_destroy(plan);
    gts_storage_release(&fields[0]);
    gts_storage_release(&fields[1]);
}

int main(void)
{
    for (size_t i = 0; i < NSCENARIOS; ++i) {
        const scenario *sc = &scenarios[i];
        run_exchange(sc, OWN_BUFFERS, ONE_BY_ONE);
        for (int how = ONE_BY_ONE; how <= LOCAL_THEN_EACH; ++how) {
            if (sc->device == 1 || sc->device == 3) { /* fields in device memory only */
                run_exchange(sc, GTS_HALO_MEMORY_PINNED, how);
                run_exchange(sc, GTS_HALO_MEMORY_DEVICE, how);
            } else {
                run_exchange(sc, GTS_HALO_MEMORY_HOST, how);
            }
        }
    }
    test_message_memory_choice();
    test_message_memory_costs();
    test_plan_shape();
    test_bad_fields();
    test_hand_made_structs();
    test_device_packing_moves_only_the_message();
    return check_summary("halo_plan");
}
