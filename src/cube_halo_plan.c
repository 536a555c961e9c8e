/* Halo plans on the cubed sphere (gtstore/cube_halo_plan.h): each piece
 * of gtstore/cube_halo.h becomes one region per field in the message to or
 * from its rank. */
#include "gtstore/cube_halo_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/cube_halo.h"
#include "halo_region.h"
#include "storage_private.h"

typedef gts__halo_region region;

/* What the plan needs to know of the fields, decided once. */
typedef struct setup {
    const gts_cube_partition *p;
    int rank, nfields;
    const gts_storage *fields;
    int64_t halo;            /* on every side of I and J */
    int64_t start[2];        /* the subdomain's first cell */
    int split[2];            /* the storage dimensions of I and J (same in every field) */
    int *component;          /* per field: -1 scalar, 0 u, 1 v */
    int *partner;            /* per field: its pair's other component, or itself */
    int (*stagger)[2];       /* per field and axis: 0 cell centres, 1 faces */
} setup;

enum { NKINDS = 4 }; /* staggers: kind = x + 2 y */

static int kind(const int *stagger)
{
    return stagger[0] + 2 * stagger[1];
}

/* ---- checks --------------------------------------------------------------- */

static int split_dim(const gts_storage *g, gts_dim label)
{
    for (int s = 0; s < g->ndim; ++s)
        if (g->dims[s] == label)
            return s;
    return -1;
}

static int check_field(setup *st, int f, const int64_t *size, gts_error *err)
{
    const gts_storage *g = &st->fields[f];
    char who[32];
    snprintf(who, sizeof who, "fields[%d]", f);
    int rc = gts__storage_check(g, who, true, err);
    if (rc)
        return rc;
    if (g->readonly)
        return gts_error_set(err, GTS_EREADONLY, "fields[%d]: is read-only", f);
    static const gts_dim labels[2] = {GTS_DIM_I, GTS_DIM_J};
    for (int a = 0; a < 2; ++a) {
        int s = split_dim(g, labels[a]);
        if (s < 0)
            return gts_error_set(err, GTS_EINVAL, "fields[%d]: has no dimension %s", f,
                                 a ? "J" : "I");
        gts_halo h = g->halo[s];
        int64_t extent = g->shape[s] - h.lower - h.upper;
        if (extent != size[a] && extent != size[a] + 1)
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: its domain has %lld points along %s, this rank's "
                                 "subdomain %lld cells (or %lld faces; a field of another "
                                 "partition?)",
                                 f, (long long)extent, a ? "J" : "I", (long long)size[a],
                                 (long long)size[a] + 1);
        st->stagger[f][a] = extent != size[a]; /* one point more: the cells' faces */
        if (h.lower != st->halo || h.upper != st->halo)
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: its halo (%lld, %lld) along %s differs from "
                                 "fields[0]'s %lld on every side (the cube turns I into J)",
                                 f, (long long)h.lower, (long long)h.upper, a ? "J" : "I",
                                 (long long)st->halo);
        if (f > 0 && s != st->split[a])
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: its dimension %s is at position %d, fields[0]'s "
                                 "at %d", f, a ? "J" : "I", s, st->split[a]);
    }
    return 0;
}

/* Pairs the k-th U with the k-th V; both alike. */
static int pair_vectors(setup *st, const gts_cube_component *components, gts_error *err)
{
    for (int f = 0; f < st->nfields; ++f) {
        gts_cube_component c = components ? components[f] : GTS_CUBE_SCALAR;
        if (c != GTS_CUBE_SCALAR && c != GTS_CUBE_U && c != GTS_CUBE_V)
            return gts_error_set(err, GTS_EINVAL, "components[%d]: %d is no component", f,
                                 (int)c);
        st->component[f] = c == GTS_CUBE_SCALAR ? -1 : c == GTS_CUBE_U ? 0 : 1;
        st->partner[f] = f;
    }
    int next_v = 0;
    for (int f = 0; f < st->nfields; ++f) {
        if (st->component[f] != 0)
            continue;
        while (next_v < st->nfields && (!components || components[next_v] != GTS_CUBE_V))
            ++next_v;
        if (next_v == st->nfields)
            return gts_error_set(err, GTS_EINVAL, "components: fields[%d] is a U without a V",
                                 f);
        const gts_storage *u = &st->fields[f], *v = &st->fields[next_v];
        int lu[GTS_MAX_NDIM], lv[GTS_MAX_NDIM];
        gts_storage_layout(u, lu);
        gts_storage_layout(v, lv);
        bool alike = u->ndim == v->ndim && u->dtype.kind == v->dtype.kind &&
                     u->dtype.itemsize == v->dtype.itemsize &&
                     memcmp(lu, lv, (size_t)u->ndim * sizeof *lu) == 0;
        for (int s = 0; alike && s < u->ndim; ++s) /* I and J: checked by the staggers */
            alike = s == st->split[0] || s == st->split[1] || u->shape[s] == v->shape[s];
        if (!alike)
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d], fields[%d]: a vector's components differ in dtype, "
                                 "layout or undivided extents", f, next_v);
        /* a turn takes u's points to v's: v's faces are u's, axes swapped */
        if (st->stagger[next_v][0] != st->stagger[f][1] ||
            st->stagger[next_v][1] != st->stagger[f][0])
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d], fields[%d]: u on the faces of (%d, %d) needs v on "
                                 "those of (%d, %d), not (%d, %d) (an Arakawa C or D grid, or "
                                 "both on cell centres)",
                                 f, next_v, st->stagger[f][0], st->stagger[f][1],
                                 st->stagger[f][1], st->stagger[f][0], st->stagger[next_v][0],
                                 st->stagger[next_v][1]);
        if (u->dtype.kind == GTS_KIND_BOOL)
            return gts_error_set(err, GTS_EINVAL, "fields[%d]: a vector of booleans has no sign",
                                 f);
        st->partner[f] = next_v;
        st->partner[next_v] = f;
        ++next_v;
    }
    for (int f = 0; f < st->nfields; ++f) {
        if (st->component[f] == 1 && st->partner[f] == f)
            return gts_error_set(err, GTS_EINVAL, "components: fields[%d] is a V without a U", f);
        if (st->component[f] < 0 && st->stagger[f][0] != st->stagger[f][1])
            return gts_error_set(err, GTS_EINVAL,
                                 "fields[%d]: a scalar on the faces of one axis only would turn "
                                 "onto the other's (give it as a vector component)", f);
    }
    return 0;
}

/* ---- regions -------------------------------------------------------------- */

/* The receiver's packed strides of a piece's region of field g: in the
 * storage's layout order over the region's shape. */
static void packed_strides(const gts_storage *g, const int64_t *shape, int64_t *strides)
{
    int layout[GTS_MAX_NDIM];
    gts_storage_layout(g, layout);
    int64_t stride = g->dtype.itemsize;
    for (int rank = g->ndim - 1; rank >= 0; --rank)
        for (int s = 0; s < g->ndim; ++s)
            if (layout[s] == rank) {
                strides[s] = stride;
                stride *= shape[s];
            }
}

/* The region's shape: the piece along I and J (receiver axes), the rest
 * whole; returns its bytes. */
static int64_t piece_shape(const setup *st, const gts_storage *g, const int64_t *size,
                           int64_t *shape)
{
    int64_t bytes = g->dtype.itemsize;
    for (int s = 0; s < g->ndim; ++s) {
        shape[s] = s == st->split[0] ? size[0] : s == st->split[1] ? size[1] : g->shape[s];
        bytes *= shape[s];
    }
    return bytes;
}

/* Field f's region of a received piece: its cells of the halo. */
static void recv_region(const setup *st, const gts_cube_piece *c, int f, region *r)
{
    const gts_storage *g = &st->fields[f];
    r->field = f;
    r->negate = false;
    r->packed_offset = 0;
    r->bytes = piece_shape(st, g, c->size, r->shape);
    packed_strides(g, r->shape, r->packed_strides);
    r->offset = 0;
    for (int a = 0; a < 2; ++a)
        r->offset += (st->halo + c->start[a] - st->start[a]) * g->strides[st->split[a]];
}

/* Field f's region of a sent piece (the receiver's field f; the sender's
 * field of the component the turn brings there): the sender's cells,
 * walked in storage order, written where the receiver's order puts them. */
static void send_region(const setup *st, const gts_cube_piece *c, int f, region *r)
{
    int from_field = f;
    r->negate = false;
    if (st->component[f] >= 0) {
        int source[2], sign[2];
        gts_cube_vector_rule(c->rotations, source, sign);
        int wanted = source[st->component[f]];
        from_field = wanted == st->component[f] ? f : st->partner[f];
        r->negate = sign[st->component[f]] < 0;
    }
    const gts_storage *g = &st->fields[from_field];
    r->field = from_field;
    int64_t recv_shape[GTS_MAX_NDIM], recv_strides[GTS_MAX_NDIM];
    r->bytes = piece_shape(st, g, c->size, recv_shape);
    packed_strides(g, recv_shape, recv_strides);
    for (int s = 0; s < g->ndim; ++s) { /* undivided dimensions: as the receiver's */
        r->shape[s] = recv_shape[s];
        r->packed_strides[s] = recv_strides[s];
    }
    r->offset = 0;
    r->packed_offset = 0;
    for (int t = 0; t < 2; ++t) {      /* sender axis t moves along receiver axis a */
        int a = c->step[0][t] != 0 ? 0 : 1;
        int64_t sign = c->step[a][t], count = c->size[a];
        int64_t lowest = c->from[t] + (sign < 0 ? -(count - 1) : 0);
        int s = st->split[t];
        r->shape[s] = count;
        r->packed_strides[s] = sign * recv_strides[st->split[a]];
        if (sign < 0) /* the sender's lowest cell is the receiver's last along a */
            r->packed_offset += (count - 1) * recv_strides[st->split[a]];
        r->offset += (st->halo + lowest - st->start[t]) * g->strides[s];
    }
}

/* ---- the plan ------------------------------------------------------------- */

typedef struct pieces {
    gts_cube_piece *items;
    int count;
} pieces;

static int list_pieces(const setup *st, const int *stagger, int send, pieces *out,
                       gts_error *err)
{
    int rc = gts_cube_halo_pieces_staggered(st->p, st->rank, st->halo, stagger, send, NULL, 0,
                                            &out->count, err);
    if (rc)
        return rc;
    out->items = calloc((size_t)out->count + 1, sizeof *out->items);
    if (!out->items)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a cubed-sphere halo plan");
    return gts_cube_halo_pieces_staggered(st->p, st->rank, st->halo, stagger, send, out->items,
                                          out->count, &out->count, err);
}

/* Each stagger's pieces, sent and received, for the kinds the fields use. */
typedef struct all_pieces {
    pieces sent[NKINDS], received[NKINDS];
} all_pieces;

static int list_all(const setup *st, all_pieces *all, gts_error *err)
{
    bool used[NKINDS] = {false};
    for (int f = 0; f < st->nfields; ++f)
        used[kind(st->stagger[f])] = true;
    int rc = 0;
    for (int k = 0; k < NKINDS && !rc; ++k) {
        int stagger[2] = {k % 2, k / 2};
        if (used[k] && !(rc = list_pieces(st, stagger, 1, &all->sent[k], err)))
            rc = list_pieces(st, stagger, 0, &all->received[k], err);
    }
    return rc;
}

static void free_all(all_pieces *all)
{
    for (int k = 0; k < NKINDS; ++k) {
        free(all->sent[k].items);
        free(all->received[k].items);
    }
}

static int peer(const gts_cube_piece *c, int rank)
{
    return c->from_rank == rank ? c->to_rank : c->from_rank;
}

/* The regions with rank q one way: each field's pieces of its stagger. */
static int count_regions(const setup *st, const pieces *lists, int q)
{
    int n = 0;
    for (int f = 0; f < st->nfields; ++f) {
        const pieces *list = &lists[kind(st->stagger[f])];
        for (int i = 0; i < list->count; ++i)
            n += peer(&list->items[i], st->rank) == q;
    }
    return n;
}

/* The neighbour ranks, ascending, and each one's region counts. */
static int list_neighbors(const setup *st, const all_pieces *all, gts_halo_neighbor *neighbors,
                          int *nsend, int *nrecv)
{
    int n = 0;
    for (int q = 0; q < st->p->nranks; ++q) {
        int s = count_regions(st, all->sent, q), r = count_regions(st, all->received, q);
        if (s == 0 && r == 0)
            continue;
        neighbors[n] = (gts_halo_neighbor){.rank = q};
        nsend[n] = s;
        nrecv[n] = r;
        ++n;
    }
    return n;
}

/* A message: field by field, each field's pieces with that rank in its
 * stagger's list order (the same on both sides). */
static void fill_regions(gts_halo_plan *plan, const setup *st, const pieces *lists, bool send)
{
    for (int i = 0; i < gts_halo_plan_neighbor_count(plan); ++i) {
        int q = gts_halo_plan_neighbor(plan, i)->rank, k = 0;
        for (int f = 0; f < st->nfields; ++f) {
            const pieces *list = &lists[kind(st->stagger[f])];
            for (int j = 0; j < list->count; ++j) {
                const gts_cube_piece *c = &list->items[j];
                if (peer(c, st->rank) != q)
                    continue;
                region *r = gts__halo_plan_region_at(plan, send, i, k++);
                if (send)
                    send_region(st, c, f, r);
                else
                    recv_region(st, c, f, r);
            }
        }
    }
}

static uint64_t signature(const setup *st, bool *split)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = gts__halo_hash(h, 0x637562); /* "cub": no Cartesian plan hashes alike */
    h = gts__halo_hash(h, st->p->n);
    h = gts__halo_hash(h, st->p->layout[0]);
    h = gts__halo_hash(h, st->p->layout[1]);
    for (int f = 0; f < st->nfields; ++f) {
        h = gts__halo_hash(h, st->component[f]);
        h = gts__halo_hash(h, kind(st->stagger[f]));
        for (int a = 0; a < 2; ++a)
            split[f * GTS_MAX_NDIM + st->split[a]] = true;
    }
    return gts__halo_fields_hash(h, st->nfields, st->fields, split);
}

static int build(setup *st, gts_halo_plan **out, gts_error *err)
{
    all_pieces all = {0};
    int rc = list_all(st, &all, err), capacity = 1;
    for (int k = 0; k < NKINDS; ++k)
        capacity += all.sent[k].count + all.received[k].count;
    gts_halo_neighbor *neighbors = rc ? NULL : calloc((size_t)capacity, sizeof *neighbors);
    int *nsend = rc ? NULL : calloc((size_t)capacity, sizeof *nsend);
    int *nrecv = rc ? NULL : calloc((size_t)capacity, sizeof *nrecv);
    bool *split = rc ? NULL : calloc((size_t)st->nfields * GTS_MAX_NDIM, sizeof *split);
    if (!rc && (!neighbors || !nsend || !nrecv || !split))
        rc = gts_error_set(err, GTS_ENOMEM, "out of memory for a cubed-sphere halo plan");
    gts_halo_plan *plan = NULL;
    if (!rc) {
        int n = list_neighbors(st, &all, neighbors, nsend, nrecv);
        rc = gts__halo_plan_alloc(st->rank, st->nfields, st->fields, n, neighbors, nsend, nrecv,
                                  &plan, err);
    }
    if (!rc) {
        fill_regions(plan, st, all.sent, true);
        fill_regions(plan, st, all.received, false);
        rc = gts__halo_plan_complete(plan, signature(st, split), err);
    }
    free_all(&all);
    free(neighbors);
    free(nsend);
    free(nrecv);
    free(split);
    if (rc)
        gts_halo_plan_destroy(plan);
    else
        *out = plan;
    return rc;
}

int gts_cube_halo_plan_create(const gts_cube_partition *partition, int rank, int nfields,
                              const gts_storage *fields, const gts_cube_component *components,
                              gts_halo_plan **out, gts_error *err)
{
    if (!fields || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", fields ? "out" : "fields");
    int rc = gts_cube_partition_check(partition, err);
    if (rc)
        return rc;
    if (rank < 0 || rank >= partition->nranks)
        return gts_error_set(err, GTS_EINVAL, "rank: %d is outside [0, %d)", rank,
                             partition->nranks);
    if (nfields < 1)
        return gts_error_set(err, GTS_EINVAL, "nfields: %d is not positive", nfields);
    setup st = {.p = partition, .rank = rank, .nfields = nfields, .fields = fields};
    int64_t size[2];
    gts_cube_partition_subdomain(partition, rank, st.start, size);
    if ((rc = gts__storage_check(&fields[0], "fields[0]", true, err)))
        return rc;
    st.split[0] = split_dim(&fields[0], GTS_DIM_I);
    st.split[1] = split_dim(&fields[0], GTS_DIM_J);
    st.halo = st.split[0] >= 0 ? fields[0].halo[st.split[0]].lower : 0;
    st.stagger = calloc((size_t)nfields, sizeof *st.stagger);
    if (!st.stagger)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a cubed-sphere halo plan");
    for (int f = 0; f < nfields && !rc; ++f)
        rc = check_field(&st, f, size, err);
    st.component = rc ? NULL : calloc((size_t)nfields, sizeof *st.component);
    st.partner = rc ? NULL : calloc((size_t)nfields, sizeof *st.partner);
    if (!rc && (!st.component || !st.partner))
        rc = gts_error_set(err, GTS_ENOMEM, "out of memory for a cubed-sphere halo plan");
    if (!rc)
        rc = pair_vectors(&st, components, err);
    if (!rc)
        rc = build(&st, out, err);
    free(st.component);
    free(st.partner);
    free(st.stagger);
    return rc;
}
