/* A user's C kernel, bound by gtstore and called from C (this file's main)
 * and from Python (examples/c_kernel.py: Signature.call_c with this file
 * built as a shared library).
 *
 * The kernel, out = factor * inp over the domain, reads the bound fields
 * through their byte strides, so any layout works; `factor` comes through
 * the kernel's context pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/binding.h"

int scale_kernel(const gts_binding *binding, const gts_bound_field *fields, int nfields,
                 void *ctx, gts_error *err);

int scale_kernel(const gts_binding *binding, const gts_bound_field *fields, int nfields,
                 void *ctx, gts_error *err)
{
    if (nfields != 2 || !ctx) {
        if (err) {
            err->code = GTS_EINVAL;
            snprintf(err->message, sizeof err->message,
                     "scale_kernel: expects (out, inp) and a factor, got %d fields", nfields);
        }
        return GTS_EINVAL;
    }
    double factor;
    memcpy(&factor, ctx, sizeof factor);
    const gts_bound_field *out = &fields[0], *inp = &fields[1];
    /* canonical order: I, J, K */
    for (int64_t i = 0; i < binding->domain[0]; ++i)
        for (int64_t j = 0; j < binding->domain[1]; ++j)
            for (int64_t k = 0; k < binding->domain[2]; ++k) {
                double value;
                memcpy(&value,
                       inp->origin_data + i * inp->strides[0] + j * inp->strides[1] +
                           k * inp->strides[2],
                       sizeof value);
                value *= factor;
                memcpy(out->origin_data + i * out->strides[0] + j * out->strides[1] +
                           k * out->strides[2],
                       &value, sizeof value);
            }
    return GTS_OK;
}

#ifdef C_KERNEL_MAIN
int main(void)
{
    /* out (6, 5, 4) in C order; inp stored K, J, I with a halo of 1 in I and J */
    enum { NI = 6, NJ = 5, NK = 4 };
    static double out[NI][NJ][NK], inp[NK][NJ][NI];
    for (int k = 0; k < NK; ++k)
        for (int j = 0; j < NJ; ++j)
            for (int i = 0; i < NI; ++i)
                inp[k][j][i] = 100 * i + 10 * j + k;

    static const gts_field_spec specs[2] = {
        {.name = "out", .dtype = {'f', 8}, .ndim = 3,
         .dims = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}, .written = true},
        {.name = "inp", .dtype = {'f', 8}, .ndim = 3,
         .dims = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}},
    };
    gts_signature sig = {2, specs, GTS_DEVICE_CPU};
    gts_error err;
    if (gts_signature_check(&sig, &err) != GTS_OK)
        return fprintf(stderr, "%s\n", err.message), 1;

    int64_t out_shape[3] = {NI, NJ, NK}, out_strides[3] = {NJ * NK * 8, NK * 8, 8};
    int64_t inp_shape[3] = {NK, NJ, NI}, inp_strides[3] = {NJ * NI * 8, NI * 8, 8};
    gts_dim inp_dims[3] = {GTS_DIM_K, GTS_DIM_J, GTS_DIM_I};
    gts_halo inp_halo[3] = {{0, 0}, {1, 1}, {1, 1}}; /* K, J, I */
    gts_field_desc fields[2] = {
        {.data = out, .device = GTS_DEVICE_CPU, .dtype = {'f', 8}, .ndim = 3,
         .shape = out_shape, .strides = out_strides},
        {.data = inp, .device = GTS_DEVICE_CPU, .dtype = {'f', 8}, .ndim = 3,
         .shape = inp_shape, .strides = inp_strides, .dims = inp_dims, .halo = inp_halo},
    };
    gts_binding binding;
    gts_bound_field bound[2];
    double factor = 2.0;
    if (gts_bind(&sig, fields, NULL, &binding, bound, &err) != GTS_OK ||
        scale_kernel(&binding, bound, 2, &factor, &err) != GTS_OK)
        return fprintf(stderr, "%s\n", err.message), 1;

    /* inp's origin is its lower halo (1, 1, 0 in I, J, K), out's is 0; the
     * domain ends at inp's upper halo: 4 x 3 x 4 */
    printf("domain (%lld, %lld, %lld)\n", (long long)binding.domain[0],
           (long long)binding.domain[1], (long long)binding.domain[2]);
    int bad = 0;
    for (int i = 0; i < NI; ++i)
        for (int j = 0; j < NJ; ++j)
            for (int k = 0; k < NK; ++k) {
                bool inside = i < 4 && j < 3;
                double want = inside ? 2.0 * inp[k][j + 1][i + 1] : 0.0;
                bad += out[i][j][k] != want;
            }
    printf("out[0][0][1] = %g (2 * inp at I=1, J=1, K=1), %d wrong values\n", out[0][0][1], bad);
    return bad != 0;
}
#endif
