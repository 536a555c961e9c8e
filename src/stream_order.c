/* The stream order of a buffer (stream_order.h). */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "stream_order.h"

#include <sched.h>
#include <stdio.h>

static atomic_bool skip_waits;

void gts__order_skip_waits_for_testing(bool skip)
{
    atomic_store(&skip_waits, skip);
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
 * work is pending, the event that covers it and how many records it has
 * seen (a later record changes the count). */
typedef struct order_snapshot {
    bool pending;
    gts_event event;
    uint64_t records;
} order_snapshot;

static order_snapshot snapshot(gts__order *o)
{
    lock(o);
    order_snapshot now = {o->pending, o->event, o->records};
    unlock(o);
    return now;
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

int gts__order_host(const gts_device_ops *dev, gts__order *o, gts_error *err)
{
    if (!ordered(dev) || atomic_load_explicit(&skip_waits, memory_order_relaxed))
        return GTS_OK;
    order_snapshot now = snapshot(o);
    if (!now.pending)
        return GTS_OK;
    /* A record meanwhile covers this one's work too (stream_order.h), so
     * the event is waited for as it is when the wait begins. */
    int rc = gts_device_event_synchronize(dev, now.event, err);
    if (rc)
        return rc;
    settle(o, now);
    return GTS_OK;
}

int gts__order_device(const gts_device_ops *dev, gts__order *o, gts_stream stream,
                      gts_error *err)
{
    if (!stream) /* the default stream's work runs once the host waited */
        return gts__order_host(dev, o, err);
    if (!ordered(dev) || atomic_load_explicit(&skip_waits, memory_order_relaxed))
        return GTS_OK;
    int rc = GTS_OK;
    lock(o);
    if (o->pending && o->stream != stream)
        rc = gts_device_event_wait(dev, stream, o->event, err);
    unlock(o);
    return rc;
}

/* Under the lock: the event, made on first use, recorded on `stream` after
 * that stream waited for its previous point. */
static int record_locked(const gts_device_ops *dev, gts__order *o, gts_stream stream,
                         gts_error *err)
{
    int rc = GTS_OK;
    if (!o->event && (rc = gts_device_event_create(dev, &o->event, err))) {
        o->event = NULL;
        return rc;
    }
    if (o->pending && o->stream != stream &&
        (rc = gts_device_event_wait(dev, stream, o->event, err)))
        return rc;
    if ((rc = gts_device_event_record(dev, o->event, stream, err)))
        return rc;
    o->stream = stream;
    o->pending = true;
    ++o->records;
    return GTS_OK;
}

int gts__order_record(const gts_device_ops *dev, gts__order *o, gts_stream stream,
                      gts_error *err)
{
    if (!stream || !ordered(dev))
        return GTS_OK;
    lock(o);
    int rc = record_locked(dev, o, stream, err);
    unlock(o);
    /* No event: the work is made complete instead (the previous event's
     * work, which the stream may not have waited for, too). */
    if (rc && gts_device_synchronize(dev, stream, NULL) == GTS_OK &&
        gts__order_host(dev, o, NULL) == GTS_OK)
        rc = GTS_OK;
    return rc;
}

bool gts__order_unfinished(const gts_device_ops *dev, gts__order *o)
{
    if (!ordered(dev))
        return false;
    return snapshot(o).pending;
}

bool gts__order_pending(const gts_device_ops *dev, gts__order *o)
{
    if (!ordered(dev))
        return false;
    order_snapshot now = snapshot(o);
    bool done = false;
    if (now.pending && gts_device_event_query(dev, now.event, &done, NULL) == GTS_OK && done)
        return settle(o, now);
    return now.pending;
}

void gts__order_release(const gts_device_ops *dev, gts__order *o)
{
    if (!o->event)
        return;
    gts_error err;
    if (o->pending && gts_device_event_synchronize(dev, o->event, &err))
        fprintf(stderr, "gtstore: waiting for the device work on a buffer before freeing it: "
                        "%s\n", err.message);
    gts_device_event_destroy(dev, o->event);
    o->event = NULL;
}

void gts__order_forget(const gts_device_ops *dev, gts__order *o)
{
    /* the last reference is gone: nobody else reads the order now */
    gts_device_event_destroy(dev, o->event);
    o->event = NULL;
    o->pending = false;
}
