/* Views: a storage (allocated with a random spec, or wrapped around memory
 * with random strides) goes through a chain of up to 16 slices, indexes,
 * inserted dims, transposes, domain views and halo changes, with hostile
 * arguments mixed in; fills, copies and assignments run on the way.
 *
 * Checks after every step, against a model the test keeps itself (element
 * 0's offset and the strides, updated by the plain rules of each
 * operation): an operation succeeds exactly when its arguments are valid,
 * a failure leaves the view unchanged; every element sits where the model
 * says and inside the buffer; the halo is the selected points that lay in
 * the old halo (counted one by one); the aligned point is inside the shape
 * and aligned to alignment_size, which divides the original alignment.
 * A fill writes the item into every element and no other byte; a copy and
 * an assignment reproduce every element. */
#include "../c/storage_helpers.h" /* halo_after_slice: the halo rule by brute force */
#include "fuzz_input.h"
#include "gtstore/storage.h"

#define MAX_ELEMENTS 4096

typedef fuzz_wide wide;

typedef struct model {
    int ndim;
    int64_t offset, shape[GTS_MAX_NDIM], strides[GTS_MAX_NDIM];
    gts_halo halo[GTS_MAX_NDIM];
} model;

static model model_of(const gts_storage *s)
{
    model m = {.ndim = s->ndim, .offset = s->offset};
    memcpy(m.shape, s->shape, sizeof m.shape);
    memcpy(m.strides, s->strides, sizeof m.strides);
    memcpy(m.halo, s->halo, sizeof m.halo);
    return m;
}

/* Runs the statements after `index` for every index of `shape` in C order
 * (the first MAX_ELEMENTS of them). */
#define FOR_EACH_INDEX(ndim, shape, index, ...)                             \
    do {                                                                    \
        int64_t index[GTS_MAX_NDIM] = {0};                                  \
        int64_t count_ = product((ndim), (shape));                          \
        for (int64_t k_ = 0; k_ < count_ && k_ < MAX_ELEMENTS; ++k_) {      \
            __VA_ARGS__                                                     \
            for (int d_ = (ndim) - 1; d_ >= 0 && ++index[d_] == (shape)[d_]; --d_) \
                index[d_] = 0;                                              \
        }                                                                   \
    } while (0)

static int64_t offset_of(int ndim, int64_t offset, const int64_t *strides, const int64_t *index)
{
    for (int d = 0; d < ndim; ++d)
        offset += index[d] * strides[d];
    return offset;
}

static void check_view(const gts_storage *s, const model *m, int64_t alignment)
{
    FUZZ_CHECK(s->ndim == m->ndim);
    FUZZ_CHECK(memcmp(s->shape, m->shape, (size_t)s->ndim * sizeof *s->shape) == 0);
    FUZZ_CHECK(gts_dims_check(s->ndim, s->dims, NULL) == GTS_OK);
    FUZZ_CHECK(gts_layout_check(s->ndim, s->layout, NULL) == GTS_OK);
    for (int d = 0; d < s->ndim; ++d) {
        FUZZ_CHECK(s->halo[d].lower == m->halo[d].lower && s->halo[d].upper == m->halo[d].upper);
        FUZZ_CHECK(s->halo[d].lower >= 0 && s->halo[d].upper >= 0);
        FUZZ_CHECK(s->halo[d].lower + s->halo[d].upper <= s->shape[d]);
        FUZZ_CHECK(s->aligned_index[d] >= 0);
        FUZZ_CHECK(s->aligned_index[d] < s->shape[d] || s->aligned_index[d] == 0);
    }
    FUZZ_CHECK(s->alignment_size >= 1 && alignment % s->alignment_size == 0);
    if (gts_storage_size(s) == 0)
        return;
    int64_t itemsize = s->dtype.itemsize, buffer = gts_buffer_size(s->buffer);
    FOR_EACH_INDEX(s->ndim, s->shape, index, {
        int64_t at = offset_of(s->ndim, s->offset, s->strides, index);
        FUZZ_CHECK(at == offset_of(m->ndim, m->offset, m->strides, index));
        FUZZ_CHECK(at >= 0 && at + itemsize <= buffer);
    });
    uintptr_t point = (uintptr_t)gts_buffer_host(s->buffer) +
                      (uintptr_t)offset_of(s->ndim, s->offset, s->strides, s->aligned_index);
    FUZZ_CHECK(point % (uint64_t)s->alignment_size == 0);
}

static bool model_slice(model *m, int dim, int64_t start, int64_t step, int64_t count)
{
    if (dim < 0 || dim >= m->ndim || step == 0 || count < 0)
        return false;
    int64_t n = m->shape[dim];
    if (count > 0) {
        wide last = (wide)start + (wide)(count - 1) * step;
        if (start < 0 || start >= n || last < 0 || last >= n)
            return false;
        m->offset += start * m->strides[dim];
    }
    m->halo[dim] = halo_after_slice(n, m->halo[dim], start, step, count);
    if (count > 1) /* else the stride never multiplies an index but 0 */
        m->strides[dim] *= step;
    m->shape[dim] = count;
    return true;
}

static void model_drop(model *m, int dim)
{
    for (int d = dim; d < m->ndim - 1; ++d) {
        m->shape[d] = m->shape[d + 1];
        m->strides[d] = m->strides[d + 1];
        m->halo[d] = m->halo[d + 1];
    }
    --m->ndim;
}

/* Bytes of the buffer that elements of `s` cover; false if two overlap. */
static bool element_bytes(const gts_storage *s, unsigned char *covered, int64_t size)
{
    memset(covered, 0, (size_t)size);
    bool distinct = true;
    if (gts_storage_size(s) == 0)
        return true;
    FOR_EACH_INDEX(s->ndim, s->shape, index, {
        int64_t at = offset_of(s->ndim, s->offset, s->strides, index);
        for (int b = 0; b < s->dtype.itemsize; ++b)
            if (covered[at + b])
                distinct = false;
            else
                covered[at + b] = 1;
    });
    return distinct;
}

static void check_fill(const gts_storage *s, fuzz_input *in)
{
    int64_t size = gts_buffer_size(s->buffer);
    unsigned char *host = gts_buffer_host(s->buffer);
    unsigned char *before = malloc((size_t)size + 1), *covered = malloc((size_t)size + 1);
    if (size)
        memcpy(before, host, (size_t)size);
    bool distinct = element_bytes(s, covered, size);
    gts_scalar value = {.kind = GTS_SCALAR_INT, .value.i = fuzz_range(in, -2, 100)};
    unsigned char item[16];
    gts_error err;
    int rc = gts_storage_fill(s, value, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(s->readonly || rc == GTS_ERANGE || rc == GTS_ETYPE);
        FUZZ_CHECK(size == 0 || memcmp(before, host, (size_t)size) == 0);
    } else {
        FUZZ_CHECK(!s->readonly);
        FUZZ_CHECK(gts_scalar_store(value, s->dtype, item, NULL) == GTS_OK);
        for (int64_t b = 0; b < size; ++b)
            if (!covered[b])
                FUZZ_CHECK(host[b] == before[b]);
        if (distinct && gts_storage_size(s) <= MAX_ELEMENTS)
            FOR_EACH_INDEX(s->ndim, s->shape, index, {
                int64_t at = offset_of(s->ndim, s->offset, s->strides, index);
                FUZZ_CHECK(memcmp(host + at, item, s->dtype.itemsize) == 0);
            });
    }
    free(before);
    free(covered);
}

/* A copy holds the same elements; assigning it back changes nothing. */
static void check_copy(const gts_storage *s)
{
    gts_error err;
    gts_storage copy;
    if (s->alignment_size > 4096) /* a copy allocates alignment_size more bytes */
        return;
    int rc = gts_storage_copy(s, &copy, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    FUZZ_CHECK(copy.ndim == s->ndim && !copy.readonly);
    model m = model_of(&copy);
    check_view(&copy, &m, copy.alignment_size);
    const unsigned char *a = gts_storage_data(s), *b = gts_storage_data(&copy);
    if (gts_storage_size(s) > 0 && gts_storage_size(s) <= MAX_ELEMENTS)
        FOR_EACH_INDEX(s->ndim, s->shape, index, {
            FUZZ_CHECK(memcmp(a + offset_of(s->ndim, 0, s->strides, index),
                              b + offset_of(s->ndim, 0, copy.strides, index),
                              s->dtype.itemsize) == 0);
        });
    /* refused only for read-only views and ones that repeat an element */
    bool repeats = false;
    for (int d = 0; d < s->ndim && gts_storage_size(s) > 0; ++d)
        repeats = repeats || (s->shape[d] > 1 && s->strides[d] == 0);
    rc = gts_storage_assign(s, &copy, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(s->readonly ? rc == GTS_EREADONLY : repeats && rc == GTS_EINVAL);
    }
    gts_storage_release(&copy);
}

static int64_t draw_arg(fuzz_input *in, int64_t low, int64_t high)
{
    return fuzz_u8(in) < 24 ? fuzz_hostile(in) : fuzz_range(in, low, high);
}

/* One operation on `view`, mirrored on the model. */
static void step(gts_storage *view, model *m, fuzz_input *in)
{
    gts_error err;
    model expected = *m;
    bool valid = false;
    int rc = GTS_OK;
    int n = view->ndim;
    int dim = (int)draw_arg(in, -1, n);
    switch (fuzz_range(in, 0, 6)) {
    case 0:
    case 1: { /* slice */
        int64_t extent = dim >= 0 && dim < n ? view->shape[dim] : 4;
        int64_t start = draw_arg(in, -1, extent), step = draw_arg(in, -3, 3);
        int64_t count = draw_arg(in, 0, extent + 1);
        valid = model_slice(&expected, dim, start, step, count);
        rc = gts_storage_slice(view, dim, start, step, count, fuzz_error(&err));
        break;
    }
    case 2: { /* index */
        int64_t index = draw_arg(in, -1, dim >= 0 && dim < n ? view->shape[dim] : 4);
        valid = dim >= 0 && dim < n && index >= 0 && index < view->shape[dim];
        if (valid) {
            expected.offset += index * expected.strides[dim];
            model_drop(&expected, dim);
        }
        rc = gts_storage_index(view, dim, index, fuzz_error(&err));
        break;
    }
    case 3: /* insert a dim of extent 1 */
        valid = dim >= 0 && dim <= n && n < GTS_MAX_NDIM && n < 8;
        if (n >= 8) /* keep the views small */
            return;
        if (valid) {
            for (int d = n; d > dim; --d) {
                expected.shape[d] = expected.shape[d - 1];
                expected.strides[d] = expected.strides[d - 1];
                expected.halo[d] = expected.halo[d - 1];
            }
            expected.shape[dim] = 1;
            expected.strides[dim] = 0;
            expected.halo[dim] = (gts_halo){0, 0};
            ++expected.ndim;
        }
        rc = gts_storage_insert_dim(view, dim, fuzz_error(&err));
        break;
    case 4: { /* transpose, by a permutation or not */
        int axes[GTS_MAX_NDIM];
        fuzz_permutation(in, n, axes);
        if (n > 0 && fuzz_u8(in) < 32)
            axes[fuzz_range(in, 0, n - 1)] = (int)draw_arg(in, -1, n);
        bool seen[GTS_MAX_NDIM] = {false};
        valid = true;
        for (int i = 0; i < n; ++i) {
            valid = valid && axes[i] >= 0 && axes[i] < n && !seen[axes[i]];
            if (valid)
                seen[axes[i]] = true;
        }
        if (valid)
            for (int i = 0; i < n; ++i) {
                expected.shape[i] = m->shape[axes[i]];
                expected.strides[i] = m->strides[axes[i]];
                expected.halo[i] = m->halo[axes[i]];
            }
        rc = gts_storage_transpose(view, axes, fuzz_error(&err));
        break;
    }
    case 5: /* the domain */
        valid = true;
        for (int d = 0; d < n; ++d) {
            int64_t lo = m->halo[d].lower, count = m->shape[d] - lo - m->halo[d].upper;
            model_slice(&expected, d, count > 0 ? lo : 0, 1, count);
        }
        rc = gts_storage_domain(view, fuzz_error(&err));
        break;
    default: { /* a new halo */
        gts_halo halo[GTS_MAX_NDIM];
        valid = true;
        for (int d = 0; d < n; ++d) {
            halo[d] = (gts_halo){draw_arg(in, 0, view->shape[d]), draw_arg(in, 0, 2)};
            valid = valid && halo[d].lower >= 0 && halo[d].upper >= 0 &&
                    (wide)halo[d].lower + halo[d].upper <= view->shape[d];
        }
        if (valid)
            memcpy(expected.halo, halo, (size_t)n * sizeof *halo);
        rc = gts_storage_set_halo(view, halo, fuzz_error(&err));
        break;
    }
    }
    FUZZ_CHECK((rc == GTS_OK) == valid);
    if (rc != GTS_OK)
        fuzz_check_error(rc, &err);
    else
        *m = expected;
}

/* A storage to start from: allocated for a random spec, or wrapped. */
static bool make_storage(fuzz_input *in, gts_storage *out, unsigned char *arena, size_t arena_size)
{
    static const gts_dtype dtypes[] = {{'f', 8}, {'f', 4}, {'i', 2}, {'u', 1}, {'c', 16},
                                       {'b', 1}, {'f', 2}, {'i', 8}};
    int ndim = (int)fuzz_range(in, 0, 4);
    int64_t shape[4];
    for (int d = 0; d < ndim; ++d)
        shape[d] = fuzz_range(in, 0, 6);
    gts_storage_spec spec;
    gts_preset preset;
    gts_error err;
    gts_storage_spec_init(&spec, ndim, shape, dtypes[fuzz_range(in, 0, 7)], NULL);
    if (fuzz_bool(in) && gts_preset_at((size_t)fuzz_range(in, 0, 14), &preset, NULL) == GTS_OK &&
        preset.device == GTS_DEVICE_CPU)
        spec.preset = &preset;
    for (int d = 0; d < ndim; ++d) {
        int64_t lo = fuzz_range(in, 0, shape[d]);
        spec.halo[d] = (gts_halo){lo, fuzz_range(in, 0, shape[d] - lo)};
    }
    spec.alignment_size = fuzz_bool(in) ? 0 : (int64_t)1 << fuzz_range(in, 0, 8);
    bool wrap = fuzz_u8(in) >= 192;
    if (wrap && fuzz_u8(in) < 32) /* nothing is allocated for it: any alignment */
        spec.alignment_size = fuzz_hostile(in);
    if ((spec.has_aligned_index = fuzz_u8(in) < 64))
        for (int d = 0; d < ndim; ++d)
            spec.aligned_index[d] = fuzz_range(in, 0, shape[d] > 0 ? shape[d] - 1 : 0);
    int rc;
    if (!wrap) {
        rc = gts_storage_create(&spec, GTS_ALLOC_ZERO, out, fuzz_error(&err));
    } else { /* wrapped memory with any strides */
        int64_t strides[4], offset = fuzz_range(in, 0, 255);
        for (int d = 0; d < ndim; ++d)
            strides[d] = fuzz_range(in, -64, 64);
        gts_buffer *buffer;
        FUZZ_CHECK(gts_buffer_wrap_host(arena, (int64_t)arena_size, NULL, NULL, &buffer, NULL) ==
                   GTS_OK);
        rc = gts_storage_wrap(&spec, buffer, offset, strides, fuzz_bool(in), out,
                              fuzz_error(&err));
        gts_buffer_release(buffer);
    }
    if (rc != GTS_OK)
        fuzz_check_error(rc, &err);
    return rc == GTS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    static unsigned char arena[512];
    gts_storage base, view;
    if (!make_storage(&in, &base, arena, sizeof arena))
        return 0;
    model m = model_of(&base);
    check_view(&base, &m, base.alignment_size);
    gts_storage_view(&base, &view);
    for (int i = 0; i < 16 && !fuzz_empty(&in); ++i) {
        switch (fuzz_range(&in, 0, 9)) {
        case 0: check_fill(&view, &in); break;
        case 1: check_copy(&view); break;
        default: step(&view, &m, &in); break;
        }
        check_view(&view, &m, base.alignment_size);
    }
    gts_storage_release(&view);
    gts_storage_release(&base);
    return 0;
}
