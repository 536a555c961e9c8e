/* Partitions and halo plans: random domains, rank counts, process grids,
 * periodicity, fields (halos per side, an undivided K with its own halo,
 * any layout), and now and then one rank's field made for another
 * subdomain. Every rank's plan is made in this process; then
 * - a plan fails exactly when a field does not fit: a halo side wider than
 *   the smallest block where there are neighbours, or the perturbed field;
 * - otherwise every message is packed by its sender and unpacked by the
 *   receiver its tags name (same size on both sides), and every point of
 *   every field must then hold the global field's value at its wrapped
 *   global index, or -1 where no rank owns one. */
#include "fuzz_input.h"

#include "gtstore/halo_plan.h"

enum { MAX_RANKS = 8, MAX_FIELDS = 3 };

typedef struct setup {
    int pdim;          /* split dimensions: I, or I and J */
    int nfields;
    gts_halo halo[MAX_FIELDS][3];
    int64_t k;         /* undivided K extent (0: no K) */
    int layout[MAX_FIELDS][3];
    int bad_rank;      /* whose first field is one point too wide in I; -1: none */
} setup;

static const double UNSET = -1.0;

static double reference(int f, const int64_t *g)
{
    return (((double)f * 64 + (double)g[0]) * 64 + (double)g[1]) * 16 + (double)g[2];
}

/* Where point `idx` of a rank's field f lies globally (`start`: the rank's
 * subdomain); false where no rank owns it: past a non-periodic edge, or in
 * an undivided dimension's halo. */
static bool locate(const gts_partition *p, const setup *s, const int64_t *global,
                   const int64_t *start, int ndim, int f, const int64_t *idx, int64_t *g)
{
    bool owned = true;
    for (int d = 0; d < ndim; ++d) {
        int64_t n = d < 2 ? global[d] : s->k;
        g[d] = (d < p->ndim ? start[d] : 0) + idx[d] - s->halo[f][d].lower;
        if (d < p->ndim && p->periodic[d])
            g[d] = ((g[d] % n) + n) % n;
        owned = owned && g[d] >= 0 && g[d] < n;
    }
    return owned;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    setup s = {.pdim = (int)fuzz_range(&in, 1, 2), .bad_rank = -1};
    int64_t global[2];
    int grid[2];
    bool periodic[2];
    for (int d = 0; d < 2; ++d) {
        global[d] = fuzz_range(&in, 1, 20);
        grid[d] = (int)fuzz_range(&in, 0, 8);
        periodic[d] = fuzz_bool(&in);
    }
    int nranks = (int)fuzz_range(&in, 1, MAX_RANKS);
    gts_partition p;
    gts_error err;
    int rc = gts_partition_init(&p, s.pdim, NULL, global, grid, periodic, nranks, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    int64_t total = 1;
    for (int d = 0; d < p.ndim; ++d) {
        FUZZ_CHECK(p.nprocs[d] >= 1 && p.nprocs[d] <= p.global_shape[d]);
        total *= p.nprocs[d];
    }
    FUZZ_CHECK(total == nranks);
    s.nfields = (int)fuzz_range(&in, 1, MAX_FIELDS);
    s.k = fuzz_range(&in, 0, 3);
    int ndim = s.k ? 3 : 2;
    bool fits = true;
    for (int f = 0; f < s.nfields; ++f) {
        for (int d = 0; d < ndim; ++d) {
            s.halo[f][d].lower = fuzz_range(&in, 0, d < 2 ? 4 : 2);
            s.halo[f][d].upper = fuzz_range(&in, 0, d < 2 ? 4 : 2);
            if (d < p.ndim && (p.nprocs[d] > 1 || p.periodic[d]))
                fits = fits && s.halo[f][d].lower <= gts_partition_min_block(&p, d) &&
                       s.halo[f][d].upper <= gts_partition_min_block(&p, d);
        }
        fuzz_permutation(&in, ndim, s.layout[f]);
    }
    if (fuzz_u8(&in) == 0xff)
        s.bad_rank = (int)fuzz_range(&in, 0, nranks - 1);

    gts_storage fields[MAX_RANKS][MAX_FIELDS];
    gts_halo_plan *plans[MAX_RANKS] = {0};
    int64_t starts[MAX_RANKS][2], sizes[MAX_RANKS][2];
    bool all_made = true;
    for (int r = 0; r < nranks; ++r) {
        gts_partition_subdomain(&p, r, starts[r], sizes[r]);
        for (int f = 0; f < s.nfields; ++f) {
            int64_t shape[3];
            for (int d = 0; d < ndim; ++d) {
                int64_t n = d < p.ndim ? sizes[r][d] : d == 1 ? global[1] : s.k;
                shape[d] = n + s.halo[f][d].lower + s.halo[f][d].upper;
            }
            if (r == s.bad_rank && f == 0)
                shape[0] += 1;
            gts_storage_spec spec;
            FUZZ_CHECK(gts_storage_spec_init(&spec, ndim, shape,
                                             (gts_dtype){GTS_KIND_FLOAT, 8}, &err) == 0);
            spec.has_dims = spec.has_halo = spec.has_layout = true;
            for (int d = 0; d < ndim; ++d) {
                spec.dims[d] = GTS_DIM_I + d;
                spec.halo[d] = s.halo[f][d];
                spec.layout[d] = s.layout[f][d];
            }
            FUZZ_CHECK(gts_storage_create(&spec, 0, &fields[r][f], &err) == 0);
            /* the domain from the reference (with the local view of K and
               an undivided J), the halo UNSET */
            gts_storage *g = &fields[r][f];
            int64_t idx[3] = {0, 0, 0}, n2 = ndim > 2 ? g->shape[2] : 1;
            for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
                for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
                    for (idx[2] = 0; idx[2] < n2; ++idx[2]) {
                        bool domain = true;
                        int64_t gl[3] = {0, 0, 0};
                        for (int d = 0; d < ndim; ++d) {
                            gts_halo h = s.halo[f][d];
                            domain = domain && idx[d] >= h.lower &&
                                     idx[d] < g->shape[d] - h.upper;
                            gl[d] = (d < p.ndim ? starts[r][d] : 0) + idx[d] - h.lower;
                        }
                        char *at = (char *)gts_storage_data(g);
                        for (int d = 0; d < ndim; ++d)
                            at += idx[d] * g->strides[d];
                        double v = domain ? reference(f, gl) : UNSET;
                        memcpy(at, &v, sizeof v);
                    }
        }
        rc = gts_halo_plan_create(&p, r, s.nfields, fields[r], &plans[r], &err);
        bool should = fits && r != s.bad_rank;
        if (rc) {
            fuzz_check_error(rc, &err);
            FUZZ_CHECK(rc == GTS_EINVAL);
            plans[r] = NULL;
        }
        FUZZ_CHECK((rc == 0) == should);
        all_made = all_made && rc == 0;
    }

    if (all_made) {
        for (int r = 0; r < nranks; ++r) {
            const gts_halo_plan *plan = plans[r];
            FUZZ_CHECK(gts_halo_plan_signature(plan) == gts_halo_plan_signature(plans[0]));
            for (int i = 0; i < gts_halo_plan_neighbor_count(plan); ++i) {
                const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, i);
                FUZZ_CHECK(n->rank >= 0 && n->rank < nranks);
                FUZZ_CHECK(n->send_bytes > 0 || n->recv_bytes > 0);
                if (n->send_bytes == 0)
                    continue;
                int j = -1;
                for (int k = 0; k < gts_halo_plan_neighbor_count(plans[n->rank]); ++k) {
                    const gts_halo_neighbor *m = gts_halo_plan_neighbor(plans[n->rank], k);
                    if (m->rank == r && m->recv_tag == n->send_tag)
                        j = k;
                }
                FUZZ_CHECK(j >= 0);
                FUZZ_CHECK(gts_halo_plan_neighbor(plans[n->rank], j)->recv_bytes == n->send_bytes);
                char *message = malloc((size_t)n->send_bytes);
                FUZZ_CHECK(message);
                FUZZ_CHECK(gts_halo_plan_pack(plan, i, message, n->send_bytes, &err) == 0);
                FUZZ_CHECK(gts_halo_plan_unpack(plans[n->rank], j, message, n->send_bytes,
                                                &err) == 0);
                free(message);
            }
        }
        for (int r = 0; r < nranks; ++r)
            for (int f = 0; f < s.nfields; ++f) {
                const gts_storage *g = &fields[r][f];
                int64_t idx[3] = {0, 0, 0}, n2 = ndim > 2 ? g->shape[2] : 1;
                for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
                    for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
                        for (idx[2] = 0; idx[2] < n2; ++idx[2]) {
                            int64_t gl[3] = {0, 0, 0};
                            bool owned = locate(&p, &s, global, starts[r], ndim, f, idx, gl);
                            char *at = (char *)gts_storage_data(g);
                            for (int d = 0; d < ndim; ++d)
                                at += idx[d] * g->strides[d];
                            double v;
                            memcpy(&v, at, sizeof v);
                            FUZZ_CHECK(v == (owned ? reference(f, gl) : UNSET));
                        }
            }
    }
    for (int r = 0; r < nranks; ++r) {
        gts_halo_plan_destroy(plans[r]);
        for (int f = 0; f < s.nfields; ++f)
            gts_storage_release(&fields[r][f]);
    }
    return 0;
}
