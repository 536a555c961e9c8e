/* Releases in stream order (src/deferred_release.h): a buffer released
 * while device work on it is still queued does not block the host, and its
 * memory is handed out again only once that work has completed.
 *
 * - On the asynchronous emulated device, with a gate (a unit of work that
 *   holds a stream until the test opens it): a storage filled behind the
 *   gate is released; the release returns with the fill still queued (a
 *   watchdog opens the gate after seconds, and the test fails, where the
 *   release waits); an allocation at once gets another block, which the
 *   fill, once run, does not touch; after the fill the block returns to
 *   the device's cache and is reused.
 * - The same for a mirrored buffer's pinned host side, with a copy to it
 *   queued: a pinned block allocated at once is not disturbed.
 * - Many rounds without a gate, with the device's random delays: allocate,
 *   fill on a stream, release, allocate again at once and write: the write
 *   survives the fill. (Freeing the block at the release, without waiting
 *   or parking, fails this at once.)
 * - With the fake CUDA driver (the c-fake-cuda suite): its events read as
 *   pending for a few queries. A device-only buffer is freed at once in
 *   the legacy default stream's order (that stream waits for its event,
 *   then cuMemFreeAsync), without a host wait. A mirrored one is parked:
 *   the release neither waits for the event (cuEventSynchronize) nor frees
 *   the blocks until a query says the work is done, and an allocation
 *   meanwhile gets another block. Beyond GTS__PARKED_COUNT parked buffers,
 *   a release waits for the oldest; gts_cache_clear waits for them all.
 *   A block reused by a new storage (gts_storage_create_reusing) while its
 *   work is still queued is neither freed nor allocated: the new storage's
 *   access on another stream makes that stream wait for it, and a host
 *   access waits.
 *   Halo messages whose blocks may be blocks freed in stream order wait
 *   for those frees, and a pack or an unpack on a stream records one event
 *   for its block and fields.
 *   The rounds above run on CUDA too where a CUDA device is present (on a
 *   GPU, the stream-ordered frees meet allocations and writes on the
 *   legacy default stream). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gtstore/access.h"
#include "gtstore/halo_messages.h"
#include "gtstore/halo_plan.h"
#include "gtstore/partition.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"
#include "deferred_release.h"
#include "device_emulated_streams.h" /* the gate: a unit of work of the test's own */
#include "fake_cuda_stat.h"

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

/* ---- the gate ------------------------------------------------------------------------ */

typedef struct gate {
    gts__emu_work base;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool open, forced, done, ended;
    pthread_t watchdog;
} gate;

/* The stream's worker runs this: it waits until the gate opens. */
static void run_gate(gts__emu_work *work)
{
    gate *g = (gate *)work;
    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->changed, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate *g, bool forced)
{
    pthread_mutex_lock(&g->lock);
    if (!g->open)
        g->forced = forced;
    g->open = true;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

/* Opens the gate after 10 s if the test has not: a release that waits for
 * the gated work would otherwise hang. */
static void *watchdog(void *arg)
{
    gate *g = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&g->lock);
    while (!g->open && !g->done &&
           pthread_cond_timedwait(&g->changed, &g->lock, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&g->lock);
    gate_open(g, true);
    return NULL;
}

/* Queues a closed gate on `s`. */
static void gate_close(gate *g, gts_stream s)
{
    memset(g, 0, sizeof *g);
    g->base.run = run_gate;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    pthread_create(&g->watchdog, NULL, watchdog, g);
    gts__emu_submit(s, &g->base);
}

/* The stream drained (the gate open), the watchdog gone; once. */
static void gate_end(gate *g, gts_stream s)
{
    if (g->ended)
        return;
    g->ended = true;
    gate_open(g, false);
    CHECK_OK(gts_device_synchronize(gts_device_emulated(), s, ERR));
    pthread_mutex_lock(&g->lock);
    g->done = true;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->watchdog, NULL);
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
}

/* ---- helpers ---------------------------------------------------------------------------- */

static bool make(const gts_device_ops *dev, int64_t n, unsigned flags, gts_storage *out)
{
    gts_storage_spec spec;
    return CHECK_OK(gts_storage_spec_init(&spec, 1, &n, F8, ERR)) &&
           CHECK_OK(gts_storage_create_on(dev, &spec, flags, out, ERR));
}

/* The device address of element 0. */
static void *device_data(const gts_storage *st)
{
    return (char *)gts_buffer_data(st->buffer) + st->offset;
}

/* Fills the device side of `st` with `value` on `s`, in its stream order. */
static void fill_on(gts_storage *st, double value, gts_stream s)
{
    void *data;
    const gts_device_ops *dev = gts_buffer_device(st->buffer);
    if (CHECK_OK(gts_storage_access(st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &data, ERR))) {
        CHECK_OK(gts_device_fill(dev, data, st->ndim, st->shape, st->strides, 8, &value, s, ERR));
        CHECK_OK(gts_storage_access_end(st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, ERR));
    }
}

/* Writes values[i] = base + i to the device side (the default stream). */
static void write_pattern(gts_storage *st, int64_t n, double base)
{
    double *values = malloc((size_t)n * sizeof *values);
    for (int64_t i = 0; i < n; ++i)
        values[i] = base + (double)i;
    CHECK_OK(gts_device_copy_to_device(gts_buffer_device(st->buffer), device_data(st), values,
                                       n * 8, NULL, ERR));
    free(values);
}

/* Whether the device side reads base + i (after the device's work). */
static bool reads_pattern(gts_storage *st, int64_t n, double base)
{
    const gts_device_ops *dev = gts_buffer_device(st->buffer);
    double *values = malloc((size_t)n * sizeof *values);
    bool same = CHECK_OK(gts_device_synchronize(dev, NULL, ERR)) &&
                CHECK_OK(gts_device_copy_to_host(dev, values, device_data(st), n * 8, NULL, ERR));
    for (int64_t i = 0; same && i < n; ++i)
        same = values[i] == base + (double)i;
    free(values);
    return same;
}

/* ---- on the emulated device, with a gate ---------------------------------------------------- */

static void test_gated_device_block(void)
{
    const gts_device_ops *emu = gts_device_emulated();
    const int64_t n = 1237; /* a size of this test's own: the device's cache is exact */
    gts_stream s;
    gts_storage a, b, c;
    if (!CHECK_OK(gts_device_stream_create(emu, &s, ERR)))
        return;
    gate g;
    gate_close(&g, s);
    if (make(emu, n, GTS_ALLOC_ZERO, &a)) {
        fill_on(&a, 7.0, s);
        void *block = device_data(&a);
        int64_t parked = gts__release_parked();
        gts_transfer_counts before, after;
        gts_device_emulated_counts(&before);
        gts_storage_release(&a); /* returns with the fill queued */
        gts_device_emulated_counts(&after);
        CHECK_INT_EQ(gts__release_parked(), parked + 1);
        CHECK_INT_EQ(after.frees, before.frees); /* the block is not freed yet */
        if (make(emu, n, 0, &b)) {
            CHECK(device_data(&b) != block);
            write_pattern(&b, n, 100.0);
            gate_end(&g, s); /* the fill runs */
            CHECK(!g.forced); /* the release did not wait for it */
            CHECK(reads_pattern(&b, n, 100.0));
            gts_memory_stats stats;
            gts_memory_stats_get(&stats); /* a sweep: the fill is done */
            CHECK_INT_EQ(gts__release_parked(), parked);
            gts_device_emulated_counts(&after);
            CHECK_INT_EQ(after.frees, before.frees + 1);
            if (make(emu, n, 0, &c)) { /* the block is back in the cache */
                CHECK(device_data(&c) == block);
                gts_storage_release(&c);
            }
            gts_storage_release(&b);
        }
    }
    gate_end(&g, s);
    gts_device_stream_destroy(emu, s);
}

/* A mirrored buffer's host side, with a copy to it queued behind a gate. */
static void test_gated_host_side(void)
{
    const gts_device_ops *emu = gts_device_emulated(), *pinned;
    const int64_t n = 2053;
    gts_stream s;
    gts_storage m;
    if (!CHECK_OK(gts_device_pinned(emu, &pinned, ERR)) ||
        !CHECK_OK(gts_device_stream_create(emu, &s, ERR)))
        return;
    bool pinned_sides = gts_pinned_host_sides();
    gts_set_pinned_host_sides(true);
    gate g;
    gate_close(&g, s);
    if (make(emu, n, GTS_ALLOC_ZERO | GTS_ALLOC_MIRRORED, &m)) {
        gts_buffer *buffer = m.buffer;
        void *host = gts_buffer_host(buffer);
        int64_t size = gts_buffer_size(buffer);
        /* a copy device -> host side, queued, in the buffer's order */
        CHECK_OK(gts_device_copy_to_host(emu, host, gts_buffer_data(buffer), size, s, ERR));
        CHECK_OK(gts_buffer_order_record(buffer, s, ERR));
        int64_t parked = gts__release_parked();
        gts_pinned_counts before, after;
        gts_device_emulated_pinned_counts(&before);
        gts_storage_release(&m);
        gts_device_emulated_pinned_counts(&after);
        CHECK_INT_EQ(gts__release_parked(), parked + 1);
        CHECK_INT_EQ(after.frees, before.frees); /* the host side is held */
        void *other;
        if (CHECK_OK(gts_device_alloc(pinned, size, 0, &other, ERR))) {
            CHECK(other != host);
            memset(other, 0x55, (size_t)size);
            gate_end(&g, s); /* the copy runs */
            CHECK(!g.forced);
            bool intact = true;
            for (int64_t i = 0; i < size; ++i)
                intact = intact && ((unsigned char *)other)[i] == 0x55;
            CHECK(intact);
            gts_memory_stats stats;
            gts_memory_stats_get(&stats);
            CHECK_INT_EQ(gts__release_parked(), parked);
            gts_device_emulated_pinned_counts(&after);
            CHECK_INT_EQ(after.frees, before.frees + 1);
            gts_device_free(pinned, other, size);
        }
    }
    gate_end(&g, s);
    gts_set_pinned_host_sides(pinned_sides);
    gts_device_stream_destroy(emu, s);
}

/* ---- many rounds, with the device's own delays -------------------------------------------- */

static void test_rounds(const gts_device_ops *dev, int rounds)
{
    enum { STREAMS = 2 };
    gts_stream streams[STREAMS];
    for (int i = 0; i < STREAMS; ++i)
        if (!CHECK_OK(gts_device_stream_create(dev, &streams[i], ERR)))
            return;
    const int64_t n = 4099;
    int64_t wrong = 0;
    for (int r = 0; r < rounds; ++r) {
        gts_storage a, b;
        if (!make(dev, n, 0, &a))
            break;
        fill_on(&a, -1.0, streams[r % STREAMS]);
        fill_on(&a, -2.0, streams[(r + 1) % STREAMS]);
        gts_storage_release(&a);
        if (!make(dev, n, 0, &b))
            break;
        write_pattern(&b, n, (double)r);
        wrong += !reads_pattern(&b, n, (double)r);
        gts_storage_release(&b);
    }
    CHECK_INT_EQ(wrong, 0);
    for (int i = 0; i < STREAMS; ++i)
        gts_device_stream_destroy(dev, streams[i]);
    /* the work done, sweeps free what is parked (the fake driver's events
     * read as pending for a few queries more, and a sweep queries the
     * oldest parked buffers only) */
    gts_memory_stats stats;
    CHECK_OK(gts_device_synchronize(dev, NULL, ERR));
    for (int i = 0; i < 100000 && gts__release_parked() > 0; ++i)
        gts_memory_stats_get(&stats);
    CHECK_INT_EQ(gts__release_parked(), 0);
}

/* ---- the fake CUDA driver ------------------------------------------------------------------ */

/* A device-only buffer: its memory goes back in the legacy default
 * stream's order (cuMemFreeAsync there), after that stream waited for the
 * buffer's event: at once, with no host wait and nothing parked, and the
 * next allocation may take the block. */
static void test_fake_cuda_stream_ordered_free(const gts_device_ops *cuda, stat_fn stat)
{
    const int64_t n = 3001;
    gts_stream s;
    gts_storage a;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    if (make(cuda, n, GTS_ALLOC_ZERO, &a)) {
        fill_on(&a, 7.0, s); /* its event reads as pending for 6 queries */
        int64_t parked = gts__release_parked();
        long long waits = stat("event_waits"), frees = stat("pool_frees");
        long long stream_waits = stat("stream_event_waits");
        gts_storage_release(&a);
        CHECK_INT_EQ(gts__release_parked(), parked);
        CHECK_INT_EQ(stat("stream_event_waits"), stream_waits + 1); /* the legacy stream waits */
        CHECK_INT_EQ(stat("pool_frees"), frees + 1);                /* ... then frees */
        CHECK_INT_EQ(stat("event_waits"), waits);                   /* the host did not wait */
        /* the next owner of a block may be used on another stream: while
         * the free may still wait for the work, a new buffer's order
         * starts behind it, so that another stream waits; once the frees
         * are seen complete, nothing is recorded and nothing waits */
        gts_stream other;
        gts_storage b;
        void *data;
        if (CHECK_OK(gts_device_stream_create(cuda, &other, ERR))) {
            long long before = stat("stream_event_waits");
            if (make(cuda, n, 0, &b)) {
                CHECK_OK(gts_storage_access(&b, GTS_SIDE_DEVICE, GTS_ACCESS_READ, other, &data,
                                            ERR));
                CHECK_INT_EQ(stat("stream_event_waits"), before + 1);
                gts_storage_release(&b);
            }
            /* kept until the end: a release of one with its order pending
             * would be a free in stream order behind the work again */
            gts_storage kept[10];
            int made = 0;
            bool waited = true;
            for (; made < 10 && waited; ++made) { /* each allocation queries the frees */
                before = stat("stream_event_waits");
                if (!make(cuda, n, 0, &kept[made]))
                    break;
                CHECK_OK(gts_storage_access(&kept[made], GTS_SIDE_DEVICE, GTS_ACCESS_READ, other,
                                            &data, ERR));
                waited = stat("stream_event_waits") > before;
            }
            CHECK(!waited);
            while (made > 0)
                gts_storage_release(&kept[--made]);
            gts_device_stream_destroy(cuda, other);
        }
    }
    gts_device_stream_destroy(cuda, s);
}

/* One rank, periodic in I and J (every neighbour is itself), and the spec
 * of a device-only 6 x 5 field with a halo of 1 on it. */
static bool halo_field_spec(gts_partition *one, gts_storage_spec *spec)
{
    if (!CHECK_OK(gts_partition_init(one, 2, NULL, (int64_t[]){4, 3}, (int[]){1, 1},
                                     (bool[]){true, true}, 1, ERR)) ||
        !CHECK_OK(gts_storage_spec_init(spec, 2, (int64_t[]){6, 5}, F8, ERR)))
        return false;
    spec->has_dims = spec->has_halo = true;
    spec->dims[0] = GTS_DIM_I;
    spec->dims[1] = GTS_DIM_J;
    spec->halo[0] = spec->halo[1] = (gts_halo){1, 1};
    spec->managed = GTS_MANAGED_NONE;
    return true;
}

/* Halo messages made while a free in stream order may still wait for its
 * work: their blocks (device messages, staging) may be the freed ones, so
 * packing them on another stream waits for the frees first (one stream
 * wait more than the field's, which has no work pending). */
static void test_fake_cuda_halo_blocks(const gts_device_ops *cuda, stat_fn stat)
{
    gts_partition one;
    gts_storage_spec spec;
    gts_storage field, x;
    gts_stream s, other;
    void *data;
    if (!halo_field_spec(&one, &spec) ||
        !CHECK_OK(gts_storage_create_on(cuda, &spec, GTS_ALLOC_ZERO, &field, ERR)))
        return;
    /* the field's own order settled: the host waited for it */
    CHECK_OK(gts_storage_access(&field, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &data, ERR));
    if (CHECK_OK(gts_device_stream_create(cuda, &s, ERR)) &&
        CHECK_OK(gts_device_stream_create(cuda, &other, ERR))) {
        if (make(cuda, 4096, 0, &x)) { /* freed in stream order, its fill still pending */
            fill_on(&x, 1.0, s);
            gts_storage_release(&x);
        }
        gts_halo_plan *plan = NULL;
        gts_halo_messages *m = NULL;
        if (CHECK_OK(gts_halo_plan_create(&one, 0, 1, &field, &plan, ERR)) &&
            CHECK_OK(gts_halo_messages_create(plan, GTS_HALO_MEMORY_DEVICE, &m, ERR))) {
            long long before = stat("stream_event_waits");
            CHECK_OK(gts_halo_messages_pack_all_on(m, other, ERR));
            CHECK(stat("stream_event_waits") > before);
            CHECK_OK(gts_device_synchronize(cuda, other, ERR));
        }
        gts_halo_messages_destroy(m);
        gts_halo_plan_destroy(plan);
        gts_device_stream_destroy(cuda, other);
        gts_device_stream_destroy(cuda, s);
    }
    gts_storage_release(&field);
}

/* A pack or an unpack on a stream records its work once: one event for
 * the message block and the fields it copied on their GPU (one record per
 * field and one for the block before). */
static void test_fake_cuda_halo_one_record(const gts_device_ops *cuda, stat_fn stat)
{
    gts_partition one;
    gts_storage_spec spec;
    gts_storage fields[3];
    int made = 0;
    gts_stream s;
    if (!halo_field_spec(&one, &spec) || !CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    while (made < 3 && CHECK_OK(gts_storage_create_on(cuda, &spec, GTS_ALLOC_ZERO,
                                                      &fields[made], ERR)))
        ++made;
    gts_halo_plan *plan = NULL;
    gts_halo_messages *m = NULL;
    if (made == 3 && CHECK_OK(gts_halo_plan_create(&one, 0, 3, fields, &plan, ERR)) &&
        CHECK_OK(gts_halo_messages_create(plan, GTS_HALO_MEMORY_DEVICE, &m, ERR))) {
        /* a first round records the points its fields start from (their
         * zeros on the legacy stream, whose records are deferred until
         * something waits: stream_order.h) */
        CHECK_OK(gts_halo_messages_pack_all_on(m, s, ERR));
        CHECK_OK(gts_halo_messages_unpack_all_on(m, s, ERR));
        for (int round = 0; round < 2; ++round) {
            long long records = stat("event_records");
            CHECK_OK(gts_halo_messages_pack_all_on(m, s, ERR));
            CHECK_INT_EQ(stat("event_records"), records + 1);
            CHECK_OK(gts_halo_messages_unpack_all_on(m, s, ERR));
            CHECK_INT_EQ(stat("event_records"), records + 2);
        }
        void *data; /* the host waits for the fields' last work */
        for (int f = 0; f < 3; ++f)
            CHECK_OK(gts_storage_access(&fields[f], GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL,
                                        &data, ERR));
    }
    gts_halo_messages_destroy(m);
    gts_halo_plan_destroy(plan);
    for (int f = 0; f < made; ++f)
        gts_storage_release(&fields[f]);
    gts_device_stream_destroy(cuda, s);
}

/* A mirrored buffer (a pinned host side, which the host reuses out of any
 * stream's order) is parked instead: the release neither waits for the
 * event nor frees the blocks until a query says the work is done, and an
 * allocation meanwhile gets another block. */
static void test_fake_cuda_parked(const gts_device_ops *cuda, stat_fn stat)
{
    const int64_t n = 3001;
    gts_stream s;
    gts_storage a, b;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    if (make(cuda, n, GTS_ALLOC_ZERO | GTS_ALLOC_MIRRORED, &a)) {
        fill_on(&a, 7.0, s);
        void *block = device_data(&a);
        int64_t parked = gts__release_parked();
        long long waits = stat("event_waits"), frees = stat("pool_frees");
        gts_storage_release(&a);
        CHECK_INT_EQ(gts__release_parked(), parked + 1);
        if (make(cuda, n, GTS_ALLOC_MIRRORED, &b)) {
            CHECK(device_data(&b) != block); /* not reused: the work may still run */
            CHECK_INT_EQ(stat("pool_frees"), frees);
            gts_memory_stats stats;
            for (int i = 0; i < 10 && gts__release_parked() > parked; ++i)
                gts_memory_stats_get(&stats); /* sweeps: each queries the event */
            CHECK_INT_EQ(gts__release_parked(), parked);
            CHECK_INT_EQ(stat("pool_frees"), frees + 1); /* freed once it completed */
            CHECK_INT_EQ(stat("event_waits"), waits);    /* and nobody waited for it */
            gts_storage_release(&b);
        }
    }
    gts_device_stream_destroy(cuda, s);
}

/* Parking is bounded: beyond GTS__PARKED_COUNT buffers the oldest are
 * waited for (cuEventSynchronize); gts_cache_clear waits for them all. */
static void test_fake_bound(const gts_device_ops *cuda, stat_fn stat)
{
    gts_stream s;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    long long waits = stat("event_waits");
    int64_t most = 0;
    for (int i = 0; i < 3 * GTS__PARKED_COUNT; ++i) {
        gts_storage a;
        if (!make(cuda, 8, GTS_ALLOC_MIRRORED, &a))
            break;
        fill_on(&a, (double)i, s);
        gts_storage_release(&a);
        if (gts__release_parked() > most)
            most = gts__release_parked();
    }
    CHECK_INT_EQ(most, GTS__PARKED_COUNT);
    CHECK(stat("event_waits") > waits);
    gts_cache_clear();
    CHECK_INT_EQ(gts__release_parked(), 0);
    gts_device_stream_destroy(cuda, s);
}

/* gts_buffer_reuse_fn: the buffer in *ctx (a new reference), whatever is
 * asked (the test asks for what it holds). */
static gts_buffer *give_held(void *ctx, const gts_device_ops *device, int64_t size,
                             unsigned flags)
{
    (void)device;
    (void)size;
    (void)flags;
    return gts_buffer_retain(ctx);
}

/* A block reused while a fill on a stream may still run on it: no pool
 * allocation or free, and the new storage's accesses wait for the fill,
 * another stream's on the device, the host's on the host. */
static void test_fake_cuda_reused_block(const gts_device_ops *cuda, stat_fn stat)
{
    const int64_t n = 3001;
    gts_stream s, other;
    gts_storage_spec spec;
    gts_storage a, b;
    void *data;
    if (!CHECK_OK(gts_device_use_gpu(cuda, ERR)))
        return;
    if (CHECK_OK(gts_device_stream_create(cuda, &s, ERR)) &&
        CHECK_OK(gts_device_stream_create(cuda, &other, ERR)) &&
        CHECK_OK(gts_storage_spec_init(&spec, 1, &n, F8, ERR))) {
        spec.managed = GTS_MANAGED_NONE;
        spec.device = GTS_DEVICE_GPU;
        spec.has_device = true;
        gts_storage_spec again = spec;
        if (CHECK_OK(gts_storage_create_in_place(&spec, GTS_ALLOC_ZERO, &a, ERR))) {
            fill_on(&a, 7.0, s); /* its event reads as pending for 6 queries */
            gts_buffer *block = gts_buffer_retain(a.buffer);
            long long allocs = stat("pool_allocs"), frees = stat("pool_frees");
            long long waits = stat("event_waits"), stream_waits = stat("stream_event_waits");
            gts_storage_release(&a);
            CHECK(gts_buffer_reusable(block));
            if (CHECK_OK(gts_storage_create_reusing(&again, 0, give_held, block, &b, ERR))) {
                CHECK(b.buffer == block);
                CHECK_INT_EQ(stat("pool_allocs"), allocs);
                CHECK_INT_EQ(stat("pool_frees"), frees);
                CHECK_OK(gts_storage_access(&b, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE, other, &data,
                                            ERR));
                CHECK_INT_EQ(stat("stream_event_waits"), stream_waits + 1); /* `other` waits */
                CHECK_OK(gts_storage_access_end(&b, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE, other,
                                                ERR));
                CHECK_INT_EQ(stat("event_waits"), waits); /* the host did not */
                CHECK_OK(gts_storage_access(&b, GTS_SIDE_DEVICE, GTS_ACCESS_READ, NULL, &data,
                                            ERR));
                CHECK_INT_EQ(stat("event_waits"), waits + 1); /* the host waits now */
                gts_storage_release(&b);
            }
            gts_buffer_release(block);
        }
        gts_device_stream_destroy(cuda, other);
    }
    gts_device_stream_destroy(cuda, s);
    CHECK_OK(gts_device_use_gpu(NULL, ERR));
}

int main(void)
{
    /* a fake driver's events stay pending for a few queries (read when it
     * loads, at the first CUDA call below) */
    if (!getenv("FAKE_CUDA"))
        setenv("FAKE_CUDA", "eventpending=6", 1);
    test_gated_device_block();
    test_gated_host_side();
    test_rounds(gts_device_emulated(), 300);
    const gts_device_ops *cuda;
    if (gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &cuda, NULL) == GTS_OK) {
        printf("and on %s\n", cuda->name);
        stat_fn stat = fake_stat();
        if (stat) {
            test_fake_cuda_stream_ordered_free(cuda, stat);
            test_fake_cuda_halo_blocks(cuda, stat);
            test_fake_cuda_halo_one_record(cuda, stat);
            test_fake_cuda_parked(cuda, stat);
            test_fake_bound(cuda, stat);
            test_fake_cuda_reused_block(cuda, stat);
        }
        test_rounds(cuda, 100);
    }
    return check_summary("release_order");
}
