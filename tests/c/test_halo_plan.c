/* Halo plans, checked by running a whole exchange in one process: every
 * rank's fields are made (halo_helpers.h), each message packed by its
 * sender and unpacked by the receiver that the tags name. */
#include <stdlib.h>

#include "halo_helpers.h"

#include "gtstore/halo_plan.h"

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

static void run_exchange(const scenario *sc)
{
    gts_partition p;
    int nranks = scenario_ranks(sc);
    if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs, sc->periodic,
                                     nranks, ERR)))
        return;
    gts_storage fields[MAX_RANKS][MAX_FIELDS];
    gts_halo_plan *plans[MAX_RANKS] = {0};
    for (int r = 0; r < nranks; ++r) {
        for (int f = 0; f < sc->nfields; ++f)
            if (CHECK_OK(make_field(sc, &p, r, f, &fields[r][f])))
                visit(sc, &p, r, f, &fields[r][f], false);
        CHECK_OK(gts_halo_plan_create(&p, r, sc->nfields, fields[r], &plans[r], ERR));
    }
    for (int r = 0; r < nranks; ++r)
        CHECK(gts_halo_plan_signature(plans[r]) == gts_halo_plan_signature(plans[0]));
    /* Twice: a second exchange over the same plan gives the same result. */
    for (int round = 0; round < 2; ++round)
        for (int r = 0; r < nranks; ++r)
            for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
                const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
                if (n->send_bytes == 0)
                    continue;
                int j = find_receiver(plans, n, r);
                if (!CHECK(j >= 0))
                    continue;
                CHECK_INT_EQ(gts_halo_plan_neighbor(plans[n->rank], j)->recv_bytes, n->send_bytes);
                char *message = malloc((size_t)n->send_bytes);
                CHECK_OK(gts_halo_plan_pack(plans[r], i, message, n->send_bytes, ERR));
                CHECK_OK(gts_halo_plan_unpack(plans[n->rank], j, message, n->send_bytes, ERR));
                free(message);
            }
    int bad = 0;
    for (int r = 0; r < nranks; ++r)
        for (int f = 0; f < sc->nfields; ++f)
            bad += visit(sc, &p, r, f, &fields[r][f], true);
    if (bad)
        fprintf(stderr, "%s: %d points wrong\n", sc->name, bad);
    CHECK(bad == 0);
    for (int r = 0; r < nranks; ++r) {
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

int main(void)
{
    for (size_t i = 0; i < NSCENARIOS; ++i)
        run_exchange(&scenarios[i]);
    test_plan_shape();
    test_bad_fields();
    test_device_packing_moves_only_the_message();
    return check_summary("halo_plan");
}
