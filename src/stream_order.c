/* The stream order of a buffer (stream_order.h). */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "stream_order.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

static atomic_bool skip_waits;
static _Atomic(gts_stream) deferred_for_testing;

void gts__order_skip_waits_for_testing(bool skip)
{
    atomic_store(&skip_waits, skip);
}

void gts__order_defer_for_testing(gts_stream stream)
{
    atomic_store(&deferred_for_testing, stream);
}

/* The stream of `dev` whose records are deferred (stream_order.h): CUDA's
 * legacy default stream, which lives as long as the context, so that an
 * event recorded on it later still follows the work queued before. */
static gts_stream deferred_stream(const gts_device_ops *dev)
{
    gts_stream legacy = gts_device_legacy_stream(dev);
    return legacy ? legacy : atomic_load_explicit(&deferred_for_testing, memory_order_relaxed);
}

/* Under the lock: the event of work pending without one (its record was
 * deferred), recorded now on its stream: it follows that work, and
 * perhaps later work of the stream too, which a wait then waits for as
 * well (late, never early). */
static int materialize_locked(const gts_device_ops *dev, gts__order *o, gts_error *err)
{
    if (!o->pending || o->event)
        return GTS_OK;
    gts__order_event *event;
    int rc = gts__order_event_take(dev, &event, err);
    if (!rc && (rc = gts_device_event_record(dev, event->handle, o->stream, err)))
        gts__order_event_release(event);
    if (!rc)
        o->event = event;
    return rc;
}

void gts__order_init(gts__order *order)
{
    atomic_init(&order->busy, false);
    order->event = NULL;
    order->stream = NULL;
    order->records = 0;
    order->pending = false;
}

/* The lock is held across a few driver calls that do not block (record,
 * a stream's wait), never across a host wait. */
static void lock(gts__order *o)
{
    while (atomic_exchange_explicit(&o->busy, true, memory_order_acquire))
        sched_yield();
}

static void unlock(gts__order *o)
{
    atomic_store_explicit(&o->busy, false, memory_order_release);
}

/* What the waits and queries start from, read under the lock: whether
 * work is pending, the event that covers it (a reference of the snapshot's
 * own where pending: done() drops it; NULL where a deferred record could
 * not be made, and the stream is waited for instead), its stream, and how
 * many records the order has seen (a later record changes the count). */
typedef struct order_snapshot {
    bool pending;
    gts__order_event *event;
    gts_stream stream;
    uint64_t records;
} order_snapshot;

static order_snapshot snapshot(const gts_device_ops *dev, gts__order *o)
{
    lock(o);
    bool recorded = materialize_locked(dev, o, NULL) == GTS_OK;
    order_snapshot now = {o->pending,
                          o->pending && recorded ? gts__order_event_retain(o->event) : NULL,
                          o->stream, o->records};
    unlock(o);
    return now;
}

static void done(order_snapshot seen)
{
    gts__order_event_release(seen.event);
}

/* The event of snapshot `seen` completed: nothing is pending unless a
 * record came since (its work may still run). Returns whether work is
 * pending now. */
static bool settle(gts__order *o, order_snapshot seen)
{
    lock(o);
    if (o->records == seen.records)
        o->pending = false;
    bool pending = o->pending;
    unlock(o);
    return pending;
}

/* Whether the device can have work pending when a call returns. */
static bool ordered(const gts_device_ops *dev)
{
    return dev->event_create != NULL;
}

/* The host waits for the work pending on the buffer: its event, or its
 * stream where the event could not be recorded. */
static int wait_host(const gts_device_ops *dev, gts__order *o, gts_error *err)
{
    order_snapshot now = snapshot(dev, o);
    if (!now.pending)
        return GTS_OK;
    /* A record meanwhile covers this one's work too (stream_order.h), so
     * the event is waited for as it is when the wait begins. */
    int rc = now.event ? gts_device_event_synchronize(dev, now.event->handle, err)
                       : gts_device_synchronize(dev, now.stream, err);
    if (!rc)
        settle(o, now);
    done(now);
    return rc;
}

int gts__order_host(const gts_device_ops *dev, gts__order *o, gts_error *err)
{
    if (!ordered(dev) || atomic_load_explicit(&skip_waits, memory_order_relaxed))
        return GTS_OK;
    return wait_host(dev, o, err);
}

int gts__order_device(const gts_device_ops *dev, gts__order *o, gts_stream stream,
                      gts_error *err)
{
    if (!stream) /* the default stream's work runs once the host waited */
        return gts__order_host(dev, o, err);
    if (!ordered(dev) || atomic_load_explicit(&skip_waits, memory_order_relaxed))
        return GTS_OK;
    int rc = GTS_OK;
    bool unrecorded = false;
    lock(o);
    if (o->pending && o->stream != stream) {
        unrecorded = materialize_locked(dev, o, NULL) != GTS_OK;
        if (!unrecorded)
            rc = gts_device_event_wait(dev, stream, o->event->handle, err);
    }
    unlock(o);
    return unrecorded ? wait_host(dev, o, err) : rc;
}

/* Sorts `o` by address and drops repeats; returns how many are left. A
 * record of several orders locks them in this order, so that two records
 * never wait for each other's locks (the other functions hold one). */
static int sort_unique(gts__order **o, int n)
{
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && (uintptr_t)o[j] < (uintptr_t)o[j - 1]; --j) {
            gts__order *t = o[j];
            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    int kept = 0;
    for (int i = 0; i < n; ++i)
        if (kept == 0 || o[i] != o[kept - 1])
            o[kept++] = o[i];
    return kept;
}

/* Under the locks: the event every order holds, where nothing else holds
 * it (no other order, no wait under way), so that it can be recorded again
 * in place; else NULL. In a loop over the same fields, every call finds
 * it. */
static gts__order_event *held_by_these_only(gts__order *const *o, int n)
{
    gts__order_event *event = o[0]->event;
    for (int i = 1; i < n; ++i)
        if (o[i]->event != event)
            return NULL;
    return event && atomic_load_explicit(&event->refs, memory_order_acquire) == n ? event : NULL;
}

/* Under the locks: the deferred records of orders pending on streams
 * other than `stream` made now, one event for those of one stream (orders
 * recorded together share it, and a wait then waits for it once). */
static int materialize_all_locked(const gts_device_ops *dev, gts__order *const *o, int n,
                                  gts_stream stream, gts_error *err)
{
    gts__order_event *made = NULL;
    gts_stream made_on = NULL;
    for (int i = 0; i < n; ++i) {
        if (!o[i]->pending || o[i]->event || o[i]->stream == stream)
            continue;
        if (made && o[i]->stream == made_on) {
            o[i]->event = gts__order_event_retain(made);
            continue;
        }
        int rc = materialize_locked(dev, o[i], err);
        if (rc)
            return rc;
        made = o[i]->event;
        made_on = o[i]->stream;
    }
    return GTS_OK;
}

/* Under the locks: the orders' work follows the work queued on `stream`
 * now, with no event yet (a deferred record); `replaced` gets the events
 * they held. */
static void defer_locked(gts__order *const *o, int n, gts_stream stream,
                         gts__order_event **replaced)
{
    for (int i = 0; i < n; ++i) {
        replaced[i] = o[i]->event;
        o[i]->event = NULL;
        o[i]->stream = stream;
        o[i]->pending = true;
        ++o[i]->records;
    }
}

/* Under the locks: `stream` waits for the points recorded on other
 * streams, then one event is recorded there for all (or, on the deferred
 * stream, none yet). `replaced` gets the references the orders held before
 * (NULL where the event is the same). */
static int record_locked(const gts_device_ops *dev, gts__order *const *o, int n,
                         gts_stream stream, gts__order_event **replaced, gts_error *err)
{
    int rc = materialize_all_locked(dev, o, n, stream, err);
    if (rc)
        return rc;
    const gts__order_event *waited = NULL; /* orders recorded together share it */
    for (int i = 0; i < n; ++i)
        if (o[i]->pending && o[i]->stream != stream && o[i]->event != waited) {
            if ((rc = gts_device_event_wait(dev, stream, o[i]->event->handle, err)))
                return rc;
            waited = o[i]->event;
        }
    if (stream == deferred_stream(dev)) {
        defer_locked(o, n, stream, replaced);
        return GTS_OK;
    }
    gts__order_event *event = held_by_these_only(o, n);
    if (event)
        gts__order_event_retain(event);
    else if ((rc = gts__order_event_take(dev, &event, err)))
        return rc;
    if ((rc = gts_device_event_record(dev, event->handle, stream, err))) {
        gts__order_event_release(event);
        return rc;
    }
    for (int i = 0; i < n; ++i) {
        replaced[i] = NULL;
        if (o[i]->event != event) {
            replaced[i] = o[i]->event;
            o[i]->event = gts__order_event_retain(event);
        }
        o[i]->stream = stream;
        o[i]->pending = true;
        ++o[i]->records;
    }
    gts__order_event_release(event); /* the orders hold it now */
    return GTS_OK;
}

int gts__order_record_all(const gts_device_ops *dev, gts__order *const *orders, int n,
                          gts_stream stream, gts_error *err)
{
    if (!stream || !ordered(dev) || n <= 0)
        return GTS_OK;
    if (n > GTS__ORDER_BATCH)
        return gts_error_set(err, GTS_EINVAL, "orders: %d, more than the %d of one record", n,
                             GTS__ORDER_BATCH);
    gts__order *o[GTS__ORDER_BATCH];
    gts__order_event *replaced[GTS__ORDER_BATCH];
    memcpy(o, orders, (size_t)n * sizeof *o);
    n = sort_unique(o, n);
    for (int i = 0; i < n; ++i)
        lock(o[i]);
    /* the driver's error, reported only where the fallback below fails
     * too: a record that succeeds that way leaves `err` untouched (callers
     * that find a message in it after a success would report a stale one) */
    gts_error failed;
    failed.code = GTS_OK;
    failed.message[0] = '\0';
    int rc = record_locked(dev, o, n, stream, replaced, &failed);
    for (int i = 0; i < n; ++i)
        unlock(o[i]);
    for (int i = 0; i < n && !rc; ++i)
        gts__order_event_release(replaced[i]);
    /* No event: the work is made complete instead (the previous events'
     * work, which the stream may not have waited for, too). The orders keep
     * the state they had, settled by the host's waits. */
    if (rc && gts_device_synchronize(dev, stream, NULL) == GTS_OK) {
        bool waited = true;
        for (int i = 0; i < n; ++i)
            waited = gts__order_host(dev, o[i], NULL) == GTS_OK && waited;
        if (waited)
            rc = GTS_OK;
    }
    if (rc && err)
        *err = failed;
    return rc;
}

int gts__order_record(const gts_device_ops *dev, gts__order *o, gts_stream stream,
                      gts_error *err)
{
    return gts__order_record_all(dev, &o, 1, stream, err);
}

bool gts__order_unfinished(const gts_device_ops *dev, gts__order *o)
{
    if (!ordered(dev))
        return false;
    lock(o);
    bool pending = o->pending;
    unlock(o);
    return pending;
}

bool gts__order_pending(const gts_device_ops *dev, gts__order *o)
{
    if (!ordered(dev))
        return false;
    order_snapshot now = snapshot(dev, o);
    bool done_now = false, pending = now.pending;
    if (now.event && gts_device_event_query(dev, now.event->handle, &done_now, NULL) == GTS_OK &&
        done_now)
        pending = settle(o, now);
    done(now);
    return pending;
}

void gts__order_release(const gts_device_ops *dev, gts__order *o)
{
    gts_error err;
    /* waited for even while a test skips the waits: the memory goes */
    if (o->pending && ordered(dev) && wait_host(dev, o, &err))
        fprintf(stderr, "gtstore: waiting for the device work on a buffer before freeing it: "
                        "%s\n", err.message);
    gts__order_forget(o);
}

void gts__order_forget(gts__order *o)
{
    /* the last reference to the buffer is gone: nobody else reads the
     * order now */
    gts__order_event_release(o->event);
    o->event = NULL;
    o->pending = false;
}
