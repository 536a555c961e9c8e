/* Storages: allocation (strides worked out by hand, the aligned point),
 * views and buffer lifetime, the view operations (slice, index, insert_dim,
 * transpose, domain, set_halo) checked element by element against an index
 * map the test keeps itself, the halo rule by brute force, the aligned-point
 * invariant over random chains of views, copy/assign/fill, wrapping
 * caller-owned memory, and the properties, with empty and 0-d storages
 * throughout. The data tests (copy, assign, fill) run on the host and on the
 * emulated device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storage_helpers.h"
#include "random.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

static const gts_dtype F4 = {GTS_KIND_FLOAT, 4};
static const gts_dtype I1 = {GTS_KIND_INT, 1};

static gts_preset gpu, cpu_kfirst, cpu_ifirst;

/* ---- helpers: addresses, values and multi-indices -------------------------- */

static void set(const gts_storage *s, const int64_t *index, double v)
{
    memcpy((void *)address(s, index), &v, sizeof v);
}

/* The next index in C order; false after the last one. */
static bool next_index(int ndim, const int64_t *shape, int64_t *index)
{
    for (int d = ndim - 1; d >= 0; --d) {
        if (++index[d] < shape[d])
            return true;
        index[d] = 0;
    }
    return false;
}

/* Position of `index` in C order over `shape`. */
static int64_t linear(int ndim, const int64_t *shape, const int64_t *index)
{
    int64_t l = 0;
    for (int d = 0; d < ndim; ++d)
        l = l * shape[d] + index[d];
    return l;
}

/* Stores the C-order position of each element as its (f8) value. */
static void fill_linear(const gts_storage *s)
{
    int64_t index[GTS_MAX_NDIM] = {0};
    if (product(s->ndim, s->shape) == 0)
        return;
    do
        set(s, index, (double)linear(s->ndim, s->shape, index));
    while (next_index(s->ndim, s->shape, index));
}

static bool halos_eq(int n, const gts_halo *a, const gts_halo *b)
{
    for (int i = 0; i < n; ++i)
        if (a[i].lower != b[i].lower || a[i].upper != b[i].upper)
            return false;
    return true;
}

/* Every field that a failed view operation must leave alone. */
static bool same_storage(const gts_storage *a, const gts_storage *b)
{
    int n = a->ndim;
    return a->buffer == b->buffer && a->offset == b->offset && n == b->ndim &&
           gts_dtype_equal(a->dtype, b->dtype) && a->readonly == b->readonly &&
           a->alignment_size == b->alignment_size && ints_eq(n, a->shape, b->shape) &&
           ints_eq(n, a->strides, b->strides) && ints_eq(n, a->aligned_index, b->aligned_index) &&
           halos_eq(n, a->halo, b->halo) &&
           memcmp(a->dims, b->dims, (size_t)n * sizeof *a->dims) == 0;
}

/* For calls in loops and set-up: a failure is reported and counted like
 * CHECK_OK's, a success counts no check. */
static bool call_ok(int rc, int line, const char *text)
{
    if (rc == 0)
        return true;
    fprintf(stderr, "%s:%d: returned %d (%s): %s\n", __FILE__, line, rc, gts_status_name(rc),
            check_error.message);
    return check_report(false, __FILE__, line, text);
}
#define CALL_OK(expr) (check_clear_error(), call_ok((expr), __LINE__, #expr))

static gts_storage_spec spec_of(int ndim, const int64_t *shape, gts_dtype dtype)
{
    gts_storage_spec spec;
    CALL_OK(gts_storage_spec_init(&spec, ndim, shape, dtype, ERR));
    return spec;
}

/* The device the storages of create_storage live on: the host, and for the
 * data tests (copy, assign, fill) in a second run the emulated device, whose
 * memory the test reads through buffer_bytes as a kernel there would. */
static const gts_device_ops *test_device;

/* A storage on test_device (the host unless a test run says otherwise). The
 * spec's device kind is overridden to the CPU so that the GPU presets give
 * their geometry without a GPU. */
static bool create_storage(gts_storage_spec spec, unsigned flags, gts_storage *out)
{
    spec.has_device = true;
    spec.device = GTS_DEVICE_CPU;
    if (!CALL_OK(gts_storage_create_on(test_device, &spec, flags, out, ERR)))
        return false;
    return CHECK(gts_buffer_device(out->buffer) == (test_device ? test_device : gts_device_host()));
}

/* ---- an index map kept by the test ------------------------------------------
 * Where each element of a view lies in the storage it came from (the root):
 * root index r is base[r] + step[v] * i[v] for the view dimension v with
 * root[v] == r; a root dimension without one was fixed by an index.
 * Inserted dimensions have root[v] == -1. */

typedef struct index_map {
    int ndim, root_ndim;
    int root[GTS_MAX_NDIM];
    int64_t step[GTS_MAX_NDIM];
    int64_t base[GTS_MAX_NDIM];
} index_map;

static index_map map_identity(int ndim)
{
    index_map m;
    m.ndim = m.root_ndim = ndim;
    for (int d = 0; d < ndim; ++d) {
        m.root[d] = d;
        m.step[d] = 1;
        m.base[d] = 0;
    }
    return m;
}

static void map_slice(index_map *m, int v, int64_t start, int64_t step)
{
    if (m->root[v] >= 0)
        m->base[m->root[v]] += start * m->step[v];
    m->step[v] *= step;
}

static void map_index(index_map *m, int v, int64_t i)
{
    if (m->root[v] >= 0)
        m->base[m->root[v]] += i * m->step[v];
    for (int w = v; w + 1 < m->ndim; ++w) {
        m->root[w] = m->root[w + 1];
        m->step[w] = m->step[w + 1];
    }
    --m->ndim;
}

static void map_insert(index_map *m, int v)
{
    for (int w = m->ndim; w > v; --w) {
        m->root[w] = m->root[w - 1];
        m->step[w] = m->step[w - 1];
    }
    m->root[v] = -1;
    m->step[v] = 0;
    ++m->ndim;
}

static void map_transpose(index_map *m, const int *axes)
{
    index_map old = *m;
    for (int i = 0; i < m->ndim; ++i) {
        m->root[i] = old.root[axes[i]];
        m->step[i] = old.step[axes[i]];
    }
}

static void map_apply(const index_map *m, const int64_t *index, int64_t *root_index)
{
    for (int r = 0; r < m->root_ndim; ++r)
        root_index[r] = m->base[r];
    for (int v = 0; v < m->ndim; ++v)
        if (m->root[v] >= 0)
            root_index[m->root[v]] += m->step[v] * index[v];
}

/* The view index of root point `point` if the view has it. */
static bool map_find(const index_map *m, const int64_t *shape, const int64_t *point,
                     int64_t *index)
{
    for (int r = 0; r < m->root_ndim; ++r) {
        int v = -1;
        for (int w = 0; w < m->ndim; ++w)
            v = m->root[w] == r ? w : v;
        if (v < 0) {
            if (point[r] != m->base[r])
                return false;
            continue;
        }
        int64_t diff = point[r] - m->base[r], step = m->step[v];
        if (diff % step != 0 || diff / step < 0 || diff / step >= shape[v])
            return false;
        index[v] = diff / step;
    }
    for (int v = 0; v < m->ndim; ++v)
        if (m->root[v] < 0) {
            if (shape[v] == 0)
                return false;
            index[v] = 0;
        }
    return true;
}

/* Every element of `view` is the element of `root` the map names: the same
 * address, and (for f8 roots filled by fill_linear) the same value. */
static bool matches_root(const gts_storage *view, const index_map *m, const gts_storage *root,
                         bool values)
{
    int64_t index[GTS_MAX_NDIM] = {0}, r[GTS_MAX_NDIM];
    if (product(view->ndim, view->shape) == 0)
        return true;
    do {
        map_apply(m, index, r);
        for (int d = 0; d < root->ndim; ++d)
            if (r[d] < 0 || r[d] >= root->shape[d])
                return false;
        if (address(view, index) != address(root, r))
            return false;
        if (values && get(view, index) != (double)linear(root->ndim, root->shape, r))
            return false;
    } while (next_index(view->ndim, view->shape, index));
    return true;
}

/* Valid random slice parameters for an extent `n`. */
static void random_slice(int64_t n, int64_t *start, int64_t *step, int64_t *count)
{
    static const int64_t steps[] = {1, 1, 1, 2, 3, -1, -1, -2, -3};
    *step = steps[rnd(sizeof steps / sizeof steps[0])];
    if (n == 0) {
        *start = 0;
        *count = 0;
        return;
    }
    *start = rnd(n);
    int64_t most = *step > 0 ? (n - 1 - *start) / *step + 1 : *start / -*step + 1;
    *count = rnd(4) ? most - rnd(most + 1) / 2 : rnd(most + 1);
}

/* ---- create ---------------------------------------------------------------------- */

static void test_create(void)
{
    const int64_t shape[3] = {5, 4, 3};
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    spec.halo[0] = (gts_halo){3, 1};
    spec.halo[1] = (gts_halo){2, 2};
    gts_storage s;
    if (create_storage(spec, 0, &s)) {
        CHECK_INT_EQ(s.ndim, 3);
        CHECK(ints_eq(3, s.shape, shape));
        CHECK(ints_eq(3, s.strides, (const int64_t[]){8, 256, 1024}));
        CHECK_INT_EQ(s.alignment_size, 256);
        CHECK(ints_eq(3, s.aligned_index, (const int64_t[]){3, 2, 0}));
        CHECK(halos_eq(3, s.halo, (const gts_halo[]){{3, 1}, {2, 2}, {0, 0}}));
        CHECK(!s.readonly && gts_dtype_equal(s.dtype, F8));
        CHECK_INT_EQ(address(&s, s.aligned_index) % 256, 0);
        CHECK((uintptr_t)gts_storage_data(&s) == address(&s, (const int64_t[]){0, 0, 0}));
        /* the elements lie in the buffer */
        CHECK(s.offset >= 0 && s.offset + 1024 * 2 + 256 * 3 + 8 * 4 + 8 <=
                                   gts_buffer_size(s.buffer));
        gts_storage_release(&s);
        CHECK(s.buffer == NULL);
    }

    /* the aligned point is aligned for many shapes, dtypes and halos */
    bool ok = true;
    for (int trial = 0; trial < 200 && ok; ++trial) {
        static const gts_dtype dtypes[] = {{'u', 1}, {'i', 2}, {'f', 4}, {'f', 8}, {'c', 16}};
        int64_t sh[3] = {1 + rnd(40), 1 + rnd(5), 1 + rnd(5)};
        spec = spec_of(3, sh, dtypes[rnd(5)]);
        spec.preset = &gpu;
        for (int d = 0; d < 3; ++d)
            spec.halo[d].lower = rnd(sh[d] + 1);
        if (!create_storage(spec, 0, &s))
            return;
        ok = address(&s, s.aligned_index) % (uintptr_t)(32 * s.dtype.itemsize) == 0 &&
             s.strides[0] == s.dtype.itemsize && s.strides[1] % (32 * s.dtype.itemsize) == 0;
        for (int d = 0; d < 3; ++d)
            ok = ok && s.aligned_index[d] == (sh[d] ? (spec.halo[d].lower < sh[d]
                                                           ? spec.halo[d].lower
                                                           : sh[d] - 1)
                                                    : 0);
        gts_storage_release(&s);
    }
    CHECK(ok);

    /* GTS_ALLOC_ZERO over memory just dirtied */
    spec = spec_of(3, shape, F8);
    if (create_storage(spec, 0, &s)) {
        memset(gts_buffer_host(s.buffer), 0x5a, (size_t)gts_buffer_size(s.buffer));
        gts_storage_release(&s);
    }
    if (create_storage(spec, GTS_ALLOC_ZERO, &s)) {
        int64_t index[3] = {0, 0, 0};
        bool zero = true;
        do
            zero = zero && get(&s, index) == 0.0;
        while (next_index(3, s.shape, index));
        CHECK(zero);
        gts_storage_release(&s);
    }

    /* the GPU kind goes to the device that plays the GPU: where there is
     * none, the reason; the emulated device when chosen */
    int64_t before = live_buffers();
    spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    const gts_device_ops *machine_gpu;
    gts_error why;
    int no_gpu = gts_device_gpu(&machine_gpu, &why);
    if (no_gpu) {
        CHECK_FAILS(gts_storage_create(&spec, 0, &s, ERR), no_gpu, "");
        CHECK_STR_EQ(check_error.message, why.message);
    }
    CHECK_OK(gts_device_use_gpu(gts_device_emulated(), ERR));
    const gts_managed modes[] = {GTS_MANAGED_GT4PY, GTS_MANAGED_NONE};
    for (int m = 0; m < 2; ++m) {
        spec.managed = modes[m];
        if (CHECK_OK(gts_storage_create(&spec, 0, &s, ERR))) {
            CHECK(gts_buffer_device(s.buffer) == gts_device_emulated());
            CHECK(gts_buffer_mirrored(s.buffer) == (modes[m] == GTS_MANAGED_GT4PY));
            CHECK(ints_eq(3, s.strides, (const int64_t[]){8, 256, 1024})); /* gt:gpu's */
            CHECK(gts_storage_data(&s) ? m == 0 : m == 1); /* a host side if mirrored */
            gts_storage_release(&s);
        }
    }
    /* managed memory: the emulated device's, which the host reaches */
    spec.managed = GTS_MANAGED_CUDA;
    if (CHECK_OK(gts_storage_create(&spec, 0, &s, ERR))) {
        CHECK(gts_device_is_managed(gts_buffer_device(s.buffer)) && !gts_buffer_mirrored(s.buffer));
        CHECK(ints_eq(3, s.strides, (const int64_t[]){8, 256, 1024}));
        CHECK(gts_storage_data(&s) != NULL);
        gts_storage_release(&s);
    }
    spec.managed = (gts_managed)7;
    CHECK_FAILS(gts_storage_create(&spec, 0, &s, ERR), GTS_EINVAL, "managed: 7");
    CHECK_FAILS(gts_device_use_gpu(gts_device_host(), ERR), GTS_EINVAL, "host memory");
    CHECK_OK(gts_device_use_gpu(NULL, ERR));
    CHECK_INT_EQ(live_buffers(), before);
    /* and a bad spec allocates nothing either */
    spec = spec_of(3, shape, F8);
    spec.halo[0] = (gts_halo){-1, 0};
    CHECK_FAILS(gts_storage_create(&spec, 0, &s, ERR), GTS_EINVAL, "halo");
    CHECK_INT_EQ(live_buffers(), before);
}

/* ---- views and lifetime ---------------------------------------------------- */

static void test_views(void)
{
    int64_t start = live_buffers();
    gts_storage s, a, b;
    if (!create_storage(spec_of(2, (const int64_t[]){3, 4}, F8), 0, &s))
        return;
    CHECK_INT_EQ(live_buffers(), start + 1);
    gts_storage_view(&s, &a);
    gts_storage_view(&a, &b);
    CHECK(a.buffer == s.buffer && b.buffer == s.buffer);
    CHECK(same_storage(&a, &s) && same_storage(&b, &s));
    set(&a, (const int64_t[]){2, 1}, 42.0);
    CHECK(get(&s, (const int64_t[]){2, 1}) == 42.0);
    set(&s, (const int64_t[]){0, 3}, -7.0);
    CHECK(get(&b, (const int64_t[]){0, 3}) == -7.0);
    CHECK_OK(gts_storage_slice(&b, 0, 1, 1, 2, ERR));
    CHECK(get(&b, (const int64_t[]){1, 1}) == 42.0);

    /* the buffer lives until the last view goes, whichever that is */
    gts_storage_release(&s);
    CHECK_INT_EQ(live_buffers(), start + 1);
    gts_storage_release(&b);
    CHECK_INT_EQ(live_buffers(), start + 1);
    CHECK(get(&a, (const int64_t[]){2, 1}) == 42.0);
    gts_storage_release(&a);
    CHECK_INT_EQ(live_buffers(), start);
    gts_storage_release(&a); /* released twice and NULL: nothing happens */
    gts_storage_release(NULL);
    CHECK_INT_EQ(live_buffers(), start);

    /* many views released in a random order */
    if (!create_storage(spec_of(1, (const int64_t[]){10}, F8), 0, &s))
        return;
    gts_storage views[8];
    for (int i = 0; i < 8; ++i)
        gts_storage_view(i ? &views[i - 1] : &s, &views[i]);
    gts_storage_release(&s);
    int order[8];
    random_permutation(8, order);
    bool ok = true;
    for (int i = 0; i < 8; ++i) {
        gts_storage_release(&views[order[i]]);
        ok = ok && live_buffers() == start + (i < 7);
    }
    CHECK(ok);
}

/* ---- slice ----------------------------------------------------------------- */

/* A (7, 6, 5) f8 storage with a halo, filled with C-order positions. */
static bool make_reference(gts_storage *s)
{
    gts_storage_spec spec = spec_of(3, (const int64_t[]){7, 6, 5}, F8);
    spec.halo[0] = (gts_halo){2, 1};
    spec.halo[1] = (gts_halo){0, 3};
    spec.halo[2] = (gts_halo){1, 1};
    if (!create_storage(spec, 0, s))
        return false;
    fill_linear(s);
    return true;
}

static void test_slice_values(void)
{
    gts_storage root;
    if (!make_reference(&root))
        return;
    bool values = true, halos = true, shapes = true;
    for (int trial = 0; trial < 2000; ++trial) {
        int dim = (int)rnd(3);
        int64_t start, step, count;
        random_slice(root.shape[dim], &start, &step, &count);
        gts_storage v;
        gts_storage_view(&root, &v);
        if (!CALL_OK(gts_storage_slice(&v, dim, start, step, count, ERR))) {
            gts_storage_release(&v);
            break;
        }
        index_map m = map_identity(3);
        map_slice(&m, dim, start, step);
        int64_t expected_shape[3] = {7, 6, 5};
        expected_shape[dim] = count;
        shapes = shapes && v.ndim == 3 && ints_eq(3, v.shape, expected_shape);
        values = values && matches_root(&v, &m, &root, true);
        gts_halo h = halo_after_slice(root.shape[dim], root.halo[dim], start, step, count);
        halos = halos && v.halo[dim].lower == h.lower && v.halo[dim].upper == h.upper;
        for (int d = 0; d < 3; ++d)
            if (d != dim)
                halos = halos && v.halo[d].lower == root.halo[d].lower &&
                        v.halo[d].upper == root.halo[d].upper;
        gts_storage_release(&v);
    }
    CHECK(shapes);
    CHECK(values);
    CHECK(halos);

    /* worked by hand: dim 0 (extent 7, halo (2, 1)) */
    gts_storage v;
    gts_storage_view(&root, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 1, 2, 3, ERR)); /* 1, 3, 5: only 1 in the halo */
    CHECK(v.halo[0].lower == 1 && v.halo[0].upper == 0);
    CHECK_INT_EQ(v.strides[0], root.strides[0] * 2);
    CHECK(get(&v, (const int64_t[]){2, 0, 0}) == 5 * 30);
    gts_storage_release(&v);
    gts_storage_view(&root, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 6, -1, 7, ERR)); /* reversed: the halos swap */
    CHECK(v.halo[0].lower == 1 && v.halo[0].upper == 2);
    CHECK_INT_EQ(v.strides[0], -root.strides[0]);
    CHECK(get(&v, (const int64_t[]){0, 1, 2}) == 6 * 30 + 1 * 5 + 2);
    CHECK_OK(gts_storage_slice(&v, 0, 1, 3, 2, ERR)); /* old 5, 2: halo none */
    CHECK(v.halo[0].lower == 0 && v.halo[0].upper == 0);
    CHECK(get(&v, (const int64_t[]){1, 0, 0}) == 2 * 30);
    gts_storage_release(&v);
    /* one element keeps a stride of the dim; an empty slice has no halo */
    gts_storage_view(&root, &v);
    CHECK_OK(gts_storage_slice(&v, 1, 4, 5, 1, ERR));
    CHECK(v.shape[1] == 1 && v.halo[1].lower == 0 && v.halo[1].upper == 1);
    CHECK(get(&v, (const int64_t[]){3, 0, 4}) == 3 * 30 + 4 * 5 + 4);
    CHECK_OK(gts_storage_slice(&v, 2, 100, -1, 0, ERR)); /* nothing selected: start unused */
    CHECK(v.shape[2] == 0 && v.halo[2].lower == 0 && v.halo[2].upper == 0);
    CHECK_INT_EQ(gts_storage_size(&v), 0);
    gts_storage_release(&v);
    gts_storage_release(&root);
}

static void test_slice_errors(void)
{
    gts_storage root, v, before;
    if (!make_reference(&root))
        return;
    gts_storage_view(&root, &v);
    before = v;
    CHECK_FAILS(gts_storage_slice(&v, 0, 0, 0, 3, ERR), GTS_EINVAL, "step");
    CHECK_FAILS(gts_storage_slice(&v, 0, 7, 1, 1, ERR), GTS_EBOUNDS, "slice");
    CHECK_FAILS(gts_storage_slice(&v, 0, -1, 1, 1, ERR), GTS_EBOUNDS, "slice");
    CHECK_FAILS(gts_storage_slice(&v, 0, 2, 2, 4, ERR), GTS_EBOUNDS, "slice"); /* 2..8 */
    CHECK_FAILS(gts_storage_slice(&v, 0, 2, -1, 4, ERR), GTS_EBOUNDS, "slice"); /* 2..-1 */
    CHECK_FAILS(gts_storage_slice(&v, 0, 0, INT64_MAX, 3, ERR), GTS_EBOUNDS, "slice");
    CHECK_FAILS(gts_storage_slice(&v, 0, 0, 1, -1, ERR), GTS_EINVAL, "count");
    CHECK_FAILS(gts_storage_slice(&v, 3, 0, 1, 1, ERR), GTS_EBOUNDS, "dim");
    CHECK_FAILS(gts_storage_slice(&v, -1, 0, 1, 1, ERR), GTS_EBOUNDS, "dim");
    CHECK_FAILS(gts_storage_slice(&v, 0, 3, INT64_MIN, 2, ERR), GTS_EBOUNDS, "slice");
    CHECK_FAILS(gts_storage_slice(&v, 0, 3, INT64_MIN, 3, ERR), GTS_EBOUNDS, "slice");
    CHECK(same_storage(&v, &before));
    CHECK_OK(gts_storage_slice(&v, 0, 2, 2, 3, ERR)); /* 2, 4, 6: the edge is fine */
    gts_storage_release(&v);
    /* One element: any step selects it, INT64_MIN included (its negation
     * once overflowed in the halo count); the sign decides the halo sides,
     * as for -1. Element 1 lies in the lower halo of 2. */
    for (int64_t step = INT64_MIN; step != 0; step = step == INT64_MIN ? INT64_MAX : 0) {
        gts_storage one, reference;
        gts_storage_view(&root, &one);
        gts_storage_view(&root, &reference);
        CHECK_OK(gts_storage_slice(&one, 0, 1, step, 1, ERR));
        CHECK_OK(gts_storage_slice(&reference, 0, 1, step > 0 ? 1 : -1, 1, ERR));
        CHECK(same_storage(&one, &reference));
        CHECK_INT_EQ(one.halo[0].lower + one.halo[0].upper, 1);
        gts_storage_release(&one);
        gts_storage_release(&reference);
    }
    gts_storage_release(&root);
}

/* ---- the aligned point over random chains of views --------------------------- */

typedef struct chain {
    gts_storage root, view;
    index_map map;
    int64_t root_alignment;
} chain;

static bool random_root(gts_storage *root)
{
    static const gts_dtype dtypes[] = {{'u', 1}, {'i', 2}, {'f', 4}, {'f', 8}, {'c', 16}};
    static const int64_t alignments[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 24, 48, 96};
    int ndim = 1 + (int)rnd(4);
    int64_t shape[4];
    for (int d = 0; d < ndim; ++d)
        shape[d] = rnd(30) ? 1 + rnd(ndim > 2 ? 6 : 20) : 0;
    gts_dtype dtype = dtypes[rnd(5)];
    gts_storage_spec spec = spec_of(ndim, shape, dtype);
    if (rnd(2)) {
        spec.preset = &gpu;
    } else {
        do
            spec.alignment_size = alignments[rnd(sizeof alignments / sizeof alignments[0])];
        while (spec.alignment_size % dtype.itemsize != 0 &&
               dtype.itemsize % spec.alignment_size != 0);
    }
    if (rnd(2)) {
        spec.has_layout = true;
        random_permutation(ndim, spec.layout);
    }
    for (int d = 0; d < ndim; ++d) {
        spec.halo[d].lower = rnd(shape[d] / 2 + 1);
        spec.halo[d].upper = rnd(shape[d] - spec.halo[d].lower + 1);
    }
    if (rnd(2)) {
        spec.has_aligned_index = true;
        for (int d = 0; d < ndim; ++d)
            spec.aligned_index[d] = shape[d] ? rnd(shape[d]) : 0;
    }
    return create_storage(spec, 0, root);
}

/* The invariants every view keeps, and the parent's aligned point where the
 * view has it (`kept`: its index in the view). */
static bool check_aligned(const chain *c, const gts_storage *parent, const int64_t *kept,
                          const char *operation)
{
    const gts_storage *v = &c->view;
    bool ok = v->alignment_size >= 1 && c->root_alignment % v->alignment_size == 0 &&
              parent->alignment_size % v->alignment_size == 0 &&
              (v->alignment_size % v->dtype.itemsize == 0 ||
               v->dtype.itemsize % v->alignment_size == 0);
    for (int d = 0; d < v->ndim; ++d)
        ok = ok && v->aligned_index[d] >= 0 &&
             (v->aligned_index[d] < v->shape[d] || (v->shape[d] == 0 && v->aligned_index[d] == 0));
    bool empty = product(v->ndim, v->shape) == 0;
    if (!empty)
        ok = ok && address(v, v->aligned_index) % (uintptr_t)v->alignment_size == 0;
    if (kept && !empty)
        ok = ok && ints_eq(v->ndim, v->aligned_index, kept) &&
             v->alignment_size == parent->alignment_size;
    /* the root's aligned point, if the view still has it, is its aligned point */
    int64_t found[GTS_MAX_NDIM];
    if (map_find(&c->map, v->shape, c->root.aligned_index, found))
        ok = ok && ints_eq(v->ndim, v->aligned_index, found) &&
             v->alignment_size == c->root_alignment;
    /* the alignment drops only where no element has the parent's */
    if (!empty && v->alignment_size < parent->alignment_size) {
        int64_t index[GTS_MAX_NDIM] = {0};
        do
            ok = ok && address(v, index) % (uintptr_t)parent->alignment_size != 0;
        while (ok && next_index(v->ndim, v->shape, index));
    }
    if (!ok) {
        fprintf(stderr, "  after %s: ndim %d, alignment %lld (parent %lld), aligned_index", operation,
                v->ndim, (long long)v->alignment_size, (long long)parent->alignment_size);
        for (int d = 0; d < v->ndim; ++d)
            fprintf(stderr, " %lld/%lld", (long long)v->aligned_index[d], (long long)v->shape[d]);
        fprintf(stderr, "\n");
    }
    return ok;
}

/* One random view operation on c->view; false if a check failed. */
static bool random_step(chain *c)
{
    gts_storage *v = &c->view, parent = c->view; /* parent: fields only, no reference */
    gts_halo halo[GTS_MAX_NDIM];
    int64_t kept[GTS_MAX_NDIM];
    bool has_kept = false;
    int n = v->ndim, op = n == 0 ? 2 : (int)rnd(5);
    if (op == 2 && n >= 6)
        op = 3; /* enough dims */
    const char *name = "?";
    memcpy(halo, v->halo, (size_t)n * sizeof *halo);
    memcpy(kept, v->aligned_index, (size_t)n * sizeof *kept);
    if (op == 1) {
        int dim = (int)rnd(n);
        if (v->shape[dim] == 0)
            op = 0;
    }
    if (op == 0) {
        name = "slice";
        int dim = (int)rnd(n);
        int64_t start, step, count, a = kept[dim];
        random_slice(v->shape[dim], &start, &step, &count);
        if (!CALL_OK(gts_storage_slice(v, dim, start, step, count, ERR)))
            return false;
        map_slice(&c->map, dim, start, step);
        halo[dim] = halo_after_slice(parent.shape[dim], halo[dim], start, step, count);
        has_kept = (a - start) % step == 0 && (a - start) / step >= 0 && (a - start) / step < count;
        kept[dim] = (a - start) / step;
    } else if (op == 1) {
        name = "index";
        int dim;
        do
            dim = (int)rnd(n);
        while (v->shape[dim] == 0);
        int64_t i = rnd(4) ? rnd(v->shape[dim]) : kept[dim];
        if (!CALL_OK(gts_storage_index(v, dim, i, ERR)))
            return false;
        map_index(&c->map, dim, i);
        has_kept = i == kept[dim];
        memmove(halo + dim, halo + dim + 1, (size_t)(n - dim - 1) * sizeof *halo);
        memmove(kept + dim, kept + dim + 1, (size_t)(n - dim - 1) * sizeof *kept);
    } else if (op == 2) {
        name = "insert_dim";
        int dim = (int)rnd(n + 1);
        if (!CALL_OK(gts_storage_insert_dim(v, dim, ERR)))
            return false;
        map_insert(&c->map, dim);
        memmove(halo + dim + 1, halo + dim, (size_t)(n - dim) * sizeof *halo);
        memmove(kept + dim + 1, kept + dim, (size_t)(n - dim) * sizeof *kept);
        halo[dim] = (gts_halo){0, 0};
        kept[dim] = 0;
        has_kept = true;
    } else if (op == 3) {
        name = "transpose";
        int axes[GTS_MAX_NDIM];
        random_permutation(n, axes);
        if (!CALL_OK(gts_storage_transpose(v, axes, ERR)))
            return false;
        map_transpose(&c->map, axes);
        for (int i = 0; i < n; ++i) {
            halo[i] = parent.halo[axes[i]];
            kept[i] = parent.aligned_index[axes[i]];
        }
        has_kept = true;
    } else {
        name = "domain";
        if (!CALL_OK(gts_storage_domain(v, ERR)))
            return false;
        has_kept = true;
        for (int d = 0; d < n; ++d) {
            int64_t lo = halo[d].lower, count = parent.shape[d] - lo - halo[d].upper;
            map_slice(&c->map, d, lo, 1);
            has_kept = has_kept && kept[d] >= lo && kept[d] < lo + count;
            kept[d] -= lo;
            halo[d] = (gts_halo){0, 0};
        }
    }
    bool ok = v->buffer == c->root.buffer && halos_eq(v->ndim, v->halo, halo) &&
              matches_root(v, &c->map, &c->root, false);
    if (!ok)
        fprintf(stderr, "  after %s: elements or halo differ from the reference\n", name);
    return check_aligned(c, &parent, has_kept ? kept : NULL, name) && ok;
}

static void test_aligned_point_chains(void)
{
    int cases = 0, failed = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        chain c;
        if (!random_root(&c.root))
            return;
        c.root_alignment = c.root.alignment_size;
        c.map = map_identity(c.root.ndim);
        gts_storage_view(&c.root, &c.view);
        bool ok = check_aligned(&c, &c.root, c.root.aligned_index, "create");
        int steps = 1 + (int)rnd(8);
        for (int s = 0; s < steps && ok; ++s)
            ok = random_step(&c);
        /* a copy of the final view takes its aligned point and alignment */
        gts_storage copy;
        if (ok && (ok = CALL_OK(gts_storage_copy(&c.view, &copy, ERR)))) {
            ok = product(copy.ndim, copy.shape) == 0 ||
                 address(&copy, copy.aligned_index) % (uintptr_t)copy.alignment_size == 0;
            int64_t index[GTS_MAX_NDIM] = {0};
            if (product(copy.ndim, copy.shape) > 0)
                do
                    ok = ok && memcmp((const void *)address(&copy, index),
                                      (const void *)address(&c.view, index),
                                      c.view.dtype.itemsize) == 0;
                while (next_index(copy.ndim, copy.shape, index));
            gts_storage_release(&copy);
        }
        ++cases;
        failed += !ok;
        gts_storage_release(&c.view);
        gts_storage_release(&c.root);
        if (failed > 3)
            break;
    }
    CHECK_INT_EQ(failed, 0);
    CHECK(cases >= 2000);
}

/* The nearest aligned index along `d` to `from`, the lower one on a tie, by
 * trying every index: the reference for the closed form of the library. */
static int64_t brute_nearest_aligned(const gts_storage *v, const int64_t *from, int d,
                                     int64_t alignment)
{
    int64_t index[GTS_MAX_NDIM];
    memcpy(index, from, (size_t)v->ndim * sizeof *index);
    int64_t best = -1;
    for (int64_t i = 0; i < v->shape[d]; ++i) {
        index[d] = i;
        int64_t dist = i > from[d] ? i - from[d] : from[d] - i;
        if (address(v, index) % (uintptr_t)alignment == 0 &&
            (best < 0 || dist < (best > from[d] ? best - from[d] : from[d] - best)))
            best = i;
    }
    return best;
}

/* Random 2-d storages and slices of one dimension with a positive step:
 * where the translated aligned point is not aligned, the view's point is
 * the nearest aligned one along the first dimension that has one (found by
 * trying every index), or else the alignment drops. */
static void test_aligned_point_brute_force(void)
{
    static const int64_t alignments[] = {8, 16, 24, 48, 64, 96, 128, 160, 256, 1024};
    static const gts_dtype dtypes[] = {{'u', 1}, {'i', 2}, {'f', 4}, {'f', 8}};
    int failed = 0;
    for (int trial = 0; trial < 3000 && failed < 4; ++trial) {
        gts_dtype dtype = dtypes[rnd(4)];
        int64_t shape[2] = {1 + rnd(40), 1 + rnd(40)};
        gts_storage_spec spec = spec_of(2, shape, dtype);
        spec.alignment_size = alignments[rnd(sizeof alignments / sizeof alignments[0])];
        spec.has_aligned_index = true;
        spec.aligned_index[0] = rnd(shape[0]);
        spec.aligned_index[1] = rnd(shape[1]);
        if (rnd(2)) {
            spec.has_layout = true;
            spec.layout[0] = 0;
            spec.layout[1] = 1;
        }
        gts_storage root, v;
        if (!create_storage(spec, 0, &root))
            return;
        gts_storage_view(&root, &v);
        int d = (int)rnd(2);
        int64_t start = rnd(shape[d]), step = 1 + rnd(3);
        int64_t count = (shape[d] - 1 - start) / step + 1;
        int64_t candidate[2] = {root.aligned_index[0], root.aligned_index[1]};
        int64_t moved = root.aligned_index[d] - start;
        candidate[d] = moved < 0 ? 0 : moved / step < count ? moved / step : count - 1;
        bool ok = CALL_OK(gts_storage_slice(&v, d, start, step, count, ERR));
        int64_t want[2] = {candidate[0], candidate[1]}, alignment = root.alignment_size;
        if (ok && address(&v, candidate) % (uintptr_t)alignment != 0) {
            int found_in = -1;
            for (int e = 0; e < 2 && found_in < 0; ++e) {
                int64_t i = v.strides[e] % alignment ? brute_nearest_aligned(&v, candidate, e,
                                                                             alignment)
                                                     : -1;
                if (i >= 0) {
                    want[e] = i;
                    found_in = e;
                }
            }
            if (found_in < 0)
                alignment = v.alignment_size; /* dropped: test_aligned_point_chains checks it */
        }
        ok = ok && ints_eq(2, v.aligned_index, want) && v.alignment_size == alignment;
        if (!ok)
            fprintf(stderr, "  trial %d: shape %lldx%lld, itemsize %lld, A %lld, dim %d, "
                            "start %lld step %lld: got (%lld, %lld), want (%lld, %lld)\n",
                    trial, (long long)shape[0], (long long)shape[1], (long long)dtype.itemsize,
                    (long long)root.alignment_size, d, (long long)start, (long long)step,
                    (long long)v.aligned_index[0], (long long)v.aligned_index[1],
                    (long long)want[0], (long long)want[1]);
        failed += !ok;
        gts_storage_release(&v);
        gts_storage_release(&root);
    }
    CHECK_INT_EQ(failed, 0);
}

/* A huge alignment costs no search. A byte array aligned on 2**27 bytes
 * sliced from 1 has no aligned element (the next lies one past its end), so
 * its alignment drops to 1; the old linear search took 0.7 s here. With
 * 2**24 bytes, [1::3] is aligned where 1 + 3k = 2**24, at k = 5592405. */
static void test_aligned_point_huge_alignment(void)
{
    int64_t n = (int64_t)1 << 27;
    for (int64_t alignment = n; alignment >= n >> 3; alignment >>= 3) {
        gts_storage_spec spec = spec_of(1, &n, (gts_dtype){GTS_KIND_UINT, 1});
        spec.alignment_size = alignment;
        gts_storage s, v;
        if (!create_storage(spec, 0, &s))
            return;
        gts_storage_view(&s, &v);
        if (alignment == n) {
            CHECK_OK(gts_storage_slice(&v, 0, 1, 1, n - 1, ERR));
            CHECK_INT_EQ(v.alignment_size, 1);
            CHECK_INT_EQ(v.aligned_index[0], 0);
        } else {
            CHECK_OK(gts_storage_slice(&v, 0, 1, 3, (n - 2) / 3 + 1, ERR));
            CHECK_INT_EQ(v.alignment_size, alignment);
            CHECK_INT_EQ(v.aligned_index[0], 5592405);
            CHECK_INT_EQ(address(&v, v.aligned_index) % (uintptr_t)alignment, 0);
        }
        gts_storage_release(&v);
        gts_storage_release(&s);
    }
}

/* Where the parent's point is not in the view, the nearest aligned one is
 * taken: a 1-d f8 array aligned on 256 bytes (32 elements) at index 99 is
 * aligned at 3, 35, 67 and 99; [0, 90) lacks 99, the nearest is 67. */
static void test_aligned_point_nearest(void)
{
    gts_storage_spec spec = spec_of(1, (const int64_t[]){100}, F8);
    spec.alignment_size = 256;
    spec.has_aligned_index = true;
    spec.aligned_index[0] = 99;
    gts_storage s, v;
    if (!create_storage(spec, 0, &s))
        return;
    CHECK_INT_EQ(address(&s, (const int64_t[]){3}) % 256, 0);
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 0, 1, 90, ERR));
    CHECK_INT_EQ(v.aligned_index[0], 67);
    CHECK_INT_EQ(v.alignment_size, 256);
    gts_storage_release(&v);
    /* from 10 on: 35 is 25 past the start of [10, 90), so view index 25 */
    spec.aligned_index[0] = 3;
    gts_storage_release(&s);
    if (!create_storage(spec, 0, &s))
        return;
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 10, 1, 80, ERR));
    CHECK_INT_EQ(v.aligned_index[0], 25);
    gts_storage_release(&v);
    /* reversed, 89 down to 10: 67 is view index 22, 35 is 54; the point 3
     * lies past the end, so 35 is the nearer one */
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 89, -1, 80, ERR));
    CHECK_INT_EQ(v.aligned_index[0], 54);
    CHECK_INT_EQ(v.alignment_size, 256);
    /* none aligned among 36..39 (view 53 down to 50): the alignment drops to
     * what the point next to 35, 36, has: 8 bytes */
    CHECK_OK(gts_storage_slice(&v, 0, 53, -1, 4, ERR));
    CHECK_INT_EQ(v.aligned_index[0], 0);
    CHECK_INT_EQ(v.alignment_size, 8);
    CHECK_INT_EQ(address(&v, v.aligned_index) % 8, 0);
    gts_storage_release(&v);
    gts_storage_release(&s);
}

/* ---- index, insert_dim, transpose, domain, set_halo ------------------------ */

static void test_index(void)
{
    gts_storage root, v;
    if (!make_reference(&root))
        return;
    gts_storage_view(&root, &v);
    if (CHECK_OK(gts_storage_index(&v, 1, 3, ERR))) {
        index_map m = map_identity(3);
        map_index(&m, 1, 3);
        CHECK_INT_EQ(v.ndim, 2);
        CHECK(v.shape[0] == 7 && v.shape[1] == 5);
        CHECK(v.strides[0] == root.strides[0] && v.strides[1] == root.strides[2]);
        CHECK(v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_K);
        CHECK(halos_eq(2, v.halo, (const gts_halo[]){{2, 1}, {1, 1}}));
        CHECK(ints_eq(2, v.aligned_index, (const int64_t[]){2, 1}));
        CHECK(matches_root(&v, &m, &root, true));
        CHECK(get(&v, (const int64_t[]){4, 2}) == 4 * 30 + 3 * 5 + 2);
    }
    gts_storage before = v;
    CHECK_FAILS(gts_storage_index(&v, 0, 7, ERR), GTS_EBOUNDS, "index: 7");
    CHECK_FAILS(gts_storage_index(&v, 1, -1, ERR), GTS_EBOUNDS, "index: -1");
    CHECK_FAILS(gts_storage_index(&v, 2, 0, ERR), GTS_EBOUNDS, "dim");
    CHECK(same_storage(&v, &before));
    /* down to 0-d: one element */
    CHECK_OK(gts_storage_index(&v, 1, 4, ERR));
    CHECK_OK(gts_storage_index(&v, 0, 6, ERR));
    CHECK_INT_EQ(v.ndim, 0);
    CHECK_INT_EQ(gts_storage_size(&v), 1);
    CHECK(*(const double *)gts_storage_data(&v) == 6 * 30 + 3 * 5 + 4);
    CHECK_FAILS(gts_storage_index(&v, 0, 0, ERR), GTS_EBOUNDS, "dim");
    gts_storage_release(&v);
    gts_storage_release(&root);
}

static void test_insert_dim(void)
{
    const int64_t shape[4] = {2, 3, 4, 2};
    gts_storage s, v;
    if (!create_storage(spec_of(4, shape, F8), 0, &s)) /* dims I, J, K, 0 */
        return;
    fill_linear(&s);
    gts_storage_view(&s, &v);
    if (CHECK_OK(gts_storage_insert_dim(&v, 2, ERR))) {
        index_map m = map_identity(4);
        map_insert(&m, 2);
        CHECK_INT_EQ(v.ndim, 5);
        CHECK(ints_eq(5, v.shape, (const int64_t[]){2, 3, 1, 4, 2}));
        CHECK(v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_J && v.dims[2] == 1 &&
              v.dims[3] == GTS_DIM_K && v.dims[4] == 0);
        CHECK(v.halo[2].lower == 0 && v.halo[2].upper == 0 && v.aligned_index[2] == 0);
        CHECK(v.strides[3] == s.strides[2] && v.strides[4] == s.strides[3]);
        CHECK(matches_root(&v, &m, &s, true));
    }
    /* the label after the largest data dim; at the end too */
    CHECK_OK(gts_storage_insert_dim(&v, 5, ERR));
    CHECK(v.ndim == 6 && v.dims[5] == 2 && v.shape[5] == 1);
    CHECK_FAILS(gts_storage_insert_dim(&v, 7, ERR), GTS_EBOUNDS, "dim");
    CHECK_FAILS(gts_storage_insert_dim(&v, -1, ERR), GTS_EBOUNDS, "dim");
    gts_storage_release(&v);

    /* dims I, J: the first data dim, 0 */
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_index(&v, 3, 1, ERR));
    CHECK_OK(gts_storage_index(&v, 2, 0, ERR));
    CHECK_OK(gts_storage_insert_dim(&v, 0, ERR));
    CHECK(v.ndim == 3 && v.dims[0] == 0 && v.dims[1] == GTS_DIM_I && v.dims[2] == GTS_DIM_J);
    CHECK(get(&v, (const int64_t[]){0, 1, 2}) == 1 * 24 + 2 * 8 + 0 * 2 + 1);
    gts_storage_release(&v);

    /* a full storage cannot take another dim */
    gts_storage_view(&s, &v);
    bool ok = true;
    while (v.ndim < GTS_MAX_NDIM && ok)
        ok = gts_storage_insert_dim(&v, v.ndim, NULL) == GTS_OK;
    CHECK(ok && v.dims[GTS_MAX_NDIM - 1] == GTS_MAX_NDIM - 4);
    CHECK_FAILS(gts_storage_insert_dim(&v, 0, ERR), GTS_EINVAL, "ndim");
    gts_storage_release(&v);
    gts_storage_release(&s);
}

static void test_transpose(void)
{
    gts_storage root, v;
    if (!make_reference(&root))
        return;
    gts_storage_view(&root, &v);
    CHECK_OK(gts_storage_set_halo(&v, (const gts_halo[]){{1, 2}, {3, 0}, {0, 4}}, ERR));
    const int axes[3] = {2, 0, 1};
    if (CHECK_OK(gts_storage_transpose(&v, axes, ERR))) {
        index_map m = map_identity(3);
        map_transpose(&m, axes);
        CHECK(ints_eq(3, v.shape, (const int64_t[]){5, 7, 6}));
        CHECK(ints_eq(3, v.strides,
                      (const int64_t[]){root.strides[2], root.strides[0], root.strides[1]}));
        CHECK(v.dims[0] == GTS_DIM_K && v.dims[1] == GTS_DIM_I && v.dims[2] == GTS_DIM_J);
        CHECK(halos_eq(3, v.halo, (const gts_halo[]){{0, 4}, {1, 2}, {3, 0}}));
        CHECK(ints_eq(3, v.aligned_index, (const int64_t[]){1, 2, 0}));
        CHECK(matches_root(&v, &m, &root, true));
        CHECK(get(&v, (const int64_t[]){3, 1, 2}) == 1 * 30 + 2 * 5 + 3);
    }
    /* NULL reverses: (K, I, J) -> (J, I, K) */
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
    CHECK(v.dims[0] == GTS_DIM_J && v.dims[1] == GTS_DIM_I && v.dims[2] == GTS_DIM_K);
    CHECK(ints_eq(3, v.shape, (const int64_t[]){6, 7, 5}));
    CHECK(halos_eq(3, v.halo, (const gts_halo[]){{3, 0}, {1, 2}, {0, 4}}));
    CHECK(get(&v, (const int64_t[]){2, 1, 3}) == 1 * 30 + 2 * 5 + 3);
    gts_storage before = v;
    CHECK_FAILS(gts_storage_transpose(&v, (const int[]){0, 0, 1}, ERR), GTS_EINVAL, "axes");
    CHECK_FAILS(gts_storage_transpose(&v, (const int[]){0, 1, 3}, ERR), GTS_EINVAL, "axes");
    CHECK_FAILS(gts_storage_transpose(&v, (const int[]){-1, 0, 1}, ERR), GTS_EINVAL, "axes");
    CHECK(same_storage(&v, &before));
    /* like another's dims, matched by label: (J, I, K) back to the root's
     * (I, J, K), every element where it was */
    if (CHECK_OK(gts_storage_transpose_like(&v, &root, ERR))) {
        CHECK(v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_J && v.dims[2] == GTS_DIM_K);
        CHECK(ints_eq(3, v.shape, root.shape) && ints_eq(3, v.strides, root.strides));
        CHECK(get(&v, (const int64_t[]){1, 2, 3}) == 1 * 30 + 2 * 5 + 3);
    }
    gts_storage other;
    gts_storage_view(&root, &other);
    CHECK_OK(gts_storage_slice(&other, 1, 0, 1, 2, ERR)); /* J of another extent */
    before = v;
    CHECK_FAILS(gts_storage_transpose_like(&v, &other, ERR), GTS_EINVAL,
                "dims: a storage of dims ('I', 'J', 'K') and shape (7, 6, 5) is no transpose "
                "of one of dims ('I', 'J', 'K') and shape (7, 2, 5)");
    CHECK_OK(gts_storage_index(&other, 1, 0, ERR)); /* another number of dims */
    CHECK_FAILS(gts_storage_transpose_like(&v, &other, ERR), GTS_EINVAL, "no transpose");
    CHECK(same_storage(&v, &before));
    gts_storage_release(&other);
    gts_storage_release(&v);
    gts_storage_release(&root);
}

/* Another dtype views the same bytes: of the same itemsize with the same
 * geometry; of another itemsize (NumPy's rule) with the last dimension,
 * its halo and aligned point regrouped, and back again. What cannot be
 * regrouped is refused and leaves the view as it was. */
static void test_view_dtype(void)
{
    gts_storage root, v;
    gts_dtype same, half, wider;
    if (!make_reference(&root)) /* (7, 6, 5) float64, last halo (1, 1) */
        return;
    gts_storage_view(&root, &v);
    CHECK_OK(gts_dtype_make(GTS_KIND_UINT, 8, &same, ERR));
    CHECK_OK(gts_dtype_make(GTS_KIND_FLOAT, 4, &half, ERR));
    CHECK_OK(gts_dtype_make(GTS_KIND_COMPLEX, 16, &wider, ERR));
    if (CHECK_OK(gts_storage_view_dtype(&v, same, ERR))) {
        CHECK(gts_dtype_equal(v.dtype, same));
        CHECK(ints_eq(3, v.shape, root.shape) && ints_eq(3, v.strides, root.strides));
        CHECK(halos_eq(3, v.halo, root.halo) && v.offset == root.offset);
        CHECK(gts_storage_data(&v) == gts_storage_data(&root));
    }
    if (CHECK_OK(gts_storage_view_dtype(&v, half, ERR))) {
        CHECK(ints_eq(3, v.shape, (const int64_t[]){7, 6, 10}));
        CHECK(v.strides[2] == 4 && v.strides[1] == root.strides[1]);
        CHECK(halos_eq(3, v.halo, (const gts_halo[]){{2, 1}, {0, 3}, {2, 2}}));
        CHECK(v.aligned_index[2] == 2 * root.aligned_index[2]);
        CHECK(gts_storage_data(&v) == gts_storage_data(&root));
    }
    CHECK_OK(gts_storage_view_dtype(&v, root.dtype, ERR)); /* back: the same geometry */
    CHECK(ints_eq(3, v.shape, root.shape) && ints_eq(3, v.strides, root.strides));
    CHECK(halos_eq(3, v.halo, root.halo) && ints_eq(3, v.aligned_index, root.aligned_index));
    gts_storage before = v;
    /* 5 float64 are 2.5 complex128 */
    CHECK_FAILS(gts_storage_view_dtype(&v, wider, ERR), GTS_EINVAL, "no whole number of 16-byte");
    CHECK(same_storage(&v, &before));
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR)); /* I last: not contiguous */
    before = v;
    CHECK_FAILS(gts_storage_view_dtype(&v, half, ERR), GTS_EINVAL,
                "the last dimension ('I') must be contiguous");
    CHECK(same_storage(&v, &before));
    for (int d = 2; d >= 0; --d)
        CHECK_OK(gts_storage_index(&v, d, 0, ERR));
    CHECK_FAILS(gts_storage_view_dtype(&v, half, ERR), GTS_EINVAL, "a 0-d storage");
    gts_storage_release(&v);
    /* dtypes filled in by hand are checked as gts_dtype_make checks them,
       before anything else (an itemsize of 0 divided by zero) */
    gts_storage_view(&root, &v);
    before = v;
    CHECK_FAILS(gts_storage_view_dtype(&v, (gts_dtype){'x', 8}, ERR), GTS_ETYPE,
                "unsupported kind 'x' with itemsize 8");
    CHECK_FAILS(gts_storage_view_dtype(&v, (gts_dtype){GTS_KIND_BOOL, 4}, ERR), GTS_ETYPE,
                "unsupported kind 'b' with itemsize 4");
    CHECK_FAILS(gts_storage_view_dtype(&v, (gts_dtype){GTS_KIND_INT, 0}, ERR), GTS_ETYPE,
                "unsupported kind 'i' with itemsize 0");
    CHECK(same_storage(&v, &before));
    gts_storage_release(&v);
    gts_storage_release(&root);
}

static void test_domain(void)
{
    gts_storage root, v;
    if (!make_reference(&root)) /* shape (7, 6, 5), halo (2, 1), (0, 3), (1, 1) */
        return;
    gts_storage_view(&root, &v);
    if (CHECK_OK(gts_storage_domain(&v, ERR))) {
        index_map m = map_identity(3);
        map_slice(&m, 0, 2, 1);
        map_slice(&m, 2, 1, 1);
        CHECK(ints_eq(3, v.shape, (const int64_t[]){4, 3, 3}));
        CHECK(halos_eq(3, v.halo, (const gts_halo[]){{0, 0}, {0, 0}, {0, 0}}));
        CHECK(get(&v, (const int64_t[]){0, 0, 0}) == get(&root, (const int64_t[]){2, 0, 1}));
        CHECK(matches_root(&v, &m, &root, true));
        CHECK(ints_eq(3, v.aligned_index, (const int64_t[]){0, 0, 0}));
        CHECK(ints_eq(3, v.strides, root.strides));
    }
    gts_storage_release(&v);
    /* a halo that covers a whole dim leaves an empty domain */
    gts_storage_view(&root, &v);
    CHECK_OK(gts_storage_set_halo(&v, (const gts_halo[]){{3, 4}, {0, 0}, {0, 0}}, ERR));
    CHECK_OK(gts_storage_domain(&v, ERR));
    CHECK(ints_eq(3, v.shape, (const int64_t[]){0, 6, 5}));
    CHECK_INT_EQ(gts_storage_size(&v), 0);
    gts_storage_release(&v);
    gts_storage_release(&root);
}

static void test_set_halo(void)
{
    gts_storage root;
    if (!make_reference(&root))
        return;
    int64_t aligned[3];
    memcpy(aligned, root.aligned_index, sizeof aligned);
    const gts_halo good[3] = {{0, 7}, {6, 0}, {2, 3}};
    CHECK_OK(gts_storage_set_halo(&root, good, ERR));
    CHECK(halos_eq(3, root.halo, good));
    CHECK(ints_eq(3, root.aligned_index, aligned)); /* the aligned point stays */
    gts_storage before = root;
    CHECK_FAILS(gts_storage_set_halo(&root, (const gts_halo[]){{0, 0}, {-1, 0}, {0, 0}}, ERR),
                GTS_EINVAL, "halo");
    CHECK_FAILS(gts_storage_set_halo(&root, (const gts_halo[]){{0, 0}, {0, 0}, {0, -3}}, ERR),
                GTS_EINVAL, "halo");
    CHECK_FAILS(gts_storage_set_halo(&root, (const gts_halo[]){{4, 4}, {0, 0}, {0, 0}}, ERR),
                GTS_EINVAL, "halo");
    CHECK_FAILS(gts_storage_set_halo(&root, (const gts_halo[]){{0, 0}, {0, 0}, {6, 0}}, ERR),
                GTS_EINVAL, "extent 5");
    CHECK(same_storage(&root, &before));
    gts_storage_release(&root);
}

/* ---- copy, assign, fill ------------------------------------------------------ */

static bool values_equal(const gts_storage *a, const gts_storage *b)
{
    int64_t index[GTS_MAX_NDIM] = {0};
    if (a->ndim != b->ndim || !ints_eq(a->ndim, a->shape, b->shape))
        return false;
    if (product(a->ndim, a->shape) == 0)
        return true;
    do
        if (memcmp((const void *)address(a, index), (const void *)address(b, index),
                   a->dtype.itemsize) != 0)
            return false;
    while (next_index(a->ndim, a->shape, index));
    return true;
}

static void test_copy(void)
{
    gts_storage_spec spec = spec_of(3, (const int64_t[]){5, 4, 3}, F8);
    spec.preset = &gpu; /* I contiguous, padded */
    spec.halo[0] = (gts_halo){2, 1};
    spec.halo[2] = (gts_halo){1, 0};
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_I, spec.dims[1] = GTS_DIM_J, spec.dims[2] = 0;
    gts_storage s, c;
    if (!create_storage(spec, 0, &s))
        return;
    fill_linear(&s);
    if (CHECK_OK(gts_storage_copy(&s, &c, ERR))) {
        CHECK(c.buffer != s.buffer && buffer_bytes(c.buffer) != buffer_bytes(s.buffer));
        CHECK(gts_buffer_device(c.buffer) == gts_buffer_device(s.buffer));
        CHECK(gts_dtype_equal(c.dtype, F8) && c.ndim == 3 && ints_eq(3, c.shape, s.shape));
        CHECK(memcmp(c.dims, s.dims, sizeof *c.dims * 3) == 0);
        CHECK(halos_eq(3, c.halo, s.halo));
        CHECK(ints_eq(3, c.aligned_index, (const int64_t[]){2, 0, 1}));
        CHECK_INT_EQ(c.alignment_size, 256);
        CHECK(ints_eq(3, c.strides, (const int64_t[]){8, 256, 1024})); /* still I first */
        CHECK_INT_EQ(address(&c, c.aligned_index) % 256, 0);
        CHECK(values_equal(&c, &s));
        set(&c, (const int64_t[]){1, 1, 1}, -1.0); /* new memory */
        CHECK(get(&s, (const int64_t[]){1, 1, 1}) == 12 + 3 + 1);
        gts_storage_release(&c);
    }
    /* like_to: the same storage on a device, its values not copied */
    if (CHECK_OK(gts_storage_like_to(NULL, &s, &c, ERR))) {
        CHECK(c.buffer != s.buffer && gts_buffer_device(c.buffer) == gts_buffer_device(s.buffer));
        CHECK(ints_eq(3, c.shape, s.shape) && ints_eq(3, c.strides, s.strides));
        CHECK(memcmp(c.dims, s.dims, sizeof *c.dims * 3) == 0 && halos_eq(3, c.halo, s.halo));
        CHECK(ints_eq(3, c.aligned_index, s.aligned_index) && !c.readonly);
        gts_storage_release(&c);
    }

    /* a read-only source gives a writable copy */
    gts_storage ro;
    gts_storage_view(&s, &ro);
    ro.readonly = true;
    CHECK_FAILS(gts_storage_fill(&ro, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 1}}, ERR),
                GTS_EREADONLY, "read-only");
    if (CHECK_OK(gts_storage_copy(&ro, &c, ERR))) {
        CHECK(!c.readonly);
        CHECK_OK(gts_storage_fill(&c, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 1}}, ERR));
        CHECK(get(&c, (const int64_t[]){4, 3, 2}) == 1.0 && get(&s, (const int64_t[]){4, 3, 2}) == 59);
        gts_storage_release(&c);
    }
    gts_storage_release(&ro);

    /* a view with negative steps: same values in new memory */
    gts_storage v;
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 4, -2, 3, ERR));
    CHECK_OK(gts_storage_slice(&v, 2, 2, -1, 3, ERR));
    CHECK_OK(gts_storage_transpose(&v, (const int[]){1, 2, 0}, ERR));
    if (CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
        CHECK(values_equal(&c, &v));
        CHECK(get(&c, (const int64_t[]){3, 0, 1}) == 2 * 12 + 3 * 3 + 2);
        for (int d = 0; d < 3; ++d)
            CHECK(c.strides[d] > 0);
        /* the layout the view's strides show: I (now last) contiguous */
        int layout_v[3], layout_c[3];
        gts_storage_layout(&v, layout_v);
        gts_storage_layout(&c, layout_c);
        CHECK(memcmp(layout_v, layout_c, sizeof layout_v) == 0);
        CHECK_INT_EQ(c.strides[2], 8);
        CHECK(halos_eq(3, c.halo, v.halo));
        CHECK(ints_eq(3, c.aligned_index, v.aligned_index));
        gts_storage_release(&c);
    }
    gts_storage_release(&v);
    gts_storage_release(&s);
}

static void test_assign(void)
{
    const int64_t shape[3] = {3, 4, 5};
    gts_storage_spec spec = spec_of(3, shape, F8);
    gts_storage src, dst, f4, ro;
    if (!create_storage(spec, 0, &src))
        return;
    fill_linear(&src);
    spec.has_layout = true; /* F order, padded */
    spec.layout[0] = 2, spec.layout[1] = 1, spec.layout[2] = 0;
    spec.alignment_size = 32;
    if (!create_storage(spec, GTS_ALLOC_ZERO, &dst))
        return;
    CHECK_INT_EQ(dst.strides[0], 8);
    if (CHECK_OK(gts_storage_assign(&dst, &src, ERR))) {
        CHECK(values_equal(&dst, &src));
        CHECK(get(&dst, (const int64_t[]){2, 3, 4}) == 59);
    }
    /* errors */
    gts_storage part;
    gts_storage_view(&src, &part);
    CHECK_OK(gts_storage_slice(&part, 1, 0, 1, 3, ERR));
    CHECK_FAILS(gts_storage_assign(&dst, &part, ERR), GTS_EINVAL, "shape");
    CHECK_OK(gts_storage_index(&part, 1, 0, ERR));
    CHECK_FAILS(gts_storage_assign(&dst, &part, ERR), GTS_EINVAL, "shape");
    gts_storage_release(&part);
    if (create_storage(spec_of(3, shape, F4), 0, &f4)) {
        CHECK_FAILS(gts_storage_assign(&f4, &src, ERR), GTS_ETYPE, "dtype");
        gts_storage_release(&f4);
    }
    gts_storage_view(&dst, &ro);
    ro.readonly = true;
    CHECK_FAILS(gts_storage_assign(&ro, &src, ERR), GTS_EREADONLY, "read-only");
    CHECK_OK(gts_storage_assign(&src, &ro, ERR)); /* reading a read-only one is fine */
    gts_storage_release(&ro);

    /* overlapping: shift a row by one, as if through a temporary */
    gts_storage row, a, b;
    if (create_storage(spec_of(1, (const int64_t[]){10}, F8), 0, &row)) {
        fill_linear(&row);
        gts_storage_view(&row, &a);
        gts_storage_view(&row, &b);
        CHECK_OK(gts_storage_slice(&a, 0, 1, 1, 9, ERR));
        CHECK_OK(gts_storage_slice(&b, 0, 0, 1, 9, ERR));
        CHECK_OK(gts_storage_assign(&a, &b, ERR));
        bool ok = get(&row, (const int64_t[]){0}) == 0;
        for (int64_t i = 1; i < 10; ++i)
            ok = ok && get(&row, &i) == (double)(i - 1);
        CHECK(ok);
        /* and reversed onto itself */
        gts_storage_release(&a);
        gts_storage_view(&row, &a);
        CHECK_OK(gts_storage_slice(&a, 0, 9, -1, 10, ERR));
        CHECK_OK(gts_storage_assign(&row, &a, ERR));
        ok = true;
        for (int64_t i = 0; i < 10; ++i) /* was 0, 0, 1, ..., 8 */
            ok = ok && get(&row, &i) == (i < 9 ? (double)(8 - i) : 0.0);
        CHECK(ok);
        gts_storage_release(&a);
        gts_storage_release(&b);
        gts_storage_release(&row);
    }
    gts_storage_release(&src);
    gts_storage_release(&dst);
}

/* Which bytes of the buffer belong to elements of `s`. */
static void mark_elements(const gts_storage *s, unsigned char *mask)
{
    int64_t index[GTS_MAX_NDIM] = {0};
    uintptr_t base = (uintptr_t)buffer_bytes(s->buffer);
    if (product(s->ndim, s->shape) == 0)
        return;
    do
        memset(mask + (address(s, index) - base), 1, s->dtype.itemsize);
    while (next_index(s->ndim, s->shape, index));
}

static void test_fill(void)
{
    gts_storage_spec spec = spec_of(3, (const int64_t[]){5, 4, 3}, F8);
    spec.preset = &gpu; /* I padded 5 -> 32: most bytes are padding */
    gts_storage s, v;
    if (!create_storage(spec, 0, &s))
        return;
    size_t size = (size_t)gts_buffer_size(s.buffer);
    unsigned char *bytes = (unsigned char *)buffer_bytes(s.buffer), *mask = calloc(size, 1);
    if (!CHECK(mask != NULL))
        return;
    memset(bytes, 0xa5, size);
    CHECK_OK(gts_storage_fill(&s, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 2.5}}, ERR));
    mark_elements(&s, mask);
    bool ok = true;
    for (size_t i = 0; i < size; ++i)
        ok = ok && (mask[i] || bytes[i] == 0xa5);
    CHECK(ok); /* no padding written */
    int64_t index[3] = {0, 0, 0};
    ok = true;
    do
        ok = ok && get(&s, index) == 2.5;
    while (next_index(3, s.shape, index));
    CHECK(ok);

    /* a strided slice: the rest of the storage is untouched */
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 4, -2, 3, ERR)); /* I = 4, 2, 0 */
    CHECK_OK(gts_storage_slice(&v, 2, 1, 1, 2, ERR));  /* K = 1, 2 */
    CHECK_OK(gts_storage_fill(&v, (gts_scalar){GTS_SCALAR_INT, {.i = -3}}, ERR));
    ok = true;
    do {
        bool inside = index[0] % 2 == 0 && index[2] >= 1;
        ok = ok && get(&s, index) == (inside ? -3.0 : 2.5);
    } while (next_index(3, s.shape, index));
    CHECK(ok);
    ok = true;
    for (size_t i = 0; i < size; ++i)
        ok = ok && (mask[i] || bytes[i] == 0xa5);
    CHECK(ok);

    /* refused values and read-only storages change nothing */
    v.readonly = true;
    CHECK_FAILS(gts_storage_fill(&v, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 0}}, ERR),
                GTS_EREADONLY, "read-only");
    CHECK(get(&s, (const int64_t[]){4, 0, 1}) == -3.0);
    gts_storage_release(&v);
    free(mask);
    gts_storage_release(&s);

    gts_storage small;
    if (create_storage(spec_of(2, (const int64_t[]){2, 3}, I1), GTS_ALLOC_ZERO, &small)) {
        CHECK_FAILS(gts_storage_fill(&small, (gts_scalar){GTS_SCALAR_INT, {.i = 300}}, ERR),
                    GTS_ERANGE, "300");
        CHECK_OK(gts_storage_fill(&small, (gts_scalar){GTS_SCALAR_INT, {.i = -128}}, ERR));
        const int8_t *p = (const int8_t *)address(&small, (const int64_t[]){0, 0});
        CHECK(p[0] == -128 && p[5] == -128);
        gts_storage_release(&small);
    }
}

/* ---- wrap -------------------------------------------------------------------- */

typedef struct owner {
    int releases;
    void *memory;
} owner;

static void release_owner(void *ctx)
{
    owner *o = ctx;
    ++o->releases;
    free(o->memory);
    o->memory = NULL;
}

/* A copy after insert_dim keeps the parent's contiguous dimension: the
 * inserted dimension (stride 0, extent 1) is not taken for the contiguous
 * one, and the padding stays where the preset put it. */
static void test_copy_after_insert_dim(void)
{
    const int64_t shape[3] = {5, 4, 3};
    gts_preset gpu;
    if (!CALL_OK(gts_preset_lookup("gt:gpu", &gpu, ERR)))
        return;
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    gts_storage s, v, c;
    if (!create_storage(spec, 0, &s))
        return;
    gts_storage_view(&s, &v);
    if (CHECK_OK(gts_storage_insert_dim(&v, 3, ERR)) && CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
        int layout[4];
        gts_storage_layout(&v, layout);
        CHECK(layout[3] == 0 && layout[0] == 3); /* extent 1 outermost, I contiguous */
        CHECK_INT_EQ(c.strides[0], 8);
        CHECK_INT_EQ(c.strides[1], 32 * 8); /* I padded to 32 elements, as in the parent */
        CHECK_INT_EQ(c.alignment_size, 256);
        gts_storage_release(&c);
    }
    gts_storage_release(&v);
    gts_storage_release(&s);
}

/* The layout is kept, not read from the strides: gt:gpu makes I contiguous
 * and pads it even where I has extent 1, and copies must do the same. */
static void test_layout_recorded(void)
{
    const int64_t shape[3] = {1, 5, 6};
    gts_preset gpu;
    if (!CALL_OK(gts_preset_lookup("gt:gpu", &gpu, ERR)))
        return;
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    gts_storage s, v, c;
    if (!create_storage(spec, 0, &s))
        return;
    int layout[3];
    gts_storage_layout(&s, layout);
    CHECK(layout[0] == 2 && layout[1] == 1 && layout[2] == 0);
    CHECK(ints_eq(3, s.strides, (const int64_t[]){8, 256, 1280}));
    if (CHECK_OK(gts_storage_copy(&s, &c, ERR))) {
        CHECK(ints_eq(3, c.strides, s.strides));
        gts_storage_release(&c);
    }
    /* views: an index drops a rank and closes the gap, transpose permutes */
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_index(&v, 1, 2, ERR));
    gts_storage_layout(&v, layout);
    CHECK(v.ndim == 2 && layout[0] == 1 && layout[1] == 0);
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
    gts_storage_layout(&v, layout);
    CHECK(layout[0] == 0 && layout[1] == 1);
    gts_storage_release(&v);
    gts_storage_release(&s);
}

static void test_wrap(void)
{
    /* a 3x4 C-order array of doubles the caller allocated */
    owner o = {0, malloc(12 * sizeof(double))};
    if (!CHECK(o.memory != NULL))
        return;
    double *array = o.memory;
    for (int i = 0; i < 12; ++i)
        array[i] = i * 1.5;
    gts_buffer *buffer;
    if (!CHECK_OK(gts_buffer_wrap_host(array, 12 * sizeof(double), release_owner, &o, &buffer,
                                       ERR)))
        return;
    const int64_t shape[2] = {3, 4}, c_strides[2] = {32, 8};
    gts_storage_spec spec = spec_of(2, shape, F8);
    spec.halo[1] = (gts_halo){1, 1};
    gts_storage s, v;
    if (!CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR))) {
        gts_buffer_release(buffer);
        return;
    }
    CHECK(gts_storage_data(&s) == (void *)array);
    CHECK(ints_eq(2, s.strides, c_strides) && ints_eq(2, s.shape, shape));
    {   /* host memory cannot be what a spec for the GPU asks for */
        gts_storage_spec gpu = spec;
        gts_storage unused;
        gpu.has_device = true;
        gpu.device = GTS_DEVICE_GPU;
        CHECK_FAILS(gts_storage_wrap(&gpu, buffer, 0, c_strides, false, &unused, ERR),
                    GTS_ENOTSUP, "device");
    }
    CHECK(ints_eq(2, s.aligned_index, (const int64_t[]){0, 1}));
    CHECK(halos_eq(2, s.halo, (const gts_halo[]){{0, 0}, {1, 1}}));
    CHECK(s.dims[0] == GTS_DIM_I && s.dims[1] == GTS_DIM_J && !s.readonly);
    CHECK(get(&s, (const int64_t[]){2, 1}) == 9 * 1.5);

    /* the buffer outlives our reference, the storage and its first view */
    gts_buffer_release(buffer);
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
    gts_storage_release(&s);
    CHECK_INT_EQ(o.releases, 0);
    CHECK(get(&v, (const int64_t[]){3, 1}) == 7 * 1.5);
    gts_storage_release(&v);
    CHECK_INT_EQ(o.releases, 1);
    CHECK(o.memory == NULL);

    /* checks against a 96-byte buffer on the stack */
    double data[12] = {0};
    CHECK_OK(gts_buffer_wrap_host(data, sizeof data, NULL, NULL, &buffer, ERR));
    spec = spec_of(2, shape, F8);
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, NULL, false, &s, ERR), GTS_EINVAL, "strides");
    CHECK_FAILS(gts_storage_wrap(&spec, NULL, 0, c_strides, false, &s, ERR), GTS_EINVAL, "buffer");
    CHECK_FAILS(gts_storage_wrap(NULL, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL, "spec");
    CHECK_FAILS(gts_storage_spec_init(&spec, 2, NULL, F8, ERR), GTS_EINVAL, "shape");
    spec = spec_of(2, shape, F8);
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 8, c_strides, false, &s, ERR), GTS_EINVAL,
                "strides");
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, -8, c_strides, false, &s, ERR), GTS_EINVAL,
                "strides");
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, (const int64_t[]){-32, 8}, false, &s, ERR),
                GTS_EINVAL, "strides");
    CHECK_OK(gts_storage_wrap(&spec, buffer, 64, (const int64_t[]){-32, 8}, false, &s, ERR));
    CHECK(get(&s, (const int64_t[]){2, 3}) == 0.0 && address(&s, (const int64_t[]){2, 0}) ==
                                                         (uintptr_t)data);
    gts_storage_release(&s);
    spec = spec_of(2, (const int64_t[]){4, 4}, F8);
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL,
                "strides");

    /* An empty array may have any strides: the address of its aligned
     * point was computed all the same and overflowed (found by
     * fuzz_dlpack_import). */
    spec = spec_of(2, (const int64_t[]){0, 4}, F8);
    spec.has_aligned_index = true;
    spec.aligned_index[0] = 0, spec.aligned_index[1] = 3;
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, (const int64_t[]){8, INT64_MIN / 2}, false,
                                  &s, ERR)))
        gts_storage_release(&s);

    /* a layout, given or the preset's, must agree with the strides */
    spec = spec_of(2, shape, F8);
    spec.has_layout = true;
    spec.layout[0] = 1, spec.layout[1] = 0; /* I contiguous; the data is C order */
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL,
                "layout: (1, 0) does not match the data's strides (32, 8)");
    CHECK_OK(gts_storage_wrap(&spec, buffer, 0, (const int64_t[]){8, 24}, false, &s, ERR));
    gts_storage_release(&s);
    spec = spec_of(2, shape, F8);
    spec.preset = &cpu_ifirst;
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL,
                "layout: (1, 0) (the preset's) does not match");
    spec.preset = &cpu_kfirst; /* K contiguous: for dims IJ, J is */
    CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR));
    gts_storage_release(&s);
    /* extent-1 dims are not compared */
    spec = spec_of(2, (const int64_t[]){1, 4}, F8);
    spec.has_layout = true;
    spec.layout[0] = 1, spec.layout[1] = 0;
    CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR));
    gts_storage_release(&s);
    spec.shape[0] = 2;
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR), GTS_EINVAL,
                "layout");
    /* read-only is kept, by views too */
    spec = spec_of(2, shape, F8);
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, true, &s, ERR))) {
        CHECK(s.readonly);
        gts_storage_view(&s, &v);
        CHECK(v.readonly);
        CHECK_FAILS(gts_storage_fill(&v, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 1}}, ERR),
                    GTS_EREADONLY, "read-only");
        gts_storage_release(&v);
        gts_storage_release(&s);
    }
    /* a 0-d storage needs no strides */
    spec = spec_of(0, NULL, F8);
    data[0] = 4.25;
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, NULL, false, &s, ERR))) {
        CHECK(s.ndim == 0 && *(const double *)gts_storage_data(&s) == 4.25);
        gts_storage_release(&s);
    }
    gts_buffer_release(buffer);

    /* an explicit alignment_size must hold at the aligned point */
    void *aligned = aligned_alloc(64, 256);
    if (!CHECK(aligned != NULL))
        return;
    CHECK_OK(gts_buffer_wrap_host(aligned, 256, NULL, NULL, &buffer, ERR));
    spec = spec_of(2, shape, F8);
    spec.alignment_size = 64;
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 8, c_strides, false, &s, ERR), GTS_EINVAL,
                "alignment_size");
    CHECK_OK(gts_storage_wrap(&spec, buffer, 0, c_strides, false, &s, ERR));
    CHECK(s.alignment_size == 64 && ints_eq(2, s.aligned_index, (const int64_t[]){0, 0}));
    gts_storage_release(&s);
    /* element (1, 3) at 8 + 32 + 24 = 64 */
    spec.has_aligned_index = true;
    spec.aligned_index[0] = 1, spec.aligned_index[1] = 3;
    CHECK_OK(gts_storage_wrap(&spec, buffer, 8, c_strides, false, &s, ERR));
    gts_storage_release(&s);
    spec.aligned_index[1] = 2;
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 8, c_strides, false, &s, ERR), GTS_EINVAL,
                "alignment_size");
    spec.aligned_index[1] = 4; /* outside the shape */
    CHECK_FAILS(gts_storage_wrap(&spec, buffer, 8, c_strides, false, &s, ERR), GTS_EINVAL,
                "aligned_index");

    /* f8 elements 12 bytes apart, element 0 on a 24-byte boundary: element 1
     * alone has 12-byte alignment, which neither divides nor is divided by
     * the itemsize, so the view keeps 4 (what a copy can be given) */
    int64_t at = (int64_t)((24 - (uintptr_t)aligned % 24) % 24);
    spec = spec_of(1, (const int64_t[]){3}, F8);
    spec.alignment_size = 24;
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, at, (const int64_t[]){12}, false, &s, ERR))) {
        gts_storage_view(&s, &v);
        CHECK_OK(gts_storage_slice(&v, 0, 1, 1, 2, ERR)); /* +12, +24: the second */
        CHECK(v.aligned_index[0] == 1 && v.alignment_size == 24);
        gts_storage_release(&v);
        gts_storage_view(&s, &v);
        CHECK_OK(gts_storage_slice(&v, 0, 1, 1, 1, ERR));
        CHECK(v.aligned_index[0] == 0 && v.alignment_size == 4);
        gts_storage c;
        set(&v, (const int64_t[]){0}, 0.75);
        if (CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
            CHECK(c.alignment_size == 4 && get(&c, (const int64_t[]){0}) == 0.75);
            gts_storage_release(&c);
        }
        gts_storage_release(&v);
        gts_storage_release(&s);
    }
    gts_buffer_release(buffer);
    free(aligned);
}

/* ---- properties -------------------------------------------------------------- */

static void test_properties(void)
{
    gts_storage_spec spec = spec_of(3, (const int64_t[]){5, 4, 3}, F8);
    spec.preset = &gpu;
    spec.halo[0] = (gts_halo){1, 2};
    spec.halo[2] = (gts_halo){0, 3};
    gts_storage s, v;
    if (!create_storage(spec, 0, &s))
        return;
    CHECK_INT_EQ(gts_storage_size(&s), 60);
    CHECK_INT_EQ(gts_storage_nbytes(&s), 480); /* no padding */
    int layout[3];
    gts_storage_layout(&s, layout);
    CHECK(layout[0] == 2 && layout[1] == 1 && layout[2] == 0);
    int64_t domain[3];
    gts_storage_domain_shape(&s, domain);
    CHECK(ints_eq(3, domain, (const int64_t[]){2, 4, 0}));
    CHECK(!gts_storage_contiguous(&s, 'C') && !gts_storage_contiguous(&s, 'F')); /* padded */
    gts_storage_release(&s);

    /* C order, F order, slices, extent 1, empty */
    if (!create_storage(spec_of(2, (const int64_t[]){4, 5}, F8), 0, &s))
        return;
    CHECK(gts_storage_contiguous(&s, 'C') && !gts_storage_contiguous(&s, 'F'));
    gts_storage_layout(&s, layout);
    CHECK(layout[0] == 0 && layout[1] == 1);
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 1, 1, 2, ERR)); /* whole rows: still C */
    CHECK(gts_storage_contiguous(&v, 'C') && !gts_storage_contiguous(&v, 'F'));
    CHECK_OK(gts_storage_slice(&v, 1, 0, 1, 4, ERR)); /* part rows: neither */
    CHECK(!gts_storage_contiguous(&v, 'C') && !gts_storage_contiguous(&v, 'F'));
    CHECK_INT_EQ(gts_storage_nbytes(&v), 64);
    CHECK_OK(gts_storage_index(&v, 0, 1, ERR)); /* one row: both */
    CHECK(gts_storage_contiguous(&v, 'C') && gts_storage_contiguous(&v, 'F'));
    CHECK_OK(gts_storage_slice(&v, 0, 3, -1, 4, ERR)); /* reversed: neither */
    CHECK(!gts_storage_contiguous(&v, 'C') && !gts_storage_contiguous(&v, 'F'));
    gts_storage_release(&v);
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 2, 1, 1, ERR)); /* shape (1, 5): both */
    CHECK(gts_storage_contiguous(&v, 'C') && gts_storage_contiguous(&v, 'F'));
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR)); /* (5, 1), stride 8 first: both */
    CHECK(gts_storage_contiguous(&v, 'C') && gts_storage_contiguous(&v, 'F'));
    CHECK_OK(gts_storage_slice(&v, 0, 0, 2, 0, ERR)); /* empty */
    CHECK(gts_storage_contiguous(&v, 'C') && gts_storage_contiguous(&v, 'F'));
    CHECK(gts_storage_size(&v) == 0 && gts_storage_nbytes(&v) == 0);
    gts_storage_release(&v);
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR)); /* the transpose of C order is F */
    CHECK(!gts_storage_contiguous(&v, 'C') && gts_storage_contiguous(&v, 'F'));
    gts_storage_layout(&v, layout);
    CHECK(layout[0] == 1 && layout[1] == 0);
    gts_storage_release(&v);
    gts_storage_release(&s);

    spec = spec_of(3, (const int64_t[]){2, 3, 4}, F4);
    spec.has_layout = true;
    spec.layout[0] = 2, spec.layout[1] = 1, spec.layout[2] = 0;
    if (create_storage(spec, 0, &s)) {
        CHECK(ints_eq(3, s.strides, (const int64_t[]){4, 8, 24}));
        CHECK(!gts_storage_contiguous(&s, 'C') && gts_storage_contiguous(&s, 'F'));
        CHECK_INT_EQ(gts_storage_nbytes(&s), 96);
        gts_storage_release(&s);
    }
}

static void test_empty_and_0d(void)
{
    int64_t start = live_buffers();
    gts_storage s, v, c;
    /* zero-size dims */
    gts_storage_spec spec = spec_of(3, (const int64_t[]){3, 0, 2}, F8);
    spec.preset = &gpu;
    spec.halo[0] = (gts_halo){1, 1};
    if (create_storage(spec, GTS_ALLOC_ZERO, &s)) {
        CHECK(gts_storage_size(&s) == 0 && gts_storage_nbytes(&s) == 0);
        CHECK(s.aligned_index[1] == 0 && s.aligned_index[0] == 1);
        for (int d = 0; d < 3; ++d)
            CHECK(s.strides[d] != 0);
        CHECK(gts_storage_contiguous(&s, 'C') && gts_storage_contiguous(&s, 'F'));
        CHECK_OK(gts_storage_fill(&s, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 1}}, ERR));
        gts_storage_view(&s, &v);
        CHECK_OK(gts_storage_domain(&v, ERR));
        CHECK(ints_eq(3, v.shape, (const int64_t[]){1, 0, 2}));
        CHECK_OK(gts_storage_slice(&v, 1, 0, 1, 0, ERR));
        CHECK_OK(gts_storage_index(&v, 0, 0, ERR));
        CHECK_FAILS(gts_storage_index(&v, 0, 0, ERR), GTS_EBOUNDS, "index");
        if (CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
            CHECK(c.ndim == 2 && c.shape[0] == 0 && c.shape[1] == 2);
            CHECK_OK(gts_storage_assign(&c, &v, ERR));
            gts_storage_release(&c);
        }
        gts_storage_release(&v);
        gts_storage_release(&s);
    }
    /* 0-d */
    if (create_storage(spec_of(0, NULL, F8), 0, &s)) {
        CHECK(gts_storage_size(&s) == 1 && gts_storage_nbytes(&s) == 8);
        CHECK(gts_storage_contiguous(&s, 'C') && gts_storage_contiguous(&s, 'F'));
        CHECK_OK(gts_storage_fill(&s, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 6.5}}, ERR));
        CHECK(get(&s, NULL) == 6.5);
        gts_storage_view(&s, &v);
        CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
        CHECK_OK(gts_storage_domain(&v, ERR));
        CHECK_FAILS(gts_storage_slice(&v, 0, 0, 1, 1, ERR), GTS_EBOUNDS, "dim");
        if (CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
            CHECK(c.ndim == 0 && c.buffer != s.buffer);
            CHECK(get(&c, NULL) == 6.5);
            gts_storage_release(&c);
        }
        CHECK_OK(gts_storage_insert_dim(&v, 0, ERR));
        CHECK(v.ndim == 1 && v.shape[0] == 1 && v.dims[0] == 0);
        CHECK(get(&v, (const int64_t[]){0}) == 6.5);
        gts_storage_release(&v);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(live_buffers(), start);
}

/* reshape as a view: the same shape, or dims of extent 1 dropped with
 * their labels, the offset where index 0 puts it; a regrouping refused
 * with both shapes, the view unchanged. */
static void test_reshape(void)
{
    gts_storage s, v;
    gts_storage_spec spec = spec_of(4, (const int64_t[]){3, 1, 4, 1}, F8);
    spec.preset = &cpu_kfirst;
    if (!create_storage(spec, 0, &s))
        return;
    gts_storage_view(&s, &v);
    if (CHECK_OK(gts_storage_reshape(&v, 4, s.shape, ERR)))
        CHECK(v.ndim == 4 && ints_eq(4, v.strides, s.strides));
    if (CHECK_OK(gts_storage_reshape(&v, 2, (const int64_t[]){3, 4}, ERR))) {
        CHECK(v.ndim == 2 && v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_K);
        CHECK(v.strides[0] == s.strides[0] && v.strides[1] == s.strides[2]);
        CHECK(v.offset == s.offset);
    }
    gts_storage_release(&v);
    /* (3, 1, 4, 1) to (3, 4, 1): J dropped (the first of extent 1 that can go) */
    gts_storage_view(&s, &v);
    if (CHECK_OK(gts_storage_reshape(&v, 3, (const int64_t[]){3, 4, 1}, ERR)))
        CHECK(v.ndim == 3 && v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_K && v.dims[2] == 0);
    gts_storage_release(&v);
    gts_storage_view(&s, &v);
    CHECK_FAILS(gts_storage_reshape(&v, 1, (const int64_t[]){12}, ERR), GTS_EINVAL,
                "reshape: cannot reshape a storage of shape (3, 1, 4, 1) to (12,) as a view "
                "with dims (only dims of extent 1 can be dropped)");
    CHECK_FAILS(gts_storage_reshape(&v, 4, (const int64_t[]){3, 4, 1, 1}, ERR), GTS_EINVAL,
                "to (3, 4, 1, 1)");
    CHECK_FAILS(gts_storage_reshape(&v, 5, (const int64_t[]){3, 1, 4, 1, 1}, ERR), GTS_EINVAL,
                "to (3, 1, 4, 1, 1)");
    CHECK_FAILS(gts_storage_reshape(&v, -1, NULL, ERR), GTS_EINVAL, "shape: -1 extents");
    /* one extent of -1: the rest of the size, as NumPy infers it */
    CHECK_FAILS(gts_storage_reshape(&v, 2, (const int64_t[]){-1, -1}, ERR), GTS_EINVAL,
                "shape: -1 at positions 0 and 1 (at most one extent is inferred)");
    CHECK_FAILS(gts_storage_reshape(&v, 2, (const int64_t[]){-3, 4}, ERR), GTS_EINVAL,
                "shape: negative extent -3 at position 0");
    CHECK_FAILS(gts_storage_reshape(&v, 2, (const int64_t[]){0, -1}, ERR), GTS_EINVAL,
                "shape: -1 at position 1 beside an extent of 0");
    CHECK_FAILS(gts_storage_reshape(&v, 2, (const int64_t[]){5, -1}, ERR), GTS_EINVAL,
                "to (5, -1)"); /* 5 does not divide 12 */
    CHECK_FAILS(gts_storage_reshape(&v, 2, (const int64_t[]){INT64_MAX, -1}, ERR), GTS_EINVAL,
                "cannot reshape");
    CHECK(v.ndim == 4 && ints_eq(4, v.shape, s.shape));
    if (CHECK_OK(gts_storage_reshape(&v, 2, (const int64_t[]){-1, 4}, ERR)))
        CHECK(v.ndim == 2 && v.shape[0] == 3 && v.dims[0] == GTS_DIM_I && v.dims[1] == GTS_DIM_K);
    gts_storage_release(&v);
    gts_storage_release(&s);
}

/* A gt:gpu spec of `shape` (3-d float64) with that memory management. */
static gts_storage_spec gpu_spec(const int64_t *shape, gts_managed managed)
{
    gts_storage_spec spec = spec_of(3, shape, F8);
    spec.preset = &gpu;
    spec.managed = managed;
    return spec;
}

/* What gts_storage_create_reusing asked for and gives back: the buffer in
 * `give` (a new reference), or none. */
typedef struct {
    gts_buffer *give;
    int calls;
    const gts_device_ops *device;
    int64_t size;
    unsigned flags;
} reuse_log;

static gts_buffer *reuse_from_log(void *ctx, const gts_device_ops *device, int64_t size,
                                  unsigned flags)
{
    reuse_log *log = ctx;
    ++log->calls;
    log->device = device;
    log->size = size;
    log->flags = flags;
    return log->give ? gts_buffer_retain(log->give) : NULL;
}

/* gts_storage_create_reusing: asked only for device memory and without
 * zeroing, for the block size, device and host side libgtstore decided;
 * the buffer given serves the storage (aligned the same as new memory; a
 * mirrored one in sync, as a new one), a wrong one is an error;
 * gts_buffer_reusable and gts_storage_managed beside. On the emulated
 * device. */
static void test_create_reusing(void)
{
    int64_t before = live_buffers();
    const int64_t shape[] = {5, 4, 3};
    const gts_device_ops *emulated = gts_device_emulated();
    if (!CHECK_OK(gts_device_use_gpu(emulated, ERR)))
        return;
    gts_storage_spec spec = gpu_spec(shape, GTS_MANAGED_NONE);
    reuse_log log = {NULL, 0, NULL, 0, 1};
    gts_storage first, again;
    /* nothing given: new memory, for the size the geometry needs */
    if (!CHECK_OK(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &first, ERR)))
        return;
    CHECK_INT_EQ(log.calls, 1);
    CHECK(log.device == emulated && log.size == gts_buffer_size(first.buffer) && !log.flags);
    CHECK_INT_EQ(gts_storage_managed(&first), GTS_MANAGED_NONE);
    CHECK(gts_buffer_reusable(first.buffer)); /* the storage's is the only reference */
    gts_buffer *block = gts_buffer_retain(first.buffer);
    CHECK(!gts_buffer_reusable(block)); /* two */
    int64_t first_offset = first.offset;
    gts_storage_release(&first);
    CHECK(gts_buffer_reusable(block));
    /* the block given back serves a new storage, element 0 where it was */
    spec = gpu_spec(shape, GTS_MANAGED_NONE);
    log.give = block;
    if (CHECK_OK(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &again, ERR))) {
        CHECK(again.buffer == block && log.calls == 2);
        CHECK(ints_eq(3, again.strides, (const int64_t[]){8, 256, 1024}));
        CHECK_INT_EQ(again.offset, first_offset);
        CHECK(!gts_buffer_reusable(block)); /* the storage holds it too */
        gts_storage_release(&again);
    }
    /* not asked where zeroed or in host memory; asked for a mirrored
     * buffer, and for managed memory */
    const struct {
        gts_managed managed;
        unsigned flags;
        bool cpu, asked;
    } cases[] = {{GTS_MANAGED_NONE, GTS_ALLOC_ZERO, false, false},
                 {GTS_MANAGED_GT4PY, GTS_ALLOC_ZERO, false, false},
                 {GTS_MANAGED_NONE, 0, true, false},
                 {GTS_MANAGED_GT4PY, 0, false, true},
                 {GTS_MANAGED_CUDA, 0, false, true}};
    log.give = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        spec = spec_of(3, shape, F8);
        spec.preset = cases[i].cpu ? &cpu_ifirst : &gpu;
        spec.managed = cases[i].managed;
        int calls = log.calls;
        if (CHECK_OK(gts_storage_create_reusing(&spec, cases[i].flags, reuse_from_log, &log,
                                                &again, ERR))) {
            CHECK((log.calls == calls + 1) == cases[i].asked);
            CHECK(!cases[i].asked ||
                  log.flags == (cases[i].managed == GTS_MANAGED_GT4PY ? GTS_ALLOC_MIRRORED : 0));
            CHECK_INT_EQ(gts_storage_managed(&again),
                         cases[i].cpu ? GTS_MANAGED_NONE : cases[i].managed);
            gts_storage_release(&again);
        }
    }
    /* unknown flags are refused before anything is asked, as
     * gts_buffer_alloc refuses them */
    spec = gpu_spec(shape, GTS_MANAGED_NONE);
    int calls = log.calls;
    CHECK_FAILS(gts_storage_create_reusing(&spec, 0x1000, reuse_from_log, &log, &again, ERR),
                GTS_EINVAL, "flags: 0x1000 has unknown bits");
    spec = gpu_spec(shape, GTS_MANAGED_CUDA); /* host-accessible: no host side beside it */
    CHECK_FAILS(gts_storage_create_reusing(&spec, GTS_ALLOC_MIRRORED, reuse_from_log, &log,
                                           &again, ERR),
                GTS_EINVAL, "host-accessible");
    CHECK_INT_EQ(log.calls, calls);
    /* a buffer of another size or device: an error, the buffer released */
    /* a mirrored buffer serves a mirrored storage, in sync again */
    spec = gpu_spec(shape, GTS_MANAGED_GT4PY);
    log.give = NULL;
    if (CHECK_OK(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &first, ERR))) {
        gts_buffer *mirrored = gts_buffer_retain(first.buffer);
        CHECK_OK(gts_buffer_set_sync_state(mirrored, GTS_SYNC_DEVICE_DIRTY, ERR));
        gts_storage_release(&first);
        CHECK(gts_buffer_reusable(mirrored));
        spec = gpu_spec(shape, GTS_MANAGED_GT4PY);
        log.give = mirrored;
        if (CHECK_OK(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &again, ERR))) {
            CHECK(again.buffer == mirrored && log.flags == GTS_ALLOC_MIRRORED);
            CHECK_INT_EQ(gts_buffer_sync_state(mirrored), GTS_SYNC_CLEAN);
            gts_storage_release(&again);
        }
        /* and not a device-only one */
        spec = gpu_spec(shape, GTS_MANAGED_NONE);
        CHECK_FAILS(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &again, ERR),
                    GTS_EINVAL, "reuse: gave a mirrored buffer");
        gts_buffer_release(mirrored);
    }
    gts_buffer *small, *host;
    if (CHECK_OK(gts_buffer_alloc(emulated, 64, 0, &small, ERR)) &&
        CHECK_OK(gts_buffer_alloc(gts_device_host(), 64, 0, &host, ERR))) {
        CHECK(gts_buffer_reusable(small) && !gts_buffer_reusable(host));
        gts_buffer *wrong[] = {small, host};
        for (int w = 0; w < 2; ++w) {
            spec = gpu_spec(shape, GTS_MANAGED_NONE);
            log.give = wrong[w];
            CHECK_FAILS(gts_storage_create_reusing(&spec, 0, reuse_from_log, &log, &again, ERR),
                        GTS_EINVAL, "reuse: gave a buffer of 64 bytes");
            CHECK(gts_buffer_reusable(wrong[w]) == (w == 0)); /* its reference went back */
        }
        gts_buffer_release(small);
        gts_buffer_release(host);
    }
    gts_buffer_release(block);
    CHECK_OK(gts_device_use_gpu(NULL, ERR));
    CHECK_INT_EQ(live_buffers(), before);
}

int main(void)
{
    if (!CHECK_OK(gts_preset_lookup("gt:gpu", &gpu, ERR)) ||
        !CHECK_OK(gts_preset_lookup("gt:cpu_kfirst", &cpu_kfirst, ERR)) ||
        !CHECK_OK(gts_preset_lookup("gt:cpu_ifirst", &cpu_ifirst, ERR)))
        return check_summary("storage");
    int64_t start = live_buffers();
    test_create();
    test_create_reusing();
    test_views();
    test_slice_values();
    test_slice_errors();
    test_aligned_point_chains();
    test_aligned_point_nearest();
    test_aligned_point_brute_force();
    test_aligned_point_huge_alignment();
    test_index();
    test_insert_dim();
    test_reshape();
    test_transpose();
    test_view_dtype();
    test_domain();
    test_set_halo();
    test_wrap();
    test_properties();
    /* the data tests, on the host and on the emulated device */
    const gts_device_ops *devices[] = {gts_device_host(), gts_device_emulated()};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
        test_device = devices[i];
        test_copy();
        test_assign();
        test_fill();
        test_copy_after_insert_dim();
        test_layout_recorded();
        test_empty_and_0d();
    }
    test_device = NULL;
    gts_transfer_counts counts;
    gts_device_emulated_counts(&counts);
    /* the emulated run ran on the device: its kernels, no transfers */
    CHECK(counts.copies > 0 && counts.fills > 0 && counts.to_device == 0 && counts.to_host == 0);
    CHECK_INT_EQ(counts.live_blocks, 0);
    CHECK_INT_EQ(live_buffers(), start); /* every test released what it made */
    return check_summary("storage");
}
