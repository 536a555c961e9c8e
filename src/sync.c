/* The sync state of mirrored buffers (gtstore/sync.h). */
#define _POSIX_C_SOURCE 200809L /* nanosleep, sched_yield */
#include "gtstore/sync.h"

#include <sched.h>
#include <time.h>

#include "buffer_private.h"
#include "buffer_wrap.h"

/* The word (buffer_private.h): the state, a flag for a sync copying, the
 * writes in flight, and above them the generation every mark raises. */
#define STATE_BITS ((uint64_t)3)
#define COPYING ((uint64_t)1 << 2)
#define WRITER ((uint64_t)1 << 3)
#define WRITER_BITS 21
#define WRITERS (((((uint64_t)1) << WRITER_BITS) - 1) * WRITER)
#define GENERATION ((uint64_t)1 << (3 + WRITER_BITS))

static gts_sync_state state_of(uint64_t word)
{
    return (gts_sync_state)(word & STATE_BITS);
}

static uint64_t writers_of(uint64_t word)
{
    return (word & WRITERS) / WRITER;
}

/* The same generation with a new state (a sync that made the sides equal). */
static uint64_t with_state(uint64_t word, gts_sync_state state)
{
    return (word & ~STATE_BITS) | (uint64_t)state;
}

/* A new generation with `state` (a mark); the flag and writers kept. */
static uint64_t marked(uint64_t word, gts_sync_state state)
{
    return with_state(word + GENERATION, state);
}

/* ---- waiting -------------------------------------------------------------------------- */

static _Atomic(const gts_wait_hooks *) wait_hooks;

void gts_sync_set_wait_hooks(const gts_wait_hooks *hooks)
{
    atomic_store_explicit(&wait_hooks, hooks, memory_order_release);
}

/* One call's waiting: the caller's lock let go before the first pause
 * (the hooks), taken back by done_waiting. */
typedef struct waiter {
    unsigned rounds;
    const gts_wait_hooks *hooks; /* non-NULL once left */
    void *token;
} waiter;

/* Writes in flight end in microseconds to milliseconds (a copy, a kernel):
 * yield first, then sleep in short steps. */
static void pause_once(waiter *w)
{
    if (w->rounds == 0) {
        const gts_wait_hooks *hooks = atomic_load_explicit(&wait_hooks, memory_order_acquire);
        if (hooks) {
            w->token = hooks->leave();
            w->hooks = hooks;
        }
    }
    if (w->rounds++ < 64) {
        sched_yield();
    } else {
        struct timespec step = {0, 20000};
        nanosleep(&step, NULL);
    }
}

static void done_waiting(waiter *w)
{
    if (w->hooks)
        w->hooks->enter(w->token);
}

/* ---- the state -------------------------------------------------------------------------- */

bool gts_buffer_mirrored(const gts_buffer *buffer)
{
    return buffer && buffer->mirror != NULL;
}

void gts__buffer_wrap_host_side(gts_buffer *buffer, void *host, gts_sync_state state)
{
    buffer->mirror = host;
    buffer->host = host;
    atomic_store_explicit(&buffer->sync, (uint64_t)state, memory_order_release);
}

gts_sync_state gts_buffer_sync_state(const gts_buffer *buffer)
{
    if (!buffer) /* no buffer, nothing to track */
        return GTS_SYNC_CLEAN;
    return state_of(atomic_load_explicit(&buffer->sync, memory_order_acquire));
}

static int null_buffer(gts_error *err)
{
    return gts_error_set(err, GTS_EINVAL, "buffer: NULL");
}

int64_t gts_buffer_writes_in_flight(const gts_buffer *buffer)
{
    if (!buffer)
        return 0;
    return (int64_t)writers_of(atomic_load_explicit(&buffer->sync, memory_order_acquire));
}

const char *gts_sync_state_name(gts_sync_state state)
{
    switch (state) {
    case GTS_SYNC_CLEAN: return "SYNC_CLEAN";
    case GTS_SYNC_HOST_DIRTY: return "SYNC_HOST_DIRTY";
    case GTS_SYNC_DEVICE_DIRTY: return "SYNC_DEVICE_DIRTY";
    }
    return NULL;
}

int gts_buffer_set_sync_state(gts_buffer *buffer, gts_sync_state state, gts_error *err)
{
    if (!gts_sync_state_name(state))
        return gts_error_set(err, GTS_EINVAL, "state: %d is no gts_sync_state", (int)state);
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror)
        return GTS_OK;
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    while (!atomic_compare_exchange_weak_explicit(&buffer->sync, &word, marked(word, state),
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
    return GTS_OK;
}

/* ---- syncs ------------------------------------------------------------------------------ */

static bool valid_side(gts_side side)
{
    return side == GTS_SIDE_HOST || side == GTS_SIDE_DEVICE;
}

/* The state in which side `to` lacks writes of the other. */
static gts_sync_state stale(gts_side to)
{
    return to == GTS_SIDE_HOST ? GTS_SYNC_DEVICE_DIRTY : GTS_SYNC_HOST_DIRTY;
}

/* The whole allocation from the other side to `to`, in the buffer's
 * stream order (stream_order.h): after the device work on it, and recorded
 * as its last (on the default stream: completed on return). */
static int copy_whole(gts_buffer *b, gts_side to, gts_stream stream, gts_error *err)
{
    const gts_device_ops *dev = b->device;
    int rc = gts__order_device(dev, &b->order, stream, err);
    if (rc)
        return rc;
    rc = to == GTS_SIDE_DEVICE
             ? gts_device_copy_to_device(dev, b->data, b->mirror, b->size, stream, err)
             : gts_device_copy_to_host(dev, b->mirror, b->data, b->size, stream, err);
    return rc ? rc : gts__order_record(dev, &b->order, stream, err);
}

/* Side `side` is ready for work: the host's after the device work on the
 * buffer, a stream's ordered after it (stream_order.h). */
static int order_side(gts_buffer *b, gts_side side, gts_stream stream, gts_error *err)
{
    return side == GTS_SIDE_HOST ? gts__order_host(b->device, &b->order, err)
                                 : gts__order_device(b->device, &b->order, stream, err);
}

/* Ends the copy that began at `begun`: the sides are equal, unless the copy
 * failed or a state was declared meanwhile (a new generation; writes
 * cannot begin while the flag is up). */
static void finish_copy(gts_buffer *b, uint64_t begun, bool copied)
{
    uint64_t word = atomic_load_explicit(&b->sync, memory_order_acquire), next;
    do {
        bool declared = (word & ~(GENERATION - 1)) != (begun & ~(GENERATION - 1));
        next = (copied && !declared ? with_state(word, GTS_SYNC_CLEAN) : word) & ~COPYING;
    } while (!atomic_compare_exchange_weak_explicit(&b->sync, &word, next, memory_order_acq_rel,
                                                    memory_order_acquire));
}

/* The copy once no write is in flight and no other copy runs: the flag,
 * raised by a compare-and-swap on a word without writers, holds new
 * writes off until the copy is done. */
static int sync_waiting(gts_buffer *b, gts_side to, bool force, gts_stream stream, waiter *w,
                        gts_error *err)
{
    uint64_t word = atomic_load_explicit(&b->sync, memory_order_acquire);
    for (;;) {
        if (!force && state_of(word) != stale(to))
            return GTS_OK;
        if (word & (COPYING | WRITERS)) {
            pause_once(w);
            word = atomic_load_explicit(&b->sync, memory_order_acquire);
            continue;
        }
        if (!atomic_compare_exchange_weak_explicit(&b->sync, &word, word | COPYING,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        int rc = copy_whole(b, to, stream, err);
        finish_copy(b, word, rc == GTS_OK);
        return rc;
    }
}

int gts_buffer_sync(gts_buffer *buffer, gts_side to, bool force, gts_stream stream,
                    gts_error *err)
{
    if (!valid_side(to))
        return gts_error_set(err, GTS_EINVAL, "to: %d is no gts_side", (int)to);
    if (!buffer)
        return null_buffer(err);
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    if (!buffer->mirror || (!force && state_of(word) != stale(to))) /* current: the fast path */
        return order_side(buffer, to, stream, err);
    waiter w = {0, NULL, NULL};
    int rc = sync_waiting(buffer, to, force, stream, &w, err);
    done_waiting(&w);
    return rc ? rc : order_side(buffer, to, stream, err);
}

/* ---- writes ----------------------------------------------------------------------------- */

/* A new generation marking `side`, with one more write in flight; false
 * where it must wait (a copy runs, the other side is ahead, or the count
 * is full). */
static bool try_begin(gts_buffer *b, gts_side side, uint64_t *word)
{
    if ((*word & COPYING) || state_of(*word) == stale(side) ||
        writers_of(*word) == writers_of(WRITERS))
        return false;
    gts_sync_state written = side == GTS_SIDE_HOST ? GTS_SYNC_HOST_DIRTY : GTS_SYNC_DEVICE_DIRTY;
    return atomic_compare_exchange_strong_explicit(&b->sync, word, marked(*word, written) + WRITER,
                                                   memory_order_acq_rel, memory_order_acquire);
}

static int begin_waiting(gts_buffer *b, gts_side side, gts_stream stream, waiter *w,
                         gts_error *err)
{
    uint64_t word = atomic_load_explicit(&b->sync, memory_order_acquire);
    while (!try_begin(b, side, &word)) {
        bool held_off = (word & COPYING) || writers_of(word) == writers_of(WRITERS);
        if (held_off) {
            pause_once(w);
        } else if (state_of(word) == stale(side)) {
            int rc = sync_waiting(b, side, false, stream, w, err);
            if (rc)
                return rc;
        } /* (else the compare-and-swap lost a race: try again) */
        word = atomic_load_explicit(&b->sync, memory_order_acquire);
    }
    return GTS_OK;
}

int gts_buffer_write_begin(gts_buffer *buffer, gts_side side, gts_stream stream, gts_error *err)
{
    if (!valid_side(side))
        return gts_error_set(err, GTS_EINVAL, "side: %d is no gts_side", (int)side);
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror) /* nothing to mark: only the order */
        return order_side(buffer, side, stream, err);
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    int rc = GTS_OK;
    if (!try_begin(buffer, side, &word)) { /* else the fast path */
        waiter w = {0, NULL, NULL};
        rc = begin_waiting(buffer, side, stream, &w, err);
        done_waiting(&w);
        if (rc)
            return rc;
    }
    if ((rc = order_side(buffer, side, stream, err)))
        gts_buffer_write_end(buffer, NULL);
    return rc;
}

int gts_buffer_write_end(gts_buffer *buffer, gts_error *err)
{
    if (!buffer)
        return null_buffer(err);
    if (!buffer->mirror)
        return GTS_OK;
    uint64_t word = atomic_load_explicit(&buffer->sync, memory_order_acquire);
    do {
        if (writers_of(word) == 0)
            return gts_error_set(err, GTS_EINVAL,
                                 "buffer: no write is in flight (gts_buffer_write_end without "
                                 "gts_buffer_write_begin)");
    } while (!atomic_compare_exchange_weak_explicit(&buffer->sync, &word, word - WRITER,
                                                    memory_order_acq_rel, memory_order_acquire));
    return GTS_OK;
}

int gts_buffer_prepare_write(gts_buffer *buffer, gts_side side, gts_stream stream,
                             gts_error *err)
{
    int rc = gts_buffer_write_begin(buffer, side, stream, err);
    return rc ? rc : gts_buffer_write_end(buffer, err);
}
