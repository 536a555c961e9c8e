/* The contract of every device (gtstore/device.h), as tests: the operations
 * and the checks of the entry points, run by test_device.c on the built-in
 * devices and by test_device_cuda.c on the CUDA devices. Include after
 * check.h. */
#ifndef GTSTORE_TESTS_DEVICE_CONTRACT_H
#define GTSTORE_TESTS_DEVICE_CONTRACT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/buffer.h"
#include "gtstore/device.h"
#include "gtstore/kernels.h"

/* ---- the contract of every device ------------------------------------------------ */

/* Bytes of device memory, read back to the host. */
static bool read_back(const gts_device_ops *dev, const void *block, int64_t size,
                      unsigned char *out)
{
    return CHECK_OK(gts_device_copy_to_host(dev, out, block, size, NULL, ERR));
}

/* Events (gtstore/device.h): a device without them has a trivial event;
 * with streams, work on one stream ordered after another's by an event
 * gives the values in order. */
static void test_event_contract(const gts_device_ops *dev)
{
    gts_event e = NULL;
    bool done = false;
    CHECK_FAILS(gts_device_event_create(NULL, &e, ERR), GTS_EINVAL, "device");
    CHECK_FAILS(gts_device_event_create(dev, NULL, ERR), GTS_EINVAL, "out");
    if (!CHECK_OK(gts_device_event_create(dev, &e, ERR)))
        return;
    CHECK(e != NULL);
    /* never recorded, or recorded on the default stream: complete */
    CHECK_OK(gts_device_event_query(dev, e, &done, ERR));
    CHECK(done);
    CHECK_OK(gts_device_event_record(dev, e, NULL, ERR));
    CHECK_OK(gts_device_event_synchronize(dev, e, ERR));
    CHECK_OK(gts_device_event_wait(dev, NULL, e, ERR));
    CHECK_FAILS(gts_device_event_record(dev, NULL, NULL, ERR), GTS_EINVAL, "event: NULL");
    CHECK_FAILS(gts_device_event_wait(dev, NULL, NULL, ERR), GTS_EINVAL, "event: NULL");
    CHECK_FAILS(gts_device_event_synchronize(NULL, e, ERR), GTS_EINVAL, "device");
    CHECK_FAILS(gts_device_event_query(dev, e, NULL, ERR), GTS_EINVAL, "done");
    gts_stream s1 = NULL, s2 = NULL;
    if (!dev->stream_create) {
        uintptr_t fake = 64;
        CHECK_FAILS(gts_device_event_record(dev, e, (gts_stream)fake, ERR), GTS_EINVAL,
                    "default stream only");
    } else if (CHECK_OK(gts_device_stream_create(dev, &s1, ERR)) &&
               CHECK_OK(gts_device_stream_create(dev, &s2, ERR))) {
        enum { N = 1 << 16 };
        unsigned char *host = malloc(N), *back = malloc(N);
        char *a = NULL, *b = NULL;
        if (CHECK(host && back) && CHECK_OK(gts_device_alloc(dev, N, 0, (void **)&a, ERR)) &&
            CHECK_OK(gts_device_alloc(dev, N, 0, (void **)&b, ERR))) {
            bool in_order = true;
            for (int round = 0; round < 20; ++round) {
                memset(host, round + 1, N);
                /* s1 writes a, s2 copies a to b after waiting, the host
                   reads b back after waiting for s2 */
                CHECK_OK(gts_device_copy_to_device(dev, a, host, N, s1, ERR));
                CHECK_OK(gts_device_event_record(dev, e, s1, ERR));
                CHECK_OK(gts_device_event_wait(dev, s2, e, ERR));
                CHECK_OK(gts_device_copy_within(dev, b, a, N, s2, ERR));
                CHECK_OK(gts_device_event_record(dev, e, s2, ERR));
                CHECK_OK(gts_device_event_synchronize(dev, e, ERR));
                CHECK_OK(gts_device_event_query(dev, e, &done, ERR));
                CHECK(done);
                CHECK_OK(gts_device_copy_to_host(dev, back, b, N, NULL, ERR));
                in_order = in_order && back[0] == round + 1 && back[N - 1] == round + 1;
            }
            CHECK(in_order);
        }
        CHECK_OK(gts_device_synchronize(dev, NULL, ERR));
        gts_device_free(dev, a, N);
        gts_device_free(dev, b, N);
        free(host);
        free(back);
    }
    gts_device_stream_destroy(dev, s1);
    gts_device_stream_destroy(dev, s2);
    gts_device_event_destroy(dev, e);
    gts_device_event_destroy(dev, NULL); /* ignored */
}

static void test_contract(const gts_device_ops *dev)
{
    test_event_contract(dev);
    enum { N = 4096 };
    unsigned char *host = malloc(N), *back = malloc(N), *expected = malloc(N);
    char *a = NULL, *b = NULL;
    if (!CHECK(host && back && expected) || !CHECK_OK(gts_device_alloc(dev, N, GTS_ALLOC_ZERO,
                                                                    (void **)&a, ERR)))
        goto done;
    CHECK((uintptr_t)a % 64 == 0);
    /* GTS_ALLOC_ZERO reads as zeros */
    memset(back, 1, N);
    read_back(dev, a, N, back);
    bool zero = true;
    for (int i = 0; i < N; ++i)
        zero = zero && back[i] == 0;
    CHECK(zero);
    /* a round trip, and part of a block at an offset */
    for (int i = 0; i < N; ++i)
        host[i] = (unsigned char)(i * 7 + 3);
    CHECK_OK(gts_device_copy_to_device(dev, a, host, N, NULL, ERR));
    read_back(dev, a, N, back);
    CHECK(memcmp(back, host, N) == 0);
    CHECK_OK(gts_device_copy_to_host(dev, back, a + 100, 50, NULL, ERR));
    CHECK(memcmp(back, host + 100, 50) == 0);
    /* within the device, overlapping as memmove */
    CHECK_OK(gts_device_copy_within(dev, a + 1, a, N - 1, NULL, ERR));
    memcpy(expected, host, N);
    memmove(expected + 1, expected, N - 1);
    read_back(dev, a, N, back);
    CHECK(memcmp(back, expected, N) == 0);
    /* between two blocks */
    if (CHECK_OK(gts_device_alloc(dev, N, 0, (void **)&b, ERR))) {
        CHECK(b != a);
        CHECK_OK(gts_device_copy_within(dev, b, a, N, NULL, ERR));
        read_back(dev, b, N, back);
        CHECK(memcmp(back, expected, N) == 0);
    }
    /* strided fill and copy: the host kernels' results, on a 16 x 16 grid of
     * 8-byte items, the copy transposing */
    const int64_t shape[2] = {16, 16}, c_order[2] = {128, 8}, f_order[2] = {8, 128};
    const uint64_t item = 0x0102030405060708u;
    CHECK_OK(gts_device_fill(dev, a, 2, shape, c_order, 8, &item, NULL, ERR));
    CHECK_OK(gts_fill(expected, 2, shape, c_order, 8, &item, ERR));
    read_back(dev, a, 2048, back);
    CHECK(memcmp(back, expected, 2048) == 0);
    CHECK_OK(gts_device_copy_to_device(dev, a, host, 2048, NULL, ERR));
    CHECK_OK(gts_device_copy(dev, b, f_order, a, c_order, 2, shape, 8, NULL, ERR));
    CHECK_OK(gts_copy(expected, f_order, host, c_order, 2, shape, 8, ERR));
    read_back(dev, b, 2048, back);
    CHECK(memcmp(back, expected, 2048) == 0);
    /* the kernels' own checks hold on the device */
    CHECK_FAILS(gts_device_fill(dev, a, 2, shape, c_order, 3, &item, NULL, ERR), GTS_EINVAL,
                "itemsize: 3");
    CHECK_FAILS(gts_device_copy(dev, b, (const int64_t[]){0, 8}, a, c_order, 2, shape, 8, NULL,
                                ERR),
                GTS_EINVAL, "dst_strides");
    CHECK_FAILS(gts_device_fill(dev, a, 2, (const int64_t[]){2, -1}, c_order, 8, &item, NULL,
                                ERR),
                GTS_EINVAL, "shape");
    CHECK_FAILS(gts_device_fill(dev, a, 2, shape, NULL, 8, &item, NULL, ERR), GTS_EINVAL,
                "strides");
    CHECK_FAILS(gts_device_fill(dev, a, 2, shape, c_order, 8, NULL, NULL, ERR), GTS_EINVAL,
                "item");
    CHECK_OK(gts_device_fill(dev, NULL, 2, (const int64_t[]){0, 4}, c_order, 8, &item, NULL, ERR));
    CHECK_OK(gts_device_synchronize(dev, NULL, ERR));
    /* empty transfers and empty blocks */
    CHECK_OK(gts_device_copy_to_device(dev, NULL, NULL, 0, NULL, ERR));
    void *empty = NULL;
    if (CHECK_OK(gts_device_alloc(dev, 0, 0, &empty, ERR))) {
        CHECK(empty != NULL);
        CHECK_OK(gts_device_copy_to_host(dev, back, empty, 0, NULL, ERR));
        gts_device_free(dev, empty, 0);
    }
    /* a block of the host's large size class */
    char *large;
    int64_t large_size = GTS_LARGE_BLOCK + 12345;
    if (CHECK_OK(gts_device_alloc(dev, large_size, GTS_ALLOC_ZERO, (void **)&large, ERR))) {
        CHECK_OK(gts_device_copy_to_device(dev, large + large_size - N, host, N, NULL, ERR));
        read_back(dev, large + large_size - N, N, back);
        CHECK(memcmp(back, host, N) == 0);
        CHECK_OK(gts_device_copy_to_host(dev, back, large, N, NULL, ERR));
        CHECK(back[0] == 0 && back[N - 1] == 0);
        gts_device_free(dev, large, large_size);
    }
done:
    gts_device_free(dev, a, N);
    gts_device_free(dev, b, N);
    free(host);
    free(back);
    free(expected);
}

/* ---- bad input to the checked entry points ----------------------------------------- */

static void test_bad_input(const gts_device_ops *dev)
{
    char host[16] = {0};
    void *block = NULL;
    CHECK_FAILS(gts_device_alloc(NULL, 8, 0, &block, ERR), GTS_EINVAL, "device: NULL");
    CHECK_FAILS(gts_device_alloc(dev, -8, 0, &block, ERR), GTS_EINVAL, "size: -8");
    CHECK_FAILS(gts_device_alloc(dev, 8, 6, &block, ERR), GTS_EINVAL, "flags: 0x6");
    CHECK_FAILS(gts_device_alloc(dev, 8, 0, NULL, ERR), GTS_EINVAL, "out");
    CHECK_FAILS(gts_device_alloc(dev, INT64_MAX, 0, &block, ERR), GTS_EOVERFLOW, "size");
    CHECK(block == NULL);
    if (!CHECK_OK(gts_device_alloc(dev, 16, 0, &block, ERR)))
        return;
    CHECK_FAILS(gts_device_copy_to_device(dev, block, host, -1, NULL, ERR), GTS_EINVAL,
                "bytes: -1");
    CHECK_FAILS(gts_device_copy_to_device(dev, NULL, host, 4, NULL, ERR), GTS_EINVAL, "dst: NULL");
    CHECK_FAILS(gts_device_copy_to_host(dev, host, NULL, 4, NULL, ERR), GTS_EINVAL, "src: NULL");
    CHECK_FAILS(gts_device_copy_within(NULL, block, block, 4, NULL, ERR), GTS_EINVAL, "device");
    CHECK_FAILS(gts_device_synchronize(NULL, NULL, ERR), GTS_EINVAL, "device");
    CHECK_FAILS(gts_device_fill(NULL, block, 0, NULL, NULL, 1, host, NULL, ERR), GTS_EINVAL,
                "device");
    CHECK_FAILS(gts_device_copy(NULL, block, NULL, block, NULL, 0, NULL, 1, NULL, ERR),
                GTS_EINVAL, "device");
    CHECK_FAILS(gts_device_stream_create(dev, NULL, ERR), GTS_EINVAL, "out");
    gts_device_free(dev, NULL, 0); /* ignored */
    gts_device_free(NULL, block, 16);
    gts_device_stream_destroy(dev, NULL);
    gts_device_free(dev, block, 16);
}

#endif
