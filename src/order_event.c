/* Events that several buffers' stream orders share (order_event.h). */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include "order_event.h"

#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

/* Enough for the events that a few calls in flight release at once; the
 * rest are destroyed. Devices are never unloaded, so a pooled event's
 * device stays valid. */
#define POOL_MAX 64

static gts__order_event *pool;
static int pooled;
static atomic_bool pool_busy; /* a spin lock: held for a few pointer moves */

static void lock_pool(void)
{
    while (atomic_exchange_explicit(&pool_busy, true, memory_order_acquire))
        sched_yield();
}

static void unlock_pool(void)
{
    atomic_store_explicit(&pool_busy, false, memory_order_release);
}

/* A pooled event of `dev`, or NULL. */
static gts__order_event *from_pool(const gts_device_ops *dev)
{
    lock_pool();
    gts__order_event **link = &pool;
    while (*link && (*link)->device != dev)
        link = &(*link)->next;
    gts__order_event *found = *link;
    if (found) {
        *link = found->next;
        --pooled;
    }
    unlock_pool();
    return found;
}

int gts__order_event_take(const gts_device_ops *dev, gts__order_event **out, gts_error *err)
{
    gts__order_event *event = from_pool(dev);
    if (!event) {
        if (!(event = malloc(sizeof *event)))
            return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot make an event");
        int rc = gts_device_event_create(dev, &event->handle, err);
        if (rc) {
            free(event);
            return rc;
        }
        event->device = dev;
    }
    atomic_init(&event->refs, 1);
    event->next = NULL;
    *out = event;
    return GTS_OK;
}

gts__order_event *gts__order_event_retain(gts__order_event *event)
{
    atomic_fetch_add_explicit(&event->refs, 1, memory_order_relaxed);
    return event;
}

static void destroy(gts__order_event *event)
{
    gts_device_event_destroy(event->device, event->handle);
    free(event);
}

void gts__order_event_release(gts__order_event *event)
{
    if (!event || atomic_fetch_sub_explicit(&event->refs, 1, memory_order_acq_rel) != 1)
        return;
    lock_pool();
    bool kept = pooled < POOL_MAX;
    if (kept) {
        event->next = pool;
        pool = event;
        ++pooled;
    }
    unlock_pool();
    if (!kept)
        destroy(event);
}

void gts__order_events_clear(void)
{
    lock_pool();
    gts__order_event *all = pool;
    pool = NULL;
    pooled = 0;
    unlock_pool();
    while (all) {
        gts__order_event *next = all->next;
        destroy(all);
        all = next;
    }
}
