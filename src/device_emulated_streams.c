/* The streams and events of the emulated device (device_emulated_streams.h). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "device_emulated_streams.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* A stream: its queue, its worker and how far the worker got. Known by its
 * address in the registry of live streams (a stream given to an operation
 * is looked up there, never dereferenced, so that garbage or a destroyed
 * stream is an error, not a crash), and by an id that is never reused. */
typedef struct stream {
    struct stream *next;
    uint64_t id;
    pthread_t worker;
    gts__emu_work *head, *tail;
    uint64_t queued, done; /* units submitted, units completed */
    bool closing;
    uint64_t random; /* the delays' generator */
} stream;

/* An event: the stream it was last recorded on (0: none, complete) and
 * the units of that stream before it. Known by its address in the registry
 * of live events, as streams are. */
typedef struct event {
    struct event *next;
    uint64_t stream_id, ticket;
} event;

/* One lock for every queue and event, and one condition for every change
 * (work submitted, work done, a stream closing): tests make a few streams. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static stream *streams;
static event *events;
static uint64_t next_id = 1;

/* ---- the delay ------------------------------------------------------------------------ */

#define DEFAULT_DELAY_US 50
static pthread_once_t delay_once = PTHREAD_ONCE_INIT;
static long max_delay_us = DEFAULT_DELAY_US;

static void read_delay(void)
{
    const char *text = getenv("GTSTORE_EMULATED_DELAY_US");
    if (!text || !*text)
        return;
    char *end;
    long value = strtol(text, &end, 10);
    if (*end || value < 0 || value > 1000000)
        fprintf(stderr, "gtstore: GTSTORE_EMULATED_DELAY_US='%.40s' is not a number of "
                        "microseconds in [0, 1000000]; using %d\n", text, DEFAULT_DELAY_US);
    else
        max_delay_us = value;
}

/* xorshift64*: the delays need no quality, only variety. */
static uint64_t next_random(stream *s)
{
    s->random ^= s->random >> 12;
    s->random ^= s->random << 25;
    s->random ^= s->random >> 27;
    return s->random * 0x2545f4914f6cdd1dull;
}

static void delay(uint64_t random)
{
    if (max_delay_us <= 0)
        return;
    long us = (long)(random % (uint64_t)(max_delay_us + 1));
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* ---- the registries (caller holds the lock) --------------------------------------------- */

static stream *stream_at(gts_stream handle)
{
    for (stream *s = streams; s; s = s->next)
        if ((void *)s == handle)
            return s;
    return NULL;
}

static stream *stream_with_id(uint64_t id)
{
    for (stream *s = streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static event *event_at(gts_event handle)
{
    for (event *e = events; e; e = e->next)
        if ((void *)e == handle)
            return e;
    return NULL;
}

/* Whether the first `ticket` units of stream `id` have completed (a stream
 * no longer live was drained). */
static bool reached(uint64_t id, uint64_t ticket)
{
    stream *s = id ? stream_with_id(id) : NULL;
    return !s || s->done >= ticket;
}

static void wait_until_reached(uint64_t id, uint64_t ticket)
{
    while (!reached(id, ticket))
        pthread_cond_wait(&changed, &lock);
}

/* ---- streams ---------------------------------------------------------------------------- */

int gts__emu_stream_check(gts_stream s, gts_error *err)
{
    if (!s)
        return GTS_OK;
    pthread_mutex_lock(&lock);
    bool live = stream_at(s) != NULL;
    pthread_mutex_unlock(&lock);
    if (!live)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %p is not a live stream of the emulated device", s);
    return GTS_OK;
}

void gts__emu_submit(gts_stream handle, gts__emu_work *work)
{
    work->next = NULL;
    pthread_mutex_lock(&lock);
    stream *s = stream_at(handle);
    if (s) {
        if (s->tail)
            s->tail->next = work;
        else
            s->head = work;
        s->tail = work;
        ++s->queued;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    if (!s) { /* checked by the caller: destroyed meanwhile, a caller's race */
        fprintf(stderr, "gtstore: work queued on %p, which is no longer a stream of the "
                        "emulated device\n", handle);
        abort();
    }
}

/* Runs the queue in order until the stream closes and its queue is empty. */
static void *worker(void *arg)
{
    stream *s = arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!s->head && !s->closing)
            pthread_cond_wait(&changed, &lock);
        gts__emu_work *work = s->head;
        if (!work)
            break;
        s->head = work->next;
        if (!s->head)
            s->tail = NULL;
        uint64_t random = next_random(s);
        pthread_mutex_unlock(&lock);
        delay(random);
        work->run(work);
        pthread_mutex_lock(&lock);
        ++s->done;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int gts__emu_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err)
{
    (void)dev;
    pthread_once(&delay_once, read_delay);
    stream *s = calloc(1, sizeof *s);
    if (!s)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot create a stream");
    pthread_mutex_lock(&lock);
    s->id = next_id++;
    s->random = 0x9e3779b97f4a7c15ull * s->id ^ (uint64_t)time(NULL);
    if (pthread_create(&s->worker, NULL, worker, s) != 0) {
        pthread_mutex_unlock(&lock);
        free(s);
        return gts_error_set(err, GTS_ENOMEM, "stream: cannot start its worker thread");
    }
    s->next = streams;
    streams = s;
    pthread_mutex_unlock(&lock);
    *out = s;
    return GTS_OK;
}

void gts__emu_stream_destroy(const gts_device_ops *dev, gts_stream handle)
{
    (void)dev;
    pthread_mutex_lock(&lock);
    stream *s = stream_at(handle);
    if (s) {
        s->closing = true;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    if (!s) { /* no error channel: a caller's bug, stopped where it is */
        fprintf(stderr, "gtstore: the emulated device was asked to destroy %p, which is not one "
                        "of its live streams\n", handle);
        abort();
    }
    pthread_join(s->worker, NULL); /* the queue drained */
    pthread_mutex_lock(&lock);
    for (stream **link = &streams; *link; link = &(*link)->next)
        if (*link == s) {
            *link = s->next;
            break;
        }
    pthread_cond_broadcast(&changed); /* waits on it are complete */
    pthread_mutex_unlock(&lock);
    free(s);
}

/* What is queued now on every live stream, as (id, units) pairs. */
static int snapshot(uint64_t (**out)[2], size_t *count, gts_error *err)
{
    size_t n = 0;
    for (stream *s = streams; s; s = s->next)
        ++n;
    uint64_t(*pairs)[2] = n ? malloc(n * sizeof *pairs) : NULL;
    if (n && !pairs)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot synchronise the device");
    n = 0;
    for (stream *s = streams; s; s = s->next, ++n) {
        pairs[n][0] = s->id;
        pairs[n][1] = s->queued;
    }
    *out = pairs;
    *count = n;
    return GTS_OK;
}

int gts__emu_synchronize(const gts_device_ops *dev, gts_stream handle, gts_error *err)
{
    (void)dev;
    int rc = GTS_OK;
    pthread_mutex_lock(&lock);
    if (handle) {
        stream *s = stream_at(handle);
        if (s)
            wait_until_reached(s->id, s->queued);
        else
            rc = gts_error_set(err, GTS_EINVAL,
                               "stream: %p is not a live stream of the emulated device", handle);
    } else { /* the device: what every stream holds now */
        uint64_t(*pairs)[2] = NULL;
        size_t n = 0;
        rc = snapshot(&pairs, &n, err);
        for (size_t i = 0; !rc && i < n; ++i)
            wait_until_reached(pairs[i][0], pairs[i][1]);
        free(pairs);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* ---- events ------------------------------------------------------------------------------ */

int gts__emu_event_create(const gts_device_ops *dev, gts_event *out, gts_error *err)
{
    (void)dev;
    event *e = calloc(1, sizeof *e);
    if (!e)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot create an event");
    pthread_mutex_lock(&lock);
    e->next = events;
    events = e;
    pthread_mutex_unlock(&lock);
    *out = e;
    return GTS_OK;
}

/* A wait queued on a stream ends once the work it captured is done; the
 * event itself may be destroyed or recorded again meanwhile. */
void gts__emu_event_destroy(const gts_device_ops *dev, gts_event handle)
{
    (void)dev;
    pthread_mutex_lock(&lock);
    event *found = NULL;
    for (event **link = &events; *link; link = &(*link)->next)
        if ((void *)*link == handle) {
            found = *link;
            *link = found->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (!found) {
        fprintf(stderr, "gtstore: the emulated device was asked to destroy %p, which is not one "
                        "of its live events\n", handle);
        abort();
    }
    free(found);
}

static int no_event(gts_event handle, gts_error *err)
{
    return gts_error_set(err, GTS_EINVAL, "event: %p is not a live event of the emulated device",
                         handle);
}

static int no_stream(gts_stream handle, gts_error *err)
{
    return gts_error_set(err, GTS_EINVAL,
                         "stream: %p is not a live stream of the emulated device", handle);
}

int gts__emu_event_record(const gts_device_ops *dev, gts_event handle, gts_stream s_handle,
                          gts_error *err)
{
    (void)dev;
    int rc = GTS_OK;
    pthread_mutex_lock(&lock);
    event *e = event_at(handle);
    stream *s = s_handle ? stream_at(s_handle) : NULL;
    if (!e)
        rc = no_event(handle, err);
    else if (s_handle && !s)
        rc = no_stream(s_handle, err);
    else if (!s) /* the default stream's work has completed */
        e->stream_id = e->ticket = 0;
    else {
        e->stream_id = s->id;
        e->ticket = s->queued;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

typedef struct wait_work {
    gts__emu_work base;
    uint64_t stream_id, ticket;
} wait_work;

static void run_wait(gts__emu_work *work)
{
    wait_work *w = (wait_work *)work;
    pthread_mutex_lock(&lock);
    wait_until_reached(w->stream_id, w->ticket);
    pthread_mutex_unlock(&lock);
    free(w);
}

/* The event as recorded now, in *id and *ticket; GTS_EINVAL for no event. */
static int captured(gts_event handle, uint64_t *id, uint64_t *ticket, gts_error *err)
{
    event *e = event_at(handle);
    if (!e)
        return no_event(handle, err);
    *id = e->stream_id;
    *ticket = e->ticket;
    return GTS_OK;
}

int gts__emu_event_synchronize(const gts_device_ops *dev, gts_event handle, gts_error *err)
{
    (void)dev;
    uint64_t id = 0, ticket = 0;
    pthread_mutex_lock(&lock);
    int rc = captured(handle, &id, &ticket, err);
    if (!rc)
        wait_until_reached(id, ticket);
    pthread_mutex_unlock(&lock);
    return rc;
}

int gts__emu_stream_wait_event(const gts_device_ops *dev, gts_stream s, gts_event handle,
                               gts_error *err)
{
    if (!s) /* the default stream runs on the caller's thread: the host waits */
        return gts__emu_event_synchronize(dev, handle, err);
    int rc = gts__emu_stream_check(s, err);
    if (rc)
        return rc;
    uint64_t id = 0, ticket = 0;
    pthread_mutex_lock(&lock);
    rc = captured(handle, &id, &ticket, err);
    bool done = !rc && reached(id, ticket);
    pthread_mutex_unlock(&lock);
    if (rc || done)
        return rc;
    wait_work *w = malloc(sizeof *w);
    if (!w)
        return gts_error_set(err, GTS_ENOMEM, "out of memory: cannot queue a wait");
    w->base.run = run_wait;
    w->stream_id = id;
    w->ticket = ticket;
    gts__emu_submit(s, &w->base);
    return GTS_OK;
}

int gts__emu_event_query(const gts_device_ops *dev, gts_event handle, bool *done, gts_error *err)
{
    (void)dev;
    uint64_t id = 0, ticket = 0;
    pthread_mutex_lock(&lock);
    int rc = captured(handle, &id, &ticket, err);
    *done = !rc && reached(id, ticket);
    pthread_mutex_unlock(&lock);
    return rc;
}
