/* A field on the GPU with a host copy that gtstore keeps in sync (GT4Py's
 * software-managed storage), through the C API.
 *
 *   1. choose the device that plays the GPU: CUDA device 0 where there is
 *      one, else the emulated device (GTSTORE_GPU=emulated does the same);
 *   2. allocate a (16, 16, 8) float64 storage with the "gt:gpu" preset: a
 *      GPU-kind spec becomes device memory plus a host side (mirrored);
 *   3. fill it on the device, then read it on the host: the host side is
 *      brought up to date first, one whole-allocation copy;
 *   4. write one point on the host (prepare_write, then the store), and
 *      bring the device up to date before a kernel would read it;
 *   5. release it.
 *
 * The rule that loses no write: read a side after gts_buffer_sync to it,
 * write a side after gts_buffer_prepare_write for it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gtstore/gtstore.h"

static void check(int rc, const char *what, const gts_error *err)
{
    if (rc != GTS_OK) {
        fprintf(stderr, "%s failed (%s): %s\n", what, gts_status_name(rc), err->message);
        exit(1);
    }
}

static const char *state_name(gts_sync_state state)
{
    static const char *const names[] = {"clean", "host ahead", "device ahead"};
    return names[state];
}

int main(void)
{
    gts_error err;
    const gts_device_ops *gpu;
    if (gts_device_gpu(&gpu, &err) != GTS_OK) {
        printf("no GPU here (%s): the emulated device plays it\n", err.message);
        check(gts_device_use_gpu(gts_device_emulated(), &err), "gts_device_use_gpu", &err);
        check(gts_device_gpu(&gpu, &err), "gts_device_gpu", &err);
    }
    printf("the GPU: %s, DLPack (%d, %d)\n", gpu->name, (int)gpu->id.type, (int)gpu->id.id);

    gts_preset preset;
    check(gts_preset_lookup("gt:gpu", &preset, &err), "gts_preset_lookup", &err);
    gts_storage_spec spec;
    const int64_t shape[3] = {16, 16, 8};
    check(gts_storage_spec_init(&spec, 3, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, &err),
          "gts_storage_spec_init", &err);
    spec.preset = &preset; /* its device kind is the GPU; managed: gtstore syncs */
    gts_storage s;
    check(gts_storage_create(&spec, 0, &s, &err), "gts_storage_create", &err);
    printf("mirrored: %s, strides (%lld, %lld, %lld)\n",
           gts_buffer_mirrored(s.buffer) ? "yes" : "no", (long long)s.strides[0],
           (long long)s.strides[1], (long long)s.strides[2]);

    gts_scalar one = {.kind = GTS_SCALAR_FLOAT, .value.f = 1.0};
    check(gts_storage_fill(&s, one, &err), "gts_storage_fill", &err); /* on the device */
    printf("after the fill: %s\n", state_name(gts_buffer_sync_state(s.buffer)));

    check(gts_buffer_sync(s.buffer, GTS_SIDE_HOST, false, NULL, &err), "gts_buffer_sync", &err);
    double *host = gts_storage_data(&s); /* element 0 on the host side */
    printf("read on the host: %.1f (%s)\n", host[0], state_name(gts_buffer_sync_state(s.buffer)));

    check(gts_buffer_prepare_write(s.buffer, GTS_SIDE_HOST, NULL, &err),
          "gts_buffer_prepare_write", &err);
    host[0] = 42.0;
    printf("written on the host: %s\n", state_name(gts_buffer_sync_state(s.buffer)));
    check(gts_buffer_sync(s.buffer, GTS_SIDE_DEVICE, false, NULL, &err), "gts_buffer_sync", &err);
    printf("before a kernel: %s\n", state_name(gts_buffer_sync_state(s.buffer)));
    if (gpu == gts_device_emulated()) {
        gts_transfer_counts counts;
        gts_device_emulated_counts(&counts);
        printf("transfers: %lld to the device, %lld to the host\n",
               (long long)counts.to_device, (long long)counts.to_host);
    }

    gts_storage_release(&s);
    gts_preset_release(&preset);
    return 0;
}
