/* Built-in stencils (gtstore/stencils.h) against plain loops, on fields in
 * every memory order of I, J, K, bound by gts_bind; and on each GPU (the
 * emulated device, CUDA device 0 where there is one) against the host. */
#include "check.h"
#include "gtstore/device.h"
#include "gtstore/stencils.h"
#include "random.h"

#include <math.h>
#include <stdlib.h>

#define N 12
#define NK 4

/* A float64 field of N x N x NK points whose memory order is `order`
 * (labels from the largest stride to the contiguous one). */
typedef struct field {
    double *memory;
    int64_t shape[3], strides[3];
    gts_dim dims[3];
    gts_field_desc desc;
} field;

static void field_make(field *f, const gts_dim order[3])
{
    f->memory = calloc(N * N * NK, sizeof(double));
    int64_t stride = 8;
    for (int d = 2; d >= 0; --d) {
        f->dims[d] = order[d];
        f->shape[d] = order[d] == GTS_DIM_K ? NK : N;
        f->strides[d] = stride;
        stride *= f->shape[d];
    }
    f->desc = (gts_field_desc){.data = f->memory, .device = GTS_DEVICE_CPU,
                               .dtype = {'f', 8}, .ndim = 3, .shape = f->shape,
                               .strides = f->strides, .dims = f->dims};
}

/* The element at canonical (i, j, k). */
static double *at(const field *f, int64_t i, int64_t j, int64_t k)
{
    int64_t idx[3] = {i, j, k}, offset = 0;
    for (int d = 0; d < 3; ++d)
        offset += idx[gts_domain_axis(f->dims[d])] * f->strides[d];
    return (double *)(void *)((char *)f->memory + offset);
}

static double lap_ref(const field *in, int64_t i, int64_t j, int64_t k)
{
    return 4.0 * *at(in, i, j, k) - (*at(in, i + 1, j, k) + *at(in, i - 1, j, k) +
                                     *at(in, i, j + 1, k) + *at(in, i, j - 1, k));
}

static double flux(double f, double g)
{
    return f * g > 0 ? 0 : f;
}

static double hdiff_ref(const field *in, const field *c, int64_t i, int64_t j, int64_t k)
{
    double l = lap_ref(in, i, j, k);
    double fx = flux(lap_ref(in, i + 1, j, k) - l, *at(in, i + 1, j, k) - *at(in, i, j, k));
    double fxm = flux(l - lap_ref(in, i - 1, j, k), *at(in, i, j, k) - *at(in, i - 1, j, k));
    double fy = flux(lap_ref(in, i, j + 1, k) - l, *at(in, i, j + 1, k) - *at(in, i, j, k));
    double fym = flux(l - lap_ref(in, i, j - 1, k), *at(in, i, j, k) - *at(in, i, j - 1, k));
    return *at(in, i, j, k) - *at(c, i, j, k) * (fx - fxm + fy - fym);
}

static const gts_dim orders[6][3] = {
    {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}, {GTS_DIM_K, GTS_DIM_J, GTS_DIM_I},
    {GTS_DIM_J, GTS_DIM_K, GTS_DIM_I}, {GTS_DIM_K, GTS_DIM_I, GTS_DIM_J},
    {GTS_DIM_I, GTS_DIM_K, GTS_DIM_J}, {GTS_DIM_J, GTS_DIM_I, GTS_DIM_K},
};

/* ---- the same call on a GPU ---------------------------------------------- */

#define FIELD_BYTES ((int64_t)N * N * NK * (int64_t)sizeof(double))

/* The GPUs to run on: the emulated device, and CUDA's device 0 (a real GPU,
 * or the fake driver of the c-fake-cuda suite) where there is one. */
static int gpus(const gts_device_ops **out)
{
    int n = 0;
    out[n++] = gts_device_emulated();
    gts_error ignored;
    if (gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &out[n], &ignored) == GTS_OK)
        ++n;
    return n;
}

/* Runs `stencil` on `dev` over copies of the host fields `f` (f[0], the
 * output, as `out_before`), on a stream where the device has them, and
 * compares the output with the host's (f[0] after gts_stencil_run):
 * within `tolerance` relatively (a GPU may fuse a multiply and an add). */
static void device_matches_host(const gts_device_ops *dev, gts_stencil stencil, const field *f,
                                const double *out_before, const gts_bind_args *args,
                                double tolerance)
{
    const gts_signature *sig = gts_stencil_signature_on(stencil, GTS_DEVICE_GPU);
    int nf = sig->nfields;
    void *memory[5] = {NULL};
    gts_field_desc descs[5];
    gts_stream stream = NULL;
    double *result = malloc((size_t)FIELD_BYTES);
    bool ok = result && (!dev->stream_create || CHECK_OK(gts_device_stream_create(dev, &stream, ERR)));
    for (int i = 0; i < nf && ok; ++i) {
        ok = CHECK_OK(gts_device_alloc(dev, FIELD_BYTES, 0, &memory[i], ERR)) &&
             CHECK_OK(gts_device_copy_to_device(dev, memory[i], i ? f[i].memory : out_before,
                                                FIELD_BYTES, NULL, ERR));
        descs[i] = f[i].desc;
        descs[i].data = memory[i];
        descs[i].device = GTS_DEVICE_GPU;
    }
    gts_binding b;
    gts_bound_field bound[5];
    if (ok && CHECK_OK(gts_bind(sig, descs, args, &b, bound, ERR))) {
        b.stream = stream;
        if (CHECK_OK(gts_stencil_launch(dev, stencil, &b, bound, ERR)) &&
            CHECK_OK(gts_device_synchronize(dev, stream, ERR)) &&
            CHECK_OK(gts_device_copy_to_host(dev, result, memory[0], FIELD_BYTES, NULL, ERR))) {
            int bad = 0;
            for (int64_t e = 0; e < N * N * NK; ++e) {
                double want = f[0].memory[e];
                bad += !(fabs(result[e] - want) <= tolerance * (1.0 + fabs(want)));
            }
            if (!CHECK_INT_EQ(bad, 0))
                fprintf(stderr, "  stencil %d on %s\n", (int)stencil, dev->name);
        }
    }
    for (int i = 0; i < nf; ++i)
        gts_device_free(dev, memory[i], FIELD_BYTES);
    gts_device_stream_destroy(dev, stream);
    free(result);
}

static void on_every_gpu(gts_stencil stencil, const field *f, const double *out_before,
                         const gts_bind_args *args, double tolerance)
{
    const gts_device_ops *devices[2];
    int n = gpus(devices);
    for (int d = 0; d < n; ++d)
        device_matches_host(devices[d], stencil, f, out_before, args, tolerance);
}

static void run_and_compare(gts_stencil stencil, int halo, int out_order, int in_order)
{
    field f[3];
    field_make(&f[0], orders[out_order]);
    field_make(&f[1], orders[in_order]);
    field_make(&f[2], orders[(in_order + 1) % 6]);
    for (int64_t i = 0; i < N * N * NK; ++i) {
        f[1].memory[i] = (double)rnd(1000) / 1000.0;
        f[2].memory[i] = 0.1 * (double)rnd(1000) / 1000.0;
        f[0].memory[i] = -99.0;
    }
    double out_before[N * N * NK];
    memcpy(out_before, f[0].memory, sizeof out_before);
    const gts_signature *sig = gts_stencil_signature(stencil);
    gts_field_desc descs[3] = {f[0].desc, f[1].desc, f[2].desc};
    int64_t all[3] = {halo, halo, 0};
    gts_bind_args args = {.origin_all = all};
    gts_binding b;
    gts_bound_field bound[3];
    if (CHECK_OK(gts_bind(sig, descs, &args, &b, bound, ERR)) &&
        CHECK_OK(gts_stencil_run(stencil, &b, bound, ERR))) {
        CHECK_INT_EQ(b.domain[0], N - 2 * halo);
        int bad = 0;
        for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < N; ++j)
                for (int64_t k = 0; k < NK; ++k) {
                    bool inside = i >= halo && i < N - halo && j >= halo && j < N - halo;
                    double want = -99.0;
                    if (inside && stencil == GTS_STENCIL_COPY)
                        want = *at(&f[1], i, j, k);
                    else if (inside && stencil == GTS_STENCIL_LAPLACIAN)
                        want = -lap_ref(&f[1], i, j, k);
                    else if (inside)
                        want = hdiff_ref(&f[1], &f[2], i, j, k);
                    bad += fabs(*at(&f[0], i, j, k) - want) > 1e-12;
                }
        CHECK_INT_EQ(bad, 0);
        on_every_gpu(stencil, f, out_before, &args, 1e-12);
    }
    for (int i = 0; i < 3; ++i)
        free(f[i].memory);
}

static void test_errors(void)
{
    field f[2];
    field_make(&f[0], orders[0]);
    field_make(&f[1], orders[0]);
    const gts_signature *sig = gts_stencil_signature(GTS_STENCIL_LAPLACIAN);
    int64_t all[3] = {1, 1, 0};
    gts_bind_args args = {.origin_all = all};
    gts_binding b;
    gts_bound_field bound[2];
    /* the output aliases the input */
    gts_field_desc descs[2] = {f[0].desc, f[0].desc};
    if (CHECK_OK(gts_bind(sig, descs, &args, &b, bound, ERR)))
        CHECK_FAILS(gts_stencil_run(GTS_STENCIL_LAPLACIAN, &b, bound, ERR), GTS_EINVAL,
                    "inp: shares memory with the output out");
    /* strides that are no multiple of the element */
    descs[1] = f[1].desc;
    f[1].strides[0] = 12;
    f[1].shape[0] = 4; /* fits in the memory: 12 * 3 + rest */
    all[0] = 1;
    if (CHECK_OK(gts_bind(sig, descs, &args, &b, bound, ERR)))
        CHECK_FAILS(gts_stencil_run(GTS_STENCIL_LAPLACIAN, &b, bound, ERR), GTS_EINVAL,
                    "inp: stride 12 is not a multiple");
    CHECK_FAILS(gts_stencil_run((gts_stencil)9, &b, bound, ERR), GTS_EINVAL, "no built-in");
    CHECK_FAILS(gts_stencil_launch(gts_device_emulated(), (gts_stencil)9, &b, bound, ERR),
                GTS_EINVAL, "no built-in");
    CHECK(gts_stencil_signature_on(GTS_STENCIL_COPY, (gts_device)2) == NULL);
    CHECK(gts_stencil_signature_on(GTS_STENCIL_HDIFF, GTS_DEVICE_GPU)->device == GTS_DEVICE_GPU);
    /* on a GPU: a device, one with the kernels, and memory of its own */
    f[1].strides[0] = 8 * N * NK;
    f[1].shape[0] = N;
    if (CHECK_OK(gts_bind(sig, descs, &args, &b, bound, ERR))) {
        CHECK_FAILS(gts_stencil_launch(NULL, GTS_STENCIL_LAPLACIAN, &b, bound, ERR), GTS_EINVAL,
                    "device: NULL");
        gts_device_ops without = *gts_device_emulated();
        without.stencil = NULL;
        CHECK_FAILS(gts_stencil_launch(&without, GTS_STENCIL_LAPLACIAN, &b, bound, ERR),
                    GTS_ENOTSUP, "device: emulated runs no built-in stencil");
        CHECK_FAILS(gts_stencil_launch(gts_device_emulated(), GTS_STENCIL_LAPLACIAN, &b, bound,
                                       ERR),
                    GTS_EINVAL, "out: 0x");
        CHECK(strstr(check_error.message, "is not memory of the emulated device") != NULL);
        CHECK_OK(gts_stencil_launch(gts_device_host(), GTS_STENCIL_LAPLACIAN, &b, bound, ERR));
    }
    /* an output whose points share memory: threads would race (host, GPU) */
    descs[0] = f[0].desc;
    descs[1] = f[1].desc;
    int64_t kept = f[0].strides[2];
    f[0].strides[2] = 0;
    if (CHECK_OK(gts_bind(gts_stencil_signature(GTS_STENCIL_COPY), descs, NULL, &b, bound, ERR)))
        CHECK_FAILS(gts_stencil_run(GTS_STENCIL_COPY, &b, bound, ERR), GTS_EINVAL,
                    "out: its points over the domain share memory");
    f[0].strides[2] = kept;
    /* a negative extent in a binding gts_bind did not make (its product
     * positive): refused on the host and the GPU alike */
    if (CHECK_OK(gts_bind(gts_stencil_signature(GTS_STENCIL_COPY), descs, NULL, &b, bound, ERR))) {
        b.domain[0] = -2;
        b.domain[1] = -3;
        CHECK_FAILS(gts_stencil_run(GTS_STENCIL_COPY, &b, bound, ERR), GTS_EINVAL,
                    "domain: (-2, -3, 4) has a negative extent");
        CHECK_FAILS(gts_stencil_launch(gts_device_emulated(), GTS_STENCIL_COPY, &b, bound, ERR),
                    GTS_EINVAL, "domain: (-2, -3, 4) has a negative extent");
    }
    const gts_device_ops *emulated = gts_device_emulated();
    void *memory[2] = {NULL, NULL};
    int64_t bytes = (int64_t)N * N * NK * 8;
    if (CHECK_OK(gts_device_alloc(emulated, bytes, 0, &memory[0], ERR)) &&
        CHECK_OK(gts_device_alloc(emulated, bytes, 0, &memory[1], ERR))) {
        const gts_signature *gpu_sig = gts_stencil_signature_on(GTS_STENCIL_COPY, GTS_DEVICE_GPU);
        gts_field_desc gpu_descs[2] = {f[0].desc, f[0].desc};
        int64_t repeated[3] = {8 * N * NK, 8 * NK, 0}; /* K: stride 0 */
        gpu_descs[0].data = memory[0];
        gpu_descs[0].strides = repeated;
        gpu_descs[1].data = memory[1];
        for (int i = 0; i < 2; ++i)
            gpu_descs[i].device = GTS_DEVICE_GPU;
        if (CHECK_OK(gts_bind(gpu_sig, gpu_descs, NULL, &b, bound, ERR)))
            CHECK_FAILS(gts_stencil_launch(emulated, GTS_STENCIL_COPY, &b, bound, ERR),
                        GTS_EINVAL, "out: its points over the domain share memory (element "
                                    "strides 48, 4, 0 in I, J, K)");
    }
    gts_device_free(emulated, memory[0], bytes);
    gts_device_free(emulated, memory[1], bytes);
    CHECK(gts_stencil_signature((gts_stencil)-1) == NULL);
    for (int s = 0; s <= GTS_STENCIL_TRIDIAGONAL; ++s)
        CHECK_OK(gts_signature_check(gts_stencil_signature((gts_stencil)s), ERR));
    free(f[0].memory);
    free(f[1].memory);
}

/* The Thomas solve: every column's residual vanishes, in every layout. */
static void tridiagonal_in(int x_order, int in_order)
{
    field f[5];
    field_make(&f[0], orders[x_order]);
    for (int i = 1; i < 5; ++i)
        field_make(&f[i], orders[(in_order + i) % 6]);
    for (int64_t e = 0; e < N * N * NK; ++e) {
        f[1].memory[e] = (double)rnd(1000) / 1000.0 - 0.5;  /* a */
        f[2].memory[e] = 3.0 + (double)rnd(1000) / 1000.0; /* b: diagonally dominant */
        f[3].memory[e] = (double)rnd(1000) / 1000.0 - 0.5;  /* c */
        f[4].memory[e] = (double)rnd(1000) / 100.0;         /* d */
        f[0].memory[e] = -99.0;
    }
    double out_before[N * N * NK];
    memcpy(out_before, f[0].memory, sizeof out_before);
    const gts_signature *sig = gts_stencil_signature(GTS_STENCIL_TRIDIAGONAL);
    gts_field_desc descs[5];
    for (int i = 0; i < 5; ++i)
        descs[i] = f[i].desc;
    gts_binding b;
    gts_bound_field bound[5];
    if (CHECK_OK(gts_bind(sig, descs, NULL, &b, bound, ERR)) &&
        CHECK_OK(gts_stencil_run(GTS_STENCIL_TRIDIAGONAL, &b, bound, ERR))) {
        int bad = 0;
        for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < N; ++j)
                for (int64_t k = 0; k < NK; ++k) {
                    double lhs = *at(&f[2], i, j, k) * *at(&f[0], i, j, k);
                    if (k > 0)
                        lhs += *at(&f[1], i, j, k) * *at(&f[0], i, j, k - 1);
                    if (k < NK - 1)
                        lhs += *at(&f[3], i, j, k) * *at(&f[0], i, j, k + 1);
                    bad += fabs(lhs - *at(&f[4], i, j, k)) > 1e-10;
                }
        CHECK_INT_EQ(bad, 0);
        on_every_gpu(GTS_STENCIL_TRIDIAGONAL, f, out_before, NULL, 1e-10);
    }
    for (int i = 0; i < 5; ++i)
        free(f[i].memory);
}

/* Fields of zero strides describe any extent in one element each: the
 * domain's points and the stencils' scratch sizes are checked, not
 * wrapped into small mallocs (which overflowed the heap). */
static void zero_strides(gts_stencil stencil, const int64_t shape[3], const char *message)
{
    static double memory[5];
    static const int64_t strides[3] = {0, 0, 0};
    const gts_signature *sig = gts_stencil_signature(stencil);
    gts_field_desc descs[5];
    for (int f = 0; f < sig->nfields; ++f)
        descs[f] = (gts_field_desc){.data = &memory[f], .device = GTS_DEVICE_CPU,
                                    .dtype = {'f', 8}, .ndim = 3, .shape = shape,
                                    .strides = strides};
    int64_t halo = stencil == GTS_STENCIL_HDIFF ? 2 : 0; /* hdiff's extent */
    gts_bind_args args = {.origin_all = (const int64_t[]){halo, halo, 0}};
    gts_binding b;
    gts_bound_field bound[5];
    if (CHECK_OK(gts_bind(sig, descs, &args, &b, bound, ERR)))
        CHECK_FAILS(gts_stencil_run(stencil, &b, bound, ERR), GTS_EOVERFLOW, message);
}

static void test_sizes_overflow(void)
{
    const int64_t huge = (int64_t)1 << 61, big = (int64_t)1 << 58;
    /* 2^61 x 1 x 8 points: more than 64 bits */
    zero_strides(GTS_STENCIL_COPY, (const int64_t[]){huge, 1, 8},
                 "domain: 2305843009213693952 x 1 x 8 points overflow");
    zero_strides(GTS_STENCIL_TRIDIAGONAL, (const int64_t[]){huge, 1, 8}, "domain");
    zero_strides(GTS_STENCIL_HDIFF, (const int64_t[]){huge, 8, 8}, "domain");
    /* points that fit, scratch that does not: 8 levels of 2^58 points, and
     * 6 rows of 2^61 - 2 points */
    zero_strides(GTS_STENCIL_TRIDIAGONAL, (const int64_t[]){big, 1, 8},
                 "tridiagonal: its scratch");
    zero_strides(GTS_STENCIL_HDIFF, (const int64_t[]){huge, 5, 1}, "hdiff: its scratch");
}

int main(void)
{
    for (int o = 0; o < 6; ++o)
        for (int i = 0; i < 6; ++i)
            tridiagonal_in(o, i);
    for (int o = 0; o < 6; ++o)
        for (int i = 0; i < 6; ++i) {
            run_and_compare(GTS_STENCIL_COPY, 0, o, i);
            run_and_compare(GTS_STENCIL_LAPLACIAN, 1, o, i);
            run_and_compare(GTS_STENCIL_HDIFF, 2, o, i);
        }
    test_errors();
    test_sizes_overflow();
    return check_summary("stencils");
}
