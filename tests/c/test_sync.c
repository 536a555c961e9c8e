/* Mirrored buffers and their sync state (gtstore/sync.h), on the emulated
 * device, whose device memory the test reads as a kernel would
 * (buffer_bytes) and whose transfer counts it checks: the transitions one
 * by one, a long random sequence of writes, reads, syncs and marks on both
 * sides against a model (no write is ever lost, and every transfer is one
 * the model needed), storages over mirrored buffers (fill, assign and copy
 * write the device side after syncing it), two threads, one writing the
 * host side and one syncing it to the device, that must lose no write, and
 * writes in flight (gts_buffer_write_begin/_end): a sync waits for them,
 * and writers on both sides with syncers beside them lose nothing. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "random.h"
#include "storage_helpers.h"
#include "gtstore/dlpack.h"
#include "gtstore/sync.h"

#define SIZE 4096

static const gts_device_ops *emulated;

static int64_t transfers(void)
{
    gts_transfer_counts c;
    gts_device_emulated_counts(&c);
    return c.to_device + c.to_host;
}

static gts_buffer *mirrored(int64_t size)
{
    gts_buffer *b = NULL;
    CHECK_OK(gts_buffer_alloc(emulated, size, GTS_ALLOC_MIRRORED | GTS_ALLOC_ZERO, &b, ERR));
    return b;
}

/* The device side as a kernel there sees it. */
static unsigned char *device_side(gts_buffer *b)
{
    return gts_device_emulated_host_address(gts_buffer_data(b));
}

static void test_allocation(void)
{
    gts_buffer *b = mirrored(SIZE);
    if (!b)
        return;
    CHECK(gts_buffer_mirrored(b) && gts_buffer_sync_state(b) == GTS_SYNC_CLEAN);
    unsigned char *host = gts_buffer_host(b), *device = device_side(b);
    CHECK(host && device && host != device);
    CHECK(host[0] == 0 && host[SIZE - 1] == 0 && device[0] == 0 && device[SIZE - 1] == 0);
    gts_buffer_release(b);

    /* the host has one side only, and other one-sided buffers track nothing */
    gts_buffer *plain;
    CHECK_FAILS(gts_buffer_alloc(gts_device_host(), 64, GTS_ALLOC_MIRRORED, &plain, ERR),
                GTS_EINVAL, "host-accessible");
    if (CHECK_OK(gts_buffer_alloc(emulated, 64, 0, &plain, ERR))) {
        CHECK(!gts_buffer_mirrored(plain) && gts_buffer_host(plain) == NULL);
        CHECK_OK(gts_buffer_set_sync_state(plain, GTS_SYNC_HOST_DIRTY, ERR));
        CHECK_OK(gts_buffer_prepare_write(plain, GTS_SIDE_HOST, NULL, ERR));
        CHECK_INT_EQ(gts_buffer_sync_state(plain), GTS_SYNC_CLEAN);
        gts_buffer_release(plain);
    }
}

static void test_transitions(void)
{
    gts_buffer *b = mirrored(SIZE);
    if (!b)
        return;
    unsigned char *host = gts_buffer_host(b), *device = device_side(b);
    gts_device_emulated_reset_counts();
    /* a host write, then the device side brought up to date once */
    CHECK_OK(gts_buffer_prepare_write(b, GTS_SIDE_HOST, NULL, ERR));
    host[10] = 7;
    CHECK_INT_EQ(gts_buffer_sync_state(b), GTS_SYNC_HOST_DIRTY);
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_HOST, false, NULL, ERR)); /* current: nothing */
    CHECK_INT_EQ(transfers(), 0);
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, false, NULL, ERR));
    CHECK(device[10] == 7 && gts_buffer_sync_state(b) == GTS_SYNC_CLEAN);
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, false, NULL, ERR));
    gts_transfer_counts c;
    gts_device_emulated_counts(&c);
    CHECK(c.to_device == 1 && c.to_device_bytes == SIZE && c.to_host == 0);
    /* a device write, then a host write: the host side is synced first */
    CHECK_OK(gts_buffer_prepare_write(b, GTS_SIDE_DEVICE, NULL, ERR));
    device[20] = 9;
    CHECK_OK(gts_buffer_prepare_write(b, GTS_SIDE_HOST, NULL, ERR));
    CHECK(host[20] == 9 && gts_buffer_sync_state(b) == GTS_SYNC_HOST_DIRTY);
    CHECK_INT_EQ(transfers(), 2);
    /* force copies even when current, and leaves it clean */
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, false, NULL, ERR));
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, true, NULL, ERR));
    CHECK(transfers() == 4 && gts_buffer_sync_state(b) == GTS_SYNC_CLEAN);
    /* declared states, and bad arguments */
    CHECK_OK(gts_buffer_set_sync_state(b, GTS_SYNC_DEVICE_DIRTY, ERR));
    CHECK_INT_EQ(gts_buffer_sync_state(b), GTS_SYNC_DEVICE_DIRTY);
    CHECK_FAILS(gts_buffer_set_sync_state(b, (gts_sync_state)3, ERR), GTS_EINVAL, "state");
    /* the one list of the states, by name (messages, Python's SyncState) */
    CHECK_STR_EQ(gts_sync_state_name(GTS_SYNC_CLEAN), "SYNC_CLEAN");
    CHECK_STR_EQ(gts_sync_state_name(GTS_SYNC_HOST_DIRTY), "SYNC_HOST_DIRTY");
    CHECK_STR_EQ(gts_sync_state_name(GTS_SYNC_DEVICE_DIRTY), "SYNC_DEVICE_DIRTY");
    CHECK(gts_sync_state_name((gts_sync_state)3) == NULL);
    CHECK(gts_sync_state_name((gts_sync_state)-1) == NULL);
    CHECK_FAILS(gts_buffer_sync(b, (gts_side)2, false, NULL, ERR), GTS_EINVAL, "to");
    CHECK_FAILS(gts_buffer_prepare_write(b, (gts_side)-1, NULL, ERR), GTS_EINVAL, "side");
    /* no buffer: nothing to track, an error where it would sync or mark */
    CHECK(!gts_buffer_mirrored(NULL));
    CHECK(gts_buffer_sync_state(NULL) == GTS_SYNC_CLEAN);
    CHECK_FAILS(gts_buffer_sync(NULL, GTS_SIDE_HOST, false, NULL, ERR), GTS_EINVAL,
                "buffer: NULL");
    CHECK_FAILS(gts_buffer_prepare_write(NULL, GTS_SIDE_DEVICE, NULL, ERR), GTS_EINVAL,
                "buffer: NULL");
    CHECK_FAILS(gts_buffer_set_sync_state(NULL, GTS_SYNC_CLEAN, ERR), GTS_EINVAL,
                "buffer: NULL");
    CHECK_INT_EQ(gts_buffer_sync_state(b), GTS_SYNC_DEVICE_DIRTY);
    gts_buffer_release(b);
}

/* Thousands of random operations on one buffer, through "views" (byte
 * ranges): writes on either side, reads on either side, syncs (some
 * forced) and declared states. The model knows what each byte must read
 * and which side is stale, so it knows which transfers are needed. */
static void test_random_sequence(void)
{
    enum { N = 512, STEPS = 20000 };
    gts_buffer *b = mirrored(N);
    if (!b)
        return;
    unsigned char *host = gts_buffer_host(b), *device = device_side(b);
    unsigned char truth[N] = {0};
    gts_sync_state model = GTS_SYNC_CLEAN;
    int64_t expected = 0;
    gts_device_emulated_reset_counts();
    for (int step = 0; step < STEPS; ++step) {
        gts_side side = rnd(2) ? GTS_SIDE_DEVICE : GTS_SIDE_HOST;
        gts_sync_state stale = side == GTS_SIDE_HOST ? GTS_SYNC_DEVICE_DIRTY : GTS_SYNC_HOST_DIRTY;
        unsigned char *mem = side == GTS_SIDE_HOST ? host : device;
        int64_t start = rnd(N), count = 1 + rnd(N - start);
        switch (rnd(4)) {
        case 0: { /* a write through a view */
            if (!CHECK_OK(gts_buffer_prepare_write(b, side, NULL, ERR)))
                return;
            expected += model == stale;
            model = side == GTS_SIDE_HOST ? GTS_SYNC_HOST_DIRTY : GTS_SYNC_DEVICE_DIRTY;
            unsigned char value = (unsigned char)(1 + rnd(255));
            memset(mem + start, value, (size_t)count);
            memset(truth + start, value, (size_t)count);
            break;
        }
        case 1: /* a read through a view */
            if (!CHECK_OK(gts_buffer_sync(b, side, false, NULL, ERR)))
                return;
            expected += model == stale;
            model = model == stale ? GTS_SYNC_CLEAN : model;
            if (!CHECK(memcmp(mem + start, truth + start, (size_t)count) == 0))
                return; /* a lost write */
            break;
        case 2: { /* an explicit sync, sometimes forced */
            bool force = rnd(8) == 0;
            CHECK_OK(gts_buffer_sync(b, side, force, NULL, ERR));
            expected += force || model == stale;
            if (force && model != GTS_SYNC_CLEAN && model != stale) {
                /* forcing over the newer side discards its writes, by request */
                memcpy(truth, side == GTS_SIDE_HOST ? device : host, N);
            }
            model = force || model == stale ? GTS_SYNC_CLEAN : model;
            break;
        }
        default: /* the state as the model has it, declared: nothing moves */
            CHECK_OK(gts_buffer_set_sync_state(b, model, ERR));
        }
        if (!CHECK_INT_EQ(gts_buffer_sync_state(b), model) || !CHECK_INT_EQ(transfers(), expected))
            return;
    }
    /* both sides end equal to the truth */
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_HOST, false, NULL, ERR));
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, false, NULL, ERR));
    CHECK(memcmp(host, truth, N) == 0 && memcmp(device, truth, N) == 0);
    CHECK(expected > STEPS / 10); /* the sequence did move data */
    gts_buffer_release(b);
}

/* Storages over a mirrored buffer: fill and assign write the device side
 * after syncing it; copy makes a mirrored copy; the host side is the
 * storage's host address. */
/* DLPack exports the device side, or with GTS_DLPACK_HOST_SIDE the host
 * side as a CPU tensor: mirrored buffers have one, managed memory is one;
 * plain device memory has none. */
static void test_dlpack_sides(const gts_storage *s)
{
    gts_dl_managed_versioned *t;
    if (CHECK_OK(gts_storage_to_dlpack(s, GTS_DLPACK_HOST_SIDE, &t, ERR))) {
        CHECK(t->dl_tensor.device.device_type == GTS_DL_CPU && t->flags == 0);
        CHECK((char *)t->dl_tensor.data == (char *)gts_storage_data(s));
        t->deleter(t);
    }
    if (CHECK_OK(gts_storage_to_dlpack(s, 0, &t, ERR))) {
        CHECK(t->dl_tensor.device.device_type == GTS_DL_EXT_DEV);
        CHECK((char *)t->dl_tensor.data == (char *)gts_buffer_data(s->buffer) + s->offset);
        t->deleter(t);
    }
    gts_storage plain;
    const int64_t n = 3;
    gts_storage_spec spec;
    CHECK_OK(gts_storage_spec_init(&spec, 1, &n, F8, ERR));
    if (CHECK_OK(gts_storage_create_on(emulated, &spec, 0, &plain, ERR))) {
        CHECK_FAILS(gts_storage_to_dlpack(&plain, GTS_DLPACK_HOST_SIDE, &t, ERR), GTS_EINVAL,
                    "mirrored");
        gts_storage_release(&plain);
    }
    /* managed memory: its host side is itself, as a CPU tensor (no copy) */
    const gts_device_ops *managed;
    gts_storage shared;
    if (CHECK_OK(gts_device_managed(emulated, &managed, ERR)) &&
        CHECK_OK(gts_storage_create_on(managed, &spec, 0, &shared, ERR))) {
        if (CHECK_OK(gts_storage_to_dlpack(&shared, GTS_DLPACK_HOST_SIDE, &t, ERR))) {
            CHECK(t->dl_tensor.device.device_type == GTS_DL_CPU);
            CHECK((char *)t->dl_tensor.data == (char *)gts_storage_data(&shared));
            t->deleter(t);
        }
        gts_storage_release(&shared);
    }
}

static void test_storages(void)
{
    const int64_t shape[2] = {6, 5};
    gts_storage_spec spec;
    gts_storage s, host_values, copy;
    CHECK_OK(gts_storage_spec_init(&spec, 2, shape, F8, ERR));
    if (!CHECK_OK(gts_storage_create_on(emulated, &spec, GTS_ALLOC_MIRRORED, &s, ERR)))
        return;
    CHECK(gts_buffer_mirrored(s.buffer) && gts_storage_data(&s) != NULL);
    gts_device_emulated_reset_counts();
    CHECK_OK(gts_storage_fill(&s, (gts_scalar){.kind = GTS_SCALAR_FLOAT, .value.f = 2.5}, ERR));
    CHECK_INT_EQ(gts_buffer_sync_state(s.buffer), GTS_SYNC_DEVICE_DIRTY);
    double *h = gts_storage_data(&s);
    CHECK_OK(gts_buffer_sync(s.buffer, GTS_SIDE_HOST, false, NULL, ERR));
    CHECK(h[0] == 2.5 && h[29] == 2.5);
    /* a host write, then an assign into a view of it: synced first */
    CHECK_OK(gts_buffer_prepare_write(s.buffer, GTS_SIDE_HOST, NULL, ERR));
    h[29] = -1.0;
    gts_storage row;
    gts_storage_view(&s, &row);
    CHECK_OK(gts_storage_index(&row, 0, 0, ERR));
    CHECK_OK(gts_storage_spec_init(&spec, 1, shape + 1, F8, ERR));
    if (CHECK_OK(gts_storage_create(&spec, GTS_ALLOC_ZERO, &host_values, ERR))) {
        CHECK_OK(gts_storage_assign(&row, &host_values, ERR));
        CHECK_OK(gts_buffer_sync(s.buffer, GTS_SIDE_HOST, false, NULL, ERR));
        CHECK(h[0] == 0.0 && h[4] == 0.0 && h[5] == 2.5 && h[29] == -1.0); /* kept */
        gts_storage_release(&host_values);
    }
    gts_storage_release(&row);
    /* a copy: mirrored too, with the values */
    if (CHECK_OK(gts_storage_copy(&s, &copy, ERR))) {
        CHECK(gts_buffer_mirrored(copy.buffer));
        CHECK_OK(gts_buffer_sync(copy.buffer, GTS_SIDE_HOST, false, NULL, ERR));
        const double *c = gts_storage_data(&copy);
        CHECK(c[29] == -1.0 && c[5] == 2.5 && c[0] == 0.0);
        gts_storage_release(&copy);
    }
    test_dlpack_sides(&s);
    gts_storage_release(&s);
}

/* One thread writes the host side (writes in flight); another keeps
 * syncing it to the device. However they interleave, the device ends with
 * every write once the writer is done and one last sync ran. */
typedef struct race {
    gts_buffer *buffer;
    atomic_int done;
} race;

static void *writer(void *arg)
{
    race *r = arg;
    unsigned char *host = gts_buffer_host(r->buffer);
    for (int i = 0; i < 20000; ++i) {
        if (gts_buffer_write_begin(r->buffer, GTS_SIDE_HOST, NULL, NULL) != GTS_OK)
            break;
        host[i % 256] = (unsigned char)(i / 256 + 1);
        gts_buffer_write_end(r->buffer, NULL);
    }
    atomic_store(&r->done, 1);
    return NULL;
}

static void *syncer(void *arg)
{
    race *r = arg;
    while (!atomic_load(&r->done))
        if (gts_buffer_sync(r->buffer, GTS_SIDE_DEVICE, false, NULL, NULL) != GTS_OK)
            break;
    return NULL;
}

static void test_threads(void)
{
    race r = {.buffer = mirrored(256)};
    if (!r.buffer)
        return;
    atomic_init(&r.done, 0);
    pthread_t a, b;
    if (!CHECK(pthread_create(&a, NULL, writer, &r) == 0))
        return;
    CHECK(pthread_create(&b, NULL, syncer, &r) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    /* the writer's marks after the syncer's last copy keep it stale */
    CHECK_OK(gts_buffer_sync(r.buffer, GTS_SIDE_DEVICE, false, NULL, ERR));
    const unsigned char *device = device_side(r.buffer), *host = gts_buffer_host(r.buffer);
    CHECK(host[0] == 79 && host[255] == 78); /* the writer's last round */
    CHECK(memcmp(device, host, 256) == 0);
    gts_buffer_release(r.buffer);
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The wait hooks, counted: a caller's lock let go around each wait. */
static atomic_int left, entered;

static void *count_leave(void)
{
    atomic_fetch_add(&left, 1);
    return &left;
}

static void count_enter(void *token)
{
    if (token == &left)
        atomic_fetch_add(&entered, 1);
}

static const gts_wait_hooks counting_hooks = {count_leave, count_enter};

/* Another thread's sync, or write on the other side, while the main thread
 * holds a write: it returns only after the write ended, with it copied. */
typedef struct held {
    gts_buffer *buffer;
    bool write; /* write_begin(DEVICE) rather than sync(DEVICE) */
    atomic_int ended, returned_after_end, returned;
} held;

static void *sync_or_write_device(void *arg)
{
    held *h = arg;
    int rc = h->write ? gts_buffer_write_begin(h->buffer, GTS_SIDE_DEVICE, NULL, NULL)
                      : gts_buffer_sync(h->buffer, GTS_SIDE_DEVICE, false, NULL, NULL);
    atomic_store(&h->returned_after_end, atomic_load(&h->ended));
    atomic_store(&h->returned, 1);
    if (rc == GTS_OK && h->write)
        gts_buffer_write_end(h->buffer, NULL);
    return NULL;
}

static void hold_against(bool write)
{
    held h = {.buffer = mirrored(256), .write = write};
    if (!h.buffer)
        return;
    atomic_init(&h.ended, 0);
    atomic_init(&h.returned_after_end, 0);
    atomic_init(&h.returned, 0);
    unsigned char *host = gts_buffer_host(h.buffer);
    CHECK_OK(gts_buffer_write_begin(h.buffer, GTS_SIDE_HOST, NULL, ERR));
    CHECK_INT_EQ(gts_buffer_writes_in_flight(h.buffer), 1);
    host[0] = 1; /* the first half of the write */
    int waits_before = atomic_load(&left);
    pthread_t t;
    if (!CHECK(pthread_create(&t, NULL, sync_or_write_device, &h) == 0))
        return;
    /* until the other thread waits (the wait hooks count it), however
     * loaded the machine: a fixed sleep let it start after the write ended */
    for (int ms = 0; ms < 20000 && atomic_load(&left) == waits_before; ++ms)
        sleep_ms(1);
    CHECK(atomic_load(&left) > waits_before);
    sleep_ms(5);
    CHECK(!atomic_load(&h.returned)); /* it waits for the write in flight */
    host[255] = 2;                    /* the second half */
    atomic_store(&h.ended, 1);
    CHECK_OK(gts_buffer_write_end(h.buffer, ERR));
    pthread_join(t, NULL);
    CHECK(atomic_load(&h.returned_after_end));
    const unsigned char *device = device_side(h.buffer);
    CHECK(device[0] == 1 && device[255] == 2); /* the whole write copied */
    CHECK_INT_EQ(gts_buffer_sync_state(h.buffer),
                 write ? GTS_SYNC_DEVICE_DIRTY : GTS_SYNC_CLEAN);
    CHECK_INT_EQ(gts_buffer_writes_in_flight(h.buffer), 0);
    gts_buffer_release(h.buffer);
}

static void test_write_in_flight(void)
{
    atomic_init(&left, 0);
    atomic_init(&entered, 0);
    gts_sync_set_wait_hooks(&counting_hooks);
    hold_against(false);
    hold_against(true);
    gts_sync_set_wait_hooks(NULL);
    CHECK(atomic_load(&left) >= 2 && atomic_load(&left) == atomic_load(&entered));

    /* writes on the same side run side by side; the count pairs up */
    gts_buffer *b = mirrored(64);
    if (!b)
        return;
    CHECK_OK(gts_buffer_write_begin(b, GTS_SIDE_DEVICE, NULL, ERR));
    CHECK_OK(gts_buffer_write_begin(b, GTS_SIDE_DEVICE, NULL, ERR));
    CHECK_OK(gts_buffer_sync(b, GTS_SIDE_DEVICE, false, NULL, ERR)); /* current: no wait */
    CHECK_INT_EQ(gts_buffer_writes_in_flight(b), 2);
    CHECK_OK(gts_buffer_write_end(b, ERR));
    CHECK_OK(gts_buffer_write_end(b, ERR));
    CHECK_FAILS(gts_buffer_write_end(b, ERR), GTS_EINVAL, "no write is in flight");
    CHECK_FAILS(gts_buffer_write_begin(b, (gts_side)5, NULL, ERR), GTS_EINVAL, "side");
    CHECK_INT_EQ(gts_buffer_writes_in_flight(b), 0);
    CHECK_INT_EQ(gts_buffer_sync_state(b), GTS_SYNC_DEVICE_DIRTY);
    gts_buffer_release(b);
}

/* Writers on both sides, each in its own bytes and one byte at a time (a
 * long write), with two syncers copying the buffer both ways meanwhile:
 * every write must survive: after its begin, each writer finds its
 * previous round, and the last rounds end on the host. With prepare_write
 * instead of a write in flight, a sync copies half a write, the rest lands
 * on a stale side, and the next sync back loses it. */
enum { REGION = 1024, ROUNDS = 3000 };

typedef struct flight {
    gts_buffer *buffer;
    atomic_int writers_done;
    atomic_llong lost; /* bytes that did not hold their writer's last round */
    int failures;
} flight;

static void write_rounds(flight *f, gts_side side, int64_t start)
{
    for (int round = 1; round <= ROUNDS; ++round) {
        if (gts_buffer_write_begin(f->buffer, side, NULL, NULL) != GTS_OK) {
            ++f->failures;
            break;
        }
        volatile unsigned char *mem = side == GTS_SIDE_HOST
                                          ? (unsigned char *)gts_buffer_host(f->buffer)
                                          : device_side(f->buffer);
        /* the side is current: it holds this writer's previous round */
        for (int64_t i = start; i < start + REGION; ++i)
            atomic_fetch_add(&f->lost, mem[i] != (unsigned char)(round - 1));
        for (int64_t i = start; i < start + REGION; ++i)
            mem[i] = (unsigned char)round;
        gts_buffer_write_end(f->buffer, NULL);
    }
    atomic_fetch_add(&f->writers_done, 1);
}

static void *host_writer(void *arg)
{
    write_rounds(arg, GTS_SIDE_HOST, 0);
    return NULL;
}

static void *device_writer(void *arg)
{
    write_rounds(arg, GTS_SIDE_DEVICE, 2 * REGION);
    return NULL;
}

static void *both_ways(void *arg)
{
    flight *f = arg;
    for (int n = 0; atomic_load(&f->writers_done) < 2; ++n)
        gts_buffer_sync(f->buffer, n % 2 ? GTS_SIDE_HOST : GTS_SIDE_DEVICE, false, NULL,
                        NULL);
    return NULL;
}

static void test_writers_on_both_sides(void)
{
    flight f = {.buffer = mirrored(4 * REGION)};
    if (!f.buffer)
        return;
    atomic_init(&f.writers_done, 0);
    atomic_init(&f.lost, 0);
    pthread_t t[4];
    void *(*body[4])(void *) = {host_writer, device_writer, both_ways, both_ways};
    for (int i = 0; i < 4; ++i)
        if (!CHECK(pthread_create(&t[i], NULL, body[i], &f) == 0))
            return;
    for (int i = 0; i < 4; ++i)
        pthread_join(t[i], NULL);
    CHECK_INT_EQ(f.failures, 0);
    CHECK_INT_EQ(atomic_load(&f.lost), 0);
    CHECK_OK(gts_buffer_sync(f.buffer, GTS_SIDE_HOST, false, NULL, ERR));
    const unsigned char *host = gts_buffer_host(f.buffer);
    unsigned char last = (unsigned char)ROUNDS;
    int64_t lost = 0;
    for (int64_t i = 0; i < 4 * REGION; ++i)
        lost += host[i] != (i < REGION || (i >= 2 * REGION && i < 3 * REGION) ? last : 0);
    CHECK_INT_EQ(lost, 0);
    gts_buffer_release(f.buffer);
}

int main(void)
{
    if (!CHECK_OK(gts_device_get((gts_device_id){GTS_DL_EXT_DEV, 0}, &emulated, ERR)))
        return check_summary("sync");
    int64_t start = live_buffers();
    test_allocation();
    test_transitions();
    test_random_sequence();
    test_storages();
    test_threads();
    test_write_in_flight();
    test_writers_on_both_sides();
    CHECK_INT_EQ(live_buffers(), start);
    return check_summary("sync");
}
