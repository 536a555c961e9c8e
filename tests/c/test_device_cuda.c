/* The CUDA devices (src/device_cuda.c), one scenario per process because
 * the driver is loaded once per process: `test_device_cuda SCENARIO
 * [LIBRARY]`. Each scenario sets GTSTORE_LIBCUDA (and FAKE_CUDA) itself
 * before the first device call, so that the results do not depend on the
 * environment the tests run in.
 *
 *   system        the machine's own driver (libcuda.so.1): on a machine with
 *                 an NVIDIA GPU the whole device contract runs on it, else
 *                 the error is checked and the GPU part prints "skipped:".
 *   missing       a driver library that does not exist.
 *   toolkit-stub  the CUDA toolkit's stub libcuda.so, where installed
 *                 (CUDA_ERROR_STUB_LIBRARY); "skipped:" elsewhere.
 *   fake*         LIBRARY is the fake driver of fake_cuda.c, a test double
 *                 with host memory behind device addresses that fault when
 *                 dereferenced: the whole contract of the CUDA devices on
 *                 any machine, and the loader's errors (a stub, no device,
 *                 cuInit failing, a missing entry point (either way a
 *                 driver may say so), no
 *                 cuGetProcAddress, the pre-12.5 cuGetProcAddress, a driver
 *                 newer or older than the ABI asked for).
 *   fake-pools    the caches of device and pinned memory on the fake driver:
 *                 GPU 0's stream-ordered pool (reuse, trimming to the
 *                 limit, release, running out of memory), GPU 1 without
 *                 pools (blocks reused only after their event), pinned
 *                 blocks (registered once, reused), and pinned host sides
 *                 (pinned copies; pageable where pinning is off or fails).
 *                 On a GPU, `system` runs the parts that need no fake. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "device_contract.h"
#include "fake_cuda.h"

#define BUILT_IN 4 /* host, emulated, emulated managed, emulated pinned */
#include "random.h"
#include "gtstore/buffer.h"
#include "gtstore/copy_batch.h"
#include "gtstore/device.h"
#include "gtstore/halo_messages.h"
#include "gtstore/kernels.h"
#include "gtstore/sync.h"
#include "storage_helpers.h"

static fake_cuda_stats_fn fake_stats; /* NULL unless the fake driver runs */

static fake_cuda_stats stats_now(void)
{
    fake_cuda_stats s;
    memset(&s, 0, sizeof s);
    if (fake_stats)
        fake_stats(&s);
    return s;
}

/* ---- CUDA absent: clear errors, the rest of the library unaffected ---------------------- */

static void check_absent(int code, const char *cause)
{
    int count = -1;
    const gts_device_ops *dev = NULL;
    if (!CHECK_FAILS(gts_device_cuda_status(&count, NULL, ERR), code, cause))
        return;
    printf("CUDA is absent, as expected: %s\n", check_error.message);
    CHECK_INT_EQ(count, 0);
    char first[GTS_ERROR_MESSAGE_SIZE];
    memcpy(first, check_error.message, sizeof first);
    /* once per process: the same answer again */
    CHECK_FAILS(gts_device_cuda_status(NULL, NULL, ERR), code, cause);
    CHECK_STR_EQ(check_error.message, first);
    const gts_device_id ids[] = {{GTS_DL_CUDA, 0}, {GTS_DL_CUDA_HOST, 0}, {GTS_DL_CUDA_MANAGED, 0},
                                 {GTS_DL_CUDA, 7}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; ++i) {
        char pair[32];
        snprintf(pair, sizeof pair, "(%d, %d)", (int)ids[i].type, (int)ids[i].id);
        CHECK_FAILS(gts_device_get(ids[i], &dev, ERR), code, pair);
        CHECK(strstr(check_error.message, cause) != NULL);
        if (i == 0)
            printf("gts_device_get: %s\n", check_error.message);
    }
    CHECK(dev == NULL);
    /* the registry and the built-in devices work as ever */
    const gts_device_ops *list[8] = {NULL};
    CHECK_INT_EQ(gts_device_list(list, 8), BUILT_IN);
    CHECK(list[0] == gts_device_host() && list[1] == gts_device_emulated() &&
          gts_device_is_managed(list[2]) && gts_device_is_pinned(list[3]) && !list[4]);
    /* CUDA's pinned memory, which the pinned memory of a CUDA GPU would be,
       fails alike */
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA_HOST, 0}, &dev, ERR), code, cause);
    if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_EXT_DEV, 0}, &dev, ERR)))
        CHECK(dev == gts_device_emulated());
    test_contract(gts_device_emulated());
}

/* ---- strided fill and copy against the host kernels ------------------------------------------ */

enum { BLOCK = 8192 };

typedef struct arena {
    const gts_device_ops *dev;
    char *device;          /* BLOCK bytes on the device */
    unsigned char *mirror; /* what they should hold */
    unsigned char *back;   /* what they hold, read back */
} arena;

/* BLOCK bytes on `dev` and two host blocks; false (nothing held) on failure. */
static bool arena_open(arena *a, const gts_device_ops *dev)
{
    *a = (arena){dev, NULL, malloc(BLOCK), malloc(BLOCK)};
    if (CHECK(a->mirror && a->back) &&
        CHECK_OK(gts_device_alloc(dev, BLOCK, 0, (void **)&a->device, ERR)))
        return true;
    free(a->mirror);
    free(a->back);
    return false;
}

static void arena_close(arena *a)
{
    gts_device_free(a->dev, a->device, BLOCK);
    free(a->mirror);
    free(a->back);
}

/* Sets device and mirror to the same random bytes. */
static void scramble(arena *a)
{
    for (int i = 0; i < BLOCK; ++i)
        a->mirror[i] = (unsigned char)xorshift64();
    CHECK_OK(gts_device_copy_to_device(a->dev, a->device, a->mirror, BLOCK, NULL, ERR));
}

static bool matches(arena *a, const char *what)
{
    if (!CHECK_OK(gts_device_copy_to_host(a->dev, a->back, a->device, BLOCK, NULL, ERR)))
        return false;
    bool same = memcmp(a->back, a->mirror, BLOCK) == 0;
    if (!same)
        fprintf(stderr, "%s on %s: the device differs from the host kernels\n", what,
                a->dev->name);
    return CHECK(same);
}

typedef struct fill_case {
    const char *what;
    int64_t offset; /* of element 0 in the block */
    int ndim;
    int64_t shape[3], strides[3];
    int64_t itemsize;
    unsigned char item[16];
    int path; /* the fake driver's expected path: 1, 2, 4 memset; 8 the fill kernel; 9 the
                 fill kernel on one thread (elements that overlap) */
} fill_case;

static void run_fill(arena *a, const fill_case *c, gts_stream stream)
{
    scramble(a);
    fake_cuda_stats s0 = stats_now();
    CHECK_OK(gts_device_fill(a->dev, a->device + c->offset, c->ndim, c->shape, c->strides,
                             c->itemsize, c->item, stream, ERR));
    if (stream)
        CHECK_OK(gts_device_synchronize(a->dev, stream, ERR));
    fake_cuda_stats s1 = stats_now();
    CHECK_OK(gts_fill(a->mirror + c->offset, c->ndim, c->shape, c->strides, c->itemsize, c->item,
                      ERR));
    matches(a, c->what);
    if (fake_stats && !a->dev->host_accessible) {
        long long memsets[3] = {s1.memsets[0] - s0.memsets[0], s1.memsets[1] - s0.memsets[1],
                                s1.memsets[2] - s0.memsets[2]};
        long long htod = s1.htod - s0.htod, dtoh = s1.dtoh - s0.dtoh;
        long long fills = s1.launches[1] - s0.launches[1];
        /* nothing crosses the bus: a memset or one launch of the fill kernel */
        bool ok = htod == 0 && dtoh == 0 &&
                  (c->path == 9 ? fills == 1 && s1.serial_launches - s0.serial_launches == 1
                   : c->path == 1 ? memsets[0] == 1 && fills == 0
                   : c->path == 2 ? memsets[1] == 1 && fills == 0
                   : c->path == 4 ? memsets[2] == 1 && fills == 0
                                  : fills == 1 && memsets[0] + memsets[1] + memsets[2] == 0);
        if (!ok)
            fprintf(stderr, "fill %s: memsets %lld/%lld/%lld, fill launches %lld, htod %lld, "
                    "dtoh %lld\n", c->what, memsets[0], memsets[1], memsets[2], fills, htod, dtoh);
        CHECK(ok);
        CHECK_INT_EQ(s1.pushes - s1.pops, 0);
    }
}

typedef struct copy_case {
    const char *what;
    int64_t dst_offset, src_offset;
    int ndim;
    int64_t shape[3], dst_strides[3], src_strides[3];
    int64_t itemsize;
    int path; /* fake: 1 one device copy; 2 through a temporary; 8 the copy kernel; 3 the
                 kernel from a temporary copy of the source */
} copy_case;

static void run_copy(arena *a, const copy_case *c, gts_stream stream)
{
    scramble(a);
    fake_cuda_stats s0 = stats_now();
    CHECK_OK(gts_device_copy(a->dev, a->device + c->dst_offset, c->dst_strides,
                             a->device + c->src_offset, c->src_strides, c->ndim, c->shape,
                             c->itemsize, stream, ERR));
    if (stream)
        CHECK_OK(gts_device_synchronize(a->dev, stream, ERR));
    fake_cuda_stats s1 = stats_now();
    CHECK_OK(gts_copy(a->mirror + c->dst_offset, c->dst_strides, a->mirror + c->src_offset,
                      c->src_strides, c->ndim, c->shape, c->itemsize, ERR));
    matches(a, c->what);
    if (fake_stats && !a->dev->host_accessible) {
        long long dtod = s1.dtod - s0.dtod, htod = s1.htod - s0.htod, dtoh = s1.dtoh - s0.dtoh;
        long long temps = s1.allocs[0] - s0.allocs[0];
        long long copies = s1.launches[0] - s0.launches[0];
        bool ok = htod == 0 && dtoh == 0 &&
                  (c->path == 1   ? dtod == 1 && temps == 0 && copies == 0
                   : c->path == 2 ? dtod == 2 && temps == 1 && copies == 0
                   : c->path == 3 ? dtod == 1 && temps == 1 && copies == 1
                                  : dtod == 0 && temps == 0 && copies == 1);
        if (!ok)
            fprintf(stderr, "copy %s: dtod %lld, copy launches %lld, htod %lld, dtoh %lld, "
                    "temporaries %lld\n", c->what, dtod, copies, htod, dtoh, temps);
        CHECK(ok);
        CHECK_INT_EQ(s1.pushes - s1.pops, 0);
        CHECK_INT_EQ(s1.live[0], s0.live[0]); /* temporaries freed */
    }
}

static void test_strided(const gts_device_ops *dev, gts_stream stream)
{
    arena a;
    if (!arena_open(&a, dev))
        return;
    const fill_case fills[] = {
        {"bytes, C order", 64, 2, {16, 16}, {128, 8}, 8, {0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a}, 1},
        {"2-byte pattern", 0, 1, {300}, {4}, 4, {0x34, 0x12, 0x34, 0x12}, 2},
        {"4-byte pattern, F order", 8, 2, {10, 30}, {8, 80}, 8, {1, 2, 3, 4, 1, 2, 3, 4}, 4},
        {"doubles, dense", 0, 2, {20, 40}, {320, 8}, 8, {0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, 8},
        {"negative strides, dense", 4000, 2, {8, 10}, {-40, -4}, 4, {7, 7, 7, 7}, 1},
        {"every other element", 16, 1, {400}, {16}, 8, {1, 2, 3, 4, 5, 6, 7, 8}, 8},
        {"stride 0", 100, 2, {3, 16}, {0, 8}, 8, {9, 8, 7, 6, 5, 4, 3, 2}, 8},
        {"16-byte items, 3-d transposed", 128, 3, {4, 5, 6}, {16, 64, 320}, 16,
         {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 8},
        {"2-byte items, odd address", 1, 1, {1000}, {2}, 2, {0xee, 0xff}, 8},
        {"one element, ndim 0", 40, 0, {0}, {0}, 4, {1, 2, 3, 4}, 4},
        {"overlapping elements", 8, 2, {10, 10}, {4, 40}, 8, {1, 1, 2, 2, 3, 3, 4, 4}, 9},
    };
    for (size_t i = 0; i < sizeof fills / sizeof fills[0]; ++i)
        run_fill(&a, &fills[i], stream);
    const copy_case copies[] = {
        {"one layout", 4096, 0, 2, {16, 32}, {256, 8}, {256, 8}, 8, 1},
        {"one layout, overlapping", 8, 0, 2, {16, 32}, {256, 8}, {256, 8}, 8, 2},
        {"transpose into dense", 4096, 0, 2, {16, 32}, {8, 128}, {256, 8}, 8, 8},
        {"into every other element", 0, 6000, 1, {200}, {16}, {4}, 4, 8},
        {"transpose, overlapping", 512, 0, 2, {32, 32}, {4, 128}, {128, 4}, 4, 3},
        {"negative source strides", 4096, 2048, 2, {16, 16}, {128, 8}, {-128, -8}, 8, 8},
        {"16-byte items", 4096, 0, 2, {8, 8}, {16, 128}, {128, 16}, 16, 8},
        {"bytes, odd offsets", 3001, 17, 3, {5, 6, 7}, {1, 5, 30}, {42, 7, 1}, 1, 8},
    };
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; ++i)
        run_copy(&a, &copies[i], stream);
    /* empty arrays touch nothing, NULL allowed */
    CHECK_OK(gts_device_fill(dev, NULL, 1, (const int64_t[]){0}, (const int64_t[]){8}, 8, "abcdefgh",
                             stream, ERR));
    CHECK_OK(gts_device_copy(dev, NULL, (const int64_t[]){8}, NULL, (const int64_t[]){8}, 1,
                             (const int64_t[]){0}, 8, stream, ERR));
    /* the kernels' refusals write nothing */
    scramble(&a);
    CHECK_FAILS(gts_device_copy(dev, a.device, (const int64_t[]){0, 8}, a.device + 4096,
                                (const int64_t[]){64, 8}, 2, (const int64_t[]){4, 8}, 8, stream,
                                ERR),
                GTS_EINVAL, "dst_strides");
    CHECK_FAILS(gts_device_fill(dev, a.device, 1, (const int64_t[]){8}, (const int64_t[]){3}, 3,
                                "abc", stream, ERR),
                GTS_EINVAL, "itemsize");
    matches(&a, "refused calls");
    arena_close(&a);
}

/* A random strided array of `itemsize` bytes within [base, base + room):
 * 1 to 4 dimensions (or, now and then, 10 of extent 2, more than a kernel
 * array holds), padded, permuted, flipped, and at any byte offset. */
typedef struct random_array {
    int ndim;
    int64_t shape[10], strides[10], offset;
} random_array;

static void random_shape(int *ndim, int64_t *shape, int64_t itemsize, int64_t room)
{
    *ndim = rnd(8) == 0 ? 10 : 1 + (int)rnd(4);
    for (int d = 0; d < *ndim; ++d)
        shape[d] = *ndim == 10 ? 2 : 1 + rnd(7);
    for (;;) { /* small enough for `room` with every dimension padded by one */
        int64_t bytes = itemsize;
        int largest = 0;
        for (int d = 0; d < *ndim; ++d) {
            bytes *= shape[d] + 1;
            largest = shape[d] > shape[largest] ? d : largest;
        }
        if (bytes <= room || shape[largest] == 1)
            return;
        --shape[largest];
    }
}

static void random_layout(random_array *a, int ndim, const int64_t *shape, int64_t itemsize,
                          int64_t room)
{
    int order[10];
    a->ndim = ndim;
    random_permutation(ndim, order);
    int64_t stride = itemsize, low = 0, high = itemsize;
    for (int k = 0; k < ndim; ++k) {
        int d = order[k];
        a->shape[d] = shape[d];
        a->strides[d] = rnd(3) == 0 ? -stride : stride;
        int64_t far = (shape[d] - 1) * a->strides[d];
        low += far < 0 ? far : 0;
        high += far > 0 ? far : 0;
        stride *= shape[d] + rnd(2); /* padding now and then */
    }
    int64_t slack = room - (high - low);
    a->offset = -low + (slack > 0 ? rnd(slack + 1) : 0);
    if (rnd(4) && a->offset % itemsize) /* mostly aligned, sometimes not */
        a->offset -= a->offset % itemsize;
}

/* Random fills and copies, each against the host kernels. */
static void test_random_strided(const gts_device_ops *dev)
{
    arena a;
    if (!arena_open(&a, dev))
        return;
    static const int64_t itemsizes[] = {1, 2, 4, 8, 16};
    for (int round = 0; round < 300; ++round) {
        int64_t itemsize = itemsizes[rnd(5)];
        int ndim;
        int64_t shape[10];
        random_shape(&ndim, shape, itemsize, BLOCK / 2);
        random_array dst, src;
        random_layout(&dst, ndim, shape, itemsize, BLOCK / 2);
        random_layout(&src, ndim, shape, itemsize, BLOCK / 2);
        src.offset += BLOCK / 2;
        scramble(&a);
        char what[64];
        snprintf(what, sizeof what, "random case %d (%d-d, itemsize %lld)", round, ndim,
                 (long long)itemsize);
        if (round % 3 == 0) {
            unsigned char item[16];
            for (int i = 0; i < 16; ++i)
                item[i] = (unsigned char)xorshift64();
            CHECK_OK(gts_device_fill(dev, a.device + dst.offset, ndim, shape, dst.strides,
                                     itemsize, item, NULL, ERR));
            CHECK_OK(gts_fill(a.mirror + dst.offset, ndim, shape, dst.strides, itemsize, item,
                              ERR));
        } else {
            CHECK_OK(gts_device_copy(dev, a.device + dst.offset, dst.strides,
                                     a.device + src.offset, src.strides, ndim, shape, itemsize,
                                     NULL, ERR));
            CHECK_OK(gts_copy(a.mirror + dst.offset, dst.strides, a.mirror + src.offset,
                              src.strides, ndim, shape, itemsize, ERR));
        }
        if (!matches(&a, what))
            break;
    }
    arena_close(&a);
}

/* A batch: random copies from one half of the block into disjoint pieces
 * of the other, run twice, against the host kernels; the fake driver runs
 * it as one launch. */
static void test_batch(const gts_device_ops *dev)
{
    arena a;
    if (!arena_open(&a, dev))
        return;
    enum { COPIES = 12, PIECE = BLOCK / 2 / COPIES };
    random_array dst[COPIES], src[COPIES];
    int64_t shapes[COPIES][10];
    gts_strided_copy copies[COPIES + 1];
    for (int i = 0; i < COPIES; ++i) {
        int64_t itemsize = 8;
        int ndim;
        do
            random_shape(&ndim, shapes[i], itemsize, PIECE);
        while (ndim == 10); /* 10 dims of 2 elements do not fit a piece */
        random_layout(&dst[i], ndim, shapes[i], itemsize, PIECE);
        dst[i].offset += i * PIECE;
        random_layout(&src[i], ndim, shapes[i], itemsize, BLOCK / 2);
        src[i].offset += BLOCK / 2;
        copies[i] = (gts_strided_copy){a.device + dst[i].offset, dst[i].strides,
                                       a.device + src[i].offset, src[i].strides, ndim, shapes[i],
                                       itemsize};
    }
    gts_copy_batch *batch = NULL;
    if (CHECK_OK(gts_copy_batch_create(dev, COPIES, copies, &batch, ERR))) {
        CHECK_INT_EQ(gts_copy_batch_count(batch), COPIES);
        for (int run = 0; run < 2; ++run) {
            scramble(&a);
            fake_cuda_stats s0 = stats_now();
            CHECK_OK(gts_copy_batch_run(batch, NULL, ERR));
            fake_cuda_stats s1 = stats_now();
            for (int i = 0; i < COPIES; ++i)
                CHECK_OK(gts_copy(a.mirror + dst[i].offset, dst[i].strides,
                                  a.mirror + src[i].offset, src[i].strides, copies[i].ndim,
                                  shapes[i], 8, ERR));
            matches(&a, "a batch of copies");
            if (fake_stats && !dev->host_accessible) {
                CHECK_INT_EQ(s1.launches[2] - s0.launches[2], 1); /* one launch for all */
                CHECK_INT_EQ(s1.launches[0] - s0.launches[0], 0);
                CHECK_INT_EQ(s1.last_grid[1], COPIES);
                CHECK_INT_EQ(s1.htod + s1.dtoh - s0.htod - s0.dtoh, 0);
            }
        }
        gts_copy_batch_destroy(batch);
    }
    /* a destination that meets a source is refused, naming both */
    copies[COPIES] = copies[0];
    copies[COPIES].dst = a.device + src[3].offset;
    copies[COPIES].dst_strides = src[3].strides;
    copies[COPIES].shape = shapes[3];
    copies[COPIES].ndim = copies[3].ndim;
    copies[COPIES].src = a.device + src[3].offset;
    copies[COPIES].src_strides = src[3].strides;
    CHECK_FAILS(gts_copy_batch_create(dev, COPIES + 1, copies, &batch, ERR), GTS_EINVAL,
                "copies[12]: writes bytes that copies[");
    /* each copy is checked as gts_device_copy checks one */
    gts_strided_copy bad = copies[1];
    bad.itemsize = 3;
    CHECK_FAILS(gts_copy_batch_create(dev, 1, &bad, &batch, ERR), GTS_EINVAL, "copies[0]: ");
    CHECK(strstr(check_error.message, "itemsize") != NULL);
    CHECK_FAILS(gts_copy_batch_create(dev, -1, copies, &batch, ERR), GTS_EINVAL, "count");
    bad = copies[1]; /* elements that share bytes: 8-byte items 4 bytes apart */
    bad.ndim = 1;
    bad.shape = (const int64_t[]){10};
    bad.dst_strides = (const int64_t[]){4};
    bad.src_strides = (const int64_t[]){8};
    CHECK_FAILS(gts_copy_batch_create(dev, 1, &bad, &batch, ERR), GTS_EINVAL,
                "copies[0]: dst_strides: the destination's elements may overlap");
    /* empty: nothing to do */
    if (CHECK_OK(gts_copy_batch_create(dev, 0, NULL, &batch, ERR))) {
        CHECK_OK(gts_copy_batch_run(batch, NULL, ERR));
        gts_copy_batch_destroy(batch);
    }
    arena_close(&a);
}

/* ---- streams ------------------------------------------------------------------------------------ */

/* Copies queued on `s`, then waited for. */
static void stream_sequence(const gts_device_ops *dev, gts_stream s)
{
    char *block;
    char text[16] = "stream-ordered!", back[16] = {0};
    if (CHECK_OK(gts_device_alloc(dev, 64, GTS_ALLOC_ZERO, (void **)&block, ERR))) {
        CHECK_OK(gts_device_copy_to_device(dev, block, text, 16, s, ERR));
        CHECK_OK(gts_device_copy_within(dev, block + 32, block, 16, s, ERR));
        CHECK_OK(gts_device_copy_to_host(dev, back, block + 32, 16, s, ERR));
        CHECK_OK(gts_device_synchronize(dev, s, ERR));
        CHECK(memcmp(back, text, 16) == 0);
        CHECK_OK(gts_device_synchronize(dev, NULL, ERR)); /* the whole device */
        gts_device_free(dev, block, 64);
    }
    test_strided(dev, s);
}

/* A stream of ours, and the legacy default stream, which is a stream like
 * the others for the GPU's memory (events recorded on it, streams waiting
 * for them) and NULL for memory the host reaches. */
static void test_streams(const gts_device_ops *dev)
{
    gts_stream s = NULL;
    if (!CHECK_OK(gts_device_stream_create(dev, &s, ERR)))
        return;
    CHECK(s != NULL);
    stream_sequence(dev, s);
    gts_stream legacy = gts_device_legacy_stream(dev);
    CHECK((legacy != NULL) == (dev->kind == GTS_MEMORY_GPU));
    if (legacy) {
        stream_sequence(dev, legacy);
        gts_event event;
        if (CHECK_OK(gts_device_event_create(dev, &event, ERR))) {
            CHECK_OK(gts_device_event_record(dev, event, legacy, ERR));
            CHECK_OK(gts_device_event_wait(dev, s, event, ERR));
            CHECK_OK(gts_device_event_record(dev, event, s, ERR));
            CHECK_OK(gts_device_event_wait(dev, legacy, event, ERR));
            CHECK_OK(gts_device_event_synchronize(dev, event, ERR));
            gts_device_event_destroy(dev, event);
        }
    }
    gts_device_stream_destroy(dev, s);
}

/* ---- memory the host reaches: pinned and managed ------------------------------------------------ */

static void test_host_accessible(const gts_device_ops *dev)
{
    CHECK(dev->host_accessible);
    double *block;
    if (!CHECK_OK(gts_device_alloc(dev, 100 * sizeof(double), GTS_ALLOC_ZERO, (void **)&block, ERR)))
        return;
    CHECK((uintptr_t)block % 64 == 0);
    CHECK(block[0] == 0 && block[99] == 0);
    for (int i = 0; i < 100; ++i)
        block[i] = i; /* the host writes it directly */
    double back[100];
    CHECK_OK(gts_device_copy_to_host(dev, back, block, sizeof back, NULL, ERR));
    CHECK(back[0] == 0 && back[99] == 99);
    const double two = 2;
    CHECK_OK(gts_device_fill(dev, block, 1, (const int64_t[]){50}, (const int64_t[]){16}, 8, &two,
                             NULL, ERR));
    CHECK(block[0] == 2 && block[1] == 1 && block[98] == 2 && block[99] == 99);
    gts_buffer *b;
    if (CHECK_OK(gts_buffer_alloc(dev, 256, 0, &b, ERR))) {
        CHECK(gts_buffer_device(b) == dev && gts_buffer_host(b) == gts_buffer_data(b));
        gts_buffer_release(b);
    }
    gts_device_free(dev, block, 100 * sizeof(double));
}

/* ---- CUDA present: the registry and the contract of every CUDA device --------------------------- */

/* Another library's memory on each CUDA device (gts_device_locate asks the
 * driver), checked against the GPU (gts_device_check_usable), and the
 * protocols' stream numbers (gts_device_wait_stream). */
static void test_foreign_memory(const gts_device_ops *const *list, size_t n)
{
    const gts_device_ops *found = NULL, *gpu = NULL;
    for (size_t i = BUILT_IN; i < n; ++i) {
        const gts_device_ops *d = list[i];
        void *block = NULL;
        if (!CHECK_OK(gts_device_alloc(d, 4096, 0, &block, ERR)))
            continue;
        if (CHECK_OK(gts_device_locate((char *)block + 100, &found, ERR)))
            CHECK(found == d);
        /* the streams the protocols name: 1 and 2, the default streams, and a stream of ours */
        CHECK_OK(gts_device_wait_stream(d, 1, ERR));
        CHECK_OK(gts_device_wait_stream(d, 2, ERR));
        gts_stream stream = NULL;
        if (CHECK_OK(gts_device_stream_create(d, &stream, ERR))) {
            CHECK_OK(gts_device_wait_stream(d, (int64_t)(uintptr_t)stream, ERR));
            gts_device_stream_destroy(d, stream);
        }
        CHECK_FAILS(gts_device_wait_stream(d, 0, ERR), GTS_EINVAL, "0 is forbidden");
        gts_device_free(d, block, 4096);
    }
    char host[64];
    CHECK_FAILS(gts_device_locate(host, &found, ERR), GTS_ENOTFOUND, "is not CUDA memory");
    /* the GPU's memory is usable, another GPU's is not */
    const gts_device_ops *cuda0 = list[BUILT_IN];
    CHECK_OK(gts_device_use_gpu(cuda0, ERR));
    if (CHECK_OK(gts_device_gpu(&gpu, ERR)))
        CHECK(gpu == cuda0);
    CHECK_OK(gts_device_check_usable(cuda0, ERR));
    CHECK_OK(gts_device_check_usable(gts_device_host(), ERR));
    CHECK_FAILS(gts_device_check_usable(gts_device_emulated(), ERR), GTS_EINVAL,
                "another GPU than gtstore's, cuda:0 (2, 0)");
    if (n > BUILT_IN + 2 && list[BUILT_IN + 1]->id.type == GTS_DL_CUDA)
        CHECK_FAILS(gts_device_check_usable(list[BUILT_IN + 1], ERR), GTS_EINVAL,
                    "memory on cuda:1 (2, 1), another GPU");
    CHECK_OK(gts_device_use_gpu(NULL, ERR));
}

static void check_present(int expect_count, int expect_unmanaged)
{
    int count = 0, version = 0;
    if (!CHECK_OK(gts_device_cuda_status(&count, &version, ERR)))
        return;
    printf("CUDA: %d device(s), driver %d.%d\n", count, version / 1000, version % 1000 / 10);
    if (expect_count >= 0)
        CHECK_INT_EQ(count, expect_count);
    CHECK(count >= 1 && version >= 11030);

    /* the registry: the built-in devices, cuda:0.., cuda_host:0, cuda_managed:.. */
    const gts_device_ops *list[BUILT_IN + 3 * 64] = {NULL}, *dev = NULL;
    size_t n = gts_device_list(list, sizeof list / sizeof list[0]);
    CHECK(n >= (size_t)(BUILT_IN + count + 1) && n <= (size_t)(BUILT_IN + 2 * count + 1));
    CHECK(list[0] == gts_device_host() && list[1] == gts_device_emulated());
    int managed = 0;
    for (size_t i = BUILT_IN; i < n; ++i) {
        const gts_device_ops *d = list[i];
        if (CHECK_OK(gts_device_get(d->id, &dev, ERR)))
            CHECK(dev == d);
        CHECK(d->stream_create && d->stream_destroy);
        if (i < (size_t)(BUILT_IN + count)) {
            CHECK(d->id.type == GTS_DL_CUDA && d->id.id == (int)i - BUILT_IN &&
                  !d->host_accessible);
        } else if (i == (size_t)(BUILT_IN + count)) {
            CHECK(d->id.type == GTS_DL_CUDA_HOST && d->id.id == 0 && d->host_accessible);
            CHECK_STR_EQ(d->name, "cuda_host:0");
            const gts_device_ops *pinned = NULL; /* the pinned memory of every CUDA GPU */
            for (int g = 0; g < count; ++g)
                if (CHECK_OK(gts_device_pinned(list[BUILT_IN + g], &pinned, ERR)))
                    CHECK(pinned == d);
            CHECK(gts_device_is_pinned(d) && !gts_device_is_pinned(list[BUILT_IN]));
        } else {
            CHECK(d->id.type == GTS_DL_CUDA_MANAGED && d->host_accessible);
            CHECK(gts_device_is_managed(d));
            ++managed;
        }
    }
    if (expect_unmanaged >= 0) {
        CHECK_INT_EQ(managed, count - 1);
        CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA_MANAGED, expect_unmanaged}, &dev,
                                   ERR),
                    GTS_ENOTSUP, "does not support managed memory");
    }
    if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &dev, ERR)))
        CHECK_STR_EQ(dev->name, "cuda:0");
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA, count}, &dev, ERR), GTS_ENOTFOUND,
                "there is no CUDA device");
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA, -1}, &dev, ERR), GTS_ENOTFOUND,
                "(2, -1)");
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA_HOST, 1}, &dev, ERR), GTS_ENOTFOUND,
                "(3, 1)");
    CHECK_FAILS(gts_device_get((gts_device_id){GTS_DL_CUDA_MANAGED, count}, &dev, ERR),
                GTS_ENOTFOUND, "CUDA managed");

    for (size_t i = BUILT_IN; i < n; ++i) {
        const gts_device_ops *d = list[i];
        printf("device %s: the contract\n", d->name);
        test_contract(d);
        test_bad_input(d);
        test_strided(d, NULL);
        test_random_strided(d);
        test_batch(d);
        test_streams(d);
        if (d->host_accessible) {
            test_host_accessible(d);
        } else {
            gts_buffer *b;
            if (CHECK_OK(gts_buffer_alloc(d, 1000, GTS_ALLOC_ZERO, &b, ERR))) {
                CHECK(gts_buffer_device(b) == d && gts_buffer_host(b) == NULL);
                gts_buffer_release(b);
            }
        }
    }
    test_foreign_memory(list, n);
}

/* ---- the caches of device and pinned memory --------------------------------------------- */

#define MIB ((int64_t)1 << 20)

static gts_memory_stats mem_now(void)
{
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return s;
}

/* Whether the first and last 8 bytes of a device block read as `byte`. */
static bool ends_read(const gts_device_ops *dev, const char *block, int64_t size, int byte)
{
    unsigned char ends[16], expected[16];
    memset(expected, byte, sizeof expected);
    return CHECK_OK(gts_device_copy_to_host(dev, ends, block, 8, NULL, ERR)) &&
           CHECK_OK(gts_device_copy_to_host(dev, ends + 8, block + size - 8, 8, NULL, ERR)) &&
           memcmp(ends, expected, 16) == 0;
}

/* A GPU with stream-ordered pools: reuse, the limit, release. */
static void test_stream_ordered_pool(const gts_device_ops *dev)
{
    printf("device %s: the stream-ordered pool\n", dev->name);
    gts_cache_clear();
    gts_memory_stats s0 = mem_now(), s;
    fake_cuda_stats f0 = stats_now(), f;
    char *a, *b;
    if (!CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&a, ERR)))
        return;
    CHECK((uintptr_t)a % 256 == 0);
    gts_device_free(dev, a, MIB);
    s = mem_now();
    CHECK_INT_EQ(s.device_cache_misses, s0.device_cache_misses + 1);
    CHECK(s.device_cached_bytes >= s0.device_cached_bytes + MIB);
    CHECK_INT_EQ(s.device_cached_blocks, s0.device_cached_blocks); /* the driver's, not blocks */
    if (CHECK_OK(gts_device_alloc(dev, MIB, GTS_ALLOC_ZERO, (void **)&b, ERR))) {
        CHECK(ends_read(dev, b, MIB, 0));
        gts_device_free(dev, b, MIB);
    }
    CHECK_INT_EQ(mem_now().device_cache_hits, s0.device_cache_hits + 1);
    f = stats_now();
    if (fake_stats) {
        CHECK(b == a);
        CHECK(f.pools >= 1 && f.pool_allocs == f0.pool_allocs + 2);
        CHECK(f.pool_reuses == f0.pool_reuses + 1 && f.pool_frees == f0.pool_frees + 2);
        CHECK_INT_EQ(f.live[0], f0.live[0]);
    }
    /* a free beyond the limit trims the pool to it; 0 keeps nothing. A
       GPU's driver reserves in chunks (32 MiB on an H100) and returns one
       only once nothing in it lives: up to a chunk more may stay there */
    int64_t chunk = fake_stats ? 0 : 32 * MIB;
    for (int64_t limit = MIB / 2; limit >= 0; limit -= MIB / 2) {
        gts_cache_set_limit(limit);
        if (CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&a, ERR)))
            gts_device_free(dev, a, MIB);
        CHECK(mem_now().device_cached_bytes <= limit + chunk);
    }
    gts_cache_set_limit((int64_t)1 << 30);
    /* gts_cache_clear releases what it holds */
    if (CHECK_OK(gts_device_alloc(dev, 3 * MIB, 0, (void **)&a, ERR)))
        gts_device_free(dev, a, 3 * MIB);
    CHECK(mem_now().device_cached_bytes >= 3 * MIB);
    gts_cache_clear();
    CHECK_INT_EQ(mem_now().device_cached_bytes, 0);
}

/* Out of memory, a pool that holds enough gives it back and tries again
 * (the fake's pools hold at most 4 MiB in this scenario). */
static void test_pool_out_of_memory(const gts_device_ops *dev)
{
    char *a, *b;
    gts_cache_clear();
    if (!CHECK_OK(gts_device_alloc(dev, 3 * MIB, 0, (void **)&a, ERR)))
        return;
    gts_device_free(dev, a, 3 * MIB);
    CHECK(mem_now().device_cached_bytes == 3 * MIB);
    if (CHECK_OK(gts_device_alloc(dev, 3 * MIB + MIB / 2, 0, (void **)&b, ERR)))
        gts_device_free(dev, b, 3 * MIB + MIB / 2);
    CHECK_FAILS(gts_device_alloc(dev, 5 * MIB, 0, (void **)&b, ERR), GTS_ENOMEM,
                "cuMemAllocFromPoolAsync");
    gts_cache_clear();
}

/* A GPU without pools: a cache of blocks, each reused only once the event
 * recorded at its free has completed (the fake's events read as pending
 * for one query). */
static void test_block_cache(const gts_device_ops *dev)
{
    printf("device %s: the block cache\n", dev->name);
    gts_cache_clear();
    gts_memory_stats s0 = mem_now(), s;
    fake_cuda_stats f0 = stats_now(), f;
    char *a, *b, *c;
    if (!CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&a, ERR)))
        return;
    gts_device_free(dev, a, MIB);
    f = stats_now();
    s = mem_now();
    CHECK(s.device_cached_blocks == 1 && s.device_cached_bytes == MIB);
    CHECK(f.allocs[0] == f0.allocs[0] + 1 && f.pool_allocs == f0.pool_allocs);
    CHECK(f.live[0] == f0.live[0] + 1 && f.live_events == f0.live_events + 1);
    CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&b, ERR)); /* its event not yet reached */
    CHECK(b != a);
    gts_device_free(dev, b, MIB);
    /* a size of the same class, once a's event has completed */
    if (CHECK_OK(gts_device_alloc(dev, MIB - 1000, GTS_ALLOC_ZERO, (void **)&c, ERR))) {
        CHECK(c == a);
        CHECK(ends_read(dev, c, MIB - 1000, 0));
        gts_device_free(dev, c, MIB - 1000);
    }
    s = mem_now();
    CHECK_INT_EQ(s.device_cache_hits, s0.device_cache_hits + 1);
    CHECK_INT_EQ(s.device_cache_misses, s0.device_cache_misses + 2);
    CHECK_INT_EQ(s.device_cached_blocks, 2);
    CHECK_INT_EQ(s.device_cached_bytes, 2 * MIB);
    /* released only after its event: c's is still pending */
    gts_cache_clear();
    f = stats_now();
    CHECK_INT_EQ(f.event_waits, f0.event_waits + 1);
    CHECK(f.live[0] == f0.live[0] && f.live_events == f0.live_events);
    CHECK_INT_EQ(mem_now().device_cached_blocks, 0);
    /* the limit */
    gts_cache_set_limit(MIB + MIB / 2);
    if (CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&a, ERR)) &&
        CHECK_OK(gts_device_alloc(dev, MIB, 0, (void **)&b, ERR))) {
        gts_device_free(dev, a, MIB);
        gts_device_free(dev, b, MIB);
    }
    CHECK_INT_EQ(mem_now().device_cached_blocks, 1);
    CHECK_INT_EQ(stats_now().live[0], f0.live[0] + 1);
    gts_cache_set_limit((int64_t)1 << 30);
    gts_cache_clear();
    CHECK_INT_EQ(stats_now().live[0], f0.live[0]);
}

/* Pinned blocks: page-locked once, reused for sizes of their class. */
static void test_pinned_cache(const gts_device_ops *pinned)
{
    printf("device %s: the pinned cache\n", pinned->name);
    gts_cache_clear();
    gts_memory_stats s0 = mem_now(), s;
    fake_cuda_stats f0 = stats_now(), f;
    char *a, *b;
    if (!CHECK_OK(gts_device_alloc(pinned, 100000, 0, (void **)&a, ERR)))
        return;
    a[99999] = 1;
    gts_device_free(pinned, a, 100000);
    if (CHECK_OK(gts_device_alloc(pinned, 100100, GTS_ALLOC_ZERO, (void **)&b, ERR))) {
        CHECK(b == a && b[99999] == 0 && b[100099] == 0);
        gts_device_free(pinned, b, 100100);
    }
    s = mem_now();
    CHECK(s.pinned_cache_hits == s0.pinned_cache_hits + 1 &&
          s.pinned_cache_misses == s0.pinned_cache_misses + 1);
    CHECK(s.pinned_cached_blocks == 1 && s.pinned_cached_bytes >= 100100);
    f = stats_now();
    if (fake_stats)
        CHECK(f.allocs[3] == f0.allocs[3] + 1 && f.live[3] == f0.live[3] + 1);
    gts_cache_clear();
    CHECK(stats_now().live[3] == f0.live[3] && mem_now().pinned_cached_blocks == 0);
}

/* A mirrored buffer of `size` bytes synced host -> device and back: the
 * copies use its pinned host side exactly when `pinned`. */
static void check_host_side(const gts_device_ops *dev, int64_t size, bool pinned)
{
    fake_cuda_stats f0 = stats_now();
    gts_buffer *m;
    if (!CHECK_OK(gts_buffer_alloc(dev, size, GTS_ALLOC_MIRRORED, &m, ERR)))
        return;
    memset(gts_buffer_host(m), 5, (size_t)size);
    CHECK_OK(gts_buffer_set_sync_state(m, GTS_SYNC_HOST_DIRTY, ERR));
    CHECK_OK(gts_buffer_sync(m, GTS_SIDE_DEVICE, false, NULL, ERR));
    CHECK(ends_read(dev, gts_buffer_data(m), size, 5));
    CHECK_OK(gts_buffer_sync(m, GTS_SIDE_HOST, true, NULL, ERR));
    CHECK(((char *)gts_buffer_host(m))[size - 1] == 5);
    fake_cuda_stats f = stats_now();
    if (fake_stats) {
        CHECK_INT_EQ(f.pinned_copies - f0.pinned_copies, pinned ? 2 : 0);
        CHECK_INT_EQ(f.live[3] - f0.live[3], pinned);
    }
    gts_buffer_release(m);
}

static void test_host_sides(const gts_device_ops *dev, bool register_limited)
{
    printf("device %s: pinned host sides\n", dev->name);
    check_host_side(dev, MIB, true);
    gts_set_pinned_host_sides(false);
    check_host_side(dev, MIB, false);
    gts_set_pinned_host_sides(true);
    if (register_limited) /* more than may be page-locked: pageable, and no error */
        check_host_side(dev, 16 * MIB, false);
    gts_cache_clear();
}

/* ---- the scenarios --------------------------------------------------------------------------------- */

static void use_library(const char *path, const char *fake_config)
{
    if (path)
        setenv("GTSTORE_LIBCUDA", path, 1);
    else
        unsetenv("GTSTORE_LIBCUDA");
    if (fake_config)
        setenv("FAKE_CUDA", fake_config, 1);
    else
        unsetenv("FAKE_CUDA");
}

static void use_fake(const char *path, const char *config)
{
    use_library(path, config);
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* the one gtstore opens too */
    if (!CHECK(library != NULL)) {
        fprintf(stderr, "%s\n", dlerror());
        return;
    }
    void *symbol = dlsym(library, "fake_cuda_stats_get");
    if (CHECK(symbol != NULL))
        memcpy(&fake_stats, &symbol, sizeof symbol);
}

/* After the fake's contract: nothing leaked, every push popped, every
 * lookup for the legacy stream at the ABI asked for. */
static void check_fake_totals(int max_version, bool v2)
{
    gts_cache_clear(); /* what the caches hold is not a leak */
    fake_cuda_stats s = stats_now();
    CHECK_INT_EQ(s.pushes, s.pops);
    CHECK_INT_EQ(s.live[0], 0);
    CHECK_INT_EQ(s.live[2], 0);
    CHECK(s.live[1] <= 1); /* the cached pinned staging buffer */
    CHECK_INT_EQ(s.live_streams, 0);
    CHECK_INT_EQ(s.errors, 0);
    CHECK_INT_EQ(s.lookups_not_legacy, 0);
    CHECK_INT_EQ(s.max_version, max_version);
    CHECK(v2 ? s.v2_calls > 0 && s.v1_calls == 0 : s.v1_calls > 0 && s.v2_calls == 0);
    CHECK(s.memsets[0] > 0 && s.memsets[1] > 0 && s.memsets[2] > 0);
    CHECK(s.async_calls > 0 && s.generic > 0 && s.context_syncs > 0);
    CHECK(s.stream_event_waits > 0); /* the events of the contract (device_contract.h) */
}

static const char *find_toolkit_stub(void)
{
    static char path[512];
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda",
                           "/opt/cuda"};
    const char *subdirs[] = {"lib64/stubs", "lib/stubs", "targets/x86_64-linux/lib/stubs",
                             "targets/sbsa-linux/lib/stubs"};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; ++r)
        for (size_t s = 0; roots[r] && s < sizeof subdirs / sizeof subdirs[0]; ++s) {
            snprintf(path, sizeof path, "%s/%s/libcuda.so", roots[r], subdirs[s]);
            if (access(path, R_OK) == 0)
                return path;
        }
    return NULL;
}

/* ---- halo messages of CUDA device memory ---------------------------------------------- */

enum { NI = 4, NJ = 3 }; /* the domain; a halo of 1 all round */

/* A field of device memory only on `device`, its domain set to
 * 100 i + j and its halo to -1 (through a host twin: device memory is not
 * the host's to write). */
/* A field of rank `rank` of `nranks` along I (NI points each): its domain
 * holds 100 * i + j at global (i, j) from 1, its halo -1. */
static int make_rank_field(const gts_device_ops *device, int rank, gts_storage *out)
{
    gts_storage_spec spec;
    int rc = gts_storage_spec_init(&spec, 2, (int64_t[]){NI + 2, NJ + 2}, F8, ERR);
    if (rc)
        return rc;
    spec.has_dims = spec.has_halo = true;
    spec.dims[0] = GTS_DIM_I;
    spec.dims[1] = GTS_DIM_J;
    spec.halo[0] = spec.halo[1] = (gts_halo){1, 1};
    spec.managed = GTS_MANAGED_NONE;
    gts_storage host;
    if ((rc = gts_storage_create_on(gts_device_host(), &spec, 0, &host, ERR)))
        return rc;
    for (int64_t i = 0; i < NI + 2; ++i)
        for (int64_t j = 0; j < NJ + 2; ++j) {
            bool domain = i >= 1 && i <= NI && j >= 1 && j <= NJ;
            double v = domain ? (double)(100 * (i + rank * NI) + j) : -1.0;
            memcpy((void *)address(&host, (int64_t[]){i, j}), &v, sizeof v);
        }
    rc = gts_storage_create_on(device, &spec, 0, out, ERR);
    if (!rc && (rc = gts_storage_assign(out, &host, ERR)))
        gts_storage_release(out);
    gts_storage_release(&host);
    return rc;
}

static int make_cuda_field(const gts_device_ops *device, gts_storage *out)
{
    return make_rank_field(device, 0, out);
}

/* Whether every point of rank `rank`'s field holds the periodic wrap of
 * the domain of `nranks` along I. */
static bool wrapped_rank(const gts_storage *field, int rank, int nranks)
{
    gts_storage host;
    if (!CHECK_OK(gts_storage_copy_to(gts_device_host(), field, &host, ERR)))
        return false;
    bool ok = true;
    for (int64_t i = 0; i < NI + 2; ++i)
        for (int64_t j = 0; j < NJ + 2; ++j) {
            int64_t all = nranks * NI, gi = i + rank * NI;
            int64_t wi = (gi - 1 + all) % all + 1, wj = (j - 1 + NJ) % NJ + 1;
            ok = ok && get(&host, (int64_t[]){i, j}) == (double)(100 * wi + wj);
        }
    gts_storage_release(&host);
    return ok;
}

static bool wrapped(const gts_storage *field)
{
    return wrapped_rank(field, 0, 1);
}

/* One rank, periodic: every neighbour is the rank itself, so each message
 * goes from a send buffer to the receive buffer its tag names, as MPI
 * would move it: host bytes for pinned messages, a copy within the GPU for
 * device messages (what a CUDA-aware MPI does). */
static void exchange_with_self(const gts_halo_plan *plan, const gts_halo_messages *m)
{
    const gts_device_ops *device = gts_halo_messages_device(m);
    for (int i = 0; i < gts_halo_plan_neighbor_count(plan); ++i) {
        const gts_halo_neighbor *n = gts_halo_plan_neighbor(plan, i);
        int j = 0;
        while (gts_halo_plan_neighbor(plan, j)->recv_tag != n->send_tag)
            ++j;
        const gts_halo_message *send = gts_halo_messages_send(m, i);
        const gts_halo_message *recv = gts_halo_messages_recv(m, j);
        CHECK_OK(gts_halo_messages_pack(m, i, ERR));
        if (device->host_accessible)
            memcpy(recv->mpi, send->mpi, (size_t)send->bytes);
        else
            CHECK_OK(gts_device_copy_within(device, recv->data, send->data, send->bytes, NULL,
                                            ERR));
        CHECK_OK(gts_halo_messages_unpack(m, j, ERR));
    }
}

/* What pack_all and unpack_all cost on a GPU: on one rank, periodic, every
 * halo is the rank's own, filled by one launch and nothing crossing the
 * bus; on two ranks (both in this process) of fields in device memory with
 * pinned messages, each rank packs with one launch and one transfer to the
 * host, and unpacks with one transfer and one launch. */
static void test_halo_at_once(const gts_device_ops *gpu)
{
    gts_partition one, two;
    if (!CHECK_OK(gts_partition_init(&one, 2, NULL, (int64_t[]){NI, NJ}, (int[]){1, 1},
                                     (bool[]){true, true}, 1, ERR)) ||
        !CHECK_OK(gts_partition_init(&two, 2, NULL, (int64_t[]){2 * NI, NJ}, (int[]){2, 1},
                                     (bool[]){true, true}, 2, ERR)))
        return;
    gts_storage f[2];
    gts_halo_plan *plans[2] = {NULL, NULL};
    gts_halo_messages *m[2] = {NULL, NULL};
    if (!CHECK_OK(make_rank_field(gpu, 0, &f[0])))
        return;
    if (CHECK_OK(gts_halo_plan_create(&one, 0, 1, f, &plans[0], ERR)) &&
        CHECK_OK(gts_halo_messages_create(plans[0], GTS_HALO_MEMORY_PINNED, &m[0], ERR))) {
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[0]); ++i)
            CHECK(gts_halo_messages_local(m[0], i));
        fake_cuda_stats s0 = stats_now();
        CHECK_OK(gts_halo_messages_pack_all(m[0], ERR));
        CHECK_OK(gts_halo_messages_unpack_all(m[0], ERR));
        fake_cuda_stats s1 = stats_now();
        CHECK(wrapped(&f[0]));
        if (fake_stats) {
            CHECK_INT_EQ(s1.launches[2] - s0.launches[2], 1);
            CHECK_INT_EQ(s1.last_grid[1], 8); /* the 8 neighbours' regions, one row each */
            CHECK_INT_EQ(s1.htod + s1.dtoh - s0.htod - s0.dtoh, 0);
        }
    }
    gts_halo_messages_destroy(m[0]);
    gts_halo_plan_destroy(plans[0]);
    gts_storage_release(&f[0]);
    for (int r = 0; r < 2; ++r)
        if (!CHECK_OK(make_rank_field(gpu, r, &f[r])) ||
            !CHECK_OK(gts_halo_plan_create(&two, r, 1, &f[r], &plans[r], ERR)) ||
            !CHECK_OK(gts_halo_messages_create(plans[r], GTS_HALO_MEMORY_PINNED, &m[r], ERR)))
            return;
    fake_cuda_stats s0 = stats_now();
    for (int r = 0; r < 2; ++r)
        CHECK_OK(gts_halo_messages_pack_all(m[r], ERR));
    fake_cuda_stats s1 = stats_now();
    for (int r = 0; r < 2; ++r) /* MPI's part: rank r's message to offset o is rank 1-r's */
        for (int i = 0; i < gts_halo_plan_neighbor_count(plans[r]); ++i) {
            const gts_halo_neighbor *n = gts_halo_plan_neighbor(plans[r], i);
            if (gts_halo_messages_local(m[r], i) || n->send_bytes == 0)
                continue;
            for (int j = 0; j < gts_halo_plan_neighbor_count(plans[1 - r]); ++j) {
                const gts_halo_neighbor *b = gts_halo_plan_neighbor(plans[1 - r], j);
                if (b->rank == r && b->recv_tag == n->send_tag)
                    memcpy(gts_halo_messages_recv(m[1 - r], j)->mpi,
                           gts_halo_messages_send(m[r], i)->mpi, (size_t)n->send_bytes);
            }
        }
    fake_cuda_stats s2 = stats_now();
    for (int r = 0; r < 2; ++r)
        CHECK_OK(gts_halo_messages_unpack_all(m[r], ERR));
    fake_cuda_stats s3 = stats_now();
    for (int r = 0; r < 2; ++r)
        CHECK(wrapped_rank(&f[r], r, 2));
    if (fake_stats) { /* per rank: one launch and one transfer each way */
        CHECK_INT_EQ(s1.launches[2] - s0.launches[2], 2);
        CHECK_INT_EQ(s1.dtoh - s0.dtoh, 2);
        CHECK_INT_EQ(s1.htod - s0.htod, 0);
        CHECK_INT_EQ(s3.launches[2] - s2.launches[2], 2);
        CHECK_INT_EQ(s3.htod - s2.htod, 2);
        CHECK_INT_EQ(s3.dtoh - s2.dtoh, 0);
    }
    for (int r = 0; r < 2; ++r) {
        gts_halo_messages_destroy(m[r]);
        gts_halo_plan_destroy(plans[r]);
        gts_storage_release(&f[r]);
    }
}

/* Fields of CUDA device memory: pinned messages in cuda_host:0, device
 * messages where the MPI reads CUDA memory (detected or asked for), and
 * device messages refused where it does not or the fields are on two
 * GPUs. */
static void test_halo_messages(void)
{
    const gts_device_ops *gpu0, *gpu1, *pinned;
    if (!CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &gpu0, ERR)) ||
        !CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 1}, &gpu1, ERR)) ||
        !CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA_HOST, 0}, &pinned, ERR)))
        return;
    gts_partition p;
    if (!CHECK_OK(gts_partition_init(&p, 2, NULL, (int64_t[]){NI, NJ}, (int[]){1, 1},
                                     (bool[]){true, true}, 1, ERR)))
        return;
    gts_storage fields[2];
    gts_halo_plan *plan = NULL, *two = NULL;
    if (!CHECK_OK(make_cuda_field(gpu0, &fields[0])) ||
        !CHECK_OK(make_cuda_field(gpu1, &fields[1])))
        return;
    CHECK_OK(gts_halo_plan_create(&p, 0, 1, fields, &plan, ERR));
    CHECK_OK(gts_halo_plan_create(&p, 0, 2, fields, &two, ERR));
    if (!plan || !two)
        return;
    unsetenv("GTSTORE_DEVICE_AWARE_MPI");
    gts_halo_memory memory;
    if (CHECK_OK(gts_halo_memory_choose(plan, GTS_HALO_AWARE_AUTO, 0, &memory, ERR)))
        CHECK(memory == GTS_HALO_MEMORY_PINNED);
    if (CHECK_OK(gts_halo_memory_choose(plan, GTS_HALO_AWARE_AUTO, GTS_DL_CUDA, &memory, ERR)))
        CHECK(memory == GTS_HALO_MEMORY_DEVICE);
    CHECK_FAILS(gts_halo_memory_choose(plan, GTS_HALO_AWARE_YES, 0, &memory, ERR), GTS_EINVAL,
                "device_aware: asked for, but this MPI cannot read cuda:0 memory");
    CHECK_FAILS(gts_halo_memory_choose(two, GTS_HALO_AWARE_YES, GTS_DL_CUDA, &memory, ERR),
                GTS_EINVAL, "on cuda:0 and cuda:1");
    if (CHECK_OK(gts_halo_memory_choose(two, GTS_HALO_AWARE_AUTO, GTS_DL_CUDA, &memory, ERR)))
        CHECK(memory == GTS_HALO_MEMORY_PINNED);
    /* both ways give the wrapped halo; pinned messages are CUDA's pinned memory */
    const gts_halo_memory memories[] = {GTS_HALO_MEMORY_PINNED, GTS_HALO_MEMORY_DEVICE};
    for (int k = 0; k < 2; ++k) {
        gts_halo_messages *m = NULL;
        if (!CHECK_OK(gts_halo_messages_create(plan, memories[k], &m, ERR)))
            continue;
        CHECK(gts_halo_messages_device(m) == (k == 0 ? pinned : gpu0));
        CHECK(gts_halo_messages_send(m, 0)->mpi == gts_halo_messages_send(m, 0)->data);
        exchange_with_self(plan, m);
        CHECK(wrapped(&fields[0]));
        gts_halo_messages_destroy(m);
    }
    gts_halo_messages *m = NULL; /* two GPUs: pinned messages serve both */
    if (CHECK_OK(gts_halo_messages_create(two, GTS_HALO_MEMORY_PINNED, &m, ERR))) {
        exchange_with_self(two, m);
        CHECK(wrapped(&fields[0]) && wrapped(&fields[1]));
        gts_halo_messages_destroy(m);
    }
    CHECK_FAILS(gts_halo_messages_create(two, GTS_HALO_MEMORY_DEVICE, &m, ERR), GTS_EINVAL,
                "on cuda:0 and cuda:1");
    gts_halo_plan_destroy(plan);
    gts_halo_plan_destroy(two);
    test_halo_at_once(gpu0);
    gts_storage_release(&fields[0]);
    gts_storage_release(&fields[1]);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "system";
    const char *library = argc > 2 ? argv[2] : NULL;
    bool fake = strncmp(scenario, "fake", 4) == 0;
    if (fake && !library) {
        fprintf(stderr, "usage: %s %s FAKE_LIBRARY\n", argv[0], scenario);
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "device_cuda %s", scenario);

    if (!strcmp(scenario, "system")) {
        use_library(NULL, NULL);
        int count = 0;
        if (gts_device_cuda_status(&count, NULL, ERR) == GTS_OK) {
            check_present(-1, -1);
            const gts_device_ops *dev, *pinned;
            if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &dev, ERR)) &&
                CHECK_OK(gts_device_pinned(dev, &pinned, ERR))) {
                test_stream_ordered_pool(dev);
                test_pinned_cache(pinned);
                test_host_sides(dev, false);
            }
        } else {
            int code = check_error.code;
            char why[GTS_ERROR_MESSAGE_SIZE];
            memcpy(why, check_error.message, sizeof why);
            CHECK(code == GTS_ENOTSUP || code == GTS_ENOTFOUND);
            CHECK(strlen(why) > 10);
            char cause[41]; /* the start of the cause, which every message holds */
            memcpy(cause, why + strlen("CUDA: "), sizeof cause - 1);
            cause[sizeof cause - 1] = '\0';
            check_absent(code, cause);
            printf("skipped: the CUDA device contract on a GPU: %s\n", why);
        }
    } else if (!strcmp(scenario, "missing")) {
        use_library("/nonexistent/gtstore-test/libcuda.so.1", NULL);
        check_absent(GTS_ENOTSUP, "cannot load the CUDA driver: "
                                  "/nonexistent/gtstore-test/libcuda.so.1");
    } else if (!strcmp(scenario, "toolkit-stub")) {
        const char *stub = find_toolkit_stub();
        if (stub) {
            printf("the toolkit's stub: %s\n", stub);
            use_library(stub, NULL);
            check_absent(GTS_ENOTSUP,
                         "CUDA_ERROR_STUB_LIBRARY (34): the CUDA toolkit's stub library");
        } else {
            printf("skipped: no CUDA toolkit stub libcuda.so (looked under $CUDA_HOME, "
                   "$CUDA_PATH, /usr/local/cuda, /opt/cuda)\n");
        }
    } else if (!strcmp(scenario, "fake-pools")) {
        use_fake(library, "devices=2,nopools=1,eventpending=1,poolmax=4194304,"
                          "registerlimit=8388608");
        const gts_device_ops *gpu0, *gpu1, *pinned;
        if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &gpu0, ERR)) &&
            CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 1}, &gpu1, ERR)) &&
            CHECK_OK(gts_device_pinned(gpu0, &pinned, ERR))) {
            test_stream_ordered_pool(gpu0);
            test_pool_out_of_memory(gpu0);
            test_block_cache(gpu1);
            test_pinned_cache(pinned);
            test_host_sides(gpu0, false); /* its pool holds 4 MiB */
            test_host_sides(gpu1, true);
        }
        fake_cuda_stats f = stats_now();
        CHECK(f.live[0] == 0 && f.live[3] == 0 && f.live_events == 0);
        CHECK_INT_EQ(f.pushes, f.pops);
    } else if (!strcmp(scenario, "fake")) {
        use_fake(library, "devices=2,nomanaged=1,nopools=1");
        check_present(2, 1);
        test_halo_messages();
        check_fake_totals(12000, true);
    } else if (!strcmp(scenario, "fake-v1")) { /* cuGetProcAddress of drivers before 12.5 */
        use_fake(library, "devices=1,version=11040");
        check_present(1, -1);
        check_fake_totals(11040, false);
    } else if (!strcmp(scenario, "fake-new")) { /* a driver newer than the ABI asked for */
        use_fake(library, "devices=1,version=13010");
        int version = 0;
        if (CHECK_OK(gts_device_cuda_status(NULL, &version, ERR)))
            CHECK_INT_EQ(version, 13010);
        const gts_device_ops *dev;
        if (CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &dev, ERR)))
            test_contract(dev);
        CHECK_INT_EQ(stats_now().max_version, 12000);
    } else if (!strcmp(scenario, "fake-stub")) {
        use_fake(library, "init=34");
        check_absent(GTS_ENOTSUP, "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)");
    } else if (!strcmp(scenario, "fake-init-no-device")) {
        use_fake(library, "init=100");
        check_absent(GTS_ENOTFOUND, "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
    } else if (!strcmp(scenario, "fake-no-device")) {
        use_fake(library, "devices=0");
        check_absent(GTS_ENOTFOUND, "found no device");
    } else if (!strcmp(scenario, "fake-missing-symbol")) {
        use_fake(library, "missing=cuMemAllocManaged");
        check_absent(GTS_ENOTSUP, "has no cuMemAllocManaged");
    } else if (!strcmp(scenario, "fake-missing-symbol-old")) { /* CUDA_ERROR_NOT_FOUND */
        use_fake(library, "missing=cuMemsetD16Async,notfound=1,version=11080");
        check_absent(GTS_ENOTSUP, "has no cuMemsetD16Async for CUDA 11.8");
    } else if (!strcmp(scenario, "fake-no-gpa")) {
        use_library(library, NULL);
        check_absent(GTS_ENOTSUP, "neither cuGetProcAddress_v2 nor cuGetProcAddress");
    } else {
        fprintf(stderr, "unknown scenario %s\n", scenario);
        return 2;
    }
    return check_summary(name);
}
