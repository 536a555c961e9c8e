/* Cubed-sphere halo plans, checked by running whole exchanges in one
 * process: every rank's fields hold a global field of the six tiles in
 * their domain; after each message is packed by its sender and unpacked by
 * its receiver, every halo cell must hold the global field at the cell the
 * cube's edges wrap it to (gts_cube_wrap, cell by cell: no piece involved),
 * vector components turned as gts_cube_vector_rule says, and the cells at
 * the cube's corners what they held. Layouts 1x1, 2x2, 3x3, 2x3 and an
 * uneven one; C and Fortran orders; scalars and vector pairs; the plan's
 * own packing, the message buffers one by one and all at once; host and
 * (emulated) device memory, the messages in pinned or device memory (where
 * the device negates turned vector components: no byte crosses). */
#include <stdlib.h>

#include "check.h"
#include "storage_helpers.h"

#include "gtstore/cube_halo_plan.h"
#include "gtstore/halo_messages.h"

enum { MAX_FIELDS = 4 };

typedef struct scenario {
    const char *name;
    int64_t n;
    int rows, columns;
    int64_t halo, k;
    bool fortran;
    int device; /* 0 host memory, 1 (emulated) device memory only, 2 the same
                   with the messages in device memory too */
    int nfields;
    gts_cube_component components[MAX_FIELDS];
    int stagger[MAX_FIELDS][2]; /* per field: on the cells' faces along x, y */
} scenario;

static const double UNSET = -12345.0;

/* The global field f (each tile in its own frame). */
static double reference(int f, int tile, int64_t x, int64_t y, int64_t k)
{
    return ((((f + 1) * 10.0 + tile) * 100 + (double)x) * 100 + (double)y) * 100 + (double)k;
}

static int make_field(const scenario *sc, const gts_cube_partition *p, int rank, int f,
                      gts_storage *out)
{
    int64_t start[2], size[2];
    gts_cube_partition_subdomain(p, rank, start, size);
    int64_t shape[3] = {size[0] + sc->stagger[f][0] + 2 * sc->halo,
                        size[1] + sc->stagger[f][1] + 2 * sc->halo, sc->k};
    gts_storage_spec spec;
    int rc = gts_storage_spec_init(&spec, 3, shape, F8, ERR);
    if (rc)
        return rc;
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_I;
    spec.dims[1] = GTS_DIM_J;
    spec.dims[2] = GTS_DIM_K;
    spec.has_halo = true;
    spec.halo[0] = (gts_halo){sc->halo, sc->halo};
    spec.halo[1] = (gts_halo){sc->halo, sc->halo};
    spec.halo[2] = (gts_halo){0, 0};
    spec.has_layout = true;
    if (sc->fortran)
        gts_layout_f(3, spec.layout);
    else
        gts_layout_c(3, spec.layout);
    spec.managed = sc->device ? GTS_MANAGED_NONE : GTS_MANAGED_GT4PY;
    return gts_storage_create_on(sc->device ? gts_device_emulated() : NULL, &spec, 0, out, ERR);
}

/* The field of the other component of f's vector, or f. */
static int partner(const scenario *sc, int f)
{
    gts_cube_component want = sc->components[f] == GTS_CUBE_U ? GTS_CUBE_V : GTS_CUBE_U;
    int nth = 0;
    for (int g = 0; g < f; ++g)
        nth += sc->components[g] == sc->components[f];
    for (int g = 0; g < sc->nfields; ++g)
        if (sc->components[g] == want && nth-- == 0)
            return g;
    return f;
}

/* The expected value at cell (x, y) of `tile` for field f; false at a
 * corner of the cube. */
static bool expected(const scenario *sc, const gts_cube_partition *p, int f, int tile, int64_t x,
                     int64_t y, int64_t k, double *out)
{
    int t, turns;
    int64_t wx, wy;
    if (!gts_cube_wrap_point(p, tile, x, y, sc->stagger[f], &t, &wx, &wy, &turns, NULL))
        return false;
    if (sc->components[f] == GTS_CUBE_SCALAR) {
        *out = reference(f, t, wx, wy, k);
        return true;
    }
    int c = sc->components[f] == GTS_CUBE_U ? 0 : 1, source[2], sign[2];
    int fields[2] = {c == 0 ? f : partner(sc, f), c == 1 ? f : partner(sc, f)};
    gts_cube_vector_rule(turns, source, sign);
    *out = sign[c] * reference(fields[source[c]], t, wx, wy, k);
    return true;
}

/* Sets the domain to the reference and the halo to UNSET, or checks. */
static int visit(const scenario *sc, const gts_cube_partition *p, int rank, int f,
                 gts_storage *g, bool check)
{
    int64_t start[2], size[2];
    gts_cube_partition_subdomain(p, rank, start, size);
    int tile = rank / p->ranks_per_tile, bad = 0;
    int64_t idx[3];
    for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
        for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
            for (idx[2] = 0; idx[2] < g->shape[2]; ++idx[2]) {
                int64_t x = start[0] + idx[0] - sc->halo, y = start[1] + idx[1] - sc->halo;
                bool domain = idx[0] >= sc->halo &&
                              idx[0] < sc->halo + size[0] + sc->stagger[f][0] &&
                              idx[1] >= sc->halo &&
                              idx[1] < sc->halo + size[1] + sc->stagger[f][1];
                double want = UNSET;
                if (check && !expected(sc, p, f, tile, x, y, idx[2], &want))
                    /* no tile's: a cube corner; in the domain, a corner
                       point of three tiles, which keeps its own value */
                    want = domain ? reference(f, tile, x, y, idx[2]) : UNSET;
                /* the domain as this rank has it: its own tile's value on a
                   shared face too, which the exchange must overwrite with
                   the owner's where the face is the next tile's */
                if (!check && domain)
                    want = reference(f, tile, x, y, idx[2]);
                double *at = (double *)address(g, idx);
                if (!check)
                    *at = domain ? want : UNSET;
                else if (*at != want && bad++ < 3)
                    fprintf(stderr, "%s: rank %d field %d at (%lld, %lld, %lld): %g, expected "
                                    "%g\n", sc->name, rank, f, (long long)idx[0],
                            (long long)idx[1], (long long)idx[2], *at, want);
            }
    return bad;
}

static int find_receiver(gts_halo_plan *const *plans, int to, int from)
{
    for (int j = 0; j < gts_halo_plan_neighbor_count(plans[to]); ++j)
        if (gts_halo_plan_neighbor(plans[to], j)->rank == from)
            return j;
    return -1;
}

enum { OWN_BUFFERS, ONE_BY_ONE, AT_ONCE };

/* Neighbour i's message of rank r to rank n->rank's neighbour j, through
 * a buffer of the caller's in memory of `device` (NULL: host memory). */
static void deliver_own(gts_halo_plan *const *plans, const gts_device_ops *device, int r, int i,
                        int j)
{
    const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
    const gts_device_ops *memory = device ? device : gts_device_host();
    void *message = NULL;
    if (!CHECK_OK(gts_device_alloc(memory, n->send_bytes, 0, &message, ERR)))
        return;
    CHECK_OK(gts_halo_plan_pack_on(plans[r], i, device, message, n->send_bytes, ERR));
    CHECK_OK(gts_halo_plan_unpack_on(plans[n->rank], j, device, message, n->send_bytes, ERR));
    gts_device_free(memory, message, n->send_bytes);
}

/* Every message of every rank: packed, copied as MPI would, unpacked. */
static void deliver_all(gts_halo_plan *const *plans, gts_halo_messages *const *messages,
                        int nranks, int how, const gts_device_ops *device)
{
    for (int r = 0; r < nranks && how == AT_ONCE; ++r)
        CHECK_OK(gts_halo_messages_pack_all(messages[r], ERR));
    for (int r = 0; r < nranks; ++r)
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
            const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
            int j = find_receiver(plans, n->rank, r);
            if (!CHECK(j >= 0) || n->send_bytes == 0)
                continue;
            CHECK_INT_EQ(gts_halo_plan_neighbor(plans[n->rank], j)->recv_bytes, n->send_bytes);
            CHECK(n->send_tag == 0 && n->recv_tag == 0);
            if (how == OWN_BUFFERS) {
                deliver_own(plans, device, r, i, j);
                continue;
            }
            if (how == ONE_BY_ONE)
                CHECK_OK(gts_halo_messages_pack(messages[r], i, ERR));
            memcpy(gts_halo_messages_recv(messages[n->rank], j)->mpi,
                   gts_halo_messages_send(messages[r], i)->mpi, (size_t)n->send_bytes);
            if (how == ONE_BY_ONE)
                CHECK_OK(gts_halo_messages_unpack(messages[n->rank], j, ERR));
        }
    for (int r = 0; r < nranks && how == AT_ONCE; ++r)
        CHECK_OK(gts_halo_messages_unpack_all(messages[r], ERR));
}

static void run_exchange(const scenario *sc, int how)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, sc->n, sc->rows, sc->columns, ERR)))
        return;
    int nranks = p.nranks;
    gts_storage(*fields)[MAX_FIELDS] = calloc((size_t)nranks, sizeof *fields);
    gts_halo_plan **plans = calloc((size_t)nranks, sizeof *plans);
    gts_halo_messages **messages = calloc((size_t)nranks, sizeof *messages);
    for (int r = 0; r < nranks; ++r) {
        for (int f = 0; f < sc->nfields; ++f)
            if (CHECK_OK(make_field(sc, &p, r, f, &fields[r][f])))
                visit(sc, &p, r, f, &fields[r][f], false);
        CHECK_OK(gts_cube_halo_plan_create(&p, r, sc->nfields, fields[r], sc->components,
                                           &plans[r], ERR));
        gts_halo_memory memory = sc->device == 2 ? GTS_HALO_MEMORY_DEVICE
                                 : sc->device ? GTS_HALO_MEMORY_PINNED : GTS_HALO_MEMORY_HOST;
        if (how != OWN_BUFFERS)
            CHECK_OK(gts_halo_messages_create(plans[r], memory, &messages[r], ERR));
    }
    for (int r = 0; r < nranks; ++r)
        CHECK(gts_halo_plan_signature(plans[r]) == gts_halo_plan_signature(plans[0]));
    const gts_device_ops *device = sc->device == 2 ? gts_device_emulated() : NULL;
    gts_transfer_counts before, after;
    gts_device_emulated_counts(&before);
    for (int round = 0; round < 2; ++round) /* the same again over the same plan */
        deliver_all(plans, messages, nranks, how, device);
    gts_device_emulated_counts(&after);
    if (device) /* packed, negated and unpacked on the device: nothing crosses */
        CHECK(after.to_host == before.to_host && after.to_device == before.to_device);
    int bad = 0;
    for (int r = 0; r < nranks; ++r)
        for (int f = 0; f < sc->nfields; ++f)
            bad += visit(sc, &p, r, f, &fields[r][f], true);
    if (bad)
        fprintf(stderr, "%s (moved %d): %d points wrong\n", sc->name, how, bad);
    CHECK(bad == 0);
    for (int r = 0; r < nranks; ++r) {
        gts_halo_messages_destroy(messages[r]);
        gts_halo_plan_destroy(plans[r]);
        for (int f = 0; f < sc->nfields; ++f)
            gts_storage_release(&fields[r][f]);
    }
    free(fields);
    free(plans);
    free(messages);
}

static const scenario scenarios[] = {
    {"1x1 scalar", 6, 1, 1, 2, 3, false, 0, 1, {GTS_CUBE_SCALAR}, {{0}}},
    {"1x1 vector, I first", 6, 1, 1, 3, 2, true, 0, 2, {GTS_CUBE_U, GTS_CUBE_V}, {{0}}},
    {"2x2 scalar and vector", 8, 2, 2, 2, 2, false, 0, 3,
     {GTS_CUBE_V, GTS_CUBE_SCALAR, GTS_CUBE_U}, {{0}}},
    {"3x3 two vectors", 9, 3, 3, 3, 1, true, 0, 4,
     {GTS_CUBE_U, GTS_CUBE_U, GTS_CUBE_V, GTS_CUBE_V}, {{0}}},
    {"2x3 rectangular", 12, 2, 3, 3, 2, false, 0, 3,
     {GTS_CUBE_SCALAR, GTS_CUBE_U, GTS_CUBE_V}, {{0}}},
    {"2x3 uneven", 7, 2, 3, 2, 1, true, 0, 2, {GTS_CUBE_U, GTS_CUBE_V}, {{0}}},
    {"2x2 device memory", 6, 2, 2, 2, 2, false, 1, 3,
     {GTS_CUBE_U, GTS_CUBE_V, GTS_CUBE_SCALAR}, {{0}}},
    {"1x1 vectors, device messages", 6, 1, 1, 2, 2, true, 2, 3,
     {GTS_CUBE_U, GTS_CUBE_SCALAR, GTS_CUBE_V}, {{0}}},
    /* staggered: a D grid's wind (u on y faces, v on x faces), a C grid's,
       and a scalar on the cells' corners */
    {"1x1 D grid", 6, 1, 1, 2, 2, false, 0, 2, {GTS_CUBE_U, GTS_CUBE_V}, {{0, 1}, {1, 0}}},
    {"2x2 C grid, I first", 9, 2, 2, 3, 1, true, 0, 3,
     {GTS_CUBE_U, GTS_CUBE_V, GTS_CUBE_SCALAR}, {{1, 0}, {0, 1}, {0, 0}}},
    {"2x3 D grid and corners", 12, 2, 3, 2, 2, false, 0, 3,
     {GTS_CUBE_SCALAR, GTS_CUBE_U, GTS_CUBE_V}, {{1, 1}, {0, 1}, {1, 0}}},
    {"2x2 D grid, device memory", 8, 2, 2, 2, 1, false, 1, 2, {GTS_CUBE_U, GTS_CUBE_V},
     {{0, 1}, {1, 0}}},
    {"2x3 C grid, device messages", 12, 2, 3, 2, 1, false, 2, 3,
     {GTS_CUBE_V, GTS_CUBE_SCALAR, GTS_CUBE_U}, {{0, 1}, {0, 0}, {1, 0}}},
};

static void test_exchanges(void)
{
    for (size_t s = 0; s < sizeof scenarios / sizeof *scenarios; ++s)
        for (int how = OWN_BUFFERS; how <= AT_ONCE; ++how)
            run_exchange(&scenarios[s], how);
}

/* 1x1: four neighbours, one message each way, each of halo x n cells per
 * field, and the plans agree across ranks. */
static void test_plan_shape(void)
{
    scenario sc = {"shape", 6, 1, 1, 2, 1, false, 0, 2, {GTS_CUBE_U, GTS_CUBE_V}, {{0}}};
    gts_cube_partition p;
    gts_storage fields[2];
    gts_halo_plan *plan = NULL;
    if (!CHECK_OK(gts_cube_partition_init(&p, 6, 1, 1, ERR)))
        return;
    for (int f = 0; f < 2; ++f)
        CHECK_OK(make_field(&sc, &p, 0, f, &fields[f]));
    if (CHECK_OK(gts_cube_halo_plan_create(&p, 0, 2, fields, sc.components, &plan, ERR))) {
        CHECK_INT_EQ(gts_halo_plan_neighbor_count(plan), 4);
        static const int ranks[4] = {1, 2, 4, 5};
        for (int i = 0; i < 4; ++i) {
            const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, i);
            CHECK_INT_EQ(n->rank, ranks[i]);
            CHECK_INT_EQ(n->send_bytes, 2 * 2 * 6 * 8);
            CHECK_INT_EQ(n->recv_bytes, 2 * 2 * 6 * 8);
        }
        gts_halo_plan_destroy(plan);
    }
    /* errors */
    gts_cube_component lone_u[2] = {GTS_CUBE_U, GTS_CUBE_SCALAR};
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, fields, lone_u, &plan, ERR), GTS_EINVAL,
                "without a V");
    gts_cube_component lone_v[2] = {GTS_CUBE_SCALAR, GTS_CUBE_V};
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, fields, lone_v, &plan, ERR), GTS_EINVAL,
                "without a U");
    gts_cube_component bad[1] = {(gts_cube_component)7};
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 1, fields, bad, &plan, ERR), GTS_EINVAL,
                "components[0]");
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 6, 1, fields, NULL, &plan, ERR), GTS_EINVAL,
                "rank");
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 0, fields, NULL, &plan, ERR), GTS_EINVAL,
                "nfields");
    /* rank 1's subdomain is the same size: but a 2x2 partition's is not */
    gts_cube_partition four;
    if (CHECK_OK(gts_cube_partition_init(&four, 6, 2, 2, ERR)))
        CHECK_FAILS(gts_cube_halo_plan_create(&four, 0, 1, fields, NULL, &plan, ERR),
                    GTS_EINVAL, "subdomain");
    scenario wide = sc;
    wide.halo = 3;
    gts_storage other;
    if (CHECK_OK(make_field(&wide, &p, 0, 0, &other))) {
        gts_storage mixed[2] = {fields[0], other};
        CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, mixed, NULL, &plan, ERR), GTS_EINVAL,
                    "halo");
        gts_storage_release(&other);
    }
    scenario too_wide = sc;
    too_wide.halo = 7;
    if (CHECK_OK(make_field(&too_wide, &p, 0, 0, &other))) {
        CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 1, &other, NULL, &plan, ERR), GTS_EINVAL,
                    "halo");
        gts_storage_release(&other);
    }
    /* hand-made fields (struct copies, changed), checked as
       gts_halo_plan_create checks them, the first and any later one */
    gts_storage hand[2] = {fields[0], fields[1]};
    plan = NULL;
    hand[1].layout[0] = hand[1].layout[1];
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, hand, sc.components, &plan, ERR),
                GTS_EINVAL, "fields[1]: layout");
    hand[1] = fields[1];
    hand[0].dtype.kind = 'x';
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, hand, sc.components, &plan, ERR), GTS_ETYPE,
                "fields[0]: dtype: unsupported kind 'x'");
    CHECK(plan == NULL);
    for (int f = 0; f < 2; ++f)
        gts_storage_release(&fields[f]);
}

/* Negation in every dtype a vector may have: tile 0's west halo cell
 * (-1, 0) is tile 4's (1, 1) turned once: u = v there, v = -u there. The
 * most negative integer wraps to itself, as NumPy's negative does; -0.0
 * is 0.0 with its sign bit. */
static void test_negation_dtypes(void)
{
    static const gts_dtype dtypes[] = {{GTS_KIND_INT, 4}, {GTS_KIND_INT, 1}, {GTS_KIND_UINT, 2},
                                       {GTS_KIND_FLOAT, 4}, {GTS_KIND_FLOAT, 2},
                                       {GTS_KIND_COMPLEX, 8}};
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 2, 1, 1, ERR)))
        return;
    gts_cube_component components[2] = {GTS_CUBE_U, GTS_CUBE_V};
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
        gts_dtype dt = dtypes[d];
        gts_storage fields[6][2];
        gts_halo_plan *plans[6] = {0};
        for (int r = 0; r < 6; ++r) {
            for (int f = 0; f < 2; ++f) {
                int64_t shape[2] = {4, 4}, idx[2] = {2, 2}; /* domain (1, 1) at (2, 2) */
                gts_storage_spec spec;
                CHECK_OK(gts_storage_spec_init(&spec, 2, shape, dt, ERR));
                spec.has_dims = spec.has_halo = true;
                spec.dims[0] = GTS_DIM_I, spec.dims[1] = GTS_DIM_J;
                spec.halo[0] = spec.halo[1] = (gts_halo){1, 1};
                CHECK_OK(gts_storage_create(&spec, 0, &fields[r][f], ERR));
                /* u of tile 4: the most negative int32 (int8: -128), or 5 (1 + 2i) */
                unsigned char *at = (unsigned char *)address(&fields[r][f], idx);
                memset(at, 0, (size_t)dt.itemsize);
                if (f == 0 && dt.kind == GTS_KIND_INT)
                    at[dt.itemsize - 1] = 0x80; /* little-endian: INT_MIN */
                else if (dt.kind == GTS_KIND_FLOAT && dt.itemsize == 4)
                    memcpy(at, &(float){f ? 7.0f : 0.0f}, 4);
                else if (dt.kind == GTS_KIND_FLOAT)
                    at[1] = f ? 0x47 : 0x00; /* float16: 7.0 is 0x4700; u 0.0 */
                else if (dt.kind == GTS_KIND_COMPLEX)
                    memcpy(at, (float[2]){1.0f, f ? 3.0f : 2.0f}, 8);
                else
                    at[0] = (unsigned char)(f ? 7 : 5);
            }
            CHECK_OK(gts_cube_halo_plan_create(&p, r, 2, fields[r], components, &plans[r],
                                               ERR));
        }
        deliver_all(plans, NULL, 6, OWN_BUFFERS, NULL);
        int64_t west[2] = {0, 1}; /* cell (-1, 0) */
        const unsigned char *u = (const unsigned char *)address(&fields[0][0], west);
        const unsigned char *v = (const unsigned char *)address(&fields[0][1], west);
        const unsigned char *u4 = (const unsigned char *)address(&fields[4][0],
                                                                 (int64_t[2]){2, 2});
        const unsigned char *v4 = (const unsigned char *)address(&fields[4][1],
                                                                 (int64_t[2]){2, 2});
        CHECK(memcmp(u, v4, (size_t)dt.itemsize) == 0); /* u = v there */
        unsigned char negated[16];
        memcpy(negated, u4, (size_t)dt.itemsize);
        if (dt.kind == GTS_KIND_FLOAT) {
            negated[dt.itemsize - 1] ^= 0x80;
        } else if (dt.kind == GTS_KIND_COMPLEX) {
            negated[3] ^= 0x80;
            negated[7] ^= 0x80;
        } else if (dt.kind == GTS_KIND_UINT) {
            uint16_t w;
            memcpy(&w, negated, 2);
            w = (uint16_t)(0u - w);
            memcpy(negated, &w, 2);
        } /* INT_MIN negates to itself */
        if (!CHECK(memcmp(v, negated, (size_t)dt.itemsize) == 0))
            fprintf(stderr, "dtype %c%d: v is not -u of tile 4\n", dt.kind, dt.itemsize);
        for (int r = 0; r < 6; ++r) {
            gts_halo_plan_destroy(plans[r]);
            for (int f = 0; f < 2; ++f)
                gts_storage_release(&fields[r][f]);
        }
    }
    /* booleans have no sign */
    gts_storage b[2];
    gts_halo_plan *plan = NULL;
    for (int f = 0; f < 2; ++f) {
        gts_storage_spec spec;
        CHECK_OK(gts_storage_spec_init(&spec, 2, (int64_t[2]){4, 4}, (gts_dtype){GTS_KIND_BOOL, 1},
                                       ERR));
        spec.has_dims = spec.has_halo = true;
        spec.dims[0] = GTS_DIM_I, spec.dims[1] = GTS_DIM_J;
        spec.halo[0] = spec.halo[1] = (gts_halo){1, 1};
        CHECK_OK(gts_storage_create(&spec, 0, &b[f], ERR));
    }
    CHECK_FAILS(gts_cube_halo_plan_create(&p, 0, 2, b, components, &plan, ERR), GTS_EINVAL,
                "booleans");
    for (int f = 0; f < 2; ++f)
        gts_storage_release(&b[f]);
}

int main(void)
{
    test_negation_dtypes();
    test_plan_shape();
    test_exchanges();
    CHECK_INT_EQ(live_buffers(), 0);
    return check_summary("cube_halo_plan");
}
