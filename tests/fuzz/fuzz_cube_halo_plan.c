/* Cubed-sphere partitions and halo plans: random tile sizes, layouts
 * (square, rectangular, uneven), halos, K extents, storage layouts and
 * fields (scalars and vector pairs, and now and then a U without its V).
 * Every rank's plan is made in this process; then
 * - a partition or plan fails exactly when it must (more blocks than
 *   cells, a halo wider than the smallest block, unpaired components);
 * - otherwise every message is packed by its sender and unpacked by its
 *   receiver (same size on both sides), and every cell of every field must
 *   hold the global field at the cell gts_cube_wrap gives (vector
 *   components turned by gts_cube_vector_rule), the halo cells at the
 *   cube's corners what they held. */
#include "fuzz_input.h"

#include "gtstore/cube_halo_plan.h"

enum { MAX_FIELDS = 3, MAX_RANKS = 6 * 9 };

static const double UNSET = -0.5; /* no reference value, negated or not: those are integers */

static double reference(int f, int tile, int64_t x, int64_t y, int64_t k)
{
    return ((((double)f * 8 + tile) * 64 + (double)x) * 64 + (double)y) * 4 + (double)k;
}

typedef struct setup {
    int nfields;
    gts_cube_component components[MAX_FIELDS];
    int stagger[MAX_FIELDS][2]; /* on the cells' faces along x, y */
    int64_t halo, k;
    int layout[3];
} setup;

static int partner(const setup *s, int f)
{
    for (int g = 0; g < s->nfields; ++g)
        if (g != f && s->components[g] != GTS_CUBE_SCALAR &&
            s->components[g] != s->components[f])
            return g;
    return f;
}

/* The value cell (x, y, k) of field f on `tile` must hold, or UNSET. */
static double expected(const gts_cube_partition *p, const setup *s, int f, int tile, int64_t x,
                       int64_t y, int64_t k)
{
    int t, turns;
    int64_t wx, wy;
    if (!gts_cube_wrap_point(p, tile, x, y, s->stagger[f], &t, &wx, &wy, &turns, NULL))
        return UNSET;
    if (s->components[f] == GTS_CUBE_SCALAR)
        return reference(f, t, wx, wy, k);
    int c = s->components[f] == GTS_CUBE_U ? 0 : 1, source[2], sign[2];
    int fields[2] = {c == 0 ? f : partner(s, f), c == 1 ? f : partner(s, f)};
    gts_cube_vector_rule(turns, source, sign);
    return sign[c] * reference(fields[source[c]], t, wx, wy, k);
}

/* Writes the domain (and UNSET in the halo), or checks every cell. */
static void visit(const gts_cube_partition *p, const setup *s, int rank, int f, gts_storage *g,
                  bool check)
{
    int64_t start[2], size[2], idx[3];
    gts_cube_partition_subdomain(p, rank, start, size);
    for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
        for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
            for (idx[2] = 0; idx[2] < g->shape[2]; ++idx[2]) {
                int64_t x = start[0] + idx[0] - s->halo, y = start[1] + idx[1] - s->halo;
                bool domain = x >= start[0] && x < start[0] + size[0] + s->stagger[f][0] &&
                              y >= start[1] && y < start[1] + size[1] + s->stagger[f][1];
                int tile = rank / p->ranks_per_tile;
                /* the domain as this rank has it (its own tile's value on a
                   shared face); after the exchange the owner's, except at
                   a corner of three tiles, which keeps its own */
                double own = reference(f, tile, x, y, idx[2]);
                double want = check ? expected(p, s, f, tile, x, y, idx[2]) : domain ? own
                                                                                     : UNSET;
                if (check && domain && want == UNSET)
                    want = own;
                char *at = (char *)gts_storage_data(g);
                for (int d = 0; d < 3; ++d)
                    at += idx[d] * g->strides[d];
                if (check) {
                    double v;
                    memcpy(&v, at, sizeof v);
                    FUZZ_CHECK(v == want);
                } else {
                    memcpy(at, &want, sizeof want);
                }
            }
}

static void exchange(gts_halo_plan *const *plans, int nranks)
{
    gts_error err;
    for (int r = 0; r < nranks; ++r)
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
            const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
            FUZZ_CHECK(n->rank >= 0 && n->rank < nranks && n->rank != r);
            int j = -1;
            for (int k = 0; k < gts_halo_plan_neighbor_count(plans[n->rank]); ++k)
                if (gts_halo_plan_neighbor(plans[n->rank], k)->rank == r)
                    j = k;
            FUZZ_CHECK(j >= 0);
            FUZZ_CHECK(gts_halo_plan_neighbor(plans[n->rank], j)->recv_bytes == n->send_bytes);
            if (n->send_bytes == 0)
                continue;
            char *message = malloc((size_t)n->send_bytes);
            FUZZ_CHECK(message);
            FUZZ_CHECK(gts_halo_plan_pack(plans[r], i, message, n->send_bytes, &err) == 0);
            FUZZ_CHECK(gts_halo_plan_unpack(plans[n->rank], j, message, n->send_bytes, &err) ==
                       0);
            free(message);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    int64_t n = fuzz_range(&in, 0, 10);
    int rows = (int)fuzz_range(&in, 0, 3), columns = (int)fuzz_range(&in, 0, 3);
    gts_cube_partition p;
    gts_error err;
    int rc = gts_cube_partition_init(&p, n, rows, columns, &err);
    FUZZ_CHECK((rc == 0) == (n >= 1 && rows >= 1 && columns >= 1 && rows <= n && columns <= n));
    if (rc) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    setup s = {.nfields = (int)fuzz_range(&in, 1, MAX_FIELDS), .halo = fuzz_range(&in, 0, 4),
               .k = fuzz_range(&in, 1, 2)};
    int us = 0, vs = 0;
    for (int f = 0; f < s.nfields; ++f) {
        s.components[f] = (gts_cube_component)fuzz_range(&in, 0, 2);
        us += s.components[f] == GTS_CUBE_U;
        vs += s.components[f] == GTS_CUBE_V;
    }
    fuzz_permutation(&in, 3, s.layout);
    /* staggers: a scalar on centres or corners, a vector's u on any
       faces and its v on those of the other axes (C and D grids) */
    int first_u = -1, any_faces = 0;
    for (int f = 0; f < s.nfields; ++f)
        if (s.components[f] == GTS_CUBE_SCALAR) {
            s.stagger[f][0] = s.stagger[f][1] = fuzz_bool(&in);
        } else if (s.components[f] == GTS_CUBE_U && first_u < 0) {
            first_u = f;
            s.stagger[f][0] = fuzz_bool(&in);
            s.stagger[f][1] = fuzz_bool(&in);
        }
    for (int f = 0; f < s.nfields && first_u >= 0; ++f)
        if (s.components[f] != GTS_CUBE_SCALAR && f != first_u) {
            s.stagger[f][0] = s.stagger[first_u][1];
            s.stagger[f][1] = s.stagger[first_u][0];
        }
    for (int f = 0; f < s.nfields; ++f)
        any_faces |= s.stagger[f][0] | s.stagger[f][1];
    bool fits = s.halo <= gts_cube_partition_min_block(&p) - any_faces && us == vs;
    gts_storage fields[MAX_RANKS][MAX_FIELDS];
    gts_halo_plan *plans[MAX_RANKS] = {0};
    bool all_made = true;
    for (int r = 0; r < p.nranks; ++r) {
        int64_t start[2], sub[2];
        gts_cube_partition_subdomain(&p, r, start, sub);
        for (int f = 0; f < s.nfields; ++f) {
            int64_t shape[3] = {sub[0] + s.stagger[f][0] + 2 * s.halo,
                                sub[1] + s.stagger[f][1] + 2 * s.halo, s.k};
            gts_storage_spec spec;
            FUZZ_CHECK(gts_storage_spec_init(&spec, 3, shape, (gts_dtype){GTS_KIND_FLOAT, 8},
                                             &err) == 0);
            spec.has_dims = spec.has_halo = spec.has_layout = true;
            for (int d = 0; d < 3; ++d) {
                spec.dims[d] = GTS_DIM_I + d;
                spec.halo[d] = d < 2 ? (gts_halo){s.halo, s.halo} : (gts_halo){0, 0};
                spec.layout[d] = s.layout[d];
            }
            FUZZ_CHECK(gts_storage_create(&spec, 0, &fields[r][f], &err) == 0);
            visit(&p, &s, r, f, &fields[r][f], false);
        }
        rc = gts_cube_halo_plan_create(&p, r, s.nfields, fields[r], s.components, &plans[r],
                                       &err);
        if (rc) {
            fuzz_check_error(rc, &err);
            FUZZ_CHECK(rc == GTS_EINVAL);
            plans[r] = NULL;
        }
        FUZZ_CHECK((rc == 0) == fits);
        all_made = all_made && rc == 0;
    }
    if (all_made) {
        for (int r = 0; r < p.nranks; ++r)
            FUZZ_CHECK(gts_halo_plan_signature(plans[r]) == gts_halo_plan_signature(plans[0]));
        exchange(plans, p.nranks);
        for (int r = 0; r < p.nranks; ++r)
            for (int f = 0; f < s.nfields; ++f)
                visit(&p, &s, r, f, &fields[r][f], true);
    }
    for (int r = 0; r < p.nranks; ++r) {
        gts_halo_plan_destroy(plans[r]);
        for (int f = 0; f < s.nfields; ++f)
            gts_storage_release(&fields[r][f]);
    }
    return 0;
}
