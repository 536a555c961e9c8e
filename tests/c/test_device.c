/* Devices: the registry (ids, errors for unknown and unreachable devices),
 * the contract of every device's operations (run on the host and the
 * emulated device alike), the emulated device's own promises (addresses
 * that are not host addresses, checks of every address, transfer counts,
 * streams), the checked entry points' bad input, buffers on a device, and
 * storages across devices: copy and assign staged through the host with the
 * fewest transfers, DLPack export naming the device, and the caches of the
 * emulated device's memory and pinned memory (reuse, limits, release, the
 * pinned host sides of mirrored buffers). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device_contract.h"
#include "storage_helpers.h"
#include "gtstore/buffer.h"
#include "gtstore/device.h"
#include "gtstore/dlpack.h"
#include "gtstore/kernels.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

static gts_transfer_counts counts_now(void)
{
    gts_transfer_counts c;
    gts_device_emulated_counts(&c);
    return c;
}

/* ---- the registry ------------------------------------------------------------ */

static void test_registry(void)
{
    const gts_device_ops *dev = NULL, *host = gts_device_host(), *emu = gts_device_emulated();
    CHECK(host && emu && host != emu);
    CHECK(host->id.type == GTS_DL_CPU && host->id.id == 0 && host->host_accessible);
    CHECK(emu->id.type == GTS_DL_EXT_DEV && emu->id.id == 0 && !emu->host_accessible);
    CHECK_STR_EQ(host->name, "cpu");
    CHECK_STR_EQ(emu->name, "emulated");
    if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CPU, 0}, &dev, ERR)))
        CHECK(dev == host);
    if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_EXT_DEV, 0}, &dev, ERR)))
        CHECK(dev == emu);
    dev = NULL;
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CPU, 1}, &dev, ERR), GTS_ENOTFOUND,
                "device: (1, 1)");
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_EXT_DEV, -1}, &dev, ERR), GTS_ENOTFOUND,
                "no ext_dev device -1");
    /* CUDA: absent here unless the machine has a driver and a GPU
     * (test_device_cuda covers both cases) */
    int cuda = 0;
    int cuda_rc = gts_device_cuda_status(&cuda, NULL, NULL);
    if (cuda_rc) {
        CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &dev, ERR), cuda_rc, "CUDA");
        CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA_MANAGED, 3}, &dev, ERR), cuda_rc,
                    "(13, 3)");
    } else {
        CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA, cuda}, &dev, ERR), GTS_ENOTFOUND,
                    "CUDA");
    }
    CHECK_FAILS(gts_device_get((gts_device_id){99, 0}, &dev, ERR), GTS_ENOTFOUND,
                "not a DLPack device type");
    CHECK_FAILS(gts_device_get((gts_device_id){0, 0}, &dev, ERR), GTS_ENOTFOUND, "type 0");
    /* the type named without an article ("a OpenCL device" read wrong) */
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_OPENCL, 0}, &dev, ERR), GTS_ENOTSUP,
                "device: (4, 0): this build of libgtstore cannot reach OpenCL devices");
    CHECK(dev == NULL); /* failures write nothing */
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CPU, 0}, NULL, ERR), GTS_EINVAL, "out");

    const gts_device_ops *list[6] = {NULL};
    size_t listed = gts_device_list(NULL, 0); /* with CUDA: its devices after these four */
    CHECK(cuda_rc ? listed == 4 : listed > 4);
    CHECK_INT_EQ(gts_device_list(list, 1), listed);
    CHECK(list[0] == host && list[1] == NULL);
    CHECK_INT_EQ(gts_device_list(list, 4), listed);
    CHECK(list[0] == host && list[1] == emu && list[4] == NULL);
    /* the third: the emulated device's managed memory, host memory under
     * an id of its own */
    const gts_device_ops *managed = list[2];
    CHECK(gts_device_id_equal(managed->id, (gts_device_id){GTS_DL_EXT_DEV, 1}));
    CHECK(managed->host_accessible && gts_device_is_managed(managed));
    CHECK(!gts_device_is_managed(host) && !gts_device_is_managed(emu) &&
          !gts_device_is_managed(NULL));
    if (CHECK_OK(gts_device_managed(emu, &dev, ERR)))
        CHECK(dev == managed);
    if (CHECK_OK(gts_device_get(managed->id, &dev, ERR)))
        CHECK(dev == managed);
    CHECK_FAILS(gts_device_managed(host, &dev, ERR), GTS_ENOTSUP, "cpu device has no managed");
    CHECK_FAILS(gts_device_managed(emu, NULL, ERR), GTS_EINVAL, "out");
    CHECK_FAILS(gts_device_use_gpu(managed, ERR), GTS_EINVAL, "host memory");
    /* the fourth: its pinned host memory, host memory whose blocks the
     * emulated device counts */
    const gts_device_ops *pinned = list[3];
    CHECK(gts_device_id_equal(pinned->id, (gts_device_id){GTS_DL_EXT_DEV, 2}));
    CHECK(pinned->host_accessible && gts_device_is_pinned(pinned) && !gts_device_is_managed(pinned));
    CHECK(!gts_device_is_pinned(host) && !gts_device_is_pinned(emu) &&
          !gts_device_is_pinned(managed) && !gts_device_is_pinned(NULL));
    if (CHECK_OK(gts_device_pinned(emu, &dev, ERR)))
        CHECK(dev == pinned);
    if (CHECK_OK(gts_device_get(pinned->id, &dev, ERR)))
        CHECK(dev == pinned);
    CHECK_FAILS(gts_device_pinned(host, &dev, ERR), GTS_ENOTSUP, "cpu device has no pinned");
    CHECK_FAILS(gts_device_pinned(managed, &dev, ERR), GTS_ENOTSUP, "no pinned");
    CHECK_FAILS(gts_device_pinned(emu, NULL, ERR), GTS_EINVAL, "out");
    CHECK_FAILS(gts_device_use_gpu(pinned, ERR), GTS_EINVAL, "host memory");
    gts_pinned_counts before, after;
    gts_device_emulated_pinned_counts(&before);
    char *block = NULL;
    if (CHECK_OK(gts_device_alloc(pinned, 100, GTS_ALLOC_ZERO, (void **)&block, ERR))) {
        block[99] = 1; /* a host address */
        gts_device_emulated_pinned_counts(&after);
        CHECK_INT_EQ(after.allocs, before.allocs + 1);
        CHECK_INT_EQ(after.live_blocks, before.live_blocks + 1);
        CHECK_INT_EQ(after.live_bytes, before.live_bytes + 100);
        gts_device_free(pinned, block, 100);
    }
    gts_device_emulated_pinned_counts(&after);
    CHECK_INT_EQ(after.frees, before.frees + 1);
    CHECK_INT_EQ(after.live_blocks, before.live_blocks);
    CHECK_INT_EQ(after.live_bytes, before.live_bytes);
    gts_device_emulated_reset_counts();
    gts_device_emulated_pinned_counts(&after);
    CHECK(after.allocs == 0 && after.frees == 0 && after.live_blocks == before.live_blocks);
    CHECK(gts_device_id_equal(host->id, (gts_device_id){1, 0}));
    CHECK(!gts_device_id_equal(host->id, emu->id));
    /* a kind of memory another component reports by its DLPack type */
    CHECK(gts_device_memory_is(emu, GTS_DL_EXT_DEV) && gts_device_memory_is(host, GTS_DL_CPU));
    CHECK(!gts_device_memory_is(emu, GTS_DL_CUDA) && !gts_device_memory_is(host, 0));
    CHECK(!gts_device_memory_is(NULL, GTS_DL_CPU));
    /* DLPack's device struct and the id have one layout */
    CHECK(sizeof(gts_device_id) == sizeof(gts_dl_device));
}

/* ---- streams ----------------------------------------------------------------------- */

static void test_streams(void)
{
    const gts_device_ops *host = gts_device_host(), *emu = gts_device_emulated();
    gts_stream stream = NULL;
    char bytes[8] = {0}, *block;
    /* the host has its default stream only */
    CHECK_FAILS(gts_device_stream_create(host, &stream, ERR), GTS_ENOTSUP, "default stream");
    CHECK_FAILS(gts_device_copy_to_host(host, bytes, bytes + 4, 4, (gts_stream)bytes, ERR),
                GTS_EINVAL, "stream");
    CHECK_FAILS(gts_device_synchronize(host, (gts_stream)bytes, ERR), GTS_EINVAL,
                "device cpu has its default stream only");
    /* the emulated device has streams, and knows its own */
    if (!CHECK_OK(gts_device_stream_create(emu, &stream, ERR)))
        return;
    CHECK(stream != NULL);
    if (CHECK_OK(gts_device_alloc(emu, 8, 0, (void **)&block, ERR))) {
        CHECK_OK(gts_device_copy_to_device(emu, block, "abcdefg", 8, stream, ERR));
        CHECK_OK(gts_device_synchronize(emu, stream, ERR));
        CHECK_OK(gts_device_copy_to_host(emu, bytes, block, 8, stream, ERR));
        CHECK_OK(gts_device_synchronize(emu, stream, ERR)); /* queued until then */
        CHECK_STR_EQ(bytes, "abcdefg");
        uint64_t foreign = 0;
        CHECK_FAILS(gts_device_synchronize(emu, (gts_stream)&foreign, ERR), GTS_EINVAL,
                    "not a live stream of the emulated device");
        /* events too are looked up; the host's trivial event is not the
           emulated device's */
        CHECK_FAILS(gts_device_event_synchronize(emu, (gts_event)&foreign, ERR), GTS_EINVAL,
                    "not a live event of the emulated device");
        gts_event trivial;
        if (CHECK_OK(gts_device_event_create(host, &trivial, ERR)))
            CHECK_FAILS(gts_device_event_record(emu, trivial, stream, ERR), GTS_EINVAL,
                        "trivial event");
        CHECK_FAILS(gts_device_fill(emu, block, 1, (const int64_t[]){8}, (const int64_t[]){1}, 1,
                                    "x", (gts_stream)&foreign, ERR),
                    GTS_EINVAL, "stream");
        /* a stream is looked up, never dereferenced: an address that is no
           memory at all, and a destroyed stream, are errors, not crashes */
        CHECK_FAILS(gts_device_synchronize(emu, (gts_stream)(uintptr_t)16, ERR), GTS_EINVAL,
                    "not a live stream");
        gts_stream gone;
        if (CHECK_OK(gts_device_stream_create(emu, &gone, ERR))) {
            gts_device_stream_destroy(emu, gone);
            CHECK_FAILS(gts_device_copy_to_device(emu, block, "abcdefg", 8, gone, ERR),
                        GTS_EINVAL, "not a live stream");
        }
        CHECK_OK(gts_device_synchronize(emu, stream, ERR)); /* the other one lives on */
        /* on a stream too, the kernels' checks fail at once, and what they
           refuse is never queued */
        const int64_t shape[1] = {8}, unit[1] = {1}, zero[1] = {0};
        CHECK_FAILS(gts_device_fill(emu, block, 1, shape, NULL, 1, "x", stream, ERR), GTS_EINVAL,
                    "strides");
        CHECK_FAILS(gts_device_fill(emu, block, 1, (const int64_t[]){2}, unit, 3, "xyz", stream,
                                    ERR),
                    GTS_EINVAL, "itemsize: 3");
        CHECK_FAILS(gts_device_fill(emu, block, 1, shape, unit, 1, NULL, stream, ERR), GTS_EINVAL,
                    "item");
        CHECK_FAILS(gts_device_copy(emu, block, NULL, block, unit, 1, shape, 1, stream, ERR),
                    GTS_EINVAL, "dst");
        CHECK_FAILS(gts_device_copy(emu, block, zero, block, unit, 1, shape, 1, stream, ERR),
                    GTS_EINVAL, "dst_strides");
        CHECK_OK(gts_device_fill(emu, block, 1, (const int64_t[]){0}, NULL, 1, "x", stream, ERR));
        /* and work queued runs in order, after its delay: a fill, then a
           copy of the filled bytes, read back once synchronised */
        CHECK_OK(gts_device_fill(emu, block, 1, (const int64_t[]){4}, unit, 1, "q", stream, ERR));
        CHECK_OK(gts_device_copy(emu, block + 4, unit, block, unit, 1, (const int64_t[]){4}, 1,
                                 stream, ERR));
        CHECK_OK(gts_device_copy_to_host(emu, bytes, block, 8, stream, ERR));
        CHECK_OK(gts_device_synchronize(emu, stream, ERR));
        CHECK(memcmp(bytes, "qqqqqqqq", 8) == 0);
        gts_device_free(emu, block, 8);
    }
    gts_device_stream_destroy(emu, stream);
    CHECK_FAILS(gts_device_synchronize(emu, stream, ERR), GTS_EINVAL, "not a live stream");
}

/* ---- the emulated device: separate memory, checked addresses, counts -------------------- */

static void test_emulated(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    gts_transfer_counts c0 = counts_now();
    char *block, host[64];
    if (!CHECK_OK(gts_device_alloc(emu, 64, 0, (void **)&block, ERR)))
        return;
    gts_transfer_counts c = counts_now();
    CHECK_INT_EQ(c.allocs, c0.allocs + 1);
    CHECK_INT_EQ(c.live_blocks, c0.live_blocks + 1);
    CHECK_INT_EQ(c.live_bytes, c0.live_bytes + 64);
    /* the device address is not the host address behind it, which keeps its
     * alignment */
    char *behind = gts_device_emulated_host_address(block);
    CHECK(behind != NULL && behind != block);
    CHECK((uintptr_t)behind % 64 == 0);
    CHECK(gts_device_emulated_host_address(block + 10) == behind + 10);
    CHECK(gts_device_emulated_host_address(host) == NULL);
    CHECK(gts_device_emulated_host_address(behind) == NULL);

    /* counts of each transfer, calls and bytes */
    gts_device_emulated_reset_counts();
    c = counts_now();
    CHECK(c.to_device == 0 && c.to_host == 0 && c.within == 0 && c.fills == 0 && c.copies == 0 &&
          c.allocs == 0 && c.frees == 0);
    CHECK_INT_EQ(c.live_blocks, c0.live_blocks + 1); /* not reset */
    memset(host, 'h', sizeof host);
    CHECK_OK(gts_device_copy_to_device(emu, block, host, 64, NULL, ERR));
    CHECK_OK(gts_device_copy_to_device(emu, block + 8, host, 8, NULL, ERR));
    CHECK_OK(gts_device_copy_to_host(emu, host, block, 32, NULL, ERR));
    CHECK_OK(gts_device_copy_within(emu, block, block + 32, 16, NULL, ERR));
    CHECK_OK(gts_device_fill(emu, block, 1, (const int64_t[]){4}, (const int64_t[]){2}, 1, "f",
                             NULL, ERR));
    CHECK_OK(gts_device_copy(emu, block + 32, (const int64_t[]){1}, block, (const int64_t[]){1}, 1,
                             (const int64_t[]){8}, 1, NULL, ERR));
    c = counts_now();
    CHECK(c.to_device == 2 && c.to_device_bytes == 72);
    CHECK(c.to_host == 1 && c.to_host_bytes == 32);
    CHECK(c.within == 1 && c.within_bytes == 16);
    CHECK(c.fills == 1 && c.copies == 1);
    CHECK(memcmp(behind + 32, "fhfhfhfh", 8) == 0); /* the device's memory, as a kernel sees it */

    /* misuse: host memory where device memory belongs and the reverse,
     * bytes past a block, a freed block; nothing is counted or written */
    CHECK_FAILS(gts_device_copy_to_device(emu, host, host, 8, NULL, ERR), GTS_EINVAL,
                "not memory of the emulated device");
    CHECK_FAILS(gts_device_copy_to_device(emu, behind, host, 8, NULL, ERR), GTS_EINVAL, "dst");
    CHECK_FAILS(gts_device_copy_to_device(emu, block, block + 8, 8, NULL, ERR), GTS_EINVAL,
                "src: ");
    CHECK_FAILS(gts_device_copy_to_host(emu, block, block, 8, NULL, ERR), GTS_EINVAL,
                "emulated device memory, where host memory is expected");
    CHECK_FAILS(gts_device_copy_to_host(emu, host, block + 60, 8, NULL, ERR), GTS_EINVAL,
                "src");
    CHECK_FAILS(gts_device_copy_within(emu, block, host, 8, NULL, ERR), GTS_EINVAL, "src");
    CHECK_FAILS(gts_device_fill(emu, block, 1, (const int64_t[]){65}, (const int64_t[]){1}, 1,
                                "x", NULL, ERR),
                GTS_EINVAL, "data");
    CHECK_FAILS(gts_device_fill(emu, block, 1, (const int64_t[]){2}, (const int64_t[]){-1}, 1,
                                "x", NULL, ERR),
                GTS_EINVAL, "bytes -1 to 1");
    CHECK_OK(gts_device_fill(emu, block + 63, 1, (const int64_t[]){2}, (const int64_t[]){-1}, 1,
                             "g", NULL, ERR));
    CHECK_FAILS(gts_device_copy(emu, host, (const int64_t[]){1}, block, (const int64_t[]){1}, 1,
                                (const int64_t[]){8}, 1, NULL, ERR),
                GTS_EINVAL, "dst");
    CHECK_FAILS(gts_device_copy(emu, block, (const int64_t[]){1}, host, (const int64_t[]){1}, 1,
                                (const int64_t[]){8}, 1, NULL, ERR),
                GTS_EINVAL, "src");
    gts_transfer_counts after = counts_now();
    CHECK(after.to_device == c.to_device && after.to_host == c.to_host &&
          after.within == c.within && after.fills == c.fills + 1 && after.copies == c.copies);
    CHECK(memcmp(behind + 32, "fhfhfhfh", 8) == 0);

    gts_device_free(emu, block, 64);
    c = counts_now();
    CHECK_INT_EQ(c.frees, 1);
    CHECK_INT_EQ(c.live_blocks, c0.live_blocks);
    CHECK(gts_device_emulated_host_address(block) == NULL);
    CHECK_FAILS(gts_device_copy_to_host(emu, host, block, 8, NULL, ERR), GTS_EINVAL,
                "not memory of the emulated device");
}

/* ---- buffers on a device -------------------------------------------------------------------- */

static void release_count(void *ctx)
{
    ++*(int *)ctx;
}

static void test_buffers(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    int64_t start = live_buffers();
    gts_buffer *b;
    if (CHECK_OK(gts_buffer_alloc(gts_device_host(), 100, 0, &b, ERR))) {
        CHECK(gts_buffer_device(b) == gts_device_host());
        CHECK(gts_buffer_host(b) != NULL && gts_buffer_host(b) == gts_buffer_data(b));
        gts_buffer_release(b);
    }
    if (CHECK_OK(gts_buffer_alloc_host(100, 0, &b, ERR))) {
        CHECK(gts_buffer_device(b) == gts_device_host());
        gts_buffer_release(b);
    }
    gts_transfer_counts c0 = counts_now();
    if (CHECK_OK(gts_buffer_alloc(emu, 100, GTS_ALLOC_ZERO, &b, ERR))) {
        CHECK(gts_buffer_device(b) == emu);
        CHECK(gts_buffer_host(b) == NULL); /* device memory is no host memory */
        CHECK(gts_buffer_data(b) != NULL && gts_buffer_size(b) == 100);
        CHECK(gts_buffer_owns_memory(b));
        CHECK_INT_EQ(live_buffers(), start + 1);
        CHECK_INT_EQ(counts_now().live_blocks, c0.live_blocks + 1);
        gts_buffer_retain(b);
        gts_buffer_release(b);
        CHECK_INT_EQ(counts_now().live_blocks, c0.live_blocks + 1);
        gts_buffer_release(b);
    }
    CHECK_INT_EQ(counts_now().live_blocks, c0.live_blocks);
    CHECK_FAILS(gts_buffer_alloc(NULL, 100, 0, &b, ERR), GTS_EINVAL, "device");
    CHECK_FAILS(gts_buffer_alloc(emu, -1, 0, &b, ERR), GTS_EINVAL, "size");
    /* wrapping device memory somebody else owns */
    void *block;
    int releases = 0;
    if (CHECK_OK(gts_device_alloc(emu, 32, 0, &block, ERR))) {
        if (CHECK_OK(gts_buffer_wrap(emu, block, 32, release_count, &releases, &b, ERR))) {
            CHECK(gts_buffer_device(b) == emu && gts_buffer_host(b) == NULL);
            CHECK(gts_buffer_data(b) == block && !gts_buffer_owns_memory(b));
            gts_buffer_release(b);
        }
        CHECK_INT_EQ(releases, 1);
        gts_device_free(emu, block, 32);
    }
    CHECK_FAILS(gts_buffer_wrap(NULL, block, 32, NULL, NULL, &b, ERR), GTS_EINVAL, "device");
    CHECK_INT_EQ(live_buffers(), start);
}

/* ---- storages across devices ----------------------------------------------------------------- */

static void fill_iota(const gts_storage *s)
{
    int64_t n = gts_storage_size(s), index[GTS_MAX_NDIM] = {0};
    for (int64_t k = 0; k < n; ++k) {
        double v = (double)k;
        memcpy((void *)address(s, index), &v, sizeof v);
        for (int d = s->ndim - 1; d >= 0 && ++index[d] == s->shape[d]; --d)
            index[d] = 0;
    }
}

static bool same_values(const gts_storage *a, const gts_storage *b)
{
    int64_t n = gts_storage_size(a), index[GTS_MAX_NDIM] = {0};
    for (int64_t k = 0; k < n; ++k) {
        if (get(a, index) != get(b, index))
            return false;
        for (int d = a->ndim - 1; d >= 0 && ++index[d] == a->shape[d]; --d)
            index[d] = 0;
    }
    return true;
}

static void test_storages(void)
{
    const gts_device_ops *emu = gts_device_emulated(), *host = gts_device_host();
    const int64_t shape[3] = {6, 5, 4};
    gts_storage_spec spec;
    gts_storage h, e, e2, v, c;
    if (!CHECK_OK(gts_storage_spec_init(&spec, 3, shape, F8, ERR)))
        return;
    if (!CHECK_OK(gts_storage_create_on(host, &spec, 0, &h, ERR)))
        return;
    if (!CHECK_OK(gts_storage_create_on(emu, &spec, GTS_ALLOC_ZERO, &e, ERR))) {
        gts_storage_release(&h);
        return;
    }
    fill_iota(&h);
    CHECK(gts_buffer_device(e.buffer) == emu);
    CHECK(gts_storage_data(&e) == NULL); /* no host address for device memory */
    CHECK(gts_storage_data(&h) != NULL);

    /* host -> device, both contiguous: one transfer, no kernel */
    gts_device_emulated_reset_counts();
    CHECK_OK(gts_storage_assign(&e, &h, ERR));
    gts_transfer_counts c1 = counts_now();
    CHECK(c1.to_device == 1 && c1.to_device_bytes == 6 * 5 * 4 * 8 && c1.to_host == 0);
    CHECK(c1.copies == 0 && c1.allocs == 0);
    CHECK(same_values(&e, &h));

    /* device -> host of a strided view: gathered on the device, one transfer */
    gts_storage_view(&e, &v);
    CHECK_OK(gts_storage_slice(&v, 0, 5, -2, 3, ERR));
    CHECK_OK(gts_storage_transpose(&v, NULL, ERR));
    gts_storage hv;
    gts_storage_spec vspec;
    if (CHECK_OK(gts_storage_spec_init(&vspec, 3, v.shape, F8, ERR)) &&
        CHECK_OK(gts_storage_create_on(NULL, &vspec, 0, &hv, ERR))) {
        gts_device_emulated_reset_counts();
        CHECK_OK(gts_storage_assign(&hv, &v, ERR));
        c1 = counts_now();
        CHECK(c1.to_host == 1 && c1.to_host_bytes == 3 * 5 * 4 * 8 && c1.to_device == 0);
        CHECK(c1.copies == 1 && c1.allocs == 1 && c1.frees == 1);
        CHECK(same_values(&hv, &v));
        /* host -> a strided device view: one transfer, scattered on the device */
        gts_storage_fill(&hv, (gts_scalar){GTS_SCALAR_FLOAT, {.f = -1}}, ERR);
        gts_device_emulated_reset_counts();
        CHECK_OK(gts_storage_assign(&v, &hv, ERR));
        c1 = counts_now();
        CHECK(c1.to_device == 1 && c1.to_host == 0 && c1.copies == 1);
        CHECK(get(&e, (const int64_t[]){5, 0, 0}) == -1 && get(&e, (const int64_t[]){4, 0, 0}) == 80);
        gts_storage_release(&hv);
    }

    /* device -> device: the device's own copy, no transfer */
    if (CHECK_OK(gts_storage_create_on(emu, &spec, 0, &e2, ERR))) {
        gts_device_emulated_reset_counts();
        CHECK_OK(gts_storage_assign(&e2, &e, ERR));
        c1 = counts_now();
        CHECK(c1.to_device == 0 && c1.to_host == 0 && c1.copies == 1);
        CHECK(same_values(&e2, &e));
        gts_storage_release(&e2);
    }

    /* copy stays on the device of its source */
    if (CHECK_OK(gts_storage_copy(&v, &c, ERR))) {
        CHECK(gts_buffer_device(c.buffer) == emu);
        CHECK(same_values(&c, &v));
        gts_storage_release(&c);
    }
    /* fill runs on the device; a value the dtype cannot hold writes nothing */
    gts_device_emulated_reset_counts();
    CHECK_OK(gts_storage_fill(&v, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 2.5}}, ERR));
    CHECK(counts_now().fills == 1 && counts_now().to_device == 0);
    CHECK(get(&e, (const int64_t[]){5, 4, 3}) == 2.5 && get(&e, (const int64_t[]){4, 4, 3}) != 2.5);
    v.readonly = true;
    CHECK_FAILS(gts_storage_fill(&v, (gts_scalar){GTS_SCALAR_FLOAT, {.f = 0}}, ERR),
                GTS_EREADONLY, "read-only");
    CHECK_FAILS(gts_storage_assign(&v, &h, ERR), GTS_EREADONLY, "read-only");
    gts_storage_release(&v);

    /* the aligned point is aligned on the device */
    gts_preset gpu;
    if (CHECK_OK(gts_preset_lookup("gt:gpu", &gpu, ERR))) {
        spec.preset = &gpu;
        spec.halo[0] = (gts_halo){3, 3};
        if (CHECK_OK(gts_storage_create_on(emu, &spec, 0, &c, ERR))) {
            uintptr_t device_address = (uintptr_t)gts_buffer_data(c.buffer) + (uintptr_t)c.offset +
                                       (uintptr_t)(c.aligned_index[0] * c.strides[0]);
            CHECK_INT_EQ(c.alignment_size, 256);
            CHECK_INT_EQ(device_address % 256, 0);
            CHECK_INT_EQ(address(&c, c.aligned_index) % 256, 0);
            gts_storage_release(&c);
        }
        /* the GPU kind without a device that plays the GPU: the reason */
        const gts_device_ops *machine_gpu;
        gts_error why;
        int no_gpu = gts_device_gpu(&machine_gpu, &why);
        if (no_gpu)
            CHECK_FAILS(gts_storage_create(&spec, 0, &c, ERR), no_gpu, "device");
        gts_preset_release(&gpu);
    }

    /* DLPack names the device, and an import views that device's memory */
    gts_dl_managed_versioned *t;
    if (CHECK_OK(gts_storage_to_dlpack(&e, 0, &t, ERR))) {
        CHECK(t->dl_tensor.device.device_type == GTS_DL_EXT_DEV &&
              t->dl_tensor.device.device_id == 0);
        CHECK((char *)t->dl_tensor.data == (char *)gts_buffer_data(e.buffer) + e.offset);
        if (CHECK_OK(gts_storage_from_dlpack(t, NULL, &c, ERR))) { /* owns t now */
            CHECK(gts_buffer_device(c.buffer) == emu && gts_storage_data(&c) == NULL);
            CHECK((char *)gts_buffer_data(c.buffer) + c.offset ==
                  (char *)gts_buffer_data(e.buffer) + e.offset);
            CHECK(ints_eq(e.ndim, c.strides, e.strides));
            gts_storage_release(&c);
        } else {
            t->deleter(t);
        }
    }
    /* a device this machine lacks */
    if (CHECK_OK(gts_storage_to_dlpack(&e, 0, &t, ERR))) {
        t->dl_tensor.device = (gts_dl_device){GTS_DL_ROCM, 3};
        CHECK_FAILS(gts_storage_from_dlpack(t, NULL, &c, ERR), GTS_ENOTSUP, "device");
        t->deleter(t);
    }
    if (CHECK_OK(gts_storage_to_dlpack(&h, 0, &t, ERR))) {
        CHECK(t->dl_tensor.device.device_type == GTS_DL_CPU);
        t->deleter(t);
    }
    gts_storage_release(&e);
    gts_storage_release(&h);
}

/* ---- the caches of device and pinned memory -------------------------------------- */

static gts_memory_stats mem_now(void)
{
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return s;
}

/* The byte at `offset` of an emulated block, read by the device. */
static unsigned char device_byte(const char *block, int64_t offset)
{
    unsigned char byte = 0;
    CHECK_OK(gts_device_copy_to_host(gts_device_emulated(), &byte, block + offset, 1, NULL, ERR));
    return byte;
}

static void test_device_cache(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    gts_memory_stats s0 = mem_now(), s;
    CHECK(s0.device_cached_blocks == 0 && s0.device_cached_bytes == 0);
    char *a, *b, *c, byte;
    if (!CHECK_OK(gts_device_alloc(emu, 1000, 0, (void **)&a, ERR)))
        return;
    gts_device_free(emu, a, 1000);
    s = mem_now();
    CHECK(s.device_cached_blocks == 1 && s.device_cached_bytes == 1000);
    CHECK_INT_EQ(s.device_cache_misses, s0.device_cache_misses + 1);
    CHECK_INT_EQ(counts_now().live_blocks, 0); /* cached is not live ... */
    CHECK_FAILS(gts_device_copy_to_host(emu, &byte, a, 1, NULL, ERR), GTS_EINVAL,
                "not memory of the emulated device"); /* ... nor reachable */
    /* reused for its own size only, zeroed on request, else garbage again */
    CHECK_OK(gts_device_alloc(emu, 999, 0, (void **)&c, ERR));
    CHECK(c != a);
    CHECK_OK(gts_device_alloc(emu, 1000, GTS_ALLOC_ZERO, (void **)&b, ERR));
    CHECK(b == a);
    CHECK(device_byte(b, 0) == 0 && device_byte(b, 999) == 0);
    CHECK_INT_EQ(mem_now().device_cache_hits, s0.device_cache_hits + 1);
    gts_device_free(emu, b, 1000);
    CHECK_OK(gts_device_alloc(emu, 1000, 0, (void **)&b, ERR));
    CHECK(b == a && device_byte(b, 500) == 0xcd);
    gts_device_free(emu, b, 1000);
    gts_device_free(emu, c, 999);
    CHECK_INT_EQ(mem_now().device_cached_blocks, 2);
    gts_cache_clear();
    s = mem_now();
    CHECK(s.device_cached_blocks == 0 && s.device_cached_bytes == 0);

    /* the limit: the oldest blocks go first; lowering it evicts; 0 caches nothing */
    char *x[3];
    gts_cache_set_limit(2500);
    for (int i = 0; i < 3; ++i)
        CHECK_OK(gts_device_alloc(emu, 1000, 0, (void **)&x[i], ERR));
    for (int i = 0; i < 3; ++i)
        gts_device_free(emu, x[i], 1000);
    s = mem_now();
    CHECK(s.device_cached_blocks == 2 && s.device_cached_bytes == 2000);
    CHECK_OK(gts_device_alloc(emu, 1000, 0, (void **)&a, ERR));
    CHECK(a == x[2]); /* the newest */
    gts_cache_set_limit(999);
    CHECK_INT_EQ(mem_now().device_cached_blocks, 0);
    gts_device_free(emu, a, 1000); /* larger than the limit */
    CHECK_INT_EQ(mem_now().device_cached_blocks, 0);
    gts_cache_set_limit(0);
    CHECK_OK(gts_device_alloc(emu, 10, 0, (void **)&a, ERR));
    gts_device_free(emu, a, 10);
    CHECK(mem_now().device_cached_blocks == 0 && mem_now().device_cached_bytes == 0);
    gts_cache_set_limit((int64_t)1 << 30);
    /* more blocks than slots: the oldest go */
    char *many[70];
    for (int i = 0; i < 70; ++i)
        CHECK_OK(gts_device_alloc(emu, 8, 0, (void **)&many[i], ERR));
    for (int i = 0; i < 70; ++i)
        gts_device_free(emu, many[i], 8);
    CHECK_INT_EQ(mem_now().device_cached_blocks, 64);
    gts_cache_clear();
    CHECK_INT_EQ(counts_now().live_blocks, 0);
}

static void test_pinned_cache(void)
{
    const gts_device_ops *emu = gts_device_emulated(), *pinned;
    if (!CHECK_OK(gts_device_pinned(emu, &pinned, ERR)))
        return;
    gts_memory_stats s0 = mem_now(), s;
    char *a, *b;
    if (!CHECK_OK(gts_device_alloc(pinned, 100000, 0, (void **)&a, ERR)))
        return;
    gts_device_free(pinned, a, 100000);
    s = mem_now();
    CHECK_INT_EQ(s.pinned_cached_blocks, 1);
    /* a size class: at most 1/8 more, whole pages */
    CHECK(s.pinned_cached_bytes >= 100000 && s.pinned_cached_bytes <= 100000 + 12500 + 4096);
    CHECK_INT_EQ(s.pinned_cache_misses, s0.pinned_cache_misses + 1);
    CHECK(s.device_cached_blocks == 0); /* reported apart */
    if (CHECK_OK(gts_device_alloc(pinned, 100100, GTS_ALLOC_ZERO, (void **)&b, ERR))) {
        CHECK(b == a); /* the same class */
        CHECK(b[0] == 0 && b[100099] == 0);
        memset(b, 1, 100100);
        gts_device_free(pinned, b, 100100);
    }
    CHECK_INT_EQ(mem_now().pinned_cache_hits, s0.pinned_cache_hits + 1);
    gts_cache_clear();
    CHECK(mem_now().pinned_cached_blocks == 0 && mem_now().pinned_cached_bytes == 0);

    /* mirrored buffers: a pinned host side, unless turned off */
    CHECK(gts_pinned_host_sides());
    for (int pin = 1; pin >= 0; --pin) {
        gts_set_pinned_host_sides(pin);
        CHECK(gts_pinned_host_sides() == (bool)pin);
        gts_pinned_counts p0, p;
        gts_device_emulated_pinned_counts(&p0);
        gts_buffer *m;
        if (!CHECK_OK(gts_buffer_alloc(emu, 5000, GTS_ALLOC_MIRRORED | GTS_ALLOC_ZERO, &m, ERR)))
            continue;
        gts_device_emulated_pinned_counts(&p);
        CHECK_INT_EQ(p.live_blocks, p0.live_blocks + pin);
        CHECK_INT_EQ(p.live_bytes, p0.live_bytes + 5000 * pin);
        char *host = gts_buffer_host(m);
        CHECK(host != NULL && host[4999] == 0);
        memset(host, 7, 5000);
        CHECK_OK(gts_buffer_set_sync_state(m, GTS_SYNC_HOST_DIRTY, ERR));
        CHECK_OK(gts_buffer_sync(m, GTS_SIDE_DEVICE, false, NULL, ERR));
        CHECK(device_byte(gts_buffer_data(m), 4999) == 7);
        gts_buffer_release(m);
        gts_device_emulated_pinned_counts(&p);
        CHECK_INT_EQ(p.live_blocks, p0.live_blocks);
    }
    gts_set_pinned_host_sides(true);
    /* a host side made, released and made again is pinned once */
    gts_cache_clear();
    s0 = mem_now();
    for (int i = 0; i < 3; ++i) {
        gts_buffer *m;
        if (CHECK_OK(gts_buffer_alloc(emu, 3 << 20, GTS_ALLOC_MIRRORED, &m, ERR)))
            gts_buffer_release(m);
    }
    s = mem_now();
    CHECK_INT_EQ(s.pinned_cache_misses, s0.pinned_cache_misses + 1);
    CHECK_INT_EQ(s.pinned_cache_hits, s0.pinned_cache_hits + 2);
    CHECK_INT_EQ(s.device_cache_hits, s0.device_cache_hits + 2);
    gts_cache_clear();
}

/* gts_device_gpu_named: the names the registry gives, read in one place. */
static void test_gpu_named(void)
{
    const gts_device_ops *dev = NULL, *want = NULL;
    if (CHECK_OK(gts_device_gpu_named("emulated", &dev, ERR)))
        CHECK(dev == gts_device_emulated());
    const char *bad[] = {"tpu", "cpu", "cuda:", "cuda:x", "cuda:1x", "cuda:-1", "Cuda",
                         "cuda:99999999999999999999", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
        CHECK_FAILS(gts_device_gpu_named(bad[i], &dev, ERR), GTS_EINVAL,
                    "expected 'emulated', 'cuda' or 'cuda:N'");
    CHECK_FAILS(gts_device_gpu_named(NULL, &dev, ERR), GTS_EINVAL, "name: NULL");
    CHECK_FAILS(gts_device_gpu_named("cuda", NULL, ERR), GTS_EINVAL, "out: NULL");
    /* "cuda" and "cuda:N" are CUDA's devices, with gts_device_get's answer */
    const char *cuda[] = {"cuda", "cuda:0", "cuda:1"};
    for (int i = 0; i < 3; ++i) {
        gts_device_id id = {GTS_DL_CUDA, i == 2 ? 1 : 0};
        gts_error got, expected;
        int rc = gts_device_gpu_named(cuda[i], &dev, &got);
        CHECK_INT_EQ(rc, gts_device_get(id, &want, &expected));
        if (rc == GTS_OK)
            CHECK(dev == want && gts_device_id_equal(dev->id, id));
        else
            CHECK_STR_EQ(got.message, expected.message);
    }
}

int main(void)
{
    int64_t start = live_buffers();
    test_registry();
    test_gpu_named();
    test_contract(gts_device_host());
    test_contract(gts_device_emulated());
    const gts_device_ops *managed;
    if (CHECK_OK(gts_device_managed(gts_device_emulated(), &managed, ERR)))
        test_contract(managed);
    const gts_device_ops *pinned;
    if (CHECK_OK(gts_device_pinned(gts_device_emulated(), &pinned, ERR)))
        test_contract(pinned);
    test_bad_input(gts_device_host());
    test_bad_input(gts_device_emulated());
    test_streams();
    test_emulated();
    test_buffers();
    test_storages();
    int64_t limit = gts_cache_limit();
    gts_cache_set_limit((int64_t)1 << 30);
    gts_cache_clear();
    test_device_cache();
    test_pinned_cache();
    gts_cache_set_limit(limit);
    CHECK_INT_EQ(counts_now().live_blocks, 0);
    CHECK_INT_EQ(live_buffers(), start);
    return check_summary("device");
}
