/* Storages over memory others allocated (src/wrap.c), on the emulated
 * device: one side, two sides given apart, and a view inside an existing
 * mirrored buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gtstore/gtstore.h"

static int released;
static void count_release(void *ctx)
{
    CHECK(ctx == &released);
    ++released;
}

static gts_storage_spec spec_2d(int64_t n0, int64_t n1)
{
    gts_storage_spec spec;
    int64_t shape[2] = {n0, n1};
    gts_storage_spec_init(&spec, 2, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, NULL);
    return spec;
}

static void test_wrap_memory(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    void *block;
    if (!CHECK_OK(gts_device_alloc(emu, 3 * 4 * 8, 0, &block, ERR)))
        return;
    gts_storage_spec spec = spec_2d(3, 4);
    int64_t strides[2] = {32, 8};
    gts_storage s;
    released = 0;
    if (CHECK_OK(gts_storage_wrap_memory(&spec, emu, block, strides, true, count_release,
                                         &released, &s, ERR))) {
        CHECK(gts_buffer_device(s.buffer) == emu && s.readonly && s.offset == 0);
        CHECK(gts_buffer_data(s.buffer) == block && gts_storage_data(&s) == NULL);
        CHECK_INT_EQ(released, 0);
        gts_storage_release(&s);
        CHECK_INT_EQ(released, 1); /* once, with the last view */
    }
    /* a failed wrap leaves ctx to the caller: no release */
    spec.has_layout = true;
    spec.layout[0] = 1;
    spec.layout[1] = 0;
    CHECK_FAILS(gts_storage_wrap_memory(&spec, emu, block, strides, false, count_release,
                                        &released, &s, ERR),
                GTS_EINVAL, "does not match the data's strides");
    CHECK_INT_EQ(released, 1);
    CHECK_FAILS(gts_storage_wrap_memory(NULL, emu, block, strides, false, NULL, NULL, &s, ERR),
                GTS_EINVAL, "spec: NULL");
    gts_device_free(emu, block, 3 * 4 * 8);
}

static void test_wrap_mirrored(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    void *block;
    double host[12];
    if (!CHECK_OK(gts_device_alloc(emu, sizeof host, 0, &block, ERR)))
        return;
    double *device_values = gts_device_emulated_host_address(block);
    for (int i = 0; i < 12; ++i) {
        host[i] = i;
        device_values[i] = 100 + i;
    }
    gts_storage_spec spec = spec_2d(3, 4);
    int64_t strides[2] = {32, 8};
    gts_storage s;
    released = 0;
    if (CHECK_OK(gts_storage_wrap_mirrored(&spec, emu, block, strides, host, strides, false,
                                           GTS_SYNC_DEVICE_DIRTY, count_release, &released, &s,
                                           ERR))) {
        CHECK(gts_buffer_mirrored(s.buffer) && gts_buffer_host(s.buffer) == host);
        CHECK(gts_buffer_data(s.buffer) == block);
        CHECK_INT_EQ(gts_buffer_sync_state(s.buffer), GTS_SYNC_DEVICE_DIRTY);
        CHECK_OK(gts_buffer_sync(s.buffer, GTS_SIDE_HOST, false, NULL, ERR));
        CHECK(host[0] == 100 && host[11] == 111); /* the device side came over */
        host[5] = -1;
        CHECK_OK(gts_buffer_set_sync_state(s.buffer, GTS_SYNC_HOST_DIRTY, ERR));
        CHECK_OK(gts_buffer_sync(s.buffer, GTS_SIDE_DEVICE, false, NULL, ERR));
        CHECK(device_values[5] == -1);
        /* a view inside it, from the addresses of its two sides: the same buffer */
        gts_storage_spec row = spec_2d(1, 4);
        gts_storage v;
        if (CHECK_OK(gts_storage_wrap_in(&row, s.buffer, (char *)block + 32, strides, host + 4,
                                         strides, false, &v, ERR))) {
            CHECK(v.buffer == s.buffer && v.offset == 32);
            gts_storage_release(&v);
        }
        CHECK_FAILS(gts_storage_wrap_in(&row, s.buffer, (char *)block + 32, strides, host + 5,
                                        strides, false, &v, ERR),
                    GTS_EINVAL, "are not the same elements");
        CHECK_FAILS(gts_storage_wrap_in(&row, s.buffer, (char *)block + 96, strides, host + 12,
                                        strides, false, &v, ERR),
                    GTS_EINVAL, "reach outside the buffer");
        gts_storage_release(&s);
        CHECK_INT_EQ(released, 1);
    }
    /* the checks: one layout, device memory, gtstore's sync, a state */
    int64_t other[2] = {8, 24};
    CHECK_FAILS(gts_storage_wrap_mirrored(&spec, emu, block, strides, host, other, false,
                                          GTS_SYNC_CLEAN, NULL, NULL, &s, ERR),
                GTS_EINVAL, "stride 32 bytes in dimension 0, and data's is 8");
    CHECK_FAILS(gts_storage_wrap_mirrored(&spec, gts_device_host(), host, strides, host, strides,
                                          false, GTS_SYNC_CLEAN, NULL, NULL, &s, ERR),
                GTS_EINVAL, "which the host reaches");
    CHECK_FAILS(gts_storage_wrap_mirrored(&spec, emu, block, strides, host, strides, false,
                                          (gts_sync_state)7, NULL, NULL, &s, ERR),
                GTS_EINVAL, "7 is no gts_sync_state");
    gts_storage_spec none = spec;
    none.managed = GTS_MANAGED_NONE;
    CHECK_FAILS(gts_storage_wrap_mirrored(&none, emu, block, strides, host, strides, false,
                                          GTS_SYNC_CLEAN, NULL, NULL, &s, ERR),
                GTS_EINVAL, "managed: a host and a device buffer");
    /* strides along extents of 1 place nothing: they may differ */
    gts_storage_spec column = spec_2d(3, 1);
    int64_t loose[2] = {32, 999};
    if (CHECK_OK(gts_storage_wrap_mirrored(&column, emu, block, strides, host, loose, false,
                                           GTS_SYNC_CLEAN, NULL, NULL, &s, ERR)))
        gts_storage_release(&s);
    /* a host buffer without a device side has no state to share */
    gts_storage h;
    gts_storage_spec row = spec_2d(1, 4);
    if (CHECK_OK(gts_storage_create(&row, 0, &h, ERR))) {
        CHECK_FAILS(gts_storage_wrap_in(&row, h.buffer, gts_storage_data(&h), strides,
                                        gts_storage_data(&h), strides, false, &s, ERR),
                    GTS_EINVAL, "without a host and a device side");
        gts_storage_release(&h);
    }
    gts_device_free(emu, block, sizeof host);
}

int main(void)
{
    test_wrap_memory();
    test_wrap_mirrored();
    return check_summary("wrap");
}
