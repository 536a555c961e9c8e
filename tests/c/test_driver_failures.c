/* The stream order and the allocations when the CUDA driver fails
 * (src/stream_order.c, src/device_cuda_memory.c), on the fake driver, whose
 * failures on demand (fake_cuda_fail) reach the paths no GPU takes at will.
 * The rule checked: where an event cannot be made or recorded after work
 * was queued, the stream is synchronised instead (the work is complete and
 * needs no event); where a wait fails before work is queued, the caller
 * gets the driver's error and the buffer's order is left as it was (its
 * work still pending, waited for by the next access). Never a lost write,
 * a leak (ASan's run, the live buffers and events) or an order that claims
 * work completed that was not waited for.
 *
 * The fake driver completes work at once, so values alone cannot show a
 * missing wait; the checks count the driver calls instead (a fallback's
 * cuStreamSynchronize, no cuEventRecord) and arm cuEventSynchronize to
 * prove that a later access waits for nothing. Without the fake driver
 * (GTSTORE_LIBCUDA unset) the test prints "skipped:". */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_cuda_stat.h"
#include "gtstore/access.h"
#include "gtstore/buffer.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"

#define N 64
enum { OUT_OF_MEMORY = 2, LAUNCH_FAILED = 719 };

static const gts_device_ops *cuda;
static stat_fn stat;
static fail_fn fail;
static gts_stream legacy;

static int64_t live_buffers(void)
{
    gts_memory_stats s;
    gts_memory_stats_get(&s);
    return s.live_buffers;
}

/* A storage of N doubles on the GPU with `flags` (gts_storage_create_on's
 * answer, unchecked). */
static int create(unsigned flags, gts_storage *out)
{
    gts_storage_spec spec;
    int64_t shape[1] = {N};
    const gts_dtype f8 = {GTS_KIND_FLOAT, 8};
    check_clear_error();
    int rc = gts_storage_spec_init(&spec, 1, shape, f8, ERR);
    return rc ? rc : gts_storage_create_on(cuda, &spec, flags, out, ERR);
}

static bool make(bool mirrored, gts_storage *out)
{
    return CHECK_OK(create(mirrored ? GTS_ALLOC_MIRRORED : 0, out));
}

/* `value` everywhere, on the device on `stream`, through the access verb
 * (the record deferred on the legacy stream). */
static bool device_write(gts_storage *st, double value, gts_stream stream)
{
    void *data;
    if (!CHECK_OK(gts_storage_access(st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, stream, &data,
                                     ERR)))
        return false;
    bool ok = CHECK_OK(gts_device_fill(cuda, data, 1, st->shape, st->strides, 8, &value, stream,
                                       ERR));
    return CHECK_OK(gts_storage_access_end(st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, stream,
                                           ERR)) &&
           ok;
}

/* Whether the host side of a mirrored storage reads `value` everywhere. */
static bool host_reads(gts_storage *st, double value)
{
    void *data;
    if (!CHECK_OK(gts_storage_access(st, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &data, ERR)))
        return false;
    int64_t wrong = 0;
    for (int64_t i = 0; i < N; ++i)
        wrong += ((double *)data)[i] != value;
    return CHECK_INT_EQ(wrong, 0);
}

/* The host waits for nothing on the buffer: nothing is pending (a wait would
 * call cuEventSynchronize or synchronise a stream, and the first fails). */
static void nothing_pending(gts_storage *st)
{
    long long injected = stat("injected"), syncs = stat("stream_syncs");
    fail("cuEventSynchronize", LAUNCH_FAILED, 0);
    CHECK_OK(gts_buffer_order_wait(st->buffer, GTS_SIDE_HOST, NULL, ERR));
    fail("cuEventSynchronize", 0, 0);
    CHECK_INT_EQ(stat("injected"), injected);
    CHECK_INT_EQ(stat("stream_syncs"), syncs);
}

/* ---- a deferred record that cannot be made -------------------------------------------- */

/* A write on the legacy stream, whose event is recorded when the host reads:
 * the record fails, the host synchronises the stream instead, reads the
 * write, and the order is complete. */
static void test_record_fails_at_host_wait(void)
{
    gts_storage f;
    if (!make(true, &f))
        return;
    long long records = stat("event_records");
    if (device_write(&f, 7.0, legacy) && CHECK_INT_EQ(stat("event_records"), records)) {
        long long syncs = stat("stream_syncs"), injected = stat("injected");
        CHECK_INT_EQ(fail("cuEventRecord", OUT_OF_MEMORY, 1), 0);
        host_reads(&f, 7.0);
        CHECK_INT_EQ(stat("injected"), injected + 1);
        CHECK_INT_EQ(stat("event_records"), records); /* none made */
        CHECK_INT_EQ(stat("stream_syncs"), syncs + 1);  /* instead */
        nothing_pending(&f);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
}

/* The same for the event of the whole pool: cuEventCreate fails, the
 * deferred record falls back to the stream's synchronisation too. */
static void test_event_create_fails_at_host_wait(void)
{
    gts_storage f;
    if (!make(true, &f))
        return;
    gts_cache_clear(); /* no pooled event: the record must make one */
    long long events = stat("events"), live = stat("live_events");
    if (device_write(&f, 3.0, legacy)) {
        long long syncs = stat("stream_syncs");
        fail("cuEventCreate", OUT_OF_MEMORY, 0);
        host_reads(&f, 3.0);
        CHECK(stat("stream_syncs") > syncs);
        CHECK_INT_EQ(stat("events"), events);
        nothing_pending(&f);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
    gts_cache_clear();
    CHECK_INT_EQ(stat("live_events"), live);
}

/* Another stream waits for a write deferred on the legacy stream: the
 * record fails (every time), so the host waits instead and the other
 * stream needs no wait; then a record on the other stream whose own wait
 * cannot be made synchronises both streams. */
static void test_record_fails_at_cross_stream_wait(void)
{
    gts_storage f;
    gts_stream other;
    if (!make(false, &f))
        return;
    if (!CHECK_OK(gts_device_stream_create(cuda, &other, ERR))) {
        gts_storage_release(&f);
        return;
    }
    if (device_write(&f, 5.0, legacy)) {
        long long syncs = stat("stream_syncs"), waits = stat("stream_event_waits");
        long long records = stat("event_records");
        fail("cuEventRecord", LAUNCH_FAILED, 0);
        CHECK_OK(gts_buffer_order_wait(f.buffer, GTS_SIDE_DEVICE, other, ERR));
        CHECK_INT_EQ(stat("stream_syncs"), syncs + 1);
        CHECK_INT_EQ(stat("stream_event_waits"), waits);
        nothing_pending(&f);
        /* pending on the legacy stream again, then recorded on `other`:
           its wait for the legacy stream's point cannot be recorded, so
           both streams are synchronised and the record succeeds */
        if (device_write(&f, 6.0, legacy)) {
            syncs = stat("stream_syncs");
            CHECK_OK(gts_buffer_order_record(f.buffer, other, ERR));
            CHECK_INT_EQ(stat("stream_syncs"), syncs + 2);
            nothing_pending(&f);
        }
        CHECK_INT_EQ(stat("event_records"), records);
        fail("cuEventRecord", 0, 0);
        double back[N];
        if (CHECK_OK(gts_device_copy_to_host(cuda, back, gts_buffer_data(f.buffer),
                                             (int64_t)sizeof back, NULL, ERR)))
            CHECK(back[0] == 6.0 && back[N - 1] == 6.0);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
    gts_device_stream_destroy(cuda, other);
}

/* ---- waits and records on streams that fail ------------------------------------------- */

/* A record on a stream of its own whose event cannot be made: the stream
 * is synchronised instead; nothing pending, no event leaked. */
static void test_event_create_fails_at_record(void)
{
    gts_storage f;
    gts_stream s;
    if (!make(true, &f))
        return;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR))) {
        gts_storage_release(&f);
        return;
    }
    gts_cache_clear();
    long long live = stat("live_events"), syncs = stat("stream_syncs");
    fail("cuEventCreate", OUT_OF_MEMORY, 0);
    if (device_write(&f, 4.0, s)) {
        CHECK_INT_EQ(stat("stream_syncs"), syncs + 1);
        CHECK_INT_EQ(stat("live_events"), live);
        nothing_pending(&f);
        host_reads(&f, 4.0);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
    gts_device_stream_destroy(cuda, s);
    gts_cache_clear();
    CHECK_INT_EQ(stat("live_events"), live);
}

/* Two buffers recorded together on a stream, then again (their shared
 * event recorded again in place), and the second record fails: the stream
 * is synchronised, both orders are complete, and their event is neither
 * lost nor leaked. Where the synchronisation fails too, the record's error
 * is returned, and a held write still ends. */
static void test_shared_record_fails(void)
{
    gts_storage f[2];
    gts_stream s;
    if (!make(true, &f[0])) /* mirrored: its writes in flight are counted */
        return;
    if (!make(false, &f[1])) {
        gts_storage_release(&f[0]);
        return;
    }
    if (CHECK_OK(gts_device_stream_create(cuda, &s, ERR))) {
        gts_buffer *both[] = {f[0].buffer, f[1].buffer};
        gts_cache_clear();
        long long live = stat("live_events");
        CHECK_OK(gts_buffers_order_record(both, 2, s, ERR));
        CHECK_INT_EQ(stat("live_events"), live + 1);
        long long syncs = stat("stream_syncs"), injected = stat("injected");
        fail("cuEventRecord", LAUNCH_FAILED, 1);
        CHECK_OK(gts_buffers_order_record(both, 2, s, ERR));
        CHECK_INT_EQ(check_error.code, GTS_OK); /* a success leaves no message */
        CHECK_STR_EQ(check_error.message, "");
        CHECK_INT_EQ(stat("injected"), injected + 1);
        CHECK_INT_EQ(stat("stream_syncs"), syncs + 1);
        nothing_pending(&f[0]);
        nothing_pending(&f[1]);
        CHECK_INT_EQ(stat("live_events"), live + 1); /* still theirs */
        /* the record and the fallback fail: the error of the record */
        fail("cuEventRecord", LAUNCH_FAILED, 0);
        fail("cuStreamSynchronize", LAUNCH_FAILED, 1);
        void *data;
        if (CHECK_OK(gts_storage_access(&f[0], GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &data,
                                        ERR)))
            CHECK_FAILS(gts_storage_access_end(&f[0], GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s,
                                               ERR),
                        GTS_ENOTSUP, "cuEventRecord failed: CUDA_ERROR_LAUNCH_FAILED");
        CHECK_INT_EQ(gts_buffer_writes_in_flight(f[0].buffer), 0);
        fail(NULL, 0, 0);
        gts_device_stream_destroy(cuda, s);
        gts_storage_release(&f[0]);
        gts_storage_release(&f[1]);
        gts_cache_clear();
        CHECK_INT_EQ(stat("live_events"), live);
        return;
    }
    gts_storage_release(&f[0]);
    gts_storage_release(&f[1]);
}

/* A write recorded on one stream; another stream's wait for it fails
 * (cuStreamWaitEvent): before work, so the caller gets the driver's error
 * and queues nothing, and the write stays pending for the next access; a
 * record (after work) whose wait fails synchronises instead. */
static void test_stream_wait_fails(void)
{
    gts_storage f;
    gts_stream s1, s2;
    if (!make(true, &f))
        return;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s1, ERR))) {
        gts_storage_release(&f);
        return;
    }
    if (CHECK_OK(gts_device_stream_create(cuda, &s2, ERR))) {
        if (device_write(&f, 2.0, s1)) {
            fail("cuStreamWaitEvent", LAUNCH_FAILED, 0);
            CHECK_FAILS(gts_buffer_order_wait(f.buffer, GTS_SIDE_DEVICE, s2, ERR), GTS_ENOTSUP,
                        "cuStreamWaitEvent failed: CUDA_ERROR_LAUNCH_FAILED");
            void *data;
            CHECK_FAILS(gts_storage_access(&f, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s2,
                                           &data, ERR),
                        GTS_ENOTSUP, "cuStreamWaitEvent");
            CHECK_INT_EQ(gts_buffer_writes_in_flight(f.buffer), 0); /* nothing held */
            /* still pending: the host waits for the event */
            long long injected = stat("injected");
            fail("cuEventSynchronize", LAUNCH_FAILED, 1);
            CHECK_FAILS(gts_buffer_order_wait(f.buffer, GTS_SIDE_HOST, NULL, ERR), GTS_ENOTSUP,
                        "cuEventSynchronize");
            CHECK_INT_EQ(stat("injected"), injected + 1);
            /* a record on s2 (work queued there) cannot make s2 wait:
               both streams' work is waited for instead */
            long long syncs = stat("stream_syncs");
            CHECK_OK(gts_buffer_order_record(f.buffer, s2, ERR));
            CHECK_INT_EQ(stat("stream_syncs"), syncs + 1);
            fail("cuStreamWaitEvent", 0, 0);
            nothing_pending(&f);
            host_reads(&f, 2.0);
        }
        gts_device_stream_destroy(cuda, s2);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
    gts_device_stream_destroy(cuda, s1);
}

/* The host's wait for a write on a stream fails (cuEventSynchronize): the
 * read fails with the driver's error, copies nothing and holds nothing,
 * and the next read waits and sees the write. */
static void test_host_wait_fails(void)
{
    gts_storage f;
    gts_stream s;
    if (!make(true, &f))
        return;
    if (CHECK_OK(gts_device_stream_create(cuda, &s, ERR))) {
        if (device_write(&f, 9.0, s)) {
            long long dtoh = stat("dtoh");
            void *data;
            fail("cuEventSynchronize", LAUNCH_FAILED, 1);
            CHECK_FAILS(gts_storage_access(&f, GTS_SIDE_HOST, GTS_ACCESS_READ, NULL, &data, ERR),
                        GTS_ENOTSUP, "cuEventSynchronize failed: CUDA_ERROR_LAUNCH_FAILED");
            CHECK_INT_EQ(stat("dtoh"), dtoh);
            CHECK_INT_EQ(gts_buffer_sync_state(f.buffer), GTS_SYNC_DEVICE_DIRTY);
            CHECK_INT_EQ(gts_buffer_writes_in_flight(f.buffer), 0);
            host_reads(&f, 9.0);
        }
        gts_device_stream_destroy(cuda, s);
    }
    fail(NULL, 0, 0);
    gts_storage_release(&f);
}

/* A mirrored buffer released while its write on the legacy stream is
 * pending is parked; its deferred record cannot be made, so the sweeps'
 * queries see it pending, and gts_cache_clear waits for it by synchronising
 * the stream, then frees it. */
static void test_record_fails_at_release(void)
{
    int64_t live = live_buffers();
    gts_storage f;
    if (!make(true, &f))
        return;
    bool written = device_write(&f, 1.0, legacy);
    fail("cuEventRecord", OUT_OF_MEMORY, 0);
    gts_storage_release(&f);
    if (written) {
        CHECK_INT_EQ(live_buffers(), live + 1); /* parked: not seen complete */
        long long injected = stat("injected");
        gts_cache_clear(); /* the record tried once more, then the stream waited for */
        CHECK_INT_EQ(stat("injected"), injected + 1);
    }
    CHECK_INT_EQ(live_buffers(), live);
    fail(NULL, 0, 0);
}

/* ---- allocations -------------------------------------------------------------------------- */

/* cuMemAllocFromPoolAsync out of memory: retried once after the pool was
 * trimmed; failing again, a clear error and nothing left behind. Another
 * error is not retried. A new buffer's zeros that cannot be queued free the
 * buffer. */
static void test_pool_alloc_fails(void)
{
    int64_t live = live_buffers();
    long long allocs = stat("pool_allocs"), injected = stat("injected");
    gts_storage f;
    fail("cuMemAllocFromPoolAsync", OUT_OF_MEMORY, 0);
    CHECK_FAILS(create(0, &f), GTS_ENOMEM,
                "cuMemAllocFromPoolAsync failed: CUDA_ERROR_OUT_OF_MEMORY");
    CHECK_INT_EQ(stat("injected"), injected + 2);
    CHECK_INT_EQ(live_buffers(), live);
    fail("cuMemAllocFromPoolAsync", OUT_OF_MEMORY, 1); /* the retry succeeds */
    if (make(true, &f)) {
        CHECK_INT_EQ(stat("pool_allocs"), allocs + 1);
        gts_storage_release(&f);
    }
    fail("cuMemAllocFromPoolAsync", LAUNCH_FAILED, 1);
    CHECK_FAILS(create(0, &f), GTS_ENOTSUP, "CUDA_ERROR_LAUNCH_FAILED");
    CHECK_INT_EQ(stat("injected"), injected + 4);
    fail("cuMemsetD8Async", LAUNCH_FAILED, 1);
    CHECK_FAILS(create(GTS_ALLOC_ZERO, &f), GTS_ENOTSUP, "cuMemsetD8Async");
    CHECK_INT_EQ(live_buffers(), live);
    fail(NULL, 0, 0);
}

/* ---- the facility itself ------------------------------------------------------------------ */

static void test_fail_arguments(void)
{
    CHECK_INT_EQ(fail("cuNoSuchThing", 1, 0), -1);
    CHECK_INT_EQ(fail("cuEventRecord", 1, -1), -1);
    CHECK_INT_EQ(fail("cuEventRecord", 0, 0), 0); /* disarming what is not armed */
    /* eight functions at most are armed at once (none is called meanwhile) */
    static const char *const some[] = {"cuModuleLoadData", "cuMemHostRegister", "cuMemFree",
                                       "cuMemAlloc", "cuMemcpy", "cuMemsetD8", "cuMemsetD16",
                                       "cuMemsetD32", "cuMemsetD32Async"};
    for (int i = 0; i < 8; ++i)
        CHECK_INT_EQ(fail(some[i], OUT_OF_MEMORY, 0), 0);
    CHECK_INT_EQ(fail(some[8], OUT_OF_MEMORY, 0), -1);
    CHECK_INT_EQ(fail(some[0], OUT_OF_MEMORY, 3), 0); /* armed again in its place */
    CHECK_INT_EQ(fail(some[1], 0, 0), 0);
    CHECK_INT_EQ(fail(some[8], OUT_OF_MEMORY, 0), 0); /* in the place it left */
    CHECK_INT_EQ(fail(NULL, 0, 0), 0);
    /* the nth call fails once */
    gts_stream s;
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    long long injected = stat("injected");
    CHECK_INT_EQ(fail("cuStreamSynchronize", LAUNCH_FAILED, 2), 0);
    CHECK_OK(gts_device_synchronize(cuda, s, ERR));
    CHECK_FAILS(gts_device_synchronize(cuda, s, ERR), GTS_ENOTSUP, "cuStreamSynchronize");
    CHECK_OK(gts_device_synchronize(cuda, s, ERR));
    CHECK_INT_EQ(stat("injected"), injected + 1);
    gts_device_stream_destroy(cuda, s);
}

int main(void)
{
    if (!getenv("GTSTORE_LIBCUDA")) {
        printf("skipped: needs the fake CUDA driver (GTSTORE_LIBCUDA)\n");
        return check_summary("driver_failures");
    }
    /* the driver loads with the first device call */
    if (!CHECK_OK(gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &cuda, ERR)) ||
        !CHECK((stat = fake_stat()) != NULL) || !CHECK((fail = fake_fail()) != NULL) ||
        !CHECK((legacy = gts_device_legacy_stream(cuda)) != NULL))
        return check_summary("driver_failures");
    test_fail_arguments();
    test_record_fails_at_host_wait();
    test_event_create_fails_at_host_wait();
    test_record_fails_at_cross_stream_wait();
    test_event_create_fails_at_record();
    test_shared_record_fails();
    test_stream_wait_fails();
    test_host_wait_fails();
    test_record_fails_at_release();
    test_pool_alloc_fails();
    gts_cache_clear();
    return check_summary("driver_failures");
}
