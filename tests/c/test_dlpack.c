/* DLPack: export (versioned and legacy) field by field, the dtype triples,
 * flags, and the lifetime of the exported buffer; import of tensors built by
 * hand and of round trips: the same memory, options applied, C order for
 * NULL strides, byte_offset, negative strides, read-only, ownership (the
 * deleter runs once, after the last view; never on failure) and every
 * refusal. CUDA memory is taken where CUDA device 0 exists and refused
 * where not: meson runs this once as the machine has it and once with the
 * fake driver of fake_cuda.c as GTSTORE_LIBCUDA. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "storage_helpers.h"
#include "gtstore/device.h"
#include "gtstore/dlpack.h"
#include "gtstore/sync.h"

/* Whether CUDA device 0 exists here (a driver with a device). */
static bool cuda_present(void)
{
    const gts_device_ops *cuda;
    gts_error err;
    return gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &cuda, &err) == GTS_OK;
}

/* Element `index` of a DLPack tensor, from its own fields. */
static double tensor_get(const gts_dl_tensor *t, const int64_t *index)
{
    int64_t elements = 0, next = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
        elements += index[d] * (t->strides ? t->strides[d] : next);
        next *= t->shape[d];
    }
    double v;
    memcpy(&v, (const char *)t->data + t->byte_offset + elements * 8, sizeof v);
    return v;
}

/* An f8 storage of `shape`, element (i, j) = 10 i + j. */
static bool make_2d(int64_t rows, int64_t cols, int64_t alignment, gts_storage *s)
{
    gts_storage_spec spec;
    if (!CHECK_OK(gts_storage_spec_init(&spec, 2, (const int64_t[]){rows, cols}, F8, ERR)))
        return false;
    spec.alignment_size = alignment;
    if (!CHECK_OK(gts_storage_create(&spec, 0, s, ERR)))
        return false;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            double v = (double)(10 * i + j);
            memcpy((void *)address(s, (const int64_t[]){i, j}), &v, sizeof v);
        }
    return true;
}

/* ---- export ---------------------------------------------------------------- */

static void test_export_versioned(void)
{
    int64_t start = live_buffers();
    gts_storage s;
    if (!make_2d(3, 5, 32, &s)) /* rows padded 5 -> 8 */
        return;
    CHECK_INT_EQ(s.strides[0], 64);
    gts_dl_managed_versioned *m = NULL;
    if (!CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR)))
        return;
    const gts_dl_tensor *t = &m->dl_tensor;
    CHECK(m->version.major == 1 && m->version.minor == GTS_DLPACK_MINOR);
    CHECK(m->deleter != NULL);
    CHECK_INT_EQ(m->flags, 0);
    CHECK(t->device.device_type == GTS_DL_CPU && t->device.device_id == 0);
    CHECK(t->dtype.code == 2 && t->dtype.bits == 64 && t->dtype.lanes == 1);
    CHECK_INT_EQ(t->ndim, 2);
    CHECK(t->shape && t->shape[0] == 3 && t->shape[1] == 5);
    CHECK(t->strides && t->strides[0] == 8 && t->strides[1] == 1); /* in elements */
    CHECK(t->data == gts_storage_data(&s));
    CHECK_INT_EQ(t->byte_offset, 0);
    CHECK(tensor_get(t, (const int64_t[]){2, 4}) == 24.0);

    /* the export keeps the memory: the storage goes, the values stay */
    CHECK_INT_EQ(live_buffers(), start + 1);
    gts_storage_release(&s);
    CHECK_INT_EQ(live_buffers(), start + 1);
    CHECK(tensor_get(t, (const int64_t[]){1, 3}) == 13.0);
    m->deleter(m);
    CHECK_INT_EQ(live_buffers(), start);

    /* a reversed, strided, read-only view; IS_COPIED on request */
    if (!make_2d(4, 6, 1, &s))
        return;
    gts_storage v;
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 3, -2, 2, ERR)); /* rows 3, 1 */
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
    v.readonly = true;
    if (CHECK_OK(gts_storage_to_dlpack(&v, GTS_DLPACK_IS_COPIED, &m, ERR))) {
        t = &m->dl_tensor;
        CHECK_INT_EQ(m->flags, GTS_DLPACK_READ_ONLY | GTS_DLPACK_IS_COPIED);
        CHECK(t->shape[0] == 6 && t->shape[1] == 2);
        CHECK(t->strides[0] == 1 && t->strides[1] == -12);
        CHECK(t->data == gts_storage_data(&v));
        CHECK((uintptr_t)t->data == address(&s, (const int64_t[]){3, 0}));
        CHECK(tensor_get(t, (const int64_t[]){4, 1}) == 14.0);
        m->deleter(m);
    }
    gts_storage_release(&v);
    if (CHECK_OK(gts_storage_to_dlpack(&s, GTS_DLPACK_IS_COPIED, &m, ERR))) {
        CHECK_INT_EQ(m->flags, GTS_DLPACK_IS_COPIED);
        m->deleter(m);
    }

    /* two exports hold the buffer independently */
    gts_dl_managed_versioned *a, *b;
    if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &a, ERR))) {
        if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &b, ERR))) {
            CHECK(a != b && a->dl_tensor.shape != b->dl_tensor.shape);
            gts_storage_release(&s);
            a->deleter(a);
            CHECK_INT_EQ(live_buffers(), start + 1);
            CHECK(tensor_get(&b->dl_tensor, (const int64_t[]){3, 5}) == 35.0);
            b->deleter(b);
        } else {
            a->deleter(a);
        }
    }
    gts_storage_release(&s);
    CHECK_INT_EQ(live_buffers(), start);
}

/* The (code, bits, lanes) triple of every kind, and 0-d and empty tensors. */
static void test_export_dtypes(void)
{
    static const struct {
        gts_dtype dtype;
        uint8_t code, bits;
    } cases[] = {
        {{'b', 1}, 6, 8},    {{'i', 1}, 0, 8},     {{'i', 4}, 0, 32}, {{'u', 2}, 1, 16},
        {{'u', 8}, 1, 64},   {{'f', 2}, 2, 16},    {{'f', 4}, 2, 32}, {{'f', 8}, 2, 64},
        {{'c', 8}, 5, 64},   {{'c', 16}, 5, 128},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        gts_storage_spec spec;
        gts_storage s;
        gts_dl_managed_versioned *m;
        CHECK_OK(gts_storage_spec_init(&spec, 1, (const int64_t[]){3}, cases[i].dtype, ERR));
        if (!CHECK_OK(gts_storage_create(&spec, 0, &s, ERR)))
            continue;
        if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR))) {
            gts_dl_dtype d = m->dl_tensor.dtype;
            if (!CHECK(d.code == cases[i].code && d.bits == cases[i].bits && d.lanes == 1))
                fprintf(stderr, "  %s: got (%u, %u, %u)\n", gts_dtype_name(cases[i].dtype),
                        d.code, d.bits, d.lanes);
            CHECK(m->dl_tensor.strides[0] == 1);
            m->deleter(m);
        }
        gts_storage_release(&s);
    }

    /* 0-d: one element, no shape to give */
    gts_storage_spec spec;
    gts_storage s;
    gts_dl_managed_versioned *m;
    CHECK_OK(gts_storage_spec_init(&spec, 0, NULL, F8, ERR));
    if (CHECK_OK(gts_storage_create(&spec, 0, &s, ERR))) {
        *(double *)gts_storage_data(&s) = 2.5;
        if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR))) {
            CHECK(m->dl_tensor.ndim == 0 && m->dl_tensor.data == gts_storage_data(&s));
            CHECK(*(const double *)m->dl_tensor.data == 2.5);
            m->deleter(m);
        }
        gts_storage_release(&s);
    }
    /* empty */
    CHECK_OK(gts_storage_spec_init(&spec, 2, (const int64_t[]){0, 4}, F8, ERR));
    if (CHECK_OK(gts_storage_create(&spec, 0, &s, ERR))) {
        if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR))) {
            CHECK(m->dl_tensor.shape[0] == 0 && m->dl_tensor.shape[1] == 4);
            CHECK(m->dl_tensor.strides != NULL && m->dl_tensor.strides[1] == 1);
            m->deleter(m);
        }
        gts_storage_release(&s);
    }
}

static void test_export_legacy(void)
{
    int64_t start = live_buffers();
    gts_storage s;
    if (!make_2d(2, 3, 1, &s))
        return;
    gts_dl_managed *m = NULL;
    if (CHECK_OK(gts_storage_to_dlpack_legacy(&s, &m, ERR))) {
        const gts_dl_tensor *t = &m->dl_tensor;
        CHECK(t->device.device_type == GTS_DL_CPU && t->ndim == 2);
        CHECK(t->dtype.code == 2 && t->dtype.bits == 64 && t->dtype.lanes == 1);
        CHECK(ints_eq(2, t->shape, (const int64_t[]){2, 3}));
        CHECK(ints_eq(2, t->strides, (const int64_t[]){3, 1}));
        CHECK(t->data == gts_storage_data(&s) && t->byte_offset == 0);
        gts_storage_release(&s);
        CHECK(tensor_get(t, (const int64_t[]){1, 2}) == 12.0);
        CHECK(m->deleter != NULL);
        m->deleter(m);
    }
    gts_storage_release(&s);
    CHECK_INT_EQ(live_buffers(), start);

    /* read-only needs the versioned struct */
    if (!make_2d(2, 3, 1, &s))
        return;
    s.readonly = true;
    m = NULL;
    CHECK_FAILS(gts_storage_to_dlpack_legacy(&s, &m, ERR), GTS_EREADONLY, "read-only");
    CHECK(m == NULL);
    gts_storage_release(&s);

    /* byte strides DLPack cannot count in elements: f8 12 bytes apart */
    double data[6] = {1, 2, 3, 4, 5, 6};
    gts_buffer *buffer;
    gts_storage_spec spec;
    CHECK_OK(gts_buffer_wrap_host(data, sizeof data, NULL, NULL, &buffer, ERR));
    CHECK_OK(gts_storage_spec_init(&spec, 1, (const int64_t[]){3}, F8, ERR));
    if (CHECK_OK(gts_storage_wrap(&spec, buffer, 0, (const int64_t[]){12}, false, &s, ERR))) {
        CHECK_FAILS(gts_storage_to_dlpack_legacy(&s, &m, ERR), GTS_EINVAL, "strides");
        gts_dl_managed_versioned *mv = NULL;
        CHECK_FAILS(gts_storage_to_dlpack(&s, 0, &mv, ERR), GTS_EINVAL, "strides");
        CHECK(mv == NULL);
        gts_storage_release(&s);
    }
    gts_buffer_release(buffer);
    CHECK_INT_EQ(live_buffers(), start);
}

/* ---- import ------------------------------------------------------------------ */

/* A tensor somebody else made: the managed struct first, so that the
 * deleter finds the rest; it counts its calls. */
typedef struct foreign {
    gts_dl_managed_versioned managed;
    int64_t shape[4], strides[4];
    double data[24];
    int deletes;
} foreign;

static void count_delete(gts_dl_managed_versioned *self)
{
    ++((foreign *)self->manager_ctx)->deletes;
}

/* A (2, 3) C-order tensor over data[i] = i, with strides. */
static void foreign_init(foreign *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 24; ++i)
        f->data[i] = i;
    f->shape[0] = 2, f->shape[1] = 3;
    f->strides[0] = 3, f->strides[1] = 1;
    f->managed.version = (gts_dl_version){1, 0};
    f->managed.manager_ctx = f;
    f->managed.deleter = count_delete;
    gts_dl_tensor *t = &f->managed.dl_tensor;
    t->data = f->data;
    t->device = (gts_dl_device){GTS_DL_CPU, 0};
    t->ndim = 2;
    t->dtype = (gts_dl_dtype){2, 64, 1};
    t->shape = f->shape;
    t->strides = f->strides;
    t->byte_offset = 0;
}

static void test_import_ownership(void)
{
    int64_t start = live_buffers();
    foreign f;
    foreign_init(&f);
    gts_storage s, v;
    if (!CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR)))
        return;
    CHECK(gts_storage_data(&s) == (void *)f.data);
    CHECK(s.ndim == 2 && ints_eq(2, s.shape, (const int64_t[]){2, 3}));
    CHECK(ints_eq(2, s.strides, (const int64_t[]){24, 8}));
    CHECK(gts_dtype_equal(s.dtype, F8) && !s.readonly);
    CHECK(s.dims[0] == GTS_DIM_I && s.dims[1] == GTS_DIM_J);
    CHECK(s.halo[0].lower == 0 && s.halo[1].upper == 0 && s.alignment_size == 1);
    CHECK(get(&s, (const int64_t[]){1, 2}) == 5.0);
    /* the deleter runs once, when the last view goes */
    gts_storage_view(&s, &v);
    CHECK_OK(gts_storage_slice(&v, 1, 2, -1, 3, ERR));
    gts_storage_release(&s);
    CHECK_INT_EQ(f.deletes, 0);
    CHECK(get(&v, (const int64_t[]){1, 0}) == 5.0);
    gts_storage_release(&v);
    CHECK_INT_EQ(f.deletes, 1);
    gts_storage_release(&v);
    CHECK_INT_EQ(f.deletes, 1);
    CHECK_INT_EQ(live_buffers(), start);
}

static void test_import_layouts(void)
{
    foreign f;
    gts_storage s;

    /* NULL strides: C order */
    foreign_init(&f);
    f.managed.dl_tensor.strides = NULL;
    f.shape[0] = 3, f.shape[1] = 4;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(ints_eq(2, s.strides, (const int64_t[]){32, 8}));
        CHECK(get(&s, (const int64_t[]){2, 1}) == 9.0);
        CHECK(gts_storage_contiguous(&s, 'C'));
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(f.deletes, 1);

    /* byte_offset: element 0 is data[2] */
    foreign_init(&f);
    f.managed.dl_tensor.byte_offset = 16;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(gts_storage_data(&s) == (void *)&f.data[2]);
        CHECK(get(&s, (const int64_t[]){0, 0}) == 2.0 && get(&s, (const int64_t[]){1, 2}) == 7.0);
        gts_storage_release(&s);
    }

    /* negative strides from the last element: row 1 first, each reversed */
    foreign_init(&f);
    f.strides[0] = -3, f.strides[1] = -1;
    f.managed.dl_tensor.byte_offset = 5 * 8;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(ints_eq(2, s.strides, (const int64_t[]){-24, -8}));
        CHECK(get(&s, (const int64_t[]){0, 0}) == 5.0 && get(&s, (const int64_t[]){1, 2}) == 0.0);
        CHECK(get(&s, (const int64_t[]){0, 2}) == 3.0);
        /* every element is in the wrapped buffer: a fill reaches data[0..5] only */
        CHECK_OK(gts_storage_fill(&s, (gts_scalar){GTS_SCALAR_FLOAT, {.f = -1}}, ERR));
        CHECK(f.data[0] == -1 && f.data[5] == -1 && f.data[6] == 6);
        gts_storage_release(&s);
    }

    /* options: dims, halo, aligned point and a layout that fits */
    foreign_init(&f);
    gts_storage_spec options;
    CHECK_OK(gts_storage_spec_init(&options, 0, NULL, F8, ERR));
    options.has_dims = true;
    options.dims[0] = GTS_DIM_K, options.dims[1] = 0;
    options.halo[1] = (gts_halo){1, 1};
    options.has_layout = true;
    options.layout[0] = 0, options.layout[1] = 1;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, &options, &s, ERR))) {
        CHECK(s.dims[0] == GTS_DIM_K && s.dims[1] == 0);
        CHECK(s.halo[1].lower == 1 && s.halo[1].upper == 1 && s.aligned_index[1] == 1);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(f.deletes, 1);
    /* a layout that does not: refused, the caller keeps the tensor */
    options.layout[0] = 1, options.layout[1] = 0;
    foreign_init(&f);
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, &options, &s, ERR), GTS_EINVAL, "layout");
    CHECK_INT_EQ(f.deletes, 0);
    options.has_layout = false;
    options.halo[1] = (gts_halo){2, 2}; /* extent 3 */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, &options, &s, ERR), GTS_EINVAL, "halo");
    CHECK_INT_EQ(f.deletes, 0);

    /* read-only */
    foreign_init(&f);
    f.managed.flags = GTS_DLPACK_READ_ONLY;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(s.readonly);
        CHECK_FAILS(gts_storage_fill(&s, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 0}}, ERR),
                    GTS_EREADONLY, "read-only");
        CHECK(f.data[0] == 0.0);
        gts_storage_release(&s);
    }

    /* 0-d, and CUDA host memory (host-reachable) */
    foreign_init(&f);
    f.managed.dl_tensor.ndim = 0;
    f.managed.dl_tensor.shape = NULL;
    f.managed.dl_tensor.strides = NULL;
    f.managed.dl_tensor.byte_offset = 8;
    f.managed.dl_tensor.device.device_type = GTS_DL_CUDA_HOST;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(s.ndim == 0 && *(const double *)gts_storage_data(&s) == 1.0);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(f.deletes, 1);

    /* empty, without data */
    foreign_init(&f);
    f.shape[0] = 0;
    f.managed.dl_tensor.data = NULL;
    if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        CHECK(s.ndim == 2 && s.shape[0] == 0 && gts_storage_size(&s) == 0);
        gts_storage copy;
        if (CHECK_OK(gts_storage_copy(&s, &copy, ERR))) {
            CHECK(copy.shape[0] == 0 && copy.shape[1] == 3);
            gts_storage_release(&copy);
        }
        gts_dl_managed_versioned *m;
        if (CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR))) {
            CHECK(m->dl_tensor.shape[0] == 0 && m->dl_tensor.data == NULL);
            m->deleter(m);
        }
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(f.deletes, 1);
}

static void test_import_errors(void)
{
    int64_t start = live_buffers();
    foreign f;
    gts_storage s;
    memset(&s, 0, sizeof s);
    foreign_init(&f);
    f.managed.dl_tensor.device.device_type = GTS_DL_ROCM; /* no device of gtstore's */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ENOTSUP, "device");
    foreign_init(&f);
    f.managed.dl_tensor.dtype = (gts_dl_dtype){2, 128, 1}; /* float128 */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ETYPE, "dtype");
    f.managed.dl_tensor.dtype = (gts_dl_dtype){2, 32, 2}; /* two lanes */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ETYPE, "lanes=2");
    f.managed.dl_tensor.dtype = (gts_dl_dtype){4, 16, 1}; /* bfloat16 */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ETYPE, "code=4");
    foreign_init(&f);
    f.managed.version.major = 2;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ENOTSUP, "version");
    f.managed.version.major = 0;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ENOTSUP, "version");
    foreign_init(&f);
    f.managed.dl_tensor.ndim = GTS_MAX_NDIM + 1;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EINVAL, "ndim");
    f.managed.dl_tensor.ndim = -1;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EINVAL, "ndim");
    foreign_init(&f);
    f.managed.dl_tensor.shape = NULL;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EINVAL, "shape");
    foreign_init(&f);
    f.shape[1] = -3;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EINVAL, "shape");
    foreign_init(&f);
    f.managed.dl_tensor.data = NULL;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EINVAL, "data");
    foreign_init(&f);
    f.strides[0] = INT64_MAX / 4; /* overflows in bytes */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EOVERFLOW, "strides");
    /* each reach fits in 64 bits, the distance between them does not (was
     * a signed overflow; found by fuzz_dlpack_import) */
    foreign_init(&f);
    f.strides[0] = INT64_MAX / 8, f.strides[1] = -(INT64_MAX / 16);
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EOVERFLOW, "strides");
    /* elements below address 0, or past the end of the address space */
    foreign_init(&f);
    f.strides[0] = -((int64_t)1 << 59);
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EOVERFLOW, "strides");
    foreign_init(&f);
    f.managed.dl_tensor.data = (void *)(UINTPTR_MAX - 32); /* 48 bytes of elements */
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EOVERFLOW, "strides");
    f.managed.dl_tensor.byte_offset = 128;
    CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_EOVERFLOW,
                "byte_offset");
    /* nothing was taken over, nothing leaked, the output untouched */
    CHECK_INT_EQ(f.deletes, 0);
    CHECK(s.buffer == NULL);
    CHECK_INT_EQ(live_buffers(), start);
}

/* Export, import: the same memory under new metadata; the import owns the
 * export, whose deleter drops the last reference to the original buffer. */
static void test_round_trip(void)
{
    int64_t start = live_buffers();
    gts_storage s, back;
    if (!make_2d(3, 4, 64, &s))
        return;
    gts_dl_managed_versioned *m;
    if (!CHECK_OK(gts_storage_to_dlpack(&s, 0, &m, ERR)))
        return;
    gts_storage_spec options;
    CHECK_OK(gts_storage_spec_init(&options, 0, NULL, F8, ERR));
    options.has_dims = true;
    options.dims[0] = GTS_DIM_J, options.dims[1] = GTS_DIM_K;
    options.halo[0] = (gts_halo){1, 0};
    options.halo[1] = (gts_halo){0, 2};
    if (CHECK_OK(gts_storage_from_dlpack(m, &options, &back, ERR))) {
        CHECK(gts_storage_data(&back) == gts_storage_data(&s));
        CHECK(ints_eq(2, back.shape, s.shape) && ints_eq(2, back.strides, s.strides));
        CHECK(back.dims[0] == GTS_DIM_J && back.dims[1] == GTS_DIM_K);
        CHECK(back.halo[0].lower == 1 && back.halo[1].upper == 2);
        CHECK(back.aligned_index[0] == 1 && back.aligned_index[1] == 0);
        bool same = true;
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 4; ++j)
                same = same && get(&back, (const int64_t[]){i, j}) == (double)(10 * i + j);
        CHECK(same);
        CHECK_INT_EQ(live_buffers(), start + 2); /* the block and the wrapper */
        gts_storage_release(&s);
        CHECK_INT_EQ(live_buffers(), start + 2);
        CHECK(get(&back, (const int64_t[]){2, 3}) == 23.0);
        gts_storage_release(&back);
    } else {
        m->deleter(m);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(live_buffers(), start);
}

/* ---- legacy import ------------------------------------------------------------ */

typedef struct foreign_legacy {
    gts_dl_managed managed;
    int64_t shape[1];
    double data[4];
    int deletes;
} foreign_legacy;

static void count_legacy_delete(gts_dl_managed *self)
{
    ++((foreign_legacy *)self->manager_ctx)->deletes;
}

static void test_import_legacy(void)
{
    int64_t start = live_buffers();
    foreign_legacy f = {.shape = {4}, .data = {1, 2, 3, 4}};
    f.managed.manager_ctx = &f;
    f.managed.deleter = count_legacy_delete;
    f.managed.dl_tensor = (gts_dl_tensor){f.data, {GTS_DL_CPU, 0}, 1, {2, 64, 1}, f.shape,
                                          NULL, 0};
    gts_storage s, v;
    if (CHECK_OK(gts_storage_from_dlpack_legacy(&f.managed, NULL, &s, ERR))) {
        CHECK(gts_storage_data(&s) == (void *)f.data && s.strides[0] == 8 && !s.readonly);
        gts_storage_view(&s, &v);
        gts_storage_release(&s);
        CHECK(get(&v, (const int64_t[]){3}) == 4.0);
        CHECK_INT_EQ(f.deletes, 0);
        gts_storage_release(&v);
    }
    CHECK_INT_EQ(f.deletes, 1);
    f.managed.dl_tensor.device.device_type = GTS_DL_ROCM;
    CHECK_FAILS(gts_storage_from_dlpack_legacy(&f.managed, NULL, &s, ERR), GTS_ENOTSUP,
                "device");
    CHECK_INT_EQ(f.deletes, 1);

    /* legacy export, legacy import */
    gts_storage orig;
    gts_dl_managed *m;
    if (make_2d(2, 2, 1, &orig) && CHECK_OK(gts_storage_to_dlpack_legacy(&orig, &m, ERR))) {
        gts_storage_release(&orig);
        if (CHECK_OK(gts_storage_from_dlpack_legacy(m, NULL, &s, ERR))) {
            CHECK(get(&s, (const int64_t[]){1, 0}) == 10.0);
            gts_storage_release(&s);
        } else {
            m->deleter(m);
        }
    }
    CHECK_INT_EQ(live_buffers(), start);
}

/* A tensor of CUDA device 0's memory (its address, never dereferenced on
 * the host, is the foreign struct's): where the device exists, the storage
 * wraps it on that device and the deleter runs at the release; where not,
 * the import is refused and nothing taken over. Versioned and legacy. */
static void test_import_cuda(void)
{
    int64_t start = live_buffers();
    bool present = cuda_present();
    foreign f;
    foreign_init(&f);
    f.managed.dl_tensor.device.device_type = GTS_DL_CUDA;
    gts_storage s;
    memset(&s, 0, sizeof s);
    if (!present) {
        CHECK_FAILS(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR), GTS_ENOTSUP, "device");
        CHECK(s.buffer == NULL);
    } else if (CHECK_OK(gts_storage_from_dlpack(&f.managed, NULL, &s, ERR))) {
        const gts_device_ops *device = gts_buffer_device(s.buffer);
        CHECK(device->id.type == GTS_DL_CUDA && device->id.id == 0);
        CHECK(gts_storage_data(&s) == NULL); /* no host address: device memory */
        CHECK((char *)gts_buffer_data(s.buffer) + s.offset == (char *)f.data);
        CHECK(s.strides[0] == 24 && s.strides[1] == 8);
        CHECK_INT_EQ(live_buffers(), start + 1);
        CHECK_INT_EQ(f.deletes, 0);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(f.deletes, present ? 1 : 0);

    foreign_legacy g = {.shape = {4}, .data = {1, 2, 3, 4}};
    g.managed.manager_ctx = &g;
    g.managed.deleter = count_legacy_delete;
    g.managed.dl_tensor = (gts_dl_tensor){g.data, {GTS_DL_CUDA, 0}, 1, {2, 64, 1}, g.shape,
                                          NULL, 0};
    if (!present) {
        CHECK_FAILS(gts_storage_from_dlpack_legacy(&g.managed, NULL, &s, ERR), GTS_ENOTSUP,
                    "device");
    } else if (CHECK_OK(gts_storage_from_dlpack_legacy(&g.managed, NULL, &s, ERR))) {
        CHECK(gts_buffer_device(s.buffer)->id.type == GTS_DL_CUDA);
        gts_storage_release(&s);
    }
    CHECK_INT_EQ(g.deletes, present ? 1 : 0);
    CHECK_INT_EQ(live_buffers(), start);
    printf("CUDA import: %s\n", present ? "taken (CUDA device 0 exists)" : "refused (no CUDA)");
}

/* Which side an export serves, per buffer and dl_device/copy: its own
 * memory for its own device or none named; the CPU gets the host side
 * where there is one (mirrored, managed, pinned) unless a copy is asked
 * for, a copy where there is none unless copy is forbidden; other devices
 * are refused naming both. */
static void test_serve_side(void)
{
    const gts_device_ops *gpu = gts_device_emulated(), *managed;
    if (!CHECK_OK(gts_device_managed(gpu, &managed, ERR)))
        return;
    gts_buffer *host, *device, *mirrored, *shared;
    if (!CHECK_OK(gts_buffer_alloc(gts_device_host(), 64, 0, &host, ERR)))
        return;
    if (CHECK_OK(gts_buffer_alloc(gpu, 64, 0, &device, ERR))) {
        if (CHECK_OK(gts_buffer_alloc(gpu, 64, GTS_ALLOC_MIRRORED, &mirrored, ERR))) {
            if (CHECK_OK(gts_buffer_alloc(managed, 64, 0, &shared, ERR))) {
                const int64_t cpu[2] = {GTS_DL_CPU, 0}, emulated[2] = {GTS_DL_EXT_DEV, 0};
                const int64_t cuda[2] = {GTS_DL_CUDA, 0};
                gts_dlpack_serve side = GTS_DLPACK_SERVE_HOST_COPY;
                /* none named, or the buffer's own device */
                if (CHECK_OK(gts_dlpack_serve_side(device, NULL, 1, &side, ERR)))
                    CHECK(side == GTS_DLPACK_SERVE_OWN);
                if (CHECK_OK(gts_dlpack_serve_side(device, emulated, -1, &side, ERR)))
                    CHECK(side == GTS_DLPACK_SERVE_OWN);
                if (CHECK_OK(gts_dlpack_serve_side(host, cpu, 0, &side, ERR)))
                    CHECK(side == GTS_DLPACK_SERVE_OWN);
                /* the CPU from device memory: a copy unless forbidden */
                if (CHECK_OK(gts_dlpack_serve_side(device, cpu, -1, &side, ERR)))
                    CHECK(side == GTS_DLPACK_SERVE_HOST_COPY);
                CHECK_FAILS(gts_dlpack_serve_side(device, cpu, 0, &side, ERR), GTS_ENOTSUP,
                            "dl_device: (1, 0) cannot be served without a copy (copy=False); "
                            "the storage is on (12, 0)");
                /* from memory with a host side: that side, or a copy asked for */
                const gts_buffer *sided[2] = {mirrored, shared};
                for (int i = 0; i < 2; ++i) {
                    if (CHECK_OK(gts_dlpack_serve_side(sided[i], cpu, -1, &side, ERR)))
                        CHECK(side == GTS_DLPACK_SERVE_HOST_SIDE);
                    if (CHECK_OK(gts_dlpack_serve_side(sided[i], cpu, 0, &side, ERR)))
                        CHECK(side == GTS_DLPACK_SERVE_HOST_SIDE);
                    if (CHECK_OK(gts_dlpack_serve_side(sided[i], cpu, 1, &side, ERR)))
                        CHECK(side == GTS_DLPACK_SERVE_HOST_COPY);
                }
                /* another device, or another CPU */
                CHECK_FAILS(gts_dlpack_serve_side(host, cuda, -1, &side, ERR), GTS_ENOTSUP,
                            "dl_device: (2, 0) cannot be served; the storage is on (1, 0)");
                CHECK_FAILS(gts_dlpack_serve_side(device, (const int64_t[]){1, 1}, -1, &side,
                                                  ERR),
                            GTS_ENOTSUP, "(1, 1) cannot be served; the storage is on (12, 0)");
                CHECK_FAILS(gts_dlpack_serve_side(NULL, cpu, -1, &side, ERR), GTS_EINVAL,
                            "NULL");
                /* copy is 1, 0 or -1: another value was read as 1, whatever
                   the device asked for */
                CHECK_FAILS(gts_dlpack_serve_side(mirrored, cpu, 5, &side, ERR), GTS_EINVAL,
                            "copy: 5 is not 1, 0 or -1");
                CHECK_FAILS(gts_dlpack_serve_side(device, NULL, -2, &side, ERR), GTS_EINVAL,
                            "copy: -2");
                gts_buffer_release(shared);
            }
            gts_buffer_release(mirrored);
        }
        gts_buffer_release(device);
    }
    gts_buffer_release(host);
}

int main(void)
{
    int64_t start = live_buffers();
    test_export_versioned();
    test_export_dtypes();
    test_export_legacy();
    test_import_ownership();
    test_import_layouts();
    test_import_errors();
    test_round_trip();
    test_import_legacy();
    test_import_cuda();
    test_serve_side();
    CHECK_INT_EQ(live_buffers(), start);
    return check_summary("dlpack");
}
