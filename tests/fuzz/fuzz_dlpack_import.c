/* DLPack import of arbitrary tensors (versioned and legacy): any version,
 * flags, device, ndim, dtype triple, shape, strides (or none), data pointer
 * and byte offset, with or without an options spec (dims, layout,
 * alignment, aligned index, halo, preset).
 *
 * Checks: a failed import leaves the tensor with the caller (its deleter
 * has not run) and says why; a successful one describes exactly the
 * tensor's elements (shape, byte strides, element 0 at data + byte_offset,
 * dtype, read-only flag), needs a host device, version 1.x and an extent
 * that fits in 64 bits, and keeps the storage invariants (aligned point
 * aligned, halo and aligned index inside the shape); its deleter runs once,
 * when the storage is released. Tensors over the test's own block are read
 * element by element (ASan guards the block), and exported and imported
 * again: the round trip gives the same view. */
#include "fuzz_input.h"
#include "gtstore/dlpack.h"

#define BLOCK 256
#define MAX_SHAPE 66 /* entries the test gives a tensor claiming more dims */

typedef fuzz_wide wide;

static int deleted;

static void delete_versioned(gts_dl_managed_versioned *self)
{
    (void)self;
    ++deleted;
}

static void delete_legacy(gts_dl_managed *self)
{
    (void)self;
    ++deleted;
}

static int64_t live_buffers(void)
{
    gts_memory_stats stats;
    gts_memory_stats_get(&stats);
    return stats.live_buffers;
}

static void draw_options(fuzz_input *in, gts_storage_spec *spec, gts_preset *preset)
{
    static const gts_dtype f8 = {GTS_KIND_FLOAT, 8};
    memset(spec, 0, sizeof *spec);
    gts_storage_spec_init(spec, 0, NULL, f8, NULL);
    int n = GTS_MAX_NDIM;
    if ((spec->has_dims = fuzz_bool(in))) {
        gts_dims_default(n, spec->dims, NULL);
        for (int d = 0; d < 4; ++d)
            spec->dims[d] = (gts_dim)fuzz_range(in, -4, 5);
    }
    if ((spec->has_layout = fuzz_bool(in)))
        fuzz_permutation(in, (int)fuzz_range(in, 0, 5), spec->layout);
    switch (fuzz_range(in, 0, 2)) { /* open, a power of two, anything */
    case 0: spec->alignment_size = 0; break;
    case 1: spec->alignment_size = (int64_t)1 << fuzz_range(in, 0, 8); break;
    default: spec->alignment_size = fuzz_hostile(in); break;
    }
    if ((spec->has_aligned_index = fuzz_bool(in)))
        for (int d = 0; d < 5; ++d)
            spec->aligned_index[d] = fuzz_range(in, -1, 6);
    for (int d = 0; d < 5; ++d)
        spec->halo[d] = (gts_halo){fuzz_range(in, -1, 3), fuzz_range(in, -1, 3)};
    if (fuzz_bool(in) && gts_preset_at((size_t)fuzz_range(in, 0, 14), preset, NULL) == GTS_OK)
        spec->preset = preset;
    if ((spec->has_device = fuzz_u8(in) < 32))
        spec->device = (gts_device)fuzz_range(in, 0, 1);
}

static void check_storage(const gts_storage *s)
{
    bool empty = gts_storage_size(s) == 0;
    FUZZ_CHECK(s->alignment_size >= 1);
    for (int d = 0; d < s->ndim; ++d) {
        FUZZ_CHECK(s->halo[d].lower >= 0 && s->halo[d].upper >= 0);
        FUZZ_CHECK(s->halo[d].lower + s->halo[d].upper <= s->shape[d]);
        FUZZ_CHECK(s->aligned_index[d] >= 0);
        FUZZ_CHECK(s->aligned_index[d] < s->shape[d] || s->aligned_index[d] == 0);
    }
    FUZZ_CHECK(gts_dims_check(s->ndim, s->dims, NULL) == GTS_OK);
    FUZZ_CHECK(gts_layout_check(s->ndim, s->layout, NULL) == GTS_OK);
    if (empty)
        return;
    /* element 0 on the storage's device: alignment is of device addresses */
    uintptr_t point = (uintptr_t)gts_buffer_data(s->buffer) + (uintptr_t)s->offset;
    for (int d = 0; d < s->ndim; ++d)
        point += (uintptr_t)(s->aligned_index[d] * s->strides[d]);
    FUZZ_CHECK(point % (uint64_t)s->alignment_size == 0);
}

/* Reads every element (or, for many, the first and the last). */
static unsigned read_elements(const gts_storage *s)
{
    unsigned sum = 0;
    int64_t count = gts_storage_size(s), index[GTS_MAX_NDIM] = {0};
    const unsigned char *base = gts_storage_data(s);
    for (int64_t k = 0; k < count && k < 512; ++k) {
        const unsigned char *element = base;
        for (int d = 0; d < s->ndim; ++d)
            element += index[d] * s->strides[d];
        for (int b = 0; b < s->dtype.itemsize; ++b)
            sum += element[b];
        for (int d = s->ndim - 1; d >= 0 && ++index[d] == s->shape[d]; --d)
            index[d] = 0;
    }
    return sum;
}

/* Exports `s` and imports the export: the same view comes back. */
static void round_trip(const gts_storage *s)
{
    gts_error err;
    gts_dl_managed_versioned *exported;
    int rc = gts_storage_to_dlpack(s, 0, &exported, fuzz_error(&err));
    if (rc != GTS_OK) { /* only strides that are no multiple of the itemsize */
        fuzz_check_error(rc, &err);
        return;
    }
    const gts_dl_tensor *t = &exported->dl_tensor;
    FUZZ_CHECK(t->ndim == s->ndim && t->byte_offset == 0);
    FUZZ_CHECK(gts_storage_size(s) == 0 || t->data == gts_storage_data(s));
    for (int d = 0; d < s->ndim; ++d)
        FUZZ_CHECK(t->shape[d] == s->shape[d] && t->strides[d] * s->dtype.itemsize == s->strides[d]);
    FUZZ_CHECK(((exported->flags & GTS_DLPACK_READ_ONLY) != 0) == s->readonly);
    gts_storage back;
    rc = gts_storage_from_dlpack(exported, NULL, &back, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        exported->deleter(exported);
        return;
    }
    FUZZ_CHECK(back.ndim == s->ndim && gts_dtype_equal(back.dtype, s->dtype));
    FUZZ_CHECK(gts_storage_size(s) == 0 || gts_storage_data(&back) == gts_storage_data(s));
    for (int d = 0; d < s->ndim; ++d)
        FUZZ_CHECK(back.shape[d] == s->shape[d] &&
                   (back.shape[d] <= 1 || back.strides[d] == s->strides[d]));
    check_storage(&back);
    gts_storage_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    static const gts_dl_dtype dtypes[] = {{2, 64, 1}, {2, 32, 1}, {0, 8, 1}, {1, 16, 1},
                                          {6, 8, 1},  {5, 128, 1}, {2, 16, 1}, {4, 16, 1}};
    bool versioned = fuzz_bool(&in), hostile = fuzz_u8(&in) < 64;
    int32_t ndim = hostile ? (int32_t)fuzz_hostile(&in) : (int32_t)fuzz_range(&in, 0, 4);
    int count = ndim < 0 ? 0 : ndim > MAX_SHAPE ? MAX_SHAPE : ndim;
    int64_t *shape = malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    int64_t *strides = malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    for (int d = 0; d < count; ++d) {
        shape[d] = hostile && fuzz_bool(&in) ? fuzz_hostile(&in) : fuzz_range(&in, 0, 6);
        strides[d] = hostile && fuzz_bool(&in) ? fuzz_hostile(&in) : fuzz_range(&in, -8, 8);
    }
    unsigned char *block = malloc(BLOCK);
    memset(block, 7, BLOCK);
    gts_dl_tensor tensor = {
        .data = fuzz_u8(&in) < 16 ? NULL : block + fuzz_range(&in, 0, 64),
        .device = {fuzz_u8(&in) < 240 ? GTS_DL_CPU : (int32_t)fuzz_range(&in, 0, 16), 0},
        .ndim = ndim,
        .dtype = fuzz_u8(&in) < 240 ? dtypes[fuzz_range(&in, 0, 7)]
                                    : (gts_dl_dtype){fuzz_u8(&in), fuzz_u8(&in), fuzz_u8(&in)},
        .shape = fuzz_u8(&in) < 8 ? NULL : shape,
        .strides = fuzz_u8(&in) < 64 ? NULL : strides,
        .byte_offset = hostile && fuzz_bool(&in) ? (uint64_t)fuzz_hostile(&in)
                                                 : (uint64_t)fuzz_range(&in, 0, 128),
    };
    gts_dl_managed_versioned managed = {
        .version = {fuzz_u8(&in) < 240 ? 1 : (uint32_t)fuzz_range(&in, 0, 3), fuzz_u8(&in)},
        .deleter = delete_versioned,
        .flags = fuzz_bits(&in, 1),
        .dl_tensor = tensor,
    };
    gts_dl_managed legacy = {.dl_tensor = tensor, .deleter = delete_legacy};
    gts_storage_spec options;
    gts_preset preset;
    bool with_options = fuzz_bool(&in);
    if (with_options)
        draw_options(&in, &options, &preset);

    int64_t live = live_buffers();
    gts_error err;
    gts_storage s;
    deleted = 0;
    int rc = versioned ? gts_storage_from_dlpack(&managed, with_options ? &options : NULL, &s,
                                                 fuzz_error(&err))
                       : gts_storage_from_dlpack_legacy(&legacy, with_options ? &options : NULL,
                                                        &s, fuzz_error(&err));
    FUZZ_CHECK(deleted == 0);
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(live_buffers() == live);
    } else {
        /* what was accepted: exactly the tensor's elements */
        gts_dtype dtype;
        FUZZ_CHECK(gts_dtype_from_dlpack(tensor.dtype.code, tensor.dtype.bits,
                                         tensor.dtype.lanes, &dtype, NULL) == GTS_OK);
        FUZZ_CHECK(gts_dtype_equal(dtype, s.dtype));
        /* host memory, or the memory of a device gtstore reaches */
        const gts_device_ops *device;
        bool host = tensor.device.device_type == GTS_DL_CPU ||
                    tensor.device.device_type == GTS_DL_CUDA_HOST;
        FUZZ_CHECK(host || gts_device_get((gts_device_id){tensor.device.device_type,
                                                          tensor.device.device_id},
                                          &device, NULL) == GTS_OK);
        FUZZ_CHECK(host == (gts_buffer_device(s.buffer) == gts_device_host()));
        FUZZ_CHECK(!versioned || managed.version.major == 1);
        FUZZ_CHECK(s.ndim == ndim && (ndim == 0 || tensor.shape));
        FUZZ_CHECK(s.readonly == (versioned && (managed.flags & GTS_DLPACK_READ_ONLY)));
        wide next = 1, low = 0, high = dtype.itemsize;
        bool empty = false;
        for (int d = ndim - 1; d >= 0; --d) {
            wide stride = (tensor.strides ? tensor.strides[d] : next) * (wide)dtype.itemsize;
            FUZZ_CHECK(s.shape[d] == shape[d] && shape[d] >= 0);
            FUZZ_CHECK(shape[d] <= 1 || s.strides[d] == stride);
            next = fuzz_saturate(next * (shape[d] > 0 ? shape[d] : 1));
            empty = empty || shape[d] == 0;
            wide reach = fuzz_saturate((shape[d] - 1) * stride);
            wide *end = reach < 0 ? &low : &high;
            *end = fuzz_saturate(*end + reach);
        }
        /* element 0 as a number: a wild offset must not be pointer arithmetic here */
        wide element0 = (wide)(uintptr_t)tensor.data + (wide)tensor.byte_offset;
        if (!empty) { /* ... and they fit in 64 bits and in the address space */
            uintptr_t first = (uintptr_t)gts_buffer_data(s.buffer) + (uintptr_t)s.offset;
            FUZZ_CHECK(tensor.data && (wide)first == element0);
            FUZZ_CHECK(low >= INT64_MIN && high <= INT64_MAX && high - low <= INT64_MAX);
            FUZZ_CHECK(element0 + low >= 0 && element0 + high <= (wide)UINTPTR_MAX + 1);
        }
        check_storage(&s);
        /* inside the test's block: read it all, and round-trip it */
        bool inside = empty || (element0 + low >= (wide)(uintptr_t)block &&
                                element0 + high <= (wide)(uintptr_t)block + BLOCK);
        if (inside && host) { /* the block is host memory, whatever the tensor said */
            read_elements(&s);
            round_trip(&s);
        }
        gts_storage_release(&s);
        FUZZ_CHECK(deleted == 1);
        FUZZ_CHECK(live_buffers() == live);
    }
    free(block);
    free(shape);
    free(strides);
    return 0;
}
