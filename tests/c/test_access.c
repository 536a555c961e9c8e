/* The access verb (gtstore/access.h) and the device capabilities it reads
 * (gtstore/device.h): on the host, the emulated device with and without a
 * host side, and the emulated device's managed and pinned memory. Each
 * access syncs what the sync rule says (counted transfers), marks and
 * holds writes, refuses writes to read-only storages and the host side of
 * memory without one, and gives element 0 of a view on the side asked
 * for. Run with the fake CUDA driver too (c-fake-cuda), where the CUDA
 * devices' capabilities are checked as well. */
#include <stdint.h>

#include "check.h"
#include "gtstore/access.h"
#include "gtstore/storage.h"

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

static int64_t transfers(void)
{
    gts_transfer_counts c;
    gts_device_emulated_counts(&c);
    return c.to_device + c.to_host;
}

static bool make(const gts_device_ops *device, unsigned flags, gts_storage *out)
{
    gts_storage_spec spec;
    int64_t shape[2] = {5, 7};
    return CHECK_OK(gts_storage_spec_init(&spec, 2, shape, F8, ERR)) &&
           CHECK_OK(gts_storage_create_on(device, &spec, flags | GTS_ALLOC_ZERO, out, ERR));
}

/* A view of element (1, 2) onwards: element 0 is not the buffer's first. */
static bool view_of(const gts_storage *s, gts_storage *out)
{
    gts_storage_view(s, out);
    return CHECK_OK(gts_storage_slice(out, 0, 1, 1, 4, ERR)) &&
           CHECK_OK(gts_storage_slice(out, 1, 2, 1, 5, ERR));
}

static void test_host(void)
{
    gts_storage s, v;
    if (!make(gts_device_host(), 0, &s))
        return;
    if (view_of(&s, &v)) {
        void *host = NULL, *device = NULL;
        CHECK_OK(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &host, ERR));
        CHECK_OK(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &device, ERR));
        CHECK(host == gts_storage_data(&v) && device == host);
        CHECK((char *)host == (char *)gts_buffer_host(v.buffer) + v.offset);
        /* read-only: read, never written */
        v.readonly = true;
        CHECK_OK(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &host, ERR));
        CHECK_FAILS(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &host, ERR),
                    GTS_EREADONLY, "read-only");
        CHECK_FAILS(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, NULL, &host,
                                       ERR),
                    GTS_EREADONLY, "read-only");
        CHECK_INT_EQ(gts_buffer_writes_in_flight(v.buffer), 0);
        gts_storage_release(&v);
    }
    gts_storage_release(&s);
}

static void test_mirrored(void)
{
    gts_storage s, v;
    if (!make(gts_device_emulated(), GTS_ALLOC_MIRRORED, &s))
        return;
    if (!view_of(&s, &v)) {
        gts_storage_release(&s);
        return;
    }
    void *host = NULL, *device = NULL;
    gts_device_emulated_reset_counts();
    /* a host write marks the host side; a device read syncs it, once */
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &host, ERR));
    CHECK(host == gts_storage_data(&v));
    CHECK_INT_EQ(gts_buffer_sync_state(v.buffer), GTS_SYNC_HOST_DIRTY);
    *(double *)host = 42.0;
    CHECK_INT_EQ(transfers(), 0);
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &device, ERR));
    CHECK((char *)device == (char *)gts_buffer_data(v.buffer) + v.offset);
    CHECK_INT_EQ(transfers(), 1);
    CHECK_INT_EQ(gts_buffer_sync_state(v.buffer), GTS_SYNC_CLEAN);
    double *on_device = gts_device_host_alias(gts_device_emulated(), device);
    CHECK(on_device && *on_device == 42.0);
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &device, ERR));
    CHECK_INT_EQ(transfers(), 1);
    /* a held device write is in flight until its end, then read back */
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, NULL, &device, ERR));
    CHECK_INT_EQ(gts_buffer_writes_in_flight(v.buffer), 1);
    CHECK_INT_EQ(gts_buffer_sync_state(v.buffer), GTS_SYNC_DEVICE_DIRTY);
    *(double *)gts_device_host_alias(gts_device_emulated(), device) = 7.0;
    CHECK_OK(gts_storage_access_end(&v, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, NULL, ERR));
    CHECK_INT_EQ(gts_buffer_writes_in_flight(v.buffer), 0);
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &host, ERR));
    CHECK_INT_EQ(transfers(), 2);
    CHECK(*(double *)host == 7.0);
    /* ending a read or an unheld write holds nothing */
    CHECK_OK(gts_storage_access_end(&v, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, ERR));
    CHECK_OK(gts_storage_access_end(&v, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, ERR));
    CHECK_INT_EQ(gts_buffer_writes_in_flight(v.buffer), 0);
    /* read-only: refused before anything is marked */
    CHECK_OK(gts_storage_access(&v, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &host, ERR));
    v.readonly = true;
    CHECK_FAILS(gts_storage_access(&v, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE, NULL, &device, ERR),
                GTS_EREADONLY, "read-only");
    CHECK_INT_EQ(gts_buffer_sync_state(v.buffer), GTS_SYNC_HOST_DIRTY);
    CHECK_INT_EQ(transfers(), 2);
    gts_storage_release(&v);
    gts_storage_release(&s);
}

static void test_device_only(void)
{
    gts_storage s;
    if (!make(gts_device_emulated(), 0, &s))
        return;
    void *data = &s;
    CHECK_FAILS(gts_storage_access(&s, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &data, ERR),
                GTS_ENOTSUP, "no host side");
    CHECK(data == &s); /* untouched on failure */
    CHECK_OK(gts_storage_access(&s, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE, NULL, &data, ERR));
    CHECK(data == gts_buffer_data(s.buffer));
    CHECK(gts_device_host_alias(gts_device_emulated(), data) != NULL);
    gts_storage_release(&s);
}

/* Managed and pinned memory: one side, the host's address on both. */
static void test_shared_memory(void)
{
    const gts_device_ops *companions[2];
    if (!CHECK_OK(gts_device_managed(gts_device_emulated(), &companions[0], ERR)) ||
        !CHECK_OK(gts_device_pinned(gts_device_emulated(), &companions[1], ERR)))
        return;
    for (int i = 0; i < 2; ++i) {
        gts_storage s;
        if (!make(companions[i], 0, &s))
            continue;
        void *host = NULL, *device = NULL;
        CHECK_OK(gts_storage_access(&s, GTS_SIDE_HOST, GTS_ACCESS_WRITE, NULL, &host, ERR));
        CHECK_OK(gts_storage_access(&s, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &device, ERR));
        CHECK(host && host == device && host == gts_storage_data(&s));
        CHECK_INT_EQ(gts_buffer_sync_state(s.buffer), GTS_SYNC_CLEAN);
        gts_storage_release(&s);
    }
}

static void test_arguments(void)
{
    gts_storage s;
    void *data;
    CHECK_FAILS(gts_storage_access(NULL, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &data, ERR),
                GTS_EINVAL, "storage");
    if (!make(gts_device_host(), 0, &s))
        return;
    CHECK_FAILS(gts_storage_access(&s, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, NULL, ERR),
                GTS_EINVAL, "element0");
    CHECK_FAILS(gts_storage_access(&s, (gts_side)2, GTS_ACCESS_READ, NULL, &data, ERR),
                GTS_EINVAL, "side: 2");
    CHECK_FAILS(gts_storage_access(&s, GTS_SIDE_HOST, (gts_access)-1, NULL, &data, ERR),
                GTS_EINVAL, "access: -1");
    CHECK_OK(gts_storage_access_end(NULL, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, ERR)); /* ignored */
    gts_storage_release(&s);
}

/* Every device's capabilities agree with its DLPack id, which only the
 * device files and this test may compare. */
static void test_capabilities(void)
{
    const gts_device_ops *devices[64];
    size_t n = gts_device_list(devices, 64);
    CHECK(n >= 4 && n <= 64);
    for (size_t i = 0; i < n && i < 64; ++i) {
        const gts_device_ops *d = devices[i];
        int32_t type = d->id.type;
        bool emulated = type == GTS_DL_EXT_DEV;
        gts_memory_kind kind = type == GTS_DL_CPU                     ? GTS_MEMORY_HOST
                               : type == GTS_DL_CUDA_MANAGED          ? GTS_MEMORY_MANAGED
                               : type == GTS_DL_CUDA_HOST             ? GTS_MEMORY_PINNED
                               : emulated && d->id.id == 1            ? GTS_MEMORY_MANAGED
                               : emulated && d->id.id == 2            ? GTS_MEMORY_PINNED
                                                                      : GTS_MEMORY_GPU;
        bool cuda = type == GTS_DL_CUDA || type == GTS_DL_CUDA_MANAGED;
        CHECK_INT_EQ(d->kind, kind);
        CHECK_INT_EQ(d->cuda_array_interface, cuda);
        CHECK_INT_EQ(d->engine, cuda ? GTS_ENGINE_CUPY : GTS_ENGINE_NUMPY);
        CHECK_INT_EQ(d->host_accessible, kind != GTS_MEMORY_GPU);
        CHECK_INT_EQ(gts_device_is_managed(d), kind == GTS_MEMORY_MANAGED);
        CHECK_INT_EQ(gts_device_is_pinned(d), kind == GTS_MEMORY_PINNED);
        if (kind == GTS_MEMORY_HOST || kind == GTS_MEMORY_GPU || type == GTS_DL_CUDA_HOST) {
            CHECK(d->owner == NULL);
        } else { /* the owner's companion is this device */
            const gts_device_ops *companion = NULL;
            CHECK(d->owner && d->owner->kind == GTS_MEMORY_GPU);
            if (d->owner && kind == GTS_MEMORY_MANAGED)
                CHECK(gts_device_managed(d->owner, &companion, ERR) == 0 && companion == d);
            if (d->owner && kind == GTS_MEMORY_PINNED)
                CHECK(gts_device_pinned(d->owner, &companion, ERR) == 0 && companion == d);
        }
        int probe = 0;
        CHECK(gts_device_host_alias(d, &probe) == (d->host_accessible ? &probe : NULL));
    }
    CHECK(gts_device_host_alias(NULL, devices[0]) == NULL);
}

int main(void)
{
    test_host();
    test_mirrored();
    test_device_only();
    test_shared_memory();
    test_arguments();
    test_capabilities();
    return check_summary("test_access");
}
