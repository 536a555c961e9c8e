/* Halo plans, checked by running a whole exchange in one process: every
 * rank's fields are made, each message packed by its sender and unpacked
 * by the receiver that the tags name, and then every halo point must hold
 * the value of the global field at its (wrapped) global index. */
#include <stdlib.h>

#include "check.h"
#include "storage_helpers.h"

#include "gtstore/halo_plan.h"

enum { MAX_RANKS = 8, MAX_FIELDS = 3 };

/* What one exchange test sets up. */
typedef struct scenario {
    const char *name;
    int pdim;                  /* split dimensions: I, or I and J */
    int64_t global[2];         /* I, J */
    int nprocs[2];
    bool periodic[2];
    int nfields;
    gts_halo halo[MAX_FIELDS][2]; /* I, J halos per field */
    int64_t k;                 /* extent of an undivided K (0: none) */
    gts_halo khalo;
    bool fortran;              /* I contiguous rather than K */
} scenario;

/* The global field's value: a different number per field and point. */
static double reference(int f, const int64_t *global, int ndim)
{
    double v = (f + 1) * 1e6;
    for (int s = 0; s < ndim; ++s)
        v = v * 100 + (double)global[s];
    return v;
}

static const double UNSET = -1.0;

static int make_field(const scenario *sc, const gts_partition *p, int rank, int f, gts_storage *out)
{
    int64_t start[2], size[2];
    gts_partition_subdomain(p, rank, start, size);
    int ndim = 2 + (sc->k > 0);
    int64_t shape[3];
    gts_storage_spec spec;
    for (int d = 0; d < 2; ++d) /* an undivided J has one block: the whole extent */
        shape[d] = (d < sc->pdim ? size[d] : sc->global[d]) + sc->halo[f][d].lower +
                   sc->halo[f][d].upper;
    if (sc->k)
        shape[2] = sc->k + sc->khalo.lower + sc->khalo.upper;
    int rc = gts_storage_spec_init(&spec, ndim, shape, F8, ERR);
    if (rc)
        return rc;
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_I;
    spec.dims[1] = GTS_DIM_J;
    spec.dims[2] = GTS_DIM_K;
    spec.has_halo = true;
    spec.halo[0] = sc->halo[f][0];
    spec.halo[1] = sc->halo[f][1];
    spec.halo[2] = sc->khalo;
    spec.has_layout = true;
    if (sc->fortran)
        gts_layout_f(ndim, spec.layout);
    else
        gts_layout_c(ndim, spec.layout);
    return gts_storage_create(&spec, 0, out, ERR);
}

/* The global index of a local point along split dimension d, wrapped where
 * periodic; false where it lies outside a non-periodic domain. */
static bool global_index(const scenario *sc, const gts_partition *p, int rank, int f, int d,
                         int64_t local, int64_t *out)
{
    int64_t start[2], size[2];
    gts_partition_subdomain(p, rank, start, size);
    int64_t g = (d < sc->pdim ? start[d] : 0) + local - sc->halo[f][d].lower;
    int64_t n = sc->global[d];
    bool periodic = d < sc->pdim && sc->periodic[d];
    if (periodic)
        g = ((g % n) + n) % n;
    *out = g;
    return g >= 0 && g < n;
}

/* Sets the domain to the reference, the halo to UNSET; or (check) checks
 * every point: the reference where a global point exists, else UNSET. */
static int visit(const scenario *sc, const gts_partition *p, int rank, int f, gts_storage *g,
                 bool check)
{
    int bad = 0;
    int64_t idx[3] = {0, 0, 0}, glob[3];
    int64_t nk = g->ndim > 2 ? g->shape[2] : 1;
    for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
        for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
            for (idx[2] = 0; idx[2] < nk; ++idx[2]) {
                bool exists = true, in_domain = true;
                for (int d = 0; d < 2; ++d) {
                    exists = global_index(sc, p, rank, f, d, idx[d], &glob[d]) && exists;
                    in_domain = in_domain && idx[d] >= sc->halo[f][d].lower &&
                                idx[d] < g->shape[d] - sc->halo[f][d].upper;
                }
                glob[2] = idx[2];
                /* undivided J: its halo is not exchanged, only the split dims' */
                bool filled = exists && (sc->pdim == 2 || (idx[1] >= sc->halo[f][1].lower &&
                                                            idx[1] < g->shape[1] - sc->halo[f][1].upper));
                double expected = filled ? reference(f, glob, g->ndim) : UNSET;
                double *at = (double *)address(g, idx);
                if (!check)
                    *at = in_domain ? expected : UNSET;
                else if (*at != expected && bad++ < 3)
                    fprintf(stderr, "%s: rank %d field %d at (%lld, %lld, %lld): %g, expected %g\n",
                            sc->name, rank, f, (long long)idx[0], (long long)idx[1],
                            (long long)idx[2], *at, expected);
            }
    return bad;
}

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
    int nranks = sc->nprocs[0] * (sc->pdim > 1 ? sc->nprocs[1] : 1);
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

static const scenario scenarios[] = {
    {"2x2 open", 2, {8, 6}, {2, 2}, {false, false}, 1, {{{2, 2}, {2, 2}}}, 3, {0, 0}, false},
    {"2x2 periodic", 2, {8, 6}, {2, 2}, {true, true}, 1, {{{2, 2}, {1, 1}}}, 0, {0, 0}, false},
    {"2x3 uneven, periodic in J, I first", 2, {9, 10}, {2, 3}, {false, true}, 2,
     {{{1, 2}, {3, 0}}, {{0, 1}, {1, 1}}}, 4, {1, 2}, true},
    {"1x1 periodic: its own neighbour", 2, {5, 4}, {1, 1}, {true, true}, 1, {{{2, 1}, {1, 2}}},
     2, {0, 0}, false},
    {"2x1 periodic: one rank on both sides", 2, {6, 5}, {2, 1}, {true, true}, 2,
     {{{3, 3}, {2, 2}}, {{1, 0}, {0, 1}}}, 0, {0, 0}, true},
    {"4 in I only, J undivided", 1, {13, 4}, {4, 1}, {true, false}, 1, {{{3, 2}, {1, 1}}}, 2,
     {0, 0}, false},
    {"3x2 no halo in J", 2, {7, 7}, {3, 2}, {false, false}, 3,
     {{{1, 1}, {0, 0}}, {{2, 2}, {1, 1}}, {{0, 0}, {0, 0}}}, 0, {0, 0}, false},
};

static void test_plan_shape(void)
{
    /* 3x3 ranks, open: the centre has 8 neighbours, a corner 3; sizes per
       offset: an edge sends a strip, a corner a halo x halo block. */
    gts_partition p;
    int64_t global[2] = {9, 9};
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, global, (int[]){3, 3}, NULL, 9, ERR)))
        return;
    scenario sc = {"shape", 2, {9, 9}, {3, 3}, {false, false}, 1, {{{2, 1}, {1, 2}}}, 4,
                   {0, 0}, false};
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
                   false};
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

int main(void)
{
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; ++i)
        run_exchange(&scenarios[i]);
    test_plan_shape();
    test_bad_fields();
    return check_summary("halo_plan");
}
