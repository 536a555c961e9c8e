/* The stream order of buffers (gtstore/access.h, gtstore/sync.h) on the
 * asynchronous emulated device, whose streams run their work later on
 * threads of their own, after a random delay: a missing wait gives a wrong
 * value here.
 *
 * - A random sequence over several fields (mirrored and device-only) and
 *   views of them, on several streams and the default one: device fills
 *   and copies through the access verb, host writes and reads, syncs of
 *   either side, reads of the device side back on a stream. Every read is
 *   checked against a model: no write is lost and no read is stale.
 * - The same sequence with the waits of the stream order skipped
 *   (gts__order_skip_waits_for_testing): it must see a wrong value, which
 *   proves that the sequence detects a missing wait (argument "detector";
 *   its data races are intended, so the ThreadSanitizer run leaves it out).
 * - Writes held on the buffer (gts_buffer_write_begin, the work,
 *   gts_buffer_order_record, gts_buffer_write_end), seen by the host and
 *   other streams. The sequence also copies as the Python engine computes:
 *   the buffers of a call recorded together (gts_buffers_order_record, one
 *   event for all), and so does a record of more buffers than one batch.
 * - Threads, each with its own stream and rows of one shared mirrored
 *   field, writing on both sides and syncing the whole field, and copying
 *   their rows of the device-only field into it with one record for both
 *   buffers (so that the threads' records of the same buffers share and
 *   replace each other's events): none loses another's write.
 * - The sequence, the writes held and the threads again with the records
 *   of one stream deferred (gts__order_defer_for_testing), as they are on
 *   CUDA's legacy default stream: that stream's work gets its event only
 *   when something waits for it.
 * - Where a CUDA device is present (the fake driver in the c-fake-cuda
 *   suite), the sequence on it too: its events and stream waits; with the
 *   fake driver, a record of several buffers costs one cuEventRecord, a
 *   record again of the same buffers reuses their event, and a stream
 *   that waits for buffers recorded together waits once; on the legacy
 *   stream records cost no driver call until something waits. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "random.h"
#include "gtstore/access.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"
#include "fake_cuda_stat.h"
#include "stream_order.h" /* the test-only hook */

#define ROWS 8
#define COLS 16
#define FIELDS 4
#define STREAMS 3

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

typedef struct field {
    gts_storage whole;
    bool mirrored;
    double model[ROWS * COLS];
} field;

/* A run of the sequence: its device, streams (0: the default) and fields. */
typedef struct run {
    const gts_device_ops *dev;
    gts_stream streams[STREAMS + 1];
    field fields[FIELDS];
    double next; /* the value the next write writes */
    int64_t wrong;  /* elements read with another value than the model's */
} run;

/* A view: rows r0, r0 + rs, ... (nr of them) and columns alike. */
typedef struct view {
    int64_t r0, rs, nr, c0, cs, nc;
} view;

/* A field of zeros; `zeroed` false: of garbage, made without device work
 * (on a CUDA GPU zeros are a memset queued with an event of their own). */
static bool make_field_zeroed(const gts_device_ops *dev, bool mirrored, bool zeroed, field *f)
{
    gts_storage_spec spec;
    int64_t shape[2] = {ROWS, COLS};
    if (!CHECK_OK(gts_storage_spec_init(&spec, 2, shape, F8, ERR)))
        return false;
    f->mirrored = mirrored;
    memset(f->model, 0, sizeof f->model);
    unsigned flags = (zeroed ? GTS_ALLOC_ZERO : 0) | (mirrored ? GTS_ALLOC_MIRRORED : 0);
    return CHECK_OK(gts_storage_create_on(dev, &spec, flags, &f->whole, ERR)) &&
           CHECK(gts_buffer_mirrored(f->whole.buffer) == mirrored);
}

static bool make_field(const gts_device_ops *dev, bool mirrored, field *f)
{
    return make_field_zeroed(dev, mirrored, true, f);
}

static view random_view(int64_t row_first, int64_t row_count)
{
    view v;
    v.rs = 1 + rnd(2);
    v.r0 = row_first + rnd(row_count);
    v.nr = 1 + rnd((row_first + row_count - 1 - v.r0) / v.rs + 1);
    v.cs = 1 + rnd(3);
    v.c0 = rnd(COLS);
    v.nc = 1 + rnd((COLS - 1 - v.c0) / v.cs + 1);
    return v;
}

static bool make_view(const field *f, view v, gts_storage *out)
{
    gts_storage_view(&f->whole, out);
    return CHECK_OK(gts_storage_slice(out, 0, v.r0, v.rs, v.nr, ERR)) &&
           CHECK_OK(gts_storage_slice(out, 1, v.c0, v.cs, v.nc, ERR));
}

static double *model_at(field *f, view v, int64_t i, int64_t j)
{
    return &f->model[(v.r0 + i * v.rs) * COLS + v.c0 + j * v.cs];
}

/* ---- the operations, each through the access verb ---------------------------------- */

static void device_fill(run *r, field *f, view v, gts_stream s)
{
    gts_storage st;
    void *data;
    if (!make_view(f, v, &st))
        return;
    double value = r->next++;
    if (CHECK_OK(gts_storage_access(&st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &data, ERR))) {
        CHECK_OK(gts_device_fill(r->dev, data, 2, st.shape, st.strides, 8, &value, s, ERR));
        CHECK_OK(gts_storage_access_end(&st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, ERR));
        for (int64_t i = 0; i < v.nr; ++i)
            for (int64_t j = 0; j < v.nc; ++j)
                *model_at(f, v, i, j) = value;
    }
    gts_storage_release(&st);
}

/* dst's view = src's view of the same shape, on the device. */
static void device_copy(run *r, field *dst, view dv, field *src, view sv, gts_stream s)
{
    gts_storage d, c;
    void *to, *from;
    if (!make_view(dst, dv, &d) || !make_view(src, sv, &c)) {
        gts_storage_release(&d);
        return;
    }
    if (CHECK_OK(gts_storage_access(&c, GTS_SIDE_DEVICE, GTS_ACCESS_READ, s, &from, ERR))) {
        if (CHECK_OK(gts_storage_access(&d, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &to,
                                        ERR))) {
            CHECK_OK(gts_device_copy(r->dev, to, d.strides, from, c.strides, 2, d.shape, 8, s,
                                     ERR));
            CHECK_OK(gts_storage_access_end(&d, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, ERR));
            for (int64_t i = 0; i < dv.nr; ++i)
                for (int64_t j = 0; j < dv.nc; ++j)
                    *model_at(dst, dv, i, j) = *model_at(src, sv, i, j);
        }
        CHECK_OK(gts_storage_access_end(&c, GTS_SIDE_DEVICE, GTS_ACCESS_READ, s, ERR));
    }
    gts_storage_release(&d);
    gts_storage_release(&c);
}

/* The same copy as the Python extension's engine computes a ufunc: the
 * input synced and ordered, the output's write held through the buffer
 * verbs, then one record for the call's buffers (listed with a repeat, as
 * an output that is also an input would be). */
static void device_copy_one_record(run *r, field *dst, view dv, field *src, view sv,
                                   gts_stream s)
{
    gts_storage d, c;
    if (!make_view(dst, dv, &d) || !make_view(src, sv, &c)) {
        gts_storage_release(&d);
        return;
    }
    gts_buffer *to = d.buffer, *from = c.buffer;
    if (CHECK_OK(gts_buffer_sync(from, GTS_SIDE_DEVICE, false, s, ERR)) &&
        CHECK_OK(gts_buffer_order_wait(from, GTS_SIDE_DEVICE, s, ERR)) &&
        CHECK_OK(gts_buffer_write_begin(to, GTS_SIDE_DEVICE, s, ERR))) {
        CHECK_OK(gts_device_copy(r->dev, (char *)gts_buffer_data(to) + d.offset, d.strides,
                                 (char *)gts_buffer_data(from) + c.offset, c.strides, 2, d.shape,
                                 8, s, ERR));
        gts_buffer *const call[] = {to, from, to};
        CHECK_OK(gts_buffers_order_record(call, 3, s, ERR));
        CHECK_OK(gts_buffer_write_end(to, ERR));
        for (int64_t i = 0; i < dv.nr; ++i)
            for (int64_t j = 0; j < dv.nc; ++j)
                *model_at(dst, dv, i, j) = *model_at(src, sv, i, j);
    }
    gts_storage_release(&d);
    gts_storage_release(&c);
}

static double *element(void *element0, const gts_storage *st, int64_t i, int64_t j)
{
    return (double *)((char *)element0 + i * st->strides[0] + j * st->strides[1]);
}

static void host_write(run *r, field *f, view v)
{
    gts_storage st;
    void *data;
    if (!make_view(f, v, &st))
        return;
    if (CHECK_OK(gts_storage_access(&st, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, &data, ERR))) {
        for (int64_t i = 0; i < v.nr; ++i)
            for (int64_t j = 0; j < v.nc; ++j)
                *element(data, &st, i, j) = *model_at(f, v, i, j) = r->next++;
        CHECK_OK(gts_storage_access_end(&st, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, ERR));
    }
    gts_storage_release(&st);
}

/* Counts the elements of rows [first, first + count) that differ. */
static int64_t compare(const double *got, const field *f, int64_t first, int64_t count)
{
    int64_t wrong = 0;
    for (int64_t k = first * COLS; k < (first + count) * COLS; ++k)
        wrong += got[k] != f->model[k];
    return wrong;
}

/* Rows [first, first + count) of side `side` read (the device side back
 * on stream `s`, then synchronised: what a kernel on `s` would read) and
 * compared with the model: the wrong elements, or -1 with `err` on failure.
 * Only those rows are touched. `access` is GTS_ACCESS_READ, or for threads
 * GTS_ACCESS_WRITE_HELD: a read is not held, and a sync by another thread
 * may rewrite the bytes it reads meanwhile (with the same values, but a
 * data race all the same, which ThreadSanitizer reports); a held access
 * makes the syncs wait. No CHECK: threads call it. */
static int64_t read_side(const gts_device_ops *dev, field *f, gts_side side, gts_access access,
                         int64_t first, int64_t count, gts_stream s, gts_error *err)
{
    double got[ROWS * COLS];
    char *data;
    if (gts_storage_access(&f->whole, side, access, s, (void **)&data, err))
        return -1;
    size_t offset = (size_t)(first * COLS) * sizeof *got;
    size_t bytes = (size_t)(count * COLS) * sizeof *got;
    int rc = side == GTS_SIDE_HOST
                 ? (memcpy((char *)got + offset, data + offset, bytes), GTS_OK)
                 : gts_device_copy_to_host(dev, (char *)got + offset, data + offset,
                                           (int64_t)bytes, s, err);
    if (gts_storage_access_end(&f->whole, side, access, s, rc ? NULL : err) && !rc)
        rc = err->code;
    if (!rc && side == GTS_SIDE_DEVICE)
        rc = gts_device_synchronize(dev, s, err);
    return rc ? -1 : compare(got, f, first, count);
}

static int64_t host_read(field *f, int64_t first, int64_t count, gts_stream s)
{
    int64_t wrong = read_side(NULL, f, GTS_SIDE_HOST, GTS_ACCESS_READ, first, count, s, ERR);
    CHECK_OK(wrong < 0 ? check_error.code : GTS_OK);
    return wrong < 0 ? 0 : wrong;
}

static int64_t device_read(const gts_device_ops *dev, field *f, int64_t first, int64_t count,
                           gts_stream s)
{
    int64_t wrong = read_side(dev, f, GTS_SIDE_DEVICE, GTS_ACCESS_READ, first, count, s, ERR);
    CHECK_OK(wrong < 0 ? check_error.code : GTS_OK);
    return wrong < 0 ? 0 : wrong;
}

/* ---- the random sequence ------------------------------------------------------------- */

/* The stream whose records are deferred while it is set: the runs use it
 * as their first stream, and never destroy it (work may be pending on it
 * without an event until the process ends). */
static gts_stream deferred;

static bool run_open(run *r, const gts_device_ops *dev)
{
    memset(r, 0, sizeof *r);
    r->dev = dev;
    r->next = 1;
    for (int k = 1; k <= STREAMS; ++k)
        if (k == 1 && deferred)
            r->streams[k] = deferred;
        else if (!CHECK_OK(gts_device_stream_create(dev, &r->streams[k], ERR)))
            return false;
    for (int k = 0; k < FIELDS; ++k)
        if (!make_field(dev, k != FIELDS - 1, &r->fields[k])) /* the last: device only */
            return false;
    return true;
}

static void run_close(run *r)
{
    for (int k = 0; k < FIELDS; ++k)
        gts_storage_release(&r->fields[k].whole);
    for (int k = 1; k <= STREAMS; ++k)
        if (r->streams[k] != deferred)
            gts_device_stream_destroy(r->dev, r->streams[k]);
}

static void step(run *r)
{
    field *f = &r->fields[rnd(FIELDS)];
    gts_stream s = r->streams[rnd(STREAMS + 1)];
    view v = random_view(0, ROWS);
    switch (rnd(6)) {
    case 0:
        device_fill(r, f, v, s);
        break;
    case 1: { /* from another field, the same shape elsewhere */
        field *src = &r->fields[(f - r->fields + 1 + rnd(FIELDS - 1)) % FIELDS];
        view sv = v;
        sv.r0 = rnd(ROWS - (v.nr - 1) * v.rs);
        sv.c0 = rnd(COLS - (v.nc - 1) * v.cs);
        if (rnd(2))
            device_copy(r, f, v, src, sv, s);
        else
            device_copy_one_record(r, f, v, src, sv, s);
        break;
    }
    case 2:
        if (f->mirrored)
            host_write(r, f, v);
        break;
    case 3:
        if (f->mirrored)
            r->wrong += host_read(f, 0, ROWS, s);
        break;
    case 4:
        r->wrong += device_read(r->dev, f, 0, ROWS, s);
        break;
    default:
        /* forced only where both sides agree: a forced sync overwrites
           the other side's writes, as it says */
        CHECK_OK(gts_buffer_sync(f->whole.buffer, rnd(2) ? GTS_SIDE_HOST : GTS_SIDE_DEVICE,
                                 rnd(4) == 0 && gts_buffer_sync_state(f->whole.buffer) ==
                                                    GTS_SYNC_CLEAN,
                                 s, ERR));
        break;
    }
}

/* `steps` random operations, then every field read on both sides; returns
 * the wrong elements seen. */
static int64_t random_sequence(const gts_device_ops *dev, int steps)
{
    run r;
    if (run_open(&r, dev)) {
        for (int i = 0; i < steps; ++i)
            step(&r);
        for (int k = 0; k < FIELDS; ++k) {
            field *f = &r.fields[k];
            if (f->mirrored)
                r.wrong += host_read(f, 0, ROWS, NULL);
            r.wrong += device_read(dev, f, 0, ROWS, NULL);
        }
    }
    run_close(&r);
    return r.wrong;
}

static void test_random_sequence(const gts_device_ops *dev, int steps)
{
    for (int round = 0; round < 4; ++round)
        CHECK_INT_EQ(random_sequence(dev, steps), 0);
}

/* Without the waits the same sequence must go wrong (at least once in a
 * few tries: the delays are random). */
static void test_detector(void)
{
    gts__order_skip_waits_for_testing(true);
    int64_t wrong = 0;
    for (int round = 0; round < 20 && wrong == 0; ++round)
        wrong += random_sequence(gts_device_emulated(), 300);
    gts__order_skip_waits_for_testing(false);
    printf("without the waits: %lld wrong elements\n", (long long)wrong);
    CHECK(wrong > 0);
    /* and with them again, right */
    CHECK_INT_EQ(random_sequence(gts_device_emulated(), 300), 0);
}

/* ---- threads: rows of one mirrored field each, a stream each ---------------------------- */

#define THREADS 4
#define ROWS_EACH (ROWS / THREADS)

typedef struct worker {
    run *shared;
    int index;
    gts_stream stream;
    uint64_t seed;
    double next;
    int64_t wrong;
} worker;

static uint64_t worker_random(worker *w, uint64_t n)
{
    w->seed ^= w->seed << 13;
    w->seed ^= w->seed >> 7;
    w->seed ^= w->seed << 17;
    return w->seed % n;
}

/* A copy of elements `v` (one row) of the device-only field `from` into
 * the same elements of `to` on stream `s`, as the Python engine computes:
 * the buffers recorded with one event (the threads' calls on the same
 * buffers then share and replace each other's events). */
static int thread_copy(const gts_device_ops *dev, field *to, field *from, view v, gts_stream s,
                       gts_error *err)
{
    gts_storage d, c;
    gts_storage_view(&to->whole, &d);
    gts_storage_view(&from->whole, &c);
    gts_buffer *const call[] = {d.buffer, c.buffer};
    int rc = gts_storage_slice(&d, 0, v.r0, 1, 1, err);
    if (!rc && !(rc = gts_storage_slice(&d, 1, v.c0, 1, v.nc, err)) &&
        !(rc = gts_storage_slice(&c, 0, v.r0, 1, 1, err)) &&
        !(rc = gts_storage_slice(&c, 1, v.c0, 1, v.nc, err)) &&
        !(rc = gts_buffer_sync(c.buffer, GTS_SIDE_DEVICE, false, s, err)) &&
        !(rc = gts_buffer_write_begin(d.buffer, GTS_SIDE_DEVICE, s, err))) {
        rc = gts_device_copy(dev, (char *)gts_buffer_data(d.buffer) + d.offset, d.strides,
                             (char *)gts_buffer_data(c.buffer) + c.offset, c.strides, 2, d.shape,
                             8, s, err);
        int record = gts_buffers_order_record(call, 2, s, rc ? NULL : err);
        rc = rc ? rc : record;
        gts_buffer_write_end(d.buffer, NULL);
    }
    gts_storage_release(&d);
    gts_storage_release(&c);
    return rc;
}

static void *thread_steps(void *arg)
{
    worker *w = arg;
    field *f = &w->shared->fields[0];
    field *g = &w->shared->fields[FIELDS - 1]; /* device only */
    const gts_device_ops *dev = w->shared->dev;
    int64_t first = w->index * ROWS_EACH;
    gts_error err;
    for (int i = 0; i < 150; ++i) {
        gts_stream s = worker_random(w, 4) ? w->stream : NULL;
        view v = {first + (int64_t)worker_random(w, ROWS_EACH), 1, 1,
                  (int64_t)worker_random(w, COLS), 1, 1};
        v.nc = 1 + (int64_t)worker_random(w, (uint64_t)(COLS - v.c0));
        gts_storage st;
        gts_storage_view(&f->whole, &st);
        void *data;
        bool ok = gts_storage_slice(&st, 0, v.r0, 1, 1, &err) == GTS_OK &&
                  gts_storage_slice(&st, 1, v.c0, 1, v.nc, &err) == GTS_OK;
        double value = w->next;
        w->next += 1;
        bool wrote = false;
        switch (worker_random(w, 6)) {
        case 0: /* a device write of its own elements */
            ok = ok && gts_storage_access(&st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &data,
                                          &err) == GTS_OK;
            ok = ok && gts_device_fill(dev, data, 2, st.shape, st.strides, 8, &value, s, &err) ==
                           GTS_OK;
            ok = ok && gts_storage_access_end(&st, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s,
                                              &err) == GTS_OK;
            wrote = true;
            break;
        case 1: /* a host write */
            ok = ok && gts_storage_access(&st, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, &data,
                                          &err) == GTS_OK;
            for (int64_t j = 0; ok && j < v.nc; ++j)
                *element(data, &st, 0, j) = value;
            ok = ok && gts_storage_access_end(&st, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL,
                                              &err) == GTS_OK;
            wrote = true;
            break;
        case 2: /* the whole field synced, on its stream */
            ok = ok && gts_buffer_sync(f->whole.buffer, worker_random(w, 2) ? GTS_SIDE_HOST
                                                                            : GTS_SIDE_DEVICE,
                                       false, s, &err) == GTS_OK;
            break;
        case 4: { /* its elements of the device-only field filled */
            gts_storage gs;
            gts_storage_view(&g->whole, &gs);
            ok = ok && gts_storage_slice(&gs, 0, v.r0, 1, 1, &err) == GTS_OK &&
                 gts_storage_slice(&gs, 1, v.c0, 1, v.nc, &err) == GTS_OK &&
                 gts_storage_access(&gs, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &data,
                                    &err) == GTS_OK;
            ok = ok && gts_device_fill(dev, data, 2, gs.shape, gs.strides, 8, &value, s, &err) ==
                           GTS_OK;
            ok = ok && gts_storage_access_end(&gs, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s,
                                              &err) == GTS_OK;
            for (int64_t j = 0; ok && j < v.nc; ++j)
                g->model[v.r0 * COLS + v.c0 + j] = value;
            gts_storage_release(&gs);
            break;
        }
        case 5: /* ... copied into the shared field */
            ok = ok && thread_copy(dev, f, g, v, s, &err) == GTS_OK;
            for (int64_t j = 0; ok && j < v.nc; ++j)
                f->model[v.r0 * COLS + v.c0 + j] = g->model[v.r0 * COLS + v.c0 + j];
            break;
        default: { /* its rows read on either side */
            gts_side side = worker_random(w, 2) ? GTS_SIDE_HOST : GTS_SIDE_DEVICE;
            int64_t wrong =
                ok ? read_side(dev, f, side, GTS_ACCESS_WRITE_HELD, first, ROWS_EACH, s, &err) : 0;
            ok = wrong >= 0;
            w->wrong += ok ? wrong : 0;
            break;
        }
        }
        if (ok && wrote) /* its own elements: no other thread reads this part of the model */
            for (int64_t j = 0; j < v.nc; ++j)
                f->model[v.r0 * COLS + v.c0 + j] = value;
        if (!ok)
            fprintf(stderr, "thread %d: %s\n", w->index, err.message);
        w->wrong += !ok;
        gts_storage_release(&st);
    }
    return NULL;
}

/* Each thread's rows of field 0, and of the device-only field copied into
 * it, on its own stream (and the default one); every thread syncs the
 * whole field, so each sync moves the others' writes too. */
static void test_threads(const gts_device_ops *dev)
{
    run r;
    pthread_t threads[THREADS];
    worker workers[THREADS];
    if (run_open(&r, dev)) {
        int started = 0;
        for (int t = 0; t < THREADS; ++t) {
            workers[t] = (worker){&r, t, r.streams[1 + t % STREAMS], 0x1234567u * (t + 1),
                                  1e6 * (t + 1), 0};
            if (t >= STREAMS && !CHECK_OK(gts_device_stream_create(dev, &workers[t].stream, ERR)))
                break;
            if (!CHECK(pthread_create(&threads[t], NULL, thread_steps, &workers[t]) == 0))
                break;
            ++started;
        }
        int64_t wrong = 0;
        for (int t = 0; t < started; ++t) {
            pthread_join(threads[t], NULL);
            wrong += workers[t].wrong;
        }
        CHECK_INT_EQ(wrong, 0);
        /* and at the end, every row on both sides */
        CHECK_INT_EQ(host_read(&r.fields[0], 0, ROWS, NULL), 0);
        CHECK_INT_EQ(device_read(dev, &r.fields[0], 0, ROWS, NULL), 0);
        CHECK_INT_EQ(device_read(dev, &r.fields[FIELDS - 1], 0, ROWS, NULL), 0);
        for (int t = STREAMS; t < started; ++t)
            gts_device_stream_destroy(dev, workers[t].stream);
    }
    run_close(&r);
}

/* Writes held on the buffer (as the Python extension holds its outputs):
 * gts_buffer_write_begin, work on a stream, gts_buffer_order_record, then
 * gts_buffer_write_end; the host and other streams then see the work. */
static void test_buffer_level(const gts_device_ops *dev)
{
    run r;
    if (run_open(&r, dev)) {
        field *f = &r.fields[0];
        gts_buffer *b = f->whole.buffer;
        for (int round = 0; round < 40; ++round) {
            gts_stream s = r.streams[1 + round % STREAMS];
            double value = round + 1;
            if (!CHECK_OK(gts_buffer_write_begin(b, GTS_SIDE_DEVICE, s, ERR)))
                break;
            CHECK_OK(gts_device_fill(dev, gts_buffer_data(b), 2, f->whole.shape,
                                     f->whole.strides, 8, &value, s, ERR));
            CHECK_OK(gts_buffer_order_record(b, s, ERR));
            CHECK_OK(gts_buffer_write_end(b, ERR));
            for (int k = 0; k < ROWS * COLS; ++k)
                f->model[k] = value;
            if (round % 2)
                CHECK_INT_EQ(device_read(dev, f, 0, ROWS, r.streams[1 + (round + 1) % STREAMS]),
                             0);
            else
                CHECK_INT_EQ(host_read(f, 0, ROWS, NULL), 0);
        }
        CHECK_OK(gts_buffer_order_wait(b, GTS_SIDE_HOST, NULL, ERR));
        CHECK_OK(gts_buffer_order_record(b, NULL, ERR)); /* the default stream: nothing */
        CHECK_FAILS(gts_buffer_order_wait(NULL, GTS_SIDE_HOST, NULL, ERR), GTS_EINVAL, "buffer");
        CHECK_FAILS(gts_buffer_order_wait(b, (gts_side)7, NULL, ERR), GTS_EINVAL, "side: 7");
        CHECK_FAILS(gts_buffer_order_record(NULL, r.streams[1], ERR), GTS_EINVAL, "buffer");
    }
    run_close(&r);
}

/* More buffers than one batch (GTS__ORDER_BATCH) in one record, each
 * filled on a stream: the host and another stream see every fill. */
static void test_record_many(const gts_device_ops *dev)
{
    enum { MANY = GTS__ORDER_BATCH + 8 };
    field *f = calloc(MANY, sizeof *f);
    gts_buffer *buffers[2 * MANY];
    gts_stream s, other;
    int made = 0;
    if (!f || !CHECK_OK(gts_device_stream_create(dev, &s, ERR))) {
        free(f);
        return;
    }
    if (CHECK_OK(gts_device_stream_create(dev, &other, ERR))) {
        for (; made < MANY && make_field(dev, made % 2 == 0, &f[made]); ++made) {
            gts_buffer *b = f[made].whole.buffer;
            double value = made + 1;
            CHECK_OK(gts_buffer_write_begin(b, GTS_SIDE_DEVICE, s, ERR));
            CHECK_OK(gts_device_fill(dev, gts_buffer_data(b), 2, f[made].whole.shape,
                                     f[made].whole.strides, 8, &value, s, ERR));
            for (int k = 0; k < ROWS * COLS; ++k)
                f[made].model[k] = value;
            buffers[made] = b;
        }
        memcpy(buffers + made, buffers, (size_t)made * sizeof *buffers); /* each twice */
        CHECK_OK(gts_buffers_order_record(buffers, 2 * made, s, ERR));
        for (int i = 0; i < made; ++i)
            CHECK_OK(gts_buffer_write_end(f[i].whole.buffer, ERR));
        CHECK_INT_EQ(made, MANY);
        for (int i = 0; i < made; ++i)
            CHECK_INT_EQ(i % 2 ? device_read(dev, &f[i], 0, ROWS, other)
                               : host_read(&f[i], 0, ROWS, NULL),
                         0);
        CHECK_OK(gts_buffers_order_record(buffers, 0, s, ERR));
        buffers[1] = NULL;
        CHECK_FAILS(gts_buffers_order_record(buffers, 2, s, ERR), GTS_EINVAL, "buffers[1]: NULL");
        CHECK_FAILS(gts_buffers_order_record(buffers, -1, s, ERR), GTS_EINVAL, "n: -1");
        CHECK_FAILS(gts_buffers_order_record(NULL, 1, s, ERR), GTS_EINVAL, "buffers: NULL");
        gts_device_stream_destroy(dev, other);
    }
    for (int i = 0; i < made; ++i)
        gts_storage_release(&f[i].whole);
    gts_device_stream_destroy(dev, s);
    free(f);
}

/* With the fake CUDA driver: zeros on a CUDA GPU are a memset queued on the
 * legacy default stream with the buffer's event recorded after it, and the
 * host does not wait until it reads them. */
static void test_fake_cuda_zeros_queued(const gts_device_ops *cuda, stat_fn stat)
{
    for (int mirrored = 0; mirrored < 2; ++mirrored) {
        long long syncs = stat("stream_syncs"), records = stat("event_records");
        long long queued = stat("async_calls");
        field f;
        if (!make_field(cuda, mirrored, &f))
            continue;
        CHECK_INT_EQ(stat("stream_syncs"), syncs); /* before: a cuStreamSynchronize */
        CHECK(stat("async_calls") > queued);
        CHECK_INT_EQ(stat("event_records"), records); /* deferred: nothing waited yet */
        int64_t bytes = gts_buffer_size(f.whole.buffer); /* the whole block is zeroed */
        unsigned char *block = malloc((size_t)bytes);
        bool waited = CHECK_OK(gts_buffer_order_wait(f.whole.buffer, GTS_SIDE_HOST, NULL, ERR));
        CHECK_INT_EQ(stat("event_records"), records + 1); /* recorded for the wait */
        if (block && waited &&
            CHECK_OK(gts_device_copy_to_host(cuda, block, gts_buffer_data(f.whole.buffer), bytes,
                                             NULL, ERR))) {
            int64_t nonzero = 0;
            for (int64_t i = 0; i < bytes; ++i)
                nonzero += block[i] != 0;
            CHECK_INT_EQ(nonzero, 0);
        }
        free(block);
        gts_storage_release(&f.whole);
    }
}

/* With the fake CUDA driver: what the records of several buffers cost in
 * driver calls, and that gts_cache_clear destroys the pooled events. */
static void test_fake_cuda_one_record(const gts_device_ops *cuda, stat_fn stat)
{
    field f[3];
    gts_stream s, other;
    int made = 0;
    gts_cache_clear();
    long long live = stat("live_events");
    if (!CHECK_OK(gts_device_stream_create(cuda, &s, ERR)))
        return;
    if (CHECK_OK(gts_device_stream_create(cuda, &other, ERR))) {
        while (made < 3 && make_field_zeroed(cuda, false, false, &f[made]))
            ++made;
        if (made == 3) {
            gts_buffer *all[] = {f[0].whole.buffer, f[1].whole.buffer, f[2].whole.buffer,
                                 f[0].whole.buffer};
            long long records = stat("event_records"), events = stat("events");
            CHECK_OK(gts_buffers_order_record(all, 4, s, ERR));
            CHECK_INT_EQ(stat("event_records"), records + 1); /* one for all */
            CHECK_INT_EQ(stat("events"), events + 1);
            CHECK_OK(gts_buffers_order_record(all, 3, s, ERR)); /* the same buffers again */
            CHECK_INT_EQ(stat("event_records"), records + 2);
            CHECK_INT_EQ(stat("events"), events + 1); /* their event, recorded again */
            /* two of them on another stream: it waits once for their shared
               event; the third keeps it, so theirs is another */
            long long waits = stat("stream_event_waits");
            CHECK_OK(gts_buffers_order_record(all, 2, other, ERR));
            CHECK_INT_EQ(stat("stream_event_waits"), waits + 1);
            CHECK_INT_EQ(stat("event_records"), records + 3);
            CHECK_INT_EQ(stat("events"), events + 2);
            /* one at a time, on the first stream: the first two wait for
               `other`'s event, and the second and third, each then alone on
               its event, record it again */
            for (int i = 0; i < 3; ++i)
                CHECK_OK(gts_buffer_order_record(all[i], s, ERR));
            CHECK_INT_EQ(stat("stream_event_waits"), waits + 3);
            CHECK_INT_EQ(stat("event_records"), records + 6);
            for (int i = 0; i < 3; ++i) /* (none left pending: no free waits for work) */
                CHECK_OK(gts_buffer_order_wait(all[i], GTS_SIDE_HOST, NULL, ERR));
        }
        gts_device_stream_destroy(cuda, other);
    }
    for (int i = 0; i < made; ++i)
        gts_storage_release(&f[i].whole);
    gts_device_stream_destroy(cuda, s);
    CHECK(stat("live_events") > live); /* pooled */
    gts_cache_clear();
    CHECK_INT_EQ(stat("live_events"), live);
}

/* With the fake CUDA driver: records on the legacy default stream are
 * deferred until something waits; a stream's wait or the host's then
 * records the event once. */
static void test_fake_cuda_deferred(const gts_device_ops *cuda, stat_fn stat)
{
    gts_stream legacy = gts_device_legacy_stream(cuda), other;
    field f[2];
    int made = 0;
    if (!CHECK(legacy != NULL) || !CHECK_OK(gts_device_stream_create(cuda, &other, ERR)))
        return;
    while (made < 2 && make_field_zeroed(cuda, false, false, &f[made]))
        ++made;
    if (made == 2) {
        gts_buffer *both[] = {f[0].whole.buffer, f[1].whole.buffer};
        long long records = stat("event_records"), waits = stat("stream_event_waits");
        for (int i = 0; i < 10; ++i) /* a loop of calls on the legacy stream */
            CHECK_OK(gts_buffers_order_record(both, 2, legacy, ERR));
        CHECK_OK(gts_buffer_order_wait(both[0], GTS_SIDE_DEVICE, legacy, ERR)); /* in order */
        CHECK_INT_EQ(stat("event_records"), records);
        CHECK_OK(gts_buffer_order_wait(both[0], GTS_SIDE_DEVICE, other, ERR));
        CHECK_INT_EQ(stat("event_records"), records + 1);
        CHECK_INT_EQ(stat("stream_event_waits"), waits + 1);
        CHECK_OK(gts_buffer_order_wait(both[0], GTS_SIDE_DEVICE, other, ERR)); /* recorded */
        CHECK_INT_EQ(stat("event_records"), records + 1);
        CHECK_INT_EQ(stat("stream_event_waits"), waits + 2);
        CHECK_OK(gts_buffer_order_wait(both[1], GTS_SIDE_HOST, NULL, ERR));
        CHECK_INT_EQ(stat("event_records"), records + 2);
        /* work on another stream (which waits for the first's event), then
           on the legacy one: the legacy stream waits for the other's event,
           and its own record is deferred again */
        CHECK_OK(gts_buffers_order_record(both, 2, other, ERR));
        CHECK_OK(gts_buffers_order_record(both, 2, legacy, ERR));
        CHECK_INT_EQ(stat("event_records"), records + 3);
        CHECK_INT_EQ(stat("stream_event_waits"), waits + 4);
        CHECK_OK(gts_buffer_order_wait(both[0], GTS_SIDE_HOST, NULL, ERR));
        CHECK_INT_EQ(stat("event_records"), records + 4);
    }
    for (int i = 0; i < made; ++i)
        gts_storage_release(&f[i].whole);
    gts_device_stream_destroy(cuda, other);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "detector") == 0) {
        test_detector();
        return check_summary("stream_order detector");
    }
    const gts_device_ops *emulated = gts_device_emulated();
    test_random_sequence(emulated, 400);
    test_buffer_level(emulated);
    test_record_many(emulated);
    for (int round = 0; round < 3; ++round)
        test_threads(emulated);
    if (CHECK_OK(gts_device_stream_create(emulated, &deferred, ERR))) {
        gts__order_defer_for_testing(deferred);
        test_random_sequence(emulated, 400);
        test_buffer_level(emulated);
        for (int round = 0; round < 3; ++round)
            test_threads(emulated);
        gts__order_defer_for_testing(NULL);
        deferred = NULL; /* kept: work may be pending on it (run_open) */
    }
    const gts_device_ops *cuda;
    if (gts_device_get((gts_device_id){GTS_DL_CUDA, 0}, &cuda, NULL) == GTS_OK) {
        printf("and on %s\n", cuda->name);
        stat_fn stat = fake_stat();
        if (stat) {
            /* first: no buffer freed in stream order yet, whose frees a new
               buffer's order would start after (stream_free.h) */
            test_fake_cuda_one_record(cuda, stat);
            test_fake_cuda_zeros_queued(cuda, stat);
            test_fake_cuda_deferred(cuda, stat);
        }
        test_random_sequence(cuda, 200);
        test_buffer_level(cuda);
        test_record_many(cuda);
        test_threads(cuda);
    }
    return check_summary("stream_order");
}
