/* Events that several buffers' stream orders share (order_event.c); not
 * installed.
 *
 * One call that queues device work on several buffers (a ufunc's inputs
 * and output) records one event for all of them instead of one each: on a
 * CUDA GPU a record costs about half a microsecond, a third of what such a
 * call costs gtstore beyond CuPy's own. The buffers' orders then point to
 * the same event, counted by references: an order holds one, and so does a
 * host wait or query under way (which must not see the event recorded
 * again, or destroyed, while it waits). The last reference returns the
 * event to a small pool of its device, from which the next call takes it:
 * re-recording an event is allowed while earlier waits on it are queued
 * (a stream's wait holds the point recorded when it was queued), and
 * nobody holds it then. */
#ifndef GTSTORE_ORDER_EVENT_H
#define GTSTORE_ORDER_EVENT_H

#include <stdatomic.h>

#include "gtstore/device.h"

typedef struct gts__order_event {
    gts_event handle;
    const gts_device_ops *device;
    atomic_int refs;
    struct gts__order_event *next; /* in the pool */
} gts__order_event;

/* An event of `dev` with one reference: from the pool, or made. */
int gts__order_event_take(const gts_device_ops *dev, gts__order_event **out, gts_error *err);
gts__order_event *gts__order_event_retain(gts__order_event *event);
/* NULL ignored; the last reference pools the event (or destroys it where
 * the pool is full). */
void gts__order_event_release(gts__order_event *event);
/* Destroys the pooled events (gts_cache_clear). */
void gts__order_events_clear(void);

#endif
