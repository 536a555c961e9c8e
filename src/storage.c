#include "gtstore/storage.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gtstore/access.h"
#include "gtstore/device.h"
#include "gtstore/kernels.h"
#include "gtstore/sync.h"
#include "geometry_private.h"
#include "spec_resolution.h"
#include "storage_private.h"
#include "tuple_text.h"

/* ---- formatting for messages ---------------------------------------------- */

typedef struct text {
    char s[160];
} text;

static text format_ints(int n, const int64_t *values)
{
    text t = {"("};
    size_t used = 1;
    for (int i = 0; i < n && used + 24 < sizeof t.s; ++i)
        used += (size_t)snprintf(t.s + used, sizeof t.s - used, "%s%lld", i ? ", " : "",
                                 (long long)values[i]);
    snprintf(t.s + used, sizeof t.s - used, n == 1 ? ",)" : ")");
    return t;
}

static text format_layout(int n, const int *layout)
{
    int64_t values[GTS_MAX_NDIM];
    for (int i = 0; i < n; ++i)
        values[i] = layout[i];
    return format_ints(n, values);
}

/* ---- integer helpers ------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t gcd(int64_t a, int64_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t clamp(int64_t value, int64_t low, int64_t high)
{
    return value < low ? low : value > high ? high : value;
}

/* The first ndim entries of each array in a field list of storage.h. */
#define COPY_DIM_FIELD(type, name, comment) memcpy(dst->name, src->name, n * sizeof *dst->name);

/* All fields, the buffer pointer without a new reference. A storage's ndim
 * is valid; not bounding it here also keeps the compiler from expanding
 * each copy inline into `rep movs`, whose start-up cost made a slice of a
 * Python storage 70 ns slower. */
static void storage_copy_fields(gts_storage *dst, const gts_storage *src)
{
    size_t n = (size_t)src->ndim;
    memcpy(dst, src, offsetof(gts_storage, shape));
    GTS_STORAGE_DIM_FIELDS(COPY_DIM_FIELD)
}

void gts_storage_move(gts_storage *dst, gts_storage *src)
{
    storage_copy_fields(dst, src);
    src->buffer = NULL;
    src->ndim = 0;
}

/* ---- making storages ------------------------------------------------------ */

/* The metadata of `spec` (resolved) in `out`, over `buffer` (retained):
 * the fields a spec and a storage share, by name, then the rest. */
#define COPY_SPEC_FIELD(type, name, comment) \
    memcpy(out->name, spec->name, (size_t)n * sizeof *out->name);

static void storage_init(gts_storage *out, const gts_storage_spec *spec, gts_buffer *buffer,
                         int64_t offset, const int64_t *strides, bool readonly)
{
    int n = spec->ndim;
    out->buffer = gts_buffer_retain(buffer);
    out->offset = offset;
    out->dtype = spec->dtype;
    out->ndim = n;
    out->readonly = readonly;
    out->alignment_size = spec->alignment_size;
    GTS_SPEC_DIM_FIELDS(COPY_SPEC_FIELD)
    if (n > 0) /* gts_storage_wrap of a 0-d array may pass no strides */
        memcpy(out->strides, strides, (size_t)n * sizeof *out->strides);
}

/* Where a spec's device kind puts its memory: the host, or the device that
 * plays the GPU (gts_device_gpu), with a host side where gtstore manages
 * the sync and in its managed memory where CUDA does. */
static int place(const gts_storage_spec *spec, const gts_device_ops **device, unsigned *flags,
                 gts_error *err)
{
    if (spec->device == GTS_DEVICE_CPU) {
        *device = gts_device_host();
        return GTS_OK;
    }
    const gts_device_ops *gpu;
    int rc = gts_device_gpu(&gpu, err);
    if (rc)
        return rc;
    *device = gpu;
    if (spec->managed == GTS_MANAGED_GT4PY)
        *flags |= GTS_ALLOC_MIRRORED;
    if (spec->managed != GTS_MANAGED_CUDA)
        return GTS_OK;
    return gts_device_managed(gpu, device, err);
}

/* The buffer `reuse` gives for `size` bytes on `device` (NULL where it
 * gives none, or may not be asked: see gts_storage_create_reusing), in
 * the sync state of a new one. */
static int reused_buffer(gts_buffer_reuse_fn reuse, void *ctx, const gts_device_ops *device,
                         int64_t size, unsigned flags, gts_buffer **out, gts_error *err)
{
    *out = NULL;
    /* the flags gts_buffer_alloc would check, checked whatever gives the buffer */
    int rc = gts_buffer_flags_check(device, flags, err);
    if (rc || !reuse || (flags & GTS_ALLOC_ZERO) || gts_device_is_host_memory(device))
        return rc;
    bool mirrored = flags & GTS_ALLOC_MIRRORED;
    gts_buffer *buffer = reuse(ctx, device, size, mirrored ? GTS_ALLOC_MIRRORED : 0);
    if (!buffer)
        return GTS_OK;
    if (gts_buffer_device(buffer) != device || gts_buffer_size(buffer) != size ||
        !gts_buffer_owns_memory(buffer) || gts_buffer_mirrored(buffer) != mirrored) {
        rc = gts_error_set(err, GTS_EINVAL,
                           "reuse: gave a%s buffer of %lld bytes on %s for a%s one of "
                           "%lld bytes on %s",
                           gts_buffer_mirrored(buffer) ? " mirrored" : "",
                           (long long)gts_buffer_size(buffer), gts_buffer_device(buffer)->name,
                           mirrored ? " mirrored" : "", (long long)size, device->name);
        gts_buffer_release(buffer);
        return rc;
    }
    rc = mirrored ? gts_buffer_set_sync_state(buffer, GTS_SYNC_CLEAN, err) : GTS_OK;
    if (rc)
        gts_buffer_release(buffer);
    *out = rc ? NULL : buffer;
    return rc;
}

/* Resolves `resolved` in place and allocates a storage for it on `device`
 * (NULL: the one its device kind names), or takes the buffer from `reuse`
 * (may be NULL). */
static int create_resolving(const gts_device_ops *device, gts_storage_spec *resolved,
                            unsigned flags, gts_buffer_reuse_fn reuse, void *ctx,
                            gts_storage *out, gts_error *err)
{
    gts_geometry geometry;
    int rc = gts_storage_spec_resolve(resolved, &geometry, err);
    if (rc)
        return rc;
    if (!device && (rc = place(resolved, &device, &flags, err)))
        return rc;
    gts_buffer *buffer;
    if ((rc = reused_buffer(reuse, ctx, device, geometry.alloc_size, flags, &buffer, err)) ||
        (!buffer && (rc = gts_buffer_alloc(device, geometry.alloc_size, flags, &buffer, err))))
        return rc;
    /* aligned on the device: the device address is the one that counts */
    int64_t offset = gts_geometry_offset(&geometry, (uintptr_t)gts_buffer_data(buffer));
    storage_init(out, resolved, buffer, offset, geometry.strides, false);
    gts_buffer_release(buffer); /* `out` holds its own reference */
    return GTS_OK;
}

int gts_storage_create(const gts_storage_spec *spec, unsigned flags, gts_storage *out,
                       gts_error *err)
{
    return gts_storage_create_on(NULL, spec, flags, out, err);
}

int gts_storage_create_on(const gts_device_ops *device, const gts_storage_spec *spec,
                          unsigned flags, gts_storage *out, gts_error *err)
{
    gts_storage_spec resolved;
    gts_storage_spec_copy(&resolved, spec);
    return create_resolving(device, &resolved, flags, NULL, NULL, out, err);
}

int gts_storage_create_in_place(gts_storage_spec *spec, unsigned flags, gts_storage *out,
                                gts_error *err)
{
    return create_resolving(NULL, spec, flags, NULL, NULL, out, err);
}

int gts_storage_create_reusing(gts_storage_spec *spec, unsigned flags, gts_buffer_reuse_fn reuse,
                               void *ctx, gts_storage *out, gts_error *err)
{
    return create_resolving(NULL, spec, flags, reuse, ctx, out, err);
}

/* The address of an element on the storage's device (alignment is a
 * property of device addresses; nothing here dereferences it). */
static uintptr_t address_of(const gts_storage *s, const int64_t *index)
{
    uintptr_t address = (uintptr_t)gts_buffer_data(s->buffer) + (uintptr_t)s->offset;
    for (int d = 0; d < s->ndim; ++d)
        address += (uintptr_t)(index[d] * s->strides[d]);
    return address;
}

/* Whether the strides order the dimensions as `layout` does. Dimensions of
 * extent 1 have no stride that matters and are not compared; an array
 * without elements fits every layout. */
static bool layout_fits_strides(int n, const int *layout, const int64_t *shape,
                                const int64_t *strides)
{
    for (int d = 0; d < n; ++d)
        if (shape[d] == 0)
            return true;
    for (int d = 0; d < n; ++d) {
        for (int e = 0; e < n; ++e) {
            if (shape[d] <= 1 || shape[e] <= 1 || layout[d] >= layout[e])
                continue;
            uint64_t sd = strides[d] < 0 ? 0 - (uint64_t)strides[d] : (uint64_t)strides[d];
            uint64_t se = strides[e] < 0 ? 0 - (uint64_t)strides[e] : (uint64_t)strides[e];
            if (sd < se)
                return false;
        }
    }
    return true;
}

static int check_wrapped(const gts_storage_spec *spec, gts_buffer *buffer, int64_t offset,
                         const int64_t *strides, gts__layout_source layout, gts_error *err)
{
    int n = spec->ndim;
    int64_t low, high, first, last;
    int rc = gts_strided_extent(n, spec->shape, strides, spec->dtype.itemsize, &low, &high, err);
    if (rc)
        return rc;
    if (high > low && (gts_add_overflow(offset, low, &first) ||
                       gts_add_overflow(offset, high, &last) || first < 0 ||
                       last > gts_buffer_size(buffer)))
        return gts_error_set(err, GTS_EINVAL,
                             "strides: %s with element 0 at byte %lld reach outside the buffer "
                             "of %lld bytes",
                             format_ints(n, strides).s, (long long)offset,
                             (long long)gts_buffer_size(buffer));
    static const char *const whose[] = {
        [GTS__LAYOUT_GIVEN] = "", [GTS__LAYOUT_PRESET] = " (the preset's)",
        [GTS__LAYOUT_TEMPLATE] = " (the template's)"};
    if (layout != GTS__LAYOUT_FALLBACK &&
        !layout_fits_strides(n, spec->layout, spec->shape, strides))
        return gts_error_set(err, GTS_EINVAL,
                             "layout: %s%s does not match the data's strides %s",
                             format_layout(n, spec->layout).s, whose[layout],
                             format_ints(n, strides).s);
    return GTS_OK;
}

/* The dimension whose extent, halo or aligned index do not fit, or -1. */
static int misplaced_dim(const gts_storage *s)
{
    for (int d = 0; d < s->ndim; ++d) {
        gts_halo h = s->halo[d];
        if (s->shape[d] < 0 || h.lower < 0 || h.upper < 0 || h.lower > s->shape[d] ||
            h.upper > s->shape[d] - h.lower || s->aligned_index[d] < 0 ||
            (s->aligned_index[d] >= s->shape[d] && s->aligned_index[d] != 0))
            return d;
    }
    return -1;
}

/* Every element inside the buffer (its dtype checked: an itemsize > 0). */
static int check_in_buffer(const gts_storage *s, const char *who, gts_error *err)
{
    int64_t low, high, first, last;
    if (!s->buffer)
        return gts_error_set(err, GTS_EINVAL, "%s: has no buffer (NULL)", who);
    if (gts_strided_extent(s->ndim, s->shape, s->strides, s->dtype.itemsize, &low, &high, NULL))
        return gts_error_set(err, GTS_EINVAL, "%s: strides %s are not valid", who,
                             format_ints(s->ndim, s->strides).s);
    if (high > low && (gts_add_overflow(s->offset, low, &first) ||
                       gts_add_overflow(s->offset, high, &last) || first < 0 ||
                       last > gts_buffer_size(s->buffer)))
        return gts_error_set(err, GTS_EINVAL,
                             "%s: strides %s with element 0 at byte %lld reach outside its "
                             "buffer of %lld bytes",
                             who, format_ints(s->ndim, s->strides).s, (long long)s->offset,
                             (long long)gts_buffer_size(s->buffer));
    return GTS_OK;
}

int gts__storage_check(const gts_storage *s, const char *who, bool memory, gts_error *err)
{
    if (!s)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", who);
    if (s->ndim < 0 || s->ndim > GTS_MAX_NDIM || gts_dims_check(s->ndim, s->dims, NULL))
        return gts_error_set(err, GTS_EINVAL, "%s: its dims are not valid, unrepeated labels",
                             who);
    /* The dtype and layout by the rules that made them: packing orders a
     * region by the layout's ranks and sizes it by the itemsize. */
    gts_dtype dtype;
    gts_error inner;
    int rc = gts_dtype_make(s->dtype.kind, s->dtype.itemsize, &dtype, &inner);
    if (rc)
        return gts_error_set(err, rc, "%s: %s", who, inner.message);
    if (gts_layout_check(s->ndim, s->layout, NULL))
        return gts_error_set(err, GTS_EINVAL, "%s: layout %s is not a permutation of 0..%d", who,
                             format_layout(s->ndim, s->layout).s, s->ndim - 1);
    int bad = misplaced_dim(s);
    if (bad >= 0)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: dimension %d has extent %lld with halo (%lld, %lld) and "
                             "aligned index %lld, which do not fit",
                             who, bad, (long long)s->shape[bad], (long long)s->halo[bad].lower,
                             (long long)s->halo[bad].upper, (long long)s->aligned_index[bad]);
    return memory ? check_in_buffer(s, who, err) : GTS_OK;
}

int gts_storage_wrap(const gts_storage_spec *spec, gts_buffer *buffer, int64_t offset,
                     const int64_t *strides, bool readonly, gts_storage *out, gts_error *err)
{
    if (!spec || !buffer || !out || (spec->ndim > 0 && !strides))
        return gts_error_set(err, GTS_EINVAL, "%s: NULL",
                             !spec ? "spec" : !buffer ? "buffer" : !out ? "out" : "strides");
    gts_storage_spec resolved;
    gts__resolution resolution;
    gts_storage_spec_copy(&resolved, spec);
    int rc = gts__spec_resolve_parameters(&resolved, &resolution, err);
    if (rc)
        return rc;
    /* The memory decides the device kind; a kind asked for must be it. */
    const gts_device_ops *device = gts_buffer_device(buffer);
    gts_device kind = gts_buffer_device_kind(buffer);
    if ((spec->has_device || spec->preset) && resolved.device != kind)
        return gts_error_set(err, GTS_ENOTSUP,
                             "device: the spec asks for %s memory, but the wrapped memory is %s",
                             resolved.device == GTS_DEVICE_CPU ? "host" : "GPU",
                             kind == GTS_DEVICE_CPU ? "the host's" : device->name);
    resolved.device = kind;
    gts__layout_source asked = resolution.layout_source;
    gts__spec_commit(&resolved, &resolution);
    if (asked == GTS__LAYOUT_FALLBACK) /* the memory's own, not the C-order fallback */
        gts_layout_from_strides(resolved.ndim, resolved.shape, strides, resolved.dtype.itemsize,
                                resolved.layout);
    if ((rc = check_wrapped(&resolved, buffer, offset, strides, asked, err)))
        return rc;
    /* The geometry checks alignment against the itemsize and the aligned
     * index against the shape; its strides are not the data's. */
    gts_geometry geometry;
    if ((rc = gts_geometry_init(&geometry, resolved.ndim, resolved.shape, resolved.layout,
                                resolved.dtype.itemsize, resolved.alignment_size,
                                resolved.aligned_index, err)))
        return rc;
    gts_storage s;
    storage_init(&s, &resolved, buffer, offset, strides, readonly);
    /* an empty array has no aligned element, and its strides may be any */
    uintptr_t address = gts_storage_size(&s) > 0 ? address_of(&s, s.aligned_index) : 0;
    if (address % (uint64_t)s.alignment_size != 0) {
        gts_storage_release(&s);
        return gts_error_set(err, GTS_EINVAL,
                             "alignment_size: the element at aligned_index %s sits at address "
                             "%#llx, which is not a multiple of %lld bytes",
                             format_ints(resolved.ndim, resolved.aligned_index).s,
                             (unsigned long long)address, (long long)s.alignment_size);
    }
    gts_storage_move(out, &s);
    return GTS_OK;
}

gts_managed gts_storage_managed(const gts_storage *storage)
{
    return gts_buffer_mirrored(storage->buffer) ? GTS_MANAGED_GT4PY
           : gts_buffer_device(storage->buffer)->kind == GTS_MEMORY_MANAGED ? GTS_MANAGED_CUDA
                                                                           : GTS_MANAGED_NONE;
}

void gts_storage_view(const gts_storage *src, gts_storage *out)
{
    storage_copy_fields(out, src);
    gts_buffer_retain(out->buffer);
}

void gts_storage_release(gts_storage *storage)
{
    if (!storage)
        return;
    gts_buffer_release(storage->buffer);
    storage->buffer = NULL;
    storage->ndim = 0;
}

/* ---- the aligned point of a view -----------------------------------------
 * After the origin of a view moved, its aligned_index holds the parent's
 * aligned point translated into the view and clamped to its extent. If that
 * element is not aligned, take the nearest aligned one along the first
 * dimension that has one; if there is none, the view's alignment is the one
 * its candidate point has. */

static bool is_aligned(const gts_storage *s, const int64_t *index)
{
    return address_of(s, index) % (uint64_t)s->alignment_size == 0;
}

/* x * y mod m for x, y < m < 2**63, by doubling: no intermediate exceeds
 * 2m. */
static uint64_t mul_mod(uint64_t x, uint64_t y, uint64_t m)
{
    uint64_t r = 0;
    for (; y; y >>= 1) {
        if (y & 1)
            r = r >= m - x ? r - (m - x) : r + x;
        x = x >= m - x ? x - (m - x) : x + x;
    }
    return r;
}

/* The inverse of x modulo m, for gcd(x, m) == 1 (extended Euclid; the
 * coefficients stay within m in absolute value). */
static uint64_t inverse_mod(uint64_t x, uint64_t m)
{
    int64_t r0 = (int64_t)m, r1 = (int64_t)(x % m), s0 = 0, s1 = 1;
    while (r1 != 0) {
        int64_t q = r0 / r1, t = r0 - q * r1;
        r0 = r1;
        r1 = t;
        t = s0 - q * s1;
        s0 = s1;
        s1 = t;
    }
    return s0 < 0 ? (uint64_t)s0 + m : (uint64_t)s0;
}

/* The index along `d` nearest to the current aligned_index (the lower one on
 * a tie) whose element is aligned, all other indices kept; -1 if none.
 * Moving by k elements moves the address by k * stride, so the aligned
 * indices solve k * stride = -misalignment (mod A): a congruence with a
 * solution k0 repeating with period A / gcd(stride, A), found in closed form
 * (a search over up to A candidates took seconds for A = 2**27). */
static int64_t nearest_aligned(const gts_storage *s, int d)
{
    uint64_t a = (uint64_t)s->alignment_size;
    uint64_t misalignment = address_of(s, s->aligned_index) % a;
    int64_t remainder = s->strides[d] % s->alignment_size;
    uint64_t step = remainder < 0 ? (uint64_t)(remainder + s->alignment_size) : (uint64_t)remainder;
    uint64_t g = (uint64_t)gcd((int64_t)step, (int64_t)a);
    if (misalignment == 0)
        return s->aligned_index[d];
    if (misalignment % g != 0)
        return -1;
    uint64_t period = a / g;
    uint64_t k0 = mul_mod((a - misalignment) / g % period, inverse_mod(step / g, period), period);
    int64_t kept = s->aligned_index[d], n = s->shape[d];
    uint64_t up = k0, down = period - k0; /* distances to the aligned indices around it */
    bool has_up = up < (uint64_t)(n - kept), has_down = down <= (uint64_t)kept;
    if (has_down && (!has_up || down <= up))
        return kept - (int64_t)down;
    return has_up ? kept + (int64_t)up : -1;
}

static void realign(gts_storage *s)
{
    int64_t a = s->alignment_size;
    if (a <= 1 || gts_storage_size(s) == 0 || is_aligned(s, s->aligned_index))
        return;
    for (int d = 0; d < s->ndim; ++d) {
        if (s->strides[d] % a == 0)
            continue;
        int64_t i = nearest_aligned(s, d);
        if (i >= 0) {
            s->aligned_index[d] = i;
            return;
        }
    }
    int64_t have = gcd((int64_t)(address_of(s, s->aligned_index) % (uint64_t)a), a);
    int64_t itemsize = s->dtype.itemsize;
    if (!gts__alignment_suits(have, itemsize))
        have = gcd(have, itemsize);
    s->alignment_size = have;
}

/* ---- view operations -------------------------------------------------------- */

static int check_dim(const gts_storage *view, int dim, const char *operation, gts_error *err)
{
    if (dim < 0 || dim >= view->ndim)
        return gts_error_set(err, GTS_EBOUNDS, "dim: %d is out of range for %s of %d dimensions",
                             dim, operation, view->ndim);
    return GTS_OK;
}

/* How many of start + k * step (0 <= k < count) lie in [from, to). */
static int64_t count_in(int64_t start, int64_t step, int64_t count, int64_t from, int64_t to)
{
    if (from >= to || count == 0)
        return 0;
    int64_t first, end; /* the k range, before clipping to [0, count) */
    if (step > 0) {
        first = -floor_div(start - from, step); /* ceil((from - start) / step) */
        end = -floor_div(start - to, step);
    } else {
        first = floor_div(start - to, -step) + 1;
        end = floor_div(start - from, -step) + 1;
    }
    first = clamp(first, 0, count);
    end = clamp(end, 0, count);
    return end > first ? end - first : 0;
}

int gts_storage_slice(gts_storage *view, int dim, int64_t start, int64_t step, int64_t count,
                      gts_error *err)
{
    int rc = check_dim(view, dim, "a slice", err);
    if (rc)
        return rc;
    int64_t n = view->shape[dim], last;
    if (step == 0)
        return gts_error_set(err, GTS_EINVAL, "step: 0 in dimension %d", dim);
    if (count < 0)
        return gts_error_set(err, GTS_EINVAL, "count: %lld is negative", (long long)count);
    if (count > 0 &&
        (start < 0 || start >= n || gts_mul_overflow(count - 1, step, &last) ||
         gts_add_overflow(start, last, &last) || last < 0 || last >= n))
        return gts_error_set(err, GTS_EBOUNDS,
                             "slice: %lld elements from %lld by %lld leave dimension %d of "
                             "extent %lld",
                             (long long)count, (long long)start, (long long)step, dim,
                             (long long)n);
    if (count == 0)
        start = 0; /* an empty view starts nowhere */
    if (count <= 1)
        step = step > 0 ? 1 : -1; /* only its sign matters, and -step must not overflow */
    gts_halo *halo = &view->halo[dim];
    int64_t below = count_in(start, step, count, 0, halo->lower);
    int64_t above = count_in(start, step, count, n - halo->upper, n);
    halo->lower = step > 0 ? below : above;
    halo->upper = step > 0 ? above : below;
    int64_t a = view->aligned_index[dim] - start;
    int64_t k = a % step == 0 ? a / step : floor_div(a, step);
    view->aligned_index[dim] = clamp(k, 0, count > 0 ? count - 1 : 0);
    view->offset += start * view->strides[dim];
    if (count > 1) /* a single element keeps its stride: any step would do */
        view->strides[dim] *= step;
    view->shape[dim] = count;
    realign(view);
    return GTS_OK;
}

/* Removes entry `dim` of the per-dimension arrays. */
static void drop_dim(gts_storage *view, int dim)
{
    size_t after = (size_t)(view->ndim - dim - 1);
    memmove(view->shape + dim, view->shape + dim + 1, after * sizeof *view->shape);
    memmove(view->strides + dim, view->strides + dim + 1, after * sizeof *view->strides);
    memmove(view->dims + dim, view->dims + dim + 1, after * sizeof *view->dims);
    memmove(view->halo + dim, view->halo + dim + 1, after * sizeof *view->halo);
    memmove(view->aligned_index + dim, view->aligned_index + dim + 1,
            after * sizeof *view->aligned_index);
    int rank = view->layout[dim]; /* the ranks above it close the gap */
    memmove(view->layout + dim, view->layout + dim + 1, after * sizeof *view->layout);
    --view->ndim;
    for (int d = 0; d < view->ndim; ++d)
        view->layout[d] -= view->layout[d] > rank;
}

int gts_storage_index(gts_storage *view, int dim, int64_t index, gts_error *err)
{
    int rc = check_dim(view, dim, "an index", err);
    if (rc)
        return rc;
    if (index < 0 || index >= view->shape[dim])
        return gts_error_set(err, GTS_EBOUNDS,
                             "index: %lld is out of bounds for dimension %d with size %lld",
                             (long long)index, dim, (long long)view->shape[dim]);
    view->offset += index * view->strides[dim];
    drop_dim(view, dim);
    realign(view);
    return GTS_OK;
}

/* Which dims of `view` a reshape to `shape` drops: it is a view exactly
 * when `shape` is its shape with some extents of 1 left out. */
static bool dropped_dims(const gts_storage *view, int ndim, const int64_t *shape, bool *dropped)
{
    int k = 0;
    for (int d = 0; d < view->ndim; ++d) {
        dropped[d] = !(k < ndim && shape[k] == view->shape[d]);
        if (!dropped[d])
            ++k;
        else if (view->shape[d] != 1)
            return false;
    }
    return k == ndim;
}

/* `shape` with its one extent of -1 (NumPy's "whatever is left") replaced
 * by the view's size over the product of the others, into `out`. Any other
 * negative extent, two -1s, or a -1 beside an extent of 0 (nothing to
 * divide by) is GTS_EINVAL. A size the others do not divide is left to
 * the reshape's own check, as any shape of another size. */
static int known_extents(const gts_storage *view, int ndim, const int64_t *shape, int64_t *out,
                         gts_error *err)
{
    int unknown = -1;
    int64_t known = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; ++d) {
        out[d] = shape[d];
        if (shape[d] == -1 && unknown < 0)
            unknown = d;
        else if (shape[d] == -1)
            return gts_error_set(err, GTS_EINVAL,
                                 "shape: -1 at positions %d and %d (at most one extent is "
                                 "inferred)",
                                 unknown, d);
        else if (shape[d] < 0)
            return gts_error_set(err, GTS_EINVAL, "shape: negative extent %lld at position %d",
                                 (long long)shape[d], d);
        else
            overflow = overflow || gts_mul_overflow(known, shape[d], &known);
    }
    if (unknown < 0)
        return GTS_OK;
    if (known == 0)
        return gts_error_set(err, GTS_EINVAL,
                             "shape: -1 at position %d beside an extent of 0 (no extent to "
                             "infer)",
                             unknown);
    int64_t size = gts_storage_size(view);
    out[unknown] = overflow || size % known ? -1 : size / known;
    return GTS_OK;
}

int gts_storage_reshape(gts_storage *view, int ndim, const int64_t *given, gts_error *err)
{
    bool dropped[GTS_MAX_NDIM];
    int64_t shape[GTS_MAX_NDIM];
    if (!view || ndim < 0 || ndim > GTS_MAX_NDIM || (ndim > 0 && !given))
        return gts_error_set(err, GTS_EINVAL, "shape: %d extents (at most %d), or NULL", ndim,
                             GTS_MAX_NDIM);
    int rc = known_extents(view, ndim, given, shape, err);
    if (rc)
        return rc;
    if (!dropped_dims(view, ndim, shape, dropped)) {
        char from[GTS__TUPLE_TEXT_SIZE], to[GTS__TUPLE_TEXT_SIZE];
        gts__shape_text(view->ndim, view->shape, from);
        gts__shape_text(ndim, given, to);
        return gts_error_set(err, GTS_EINVAL,
                             "reshape: cannot reshape a storage of shape %s to %s as a view "
                             "with dims (only dims of extent 1 can be dropped)",
                             from, to);
    }
    for (int d = view->ndim - 1; d >= 0; --d) /* from the last: the indices stay valid */
        if (dropped[d])
            (void)gts_storage_index(view, d, 0, NULL); /* extent 1: index 0 is in bounds */
    return GTS_OK;
}

int gts_storage_insert_dim(gts_storage *view, int dim, gts_error *err)
{
    int n = view->ndim;
    if (dim < 0 || dim > n)
        return gts_error_set(err, GTS_EBOUNDS, "dim: %d is outside [0, %d]", dim, n);
    if (n == GTS_MAX_NDIM)
        return gts_error_set(err, GTS_EINVAL, "ndim: a storage has at most %d dimensions",
                             GTS_MAX_NDIM);
    gts_dim label = 0;
    for (int d = 0; d < n; ++d)
        label = view->dims[d] >= label ? view->dims[d] + 1 : label;
    if (label > GTS_MAX_DATA_DIM)
        return gts_error_set(err, GTS_EINVAL, "dims: no free data dimension label");
    size_t after = (size_t)(n - dim);
    memmove(view->shape + dim + 1, view->shape + dim, after * sizeof *view->shape);
    memmove(view->strides + dim + 1, view->strides + dim, after * sizeof *view->strides);
    memmove(view->dims + dim + 1, view->dims + dim, after * sizeof *view->dims);
    memmove(view->halo + dim + 1, view->halo + dim, after * sizeof *view->halo);
    memmove(view->aligned_index + dim + 1, view->aligned_index + dim,
            after * sizeof *view->aligned_index);
    memmove(view->layout + dim + 1, view->layout + dim, after * sizeof *view->layout);
    for (int d = 0; d < n + 1; ++d) /* the new dimension is the outermost */
        view->layout[d] += 1;
    view->layout[dim] = 0;
    view->shape[dim] = 1;
    view->strides[dim] = 0;
    view->dims[dim] = label;
    view->halo[dim] = (gts_halo){0, 0};
    view->aligned_index[dim] = 0;
    ++view->ndim;
    return GTS_OK;
}

int gts_storage_transpose(gts_storage *view, const int *axes, gts_error *err)
{
    int n = view->ndim, order[GTS_MAX_NDIM] = {0};
    for (int i = 0; i < n; ++i)
        order[i] = axes ? axes[i] : n - 1 - i;
    gts_error inner;
    if (gts_layout_check(n, order, &inner))
        return gts_error_set(err, GTS_EINVAL, "axes: %s is not a permutation of 0..%d",
                             format_layout(n, order).s, n - 1);
    gts_storage old;
    storage_copy_fields(&old, view); /* a scratch copy: the reference stays with `view` */
    for (int i = 0; i < n; ++i) {
        int d = order[i];
        view->shape[i] = old.shape[d];
        view->strides[i] = old.strides[d];
        view->dims[i] = old.dims[d];
        view->halo[i] = old.halo[d];
        view->aligned_index[i] = old.aligned_index[d];
        view->layout[i] = old.layout[d];
    }
    return GTS_OK;
}

/* The axis of `view` labelled `dim`, or -1. */
static int axis_of(const gts_storage *view, gts_dim dim)
{
    for (int a = 0; a < view->ndim; ++a)
        if (view->dims[a] == dim)
            return a;
    return -1;
}

int gts_storage_transpose_like(gts_storage *view, const gts_storage *like, gts_error *err)
{
    int axes[GTS_MAX_NDIM], n = like->ndim;
    bool fits = view->ndim == n;
    for (int d = 0; fits && d < n; ++d) {
        axes[d] = axis_of(view, like->dims[d]);
        fits = axes[d] >= 0 && view->shape[axes[d]] == like->shape[d];
    }
    if (!fits) {
        char dims[GTS__TUPLE_TEXT_SIZE], shape[GTS__TUPLE_TEXT_SIZE];
        char like_dims[GTS__TUPLE_TEXT_SIZE], like_shape[GTS__TUPLE_TEXT_SIZE];
        gts__dims_text(view->ndim, view->dims, dims);
        gts__shape_text(view->ndim, view->shape, shape);
        gts__dims_text(n, like->dims, like_dims);
        gts__shape_text(n, like->shape, like_shape);
        return gts_error_set(err, GTS_EINVAL,
                             "dims: a storage of dims %s and shape %s is no transpose of one of "
                             "dims %s and shape %s",
                             dims, shape, like_dims, like_shape);
    }
    return gts_storage_transpose(view, axes, err);
}

/* `value` elements of `from` bytes as elements of `to` bytes, into `out`;
 * false where they would split an element. */
static bool regroup(int64_t value, int from, int to, int64_t *out)
{
    *out = value * from / to; /* value <= the extent: no overflow */
    return value * from % to == 0;
}

int gts_storage_view_dtype(gts_storage *view, gts_dtype dtype, gts_error *err)
{
    /* A hand-filled dtype: an itemsize of 0 would divide by zero below. */
    gts_dtype valid;
    int rc = gts_dtype_make(dtype.kind, dtype.itemsize, &valid, err);
    if (rc)
        return rc;
    int from = view->dtype.itemsize, to = dtype.itemsize, d = view->ndim - 1;
    if (to == from) {
        view->dtype = dtype;
        return GTS_OK;
    }
    if (d < 0)
        return gts_error_set(err, GTS_EINVAL,
                             "dtype: a 0-d storage of %d-byte elements cannot be viewed as "
                             "%d-byte elements (NumPy's rule: only the same itemsize)",
                             from, to);
    char label[GTS_DIM_TEXT_SIZE];
    gts_dim_format(view->dims[d], label);
    if (view->shape[d] != 1 && view->strides[d] != from)
        return gts_error_set(err, GTS_EINVAL,
                             "dtype: to view %d-byte elements as %d-byte ones, the last dimension "
                             "('%s') must be contiguous, and its stride is %lld bytes",
                             from, to, label, (long long)view->strides[d]);
    /* the last dimension regrouped, with its halo and aligned point (the
     * same bytes: the aligned point's address does not move) */
    int64_t shape, lower, upper, aligned;
    if (!regroup(view->shape[d], from, to, &shape) ||
        !regroup(view->halo[d].lower, from, to, &lower) ||
        !regroup(view->halo[d].upper, from, to, &upper) ||
        !regroup(view->aligned_index[d], from, to, &aligned))
        return gts_error_set(err, GTS_EINVAL,
                             "dtype: the last dimension ('%s': extent %lld, halo (%lld, %lld), "
                             "aligned index %lld) of %d-byte elements is no whole number of "
                             "%d-byte elements",
                             label, (long long)view->shape[d], (long long)view->halo[d].lower,
                             (long long)view->halo[d].upper, (long long)view->aligned_index[d],
                             from, to);
    view->shape[d] = shape;
    view->strides[d] = to;
    view->halo[d] = (gts_halo){lower, upper};
    view->aligned_index[d] = aligned;
    view->dtype = dtype;
    return GTS_OK;
}

int gts_storage_domain(gts_storage *view, gts_error *err)
{
    gts_storage result;
    gts_storage_view(view, &result);
    for (int d = 0; d < view->ndim; ++d) {
        int64_t lo = view->halo[d].lower, count = view->shape[d] - lo - view->halo[d].upper;
        int rc = gts_storage_slice(&result, d, count > 0 ? lo : 0, 1, count, err);
        if (rc) { /* cannot happen while the halo invariant holds */
            gts_storage_release(&result);
            return rc;
        }
    }
    gts_storage_release(view);
    gts_storage_move(view, &result);
    return GTS_OK;
}

int gts_storage_set_halo(gts_storage *storage, const gts_halo *halo, gts_error *err)
{
    int rc = gts__halo_check(storage->ndim, storage->shape, halo, err);
    if (!rc)
        memcpy(storage->halo, halo, (size_t)storage->ndim * sizeof *storage->halo);
    return rc;
}

/* ---- data ------------------------------------------------------------------ */

int gts_storage_like_to(const gts_device_ops *device, const gts_storage *src, gts_storage *out,
                        gts_error *err)
{
    gts_storage_spec spec;
    gts_template like; /* everything the copy keeps */
    int rc = gts_storage_spec_init(&spec, src->ndim, src->shape, src->dtype, err);
    if (rc)
        return rc;
    gts_template_from_storage(src, true, &like);
    spec.like = &like;
    const gts_device_ops *own = gts_buffer_device(src->buffer);
    device = device ? device : own;
    /* a copy on the source's device is mirrored where the source is */
    unsigned flags = device == own && gts_buffer_mirrored(src->buffer) ? GTS_ALLOC_MIRRORED : 0;
    return gts_storage_create_on(device, &spec, flags, out, err);
}

/* gts_storage_copy_to with the copy on `stream` (gts_storage_assign_on). */
static int copy_to_on(const gts_device_ops *device, const gts_storage *src, gts_stream stream,
                      gts_storage *out, gts_error *err)
{
    gts_storage copy;
    int rc = gts_storage_like_to(device, src, &copy, err);
    if (rc)
        return rc;
    if ((rc = gts_storage_assign_on(&copy, src, stream, err))) {
        gts_storage_release(&copy);
        return rc;
    }
    gts_storage_move(out, &copy);
    return GTS_OK;
}

int gts_storage_copy(const gts_storage *src, gts_storage *out, gts_error *err)
{
    return gts_storage_copy_to(NULL, src, out, err);
}

int gts_storage_copy_on(const gts_storage *src, gts_stream stream, gts_storage *out,
                        gts_error *err)
{
    return copy_to_on(NULL, src, stream, out, err);
}

int gts_storage_copy_to(const gts_device_ops *device, const gts_storage *src, gts_storage *out,
                        gts_error *err)
{
    return copy_to_on(device, src, NULL, out, err);
}

static int check_writable(const gts_storage *s, gts_error *err)
{
    if (s->readonly)
        return gts_error_set(err, GTS_EREADONLY, "assignment destination is read-only");
    return GTS_OK;
}

/* Element 0 on the storage's device (NULL for empty wrapped memory). */
static char *element0(const gts_storage *s)
{
    char *base = gts_buffer_data(s->buffer);
    return base ? base + s->offset : NULL;
}

/* dst = src across two devices that are not both host-accessible, through
 * host memory in C order: src is gathered on its own device unless it is
 * contiguous there, crosses to the host in one transfer (a host-accessible
 * src is read in place), crosses to the destination device in one transfer
 * and is scattered there unless dst is contiguous (a host-accessible dst is
 * written in place). So each side runs one strided kernel at most, and each
 * direction makes one transfer. */
static int assign_across(const gts_storage *dst, const gts_device_ops *to,
                         const gts_storage *src, const gts_device_ops *from, gts_error *err)
{
    const gts_device_ops *host = gts_device_host(); /* for staging */
    int n = dst->ndim;
    int64_t itemsize = dst->dtype.itemsize, bytes = gts_storage_nbytes(src);
    if (bytes == 0)
        return GTS_OK;
    int64_t c_strides[GTS_MAX_NDIM];
    int rc = gts_strides_contiguous(n, dst->shape, itemsize, c_strides, err);
    if (rc)
        return rc;
    /* The host reads or writes host-accessible device memory (managed,
     * pinned) in place below: only once the work queued there is done. */
    if ((from->kind != GTS_MEMORY_HOST && from->host_accessible &&
         (rc = from->synchronize(from, NULL, err))) ||
        (to->kind != GTS_MEMORY_HOST && to->host_accessible &&
         (rc = to->synchronize(to, NULL, err))))
        return rc;
    void *on_host = NULL, *on_from = NULL, *on_to = NULL;
    const void *host_c; /* the values on the host, in C order */
    if (from->host_accessible && gts_storage_contiguous(src, 'C')) {
        host_c = element0(src);
    } else if (!(rc = gts_device_alloc(host, bytes, 0, &on_host, err))) {
        host_c = on_host;
        if (from->host_accessible) {
            rc = gts_copy(on_host, c_strides, element0(src), src->strides, n, src->shape,
                          itemsize, err);
        } else {
            const void *contiguous = element0(src);
            if (!gts_storage_contiguous(src, 'C') &&
                !(rc = gts_device_alloc(from, bytes, 0, &on_from, err))) {
                rc = from->copy(from, on_from, c_strides, element0(src), src->strides, n,
                                src->shape, itemsize, NULL, err);
                contiguous = on_from;
            }
            if (!rc)
                rc = from->copy_to_host(from, on_host, contiguous, bytes, NULL, err);
        }
    }
    if (!rc && to->host_accessible) {
        rc = gts_copy(element0(dst), dst->strides, host_c, c_strides, n, dst->shape, itemsize,
                      err);
    } else if (!rc && gts_storage_contiguous(dst, 'C')) {
        rc = to->copy_to_device(to, element0(dst), host_c, bytes, NULL, err);
    } else if (!rc && !(rc = gts_device_alloc(to, bytes, 0, &on_to, err))) {
        rc = to->copy_to_device(to, on_to, host_c, bytes, NULL, err);
        if (!rc)
            rc = to->copy(to, element0(dst), dst->strides, on_to, c_strides, n, dst->shape,
                          itemsize, NULL, err);
    }
    gts_device_free(host, on_host, bytes);
    gts_device_free(from, on_from, bytes);
    gts_device_free(to, on_to, bytes);
    return rc;
}

int gts_storage_assign(const gts_storage *dst, const gts_storage *src, gts_error *err)
{
    return gts_storage_assign_on(dst, src, NULL, err);
}

int gts_storage_assign_on(const gts_storage *dst, const gts_storage *src, gts_stream stream,
                          gts_error *err)
{
    int rc = check_writable(dst, err);
    if (rc)
        return rc;
    bool same_shape = dst->ndim == src->ndim &&
                      memcmp(dst->shape, src->shape, (size_t)dst->ndim * sizeof *dst->shape) == 0;
    if (!same_shape)
        return gts_error_set(err, GTS_EINVAL, "src: shape %s does not match the destination's %s",
                             format_ints(src->ndim, src->shape).s,
                             format_ints(dst->ndim, dst->shape).s);
    if (!gts_dtype_equal(dst->dtype, src->dtype))
        return gts_error_set(err, GTS_ETYPE, "src: dtype %s does not match the destination's %s",
                             gts_dtype_name(src->dtype), gts_dtype_name(dst->dtype));
    /* Both read and write the device side (gtstore/access.h): the write
     * in flight while it runs, so that no write is lost. Only a copy
     * within one device runs on the stream: one through the host runs on
     * the default stream, for which the host waits. */
    const gts_device_ops *to = gts_buffer_device(dst->buffer);
    const gts_device_ops *from = gts_buffer_device(src->buffer);
    bool within = to == from;
    gts_stream on = within ? stream : NULL;
    void *from_data, *to_data;
    if ((rc = gts_storage_access(src, GTS_SIDE_DEVICE, GTS_ACCESS_READ, on, &from_data, err)))
        return rc;
    if ((rc = gts_storage_access(dst, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, on, &to_data,
                                 err)))
        return rc;
    if (within || (to->host_accessible && from->host_accessible))
        rc = to->copy(to, to_data, dst->strides, from_data, src->strides, dst->ndim, dst->shape,
                      dst->dtype.itemsize, on, err);
    else
        rc = assign_across(dst, to, src, from, err);
    /* the source's buffer records the read too: a later write waits for it */
    int read = gts_storage_access_end(src, GTS_SIDE_DEVICE, GTS_ACCESS_READ, on, err);
    int ended = gts_storage_access_end(dst, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, on, err);
    return rc ? rc : read ? read : ended;
}

int gts_storage_fill(const gts_storage *storage, gts_scalar value, gts_error *err)
{
    unsigned char item[16];
    int rc = gts_scalar_store(value, storage->dtype, item, err);
    return rc ? rc : gts_storage_fill_item(storage, item, err);
}

int gts_storage_fill_item(const gts_storage *storage, const void *item, gts_error *err)
{
    return gts_storage_fill_item_on(storage, item, NULL, err);
}

int gts_storage_fill_item_on(const gts_storage *storage, const void *item, gts_stream stream,
                             gts_error *err)
{
    void *data;
    int rc = gts_storage_access(storage, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, stream, &data,
                                err);
    if (rc)
        return rc;
    const gts_device_ops *device = gts_buffer_device(storage->buffer);
    rc = device->fill(device, data, storage->ndim, storage->shape, storage->strides,
                      storage->dtype.itemsize, item, stream, err);
    int ended =
        gts_storage_access_end(storage, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, stream, err);
    return rc ? rc : ended;
}

/* ---- properties ---------------------------------------------------------------- */

void *gts_storage_data(const gts_storage *storage)
{
    char *host = gts_buffer_host(storage->buffer); /* NULL for empty wrapped memory */
    return host ? host + storage->offset : NULL;
}

int64_t gts_storage_size(const gts_storage *storage)
{
    int64_t size = 1;
    for (int d = 0; d < storage->ndim; ++d)
        size *= storage->shape[d]; /* bounded by the memory the storage views */
    return size;
}

int64_t gts_storage_nbytes(const gts_storage *storage)
{
    return gts_storage_size(storage) * storage->dtype.itemsize;
}

void gts_storage_layout(const gts_storage *storage, int *layout)
{
    memcpy(layout, storage->layout, (size_t)storage->ndim * sizeof *layout);
}

void gts_storage_domain_shape(const gts_storage *storage, int64_t *shape)
{
    for (int d = 0; d < storage->ndim; ++d)
        shape[d] = storage->shape[d] - storage->halo[d].lower - storage->halo[d].upper;
}

bool gts_storage_contiguous(const gts_storage *storage, char order)
{
    return gts_is_contiguous(storage->ndim, storage->shape, storage->strides,
                             storage->dtype.itemsize, order);
}
