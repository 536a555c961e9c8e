/* The layout of a halo plan's message blocks (gts_halo_plan_message_layout):
 * a table for a small plan, the same places as gts_halo_messages' own
 * blocks, and errors for bad arguments. */
#include "halo_helpers.h"

#include "gtstore/halo_messages.h"
#include "gtstore/halo_plan.h"

/* Every buffer of `m` lies at its block's start + the layout's offset. */
static void check_like_messages(const gts_halo_plan *plan, const int64_t *send_at,
                                const int64_t *recv_at)
{
    gts_halo_messages *m = NULL;
    if (!CHECK_OK(gts_halo_messages_create(plan, GTS_HALO_MEMORY_HOST, &m, ERR)))
        return;
    int n = gts_halo_plan_neighbor_count(plan);
    const char *send0 = (const char *)gts_halo_messages_send(m, 0)->data - send_at[0];
    const char *recv0 = (const char *)gts_halo_messages_recv(m, 0)->data - recv_at[0];
    for (int i = 0; i < n; ++i) {
        CHECK((const char *)gts_halo_messages_send(m, i)->data == send0 + send_at[i]);
        CHECK((const char *)gts_halo_messages_recv(m, i)->data == recv0 + recv_at[i]);
    }
    gts_halo_messages_destroy(m);
}

/* Rank 0 of 2 in I, periodic in J only (one rank there: its own
 * neighbour), halos I (1, 1), J (1, 2), 2 x 3 points of 8 bytes: two
 * neighbours are this rank itself (J -1 and +1), three are rank 1. */
static void test_table(void)
{
    gts_partition p;
    scenario sc = {"layout", 2, {4, 3}, {2, 1}, {false, true}, 1, {{{1, 1}, {1, 2}}}, 0,
                   {0, 0}, false, 0};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, sc.global, sc.nprocs, sc.periodic, 2, ERR)))
        return;
    gts_storage field;
    gts_halo_plan *plan = NULL;
    if (!CHECK_OK(make_field(&sc, &p, 0, 0, &field)) ||
        !CHECK_OK(gts_halo_plan_create(&p, 0, 1, &field, &plan, ERR)))
        return;
    enum { N = 5 };
    if (!CHECK_INT_EQ(gts_halo_plan_neighbor_count(plan), N))
        return;
    /* neighbours by offset (I, J): (0,-1) self, (0,1) self, (1,-1), (1,0),
       (1,1) rank 1 */
    static const int rank[N] = {0, 0, 1, 1, 1};
    static const int64_t send_bytes[N] = {2 * 2 * 8, 2 * 1 * 8, 1 * 2 * 8, 1 * 3 * 8, 1 * 1 * 8};
    static const int64_t recv_bytes[N] = {2 * 1 * 8, 2 * 2 * 8, 1 * 1 * 8, 1 * 3 * 8, 1 * 2 * 8};
    for (int i = 0; i < N; ++i) {
        const gts_halo_neighbor *nb = gts_halo_plan_neighbor(plan, i);
        CHECK_INT_EQ(nb->rank, rank[i]);
        CHECK_INT_EQ(nb->send_bytes, send_bytes[i]);
        CHECK_INT_EQ(nb->recv_bytes, recv_bytes[i]);
    }
    /* rank 1's three first, in neighbour order, then this rank's own two */
    static const int64_t send_expected[N] = {16 + 24 + 8, 16 + 24 + 8 + 32, 0, 16, 16 + 24};
    static const int64_t recv_expected[N] = {8 + 24 + 16, 8 + 24 + 16 + 16, 0, 8, 8 + 24};
    int64_t send_at[N], recv_at[N], travel = -1;
    CHECK_OK(gts_halo_plan_message_layout(plan, true, send_at, N, &travel, ERR));
    CHECK_INT_EQ(travel, 16 + 24 + 8);
    CHECK_OK(gts_halo_plan_message_layout(plan, false, recv_at, N, &travel, ERR));
    CHECK_INT_EQ(travel, 8 + 24 + 16);
    for (int i = 0; i < N; ++i) {
        CHECK_INT_EQ(send_at[i], send_expected[i]);
        CHECK_INT_EQ(recv_at[i], recv_expected[i]);
    }
    check_like_messages(plan, send_at, recv_at);
    /* bad arguments: refused, nothing written */
    int64_t untouched[N + 1] = {-7, -7, -7, -7, -7, -7};
    travel = -7;
    CHECK_FAILS(gts_halo_plan_message_layout(NULL, true, untouched, N, &travel, ERR), GTS_EINVAL,
                "plan: NULL");
    CHECK_FAILS(gts_halo_plan_message_layout(plan, true, NULL, N, &travel, ERR), GTS_EINVAL,
                "offsets: NULL");
    CHECK_FAILS(gts_halo_plan_message_layout(plan, true, untouched, N, NULL, ERR), GTS_EINVAL,
                "travel_bytes: NULL");
    CHECK_FAILS(gts_halo_plan_message_layout(plan, true, untouched, N - 1, &travel, ERR),
                GTS_EINVAL, "n: 4 entries for the plan's 5 neighbours");
    CHECK_FAILS(gts_halo_plan_message_layout(plan, false, untouched, N + 1, &travel, ERR),
                GTS_EINVAL, "n: 6 entries");
    for (int i = 0; i < N + 1; ++i)
        CHECK_INT_EQ(untouched[i], -7);
    CHECK_INT_EQ(travel, -7);
    gts_halo_plan_destroy(plan);
    gts_storage_release(&field);
}

/* A plan of each scenario (halo_helpers.h), every rank: the layout is
 * gts_halo_messages', the travelling messages come first and fill
 * travel_bytes, and every message is local or travels as
 * gts_halo_messages_local says. */
static void test_scenarios(void)
{
    for (size_t s = 0; s < NSCENARIOS; ++s) {
        const scenario *sc = &scenarios[s];
        if (sc->device) /* host messages only: the layout does not depend on memory */
            continue;
        gts_partition p;
        int nranks = scenario_ranks(sc);
        if (!CHECK_OK(gts_partition_init(&p, sc->pdim, NULL, sc->global, sc->nprocs, sc->periodic,
                                         nranks, ERR)))
            continue;
        for (int r = 0; r < nranks; ++r) {
            gts_storage fields[MAX_FIELDS];
            gts_halo_plan *plan = NULL;
            for (int f = 0; f < sc->nfields; ++f)
                CHECK_OK(make_field(sc, &p, r, f, &fields[f]));
            CHECK_OK(gts_halo_plan_create(&p, r, sc->nfields, fields, &plan, ERR));
            int n = gts_halo_plan_neighbor_count(plan);
            int64_t send_at[32], recv_at[32], send_travel, recv_travel;
            bool laid_out =
                CHECK(n <= 32) &&
                CHECK_OK(gts_halo_plan_message_layout(plan, true, send_at, n, &send_travel, ERR)) &&
                CHECK_OK(gts_halo_plan_message_layout(plan, false, recv_at, n, &recv_travel, ERR));
            if (laid_out) {
                check_like_messages(plan, send_at, recv_at);
                gts_halo_messages *m = NULL;
                CHECK_OK(gts_halo_messages_create(plan, GTS_HALO_MEMORY_HOST, &m, ERR));
                int64_t send_sum = 0, recv_sum = 0;
                for (int i = 0; m && i < n; ++i) {
                    const gts_halo_neighbor *nb = gts_halo_plan_neighbor(plan, i);
                    bool local = gts_halo_messages_local(m, i);
                    CHECK(local == (send_at[i] >= send_travel && recv_at[i] >= recv_travel));
                    CHECK(send_at[i] + nb->send_bytes <= gts_halo_plan_send_bytes(plan));
                    CHECK(recv_at[i] + nb->recv_bytes <= gts_halo_plan_recv_bytes(plan));
                    send_sum += local ? 0 : nb->send_bytes;
                    recv_sum += local ? 0 : nb->recv_bytes;
                }
                CHECK_INT_EQ(send_travel, send_sum);
                CHECK_INT_EQ(recv_travel, recv_sum);
                gts_halo_messages_destroy(m);
            }
            gts_halo_plan_destroy(plan);
            for (int f = 0; f < sc->nfields; ++f)
                gts_storage_release(&fields[f]);
        }
    }
}

int main(void)
{
    test_table();
    test_scenarios();
    return check_summary("halo_layout");
}
