/* The access verb (gtstore/access.h): a storage on a device the input
 * picks (the host, the emulated device with and without a host side, its
 * managed and pinned memory), viewed from an element the input picks, then
 * up to 64 accesses with any side, any access (invalid ones mixed in), a
 * read-only flag toggled on the way, each write storing a new value at
 * element 0 through the address returned.
 *
 * Checks against a model of the values on each side and the sync state:
 * an access succeeds exactly when its arguments are valid, the storage is
 * writable for a write and the side exists; a failure changes nothing; the
 * address is element 0 on that side; the value read there is the last one
 * written on either side (no write is ever lost); the state is the one the
 * sync rule gives; no write stays in flight after its end. */
#include "fuzz_input.h"
#include "gtstore/access.h"
#include "gtstore/storage.h"

typedef struct model {
    bool mirrored, device_only;
    double value[2]; /* element 0's value on each side (the same memory when one-sided) */
    gts_sync_state state;
} model;

static const gts_device_ops *pick_device(fuzz_input *in, unsigned *flags, model *m)
{
    const gts_device_ops *emulated = gts_device_emulated(), *out = NULL;
    *flags = GTS_ALLOC_ZERO;
    switch (fuzz_range(in, 0, 4)) {
    case 0: return gts_device_host();
    case 1: *flags |= GTS_ALLOC_MIRRORED; m->mirrored = true; return emulated;
    case 2: m->device_only = true; return emulated;
    case 3: FUZZ_CHECK(gts_device_managed(emulated, &out, NULL) == GTS_OK); return out;
    default: FUZZ_CHECK(gts_device_pinned(emulated, &out, NULL) == GTS_OK); return out;
    }
}

static double *value_at(const gts_storage *s, gts_side side, void *element0)
{
    const gts_device_ops *device = gts_buffer_device(s->buffer);
    return side == GTS_SIDE_DEVICE ? gts_device_host_alias(device, element0) : element0;
}

static gts_sync_state stale_state(gts_side side)
{
    return side == GTS_SIDE_HOST ? GTS_SYNC_DEVICE_DIRTY : GTS_SYNC_HOST_DIRTY;
}

/* The model after a valid access of `side`: synced, then marked. */
static void model_access(model *m, gts_side side, gts_access access)
{
    if (!m->mirrored)
        return;
    if (m->state == stale_state(side)) {
        m->value[side] = m->value[!side];
        m->state = GTS_SYNC_CLEAN;
    }
    if (access != GTS_ACCESS_READ)
        m->state = side == GTS_SIDE_HOST ? GTS_SYNC_HOST_DIRTY : GTS_SYNC_DEVICE_DIRTY;
}

static void one_access(fuzz_input *in, gts_storage *s, model *m, double *next)
{
    int side = (int)fuzz_range(in, -1, 2), access = (int)fuzz_range(in, -1, 3);
    if (fuzz_range(in, 0, 7) == 0)
        s->readonly = !s->readonly;
    bool valid_side = side == GTS_SIDE_HOST || side == GTS_SIDE_DEVICE;
    bool valid_access = access >= GTS_ACCESS_READ && access <= GTS_ACCESS_WRITE_HELD;
    bool write = access != GTS_ACCESS_READ;
    bool ok = valid_side && valid_access && !(write && s->readonly) &&
              !(side == GTS_SIDE_HOST && m->device_only);
    void *element0 = (void *)s;
    gts_error err;
    int rc = gts_storage_access(s, (gts_side)side, (gts_access)access, NULL, &element0, &err);
    FUZZ_CHECK((rc == GTS_OK) == ok);
    if (!ok) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(element0 == (void *)s);
        FUZZ_CHECK(gts_buffer_sync_state(s->buffer) == m->state);
        return;
    }
    char *base = side == GTS_SIDE_HOST ? gts_buffer_host(s->buffer) : gts_buffer_data(s->buffer);
    FUZZ_CHECK(element0 == base + s->offset);
    model_access(m, (gts_side)side, (gts_access)access);
    FUZZ_CHECK(gts_buffer_sync_state(s->buffer) == m->state);
    double *value = value_at(s, (gts_side)side, element0);
    FUZZ_CHECK(value && *value == m->value[side]);
    if (write) {
        *value = *next;
        m->value[side] = *next;
        if (!m->mirrored)
            m->value[!side] = *next;
        *next += 1.0;
    }
    FUZZ_CHECK(gts_storage_access_end(s, (gts_side)side, (gts_access)access, NULL, &err) ==
               GTS_OK);
    FUZZ_CHECK(gts_buffer_writes_in_flight(s->buffer) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    model m = {.state = GTS_SYNC_CLEAN};
    unsigned flags;
    const gts_device_ops *device = pick_device(&in, &flags, &m);
    int64_t shape[2] = {fuzz_range(&in, 1, 6), fuzz_range(&in, 1, 6)};
    gts_storage_spec spec;
    gts_storage s;
    FUZZ_CHECK(gts_storage_spec_init(&spec, 2, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, NULL) ==
               GTS_OK);
    FUZZ_CHECK(gts_storage_create_on(device, &spec, flags, &s, NULL) == GTS_OK);
    /* a view whose element 0 is (i, j) */
    int64_t i = fuzz_range(&in, 0, shape[0] - 1), j = fuzz_range(&in, 0, shape[1] - 1);
    FUZZ_CHECK(gts_storage_slice(&s, 0, i, 1, shape[0] - i, NULL) == GTS_OK);
    FUZZ_CHECK(gts_storage_slice(&s, 1, j, 1, shape[1] - j, NULL) == GTS_OK);
    double next = 1.0;
    for (int k = 0; k < 64 && !fuzz_empty(&in); ++k)
        one_access(&in, &s, &m, &next);
    gts_storage_release(&s);
    return 0;
}
