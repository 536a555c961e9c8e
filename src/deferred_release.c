/* Releases deferred until a buffer's device work completes
 * (deferred_release.h). */
#include "deferred_release.h"

#include <pthread.h>
#include <stdatomic.h>

#include "device_pool.h"

/* The parked owners, oldest first. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gts__parked *head, *tail;
static int64_t parked_bytes;
/* How many are parked: read without the lock, so that a sweep with
 * nothing parked costs one load. */
static atomic_llong parked_count;

int64_t gts__release_parked(void)
{
    return atomic_load_explicit(&parked_count, memory_order_relaxed);
}

/* A list of owners taken out of the parked list, being built. */
typedef struct taken {
    gts__parked *first, **end;
} taken;

/* Moves the oldest parked owner to the end of `t`. Caller holds the lock. */
static void take_head(taken *t)
{
    gts__parked *p = head;
    head = p->next;
    if (!head)
        tail = NULL;
    p->next = NULL;
    parked_bytes -= p->bytes;
    atomic_fetch_sub_explicit(&parked_count, 1, memory_order_relaxed);
    *t->end = p;
    t->end = &p->next;
}

/* Frees what was taken, outside the lock: an owner's release callback may
 * release other buffers. An owner whose work is not seen complete waits
 * for it here (gts__order_release). */
static void free_taken(gts__parked *list)
{
    while (list) {
        gts__parked *next = list->next;
        list->next = NULL;
        list->destroy(list);
        list = next;
    }
}

/* Under the lock: the oldest owners while more than `bytes` bytes or
 * `count` owners are parked. */
static void take_oldest(taken *t, int64_t bytes, int64_t count)
{
    while (head && (parked_bytes > bytes ||
                    atomic_load_explicit(&parked_count, memory_order_relaxed) > count))
        take_head(t);
}

void gts__parked_trim(int64_t keep)
{
    taken t = {NULL, &t.first};
    pthread_mutex_lock(&lock);
    take_oldest(&t, keep, keep > 0 ? GTS__PARKED_COUNT : 0);
    pthread_mutex_unlock(&lock);
    free_taken(t.first);
}

/* ---- parking and sweeping ----------------------------------------------------------------- */

bool gts__release_park(gts__parked *p)
{
    /* no query here: the sweep that follows the release asks the oldest */
    if (!gts__order_unfinished(p->device, p->order))
        return false;
    p->next = NULL;
    taken t = {NULL, &t.first};
    pthread_mutex_lock(&lock);
    if (tail)
        tail->next = p;
    else
        head = p;
    tail = p;
    parked_bytes += p->bytes;
    atomic_fetch_add_explicit(&parked_count, 1, memory_order_relaxed);
    take_oldest(&t, GTS__PARKED_BYTES, GTS__PARKED_COUNT);
    pthread_mutex_unlock(&lock);
    free_taken(t.first); /* beyond the bounds: the oldest, their work waited for */
    return true;
}

void gts__release_sweep(bool wait)
{
    if (!gts__release_parked())
        return;
    taken t = {NULL, &t.first};
    pthread_mutex_lock(&lock);
    /* Oldest first, up to the first whose work is pending: a sweep costs one
     * query where nothing completed, however many are parked (work on one
     * stream completes in order; a buffer of another stream that completed
     * sooner waits for the next sweep past the older ones, which is late,
     * never early). Queried under the lock: a device's query does not call
     * back here. */
    while (head && (wait || !gts__order_pending(head->device, head->order)))
        take_head(&t);
    pthread_mutex_unlock(&lock);
    free_taken(t.first);
}
