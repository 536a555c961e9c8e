/* The stream order (gtstore/access.h) on the asynchronous emulated device:
 * two fields of 16 float64 (one mirrored, one mirrored or device-only as
 * the input says), then up to 64 operations the input picks, each on the
 * default stream or one of two streams: device fills and copies of ranges
 * through the access verb, host writes, host reads, reads of the device
 * side back on a stream, syncs of either side.
 *
 * Checks against a model of the values: every read, on either side and any
 * stream, gives the last value written (no write lost, no stale read), and
 * every call succeeds. The streams run their work later on threads of their
 * own (after up to 20 microseconds here), so a missing wait shows. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "gtstore/access.h"
#include "gtstore/storage.h"

#define N 16

typedef struct field {
    gts_storage whole;
    bool mirrored;
    double model[N];
} field;

static const gts_device_ops *emulated;
static gts_stream streams[3]; /* [0]: the default stream; made once */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    setenv("GTSTORE_EMULATED_DELAY_US", "20", 0);
    emulated = gts_device_emulated();
    for (int k = 1; k < 3; ++k)
        FUZZ_CHECK(gts_device_stream_create(emulated, &streams[k], NULL) == GTS_OK);
    return 0;
}

static void make_field(bool mirrored, field *f)
{
    gts_storage_spec spec;
    int64_t shape[1] = {N};
    FUZZ_CHECK(gts_storage_spec_init(&spec, 1, shape, (gts_dtype){GTS_KIND_FLOAT, 8}, NULL) ==
               GTS_OK);
    unsigned flags = GTS_ALLOC_ZERO | (mirrored ? GTS_ALLOC_MIRRORED : 0);
    FUZZ_CHECK(gts_storage_create_on(emulated, &spec, flags, &f->whole, NULL) == GTS_OK);
    f->mirrored = mirrored;
    memset(f->model, 0, sizeof f->model);
}

/* Elements [first, first + count) of a field. */
static gts_storage range_of(const field *f, int64_t first, int64_t count)
{
    gts_storage view;
    gts_storage_view(&f->whole, &view);
    FUZZ_CHECK(gts_storage_slice(&view, 0, first, 1, count, NULL) == GTS_OK);
    return view;
}

static void device_write(field *f, int64_t first, int64_t count, const field *src,
                         int64_t src_first, double value, gts_stream s)
{
    gts_storage to = range_of(f, first, count), from = range_of(src ? src : f, src_first, count);
    void *dst_data, *src_data;
    if (src)
        FUZZ_CHECK(gts_storage_access(&from, GTS_SIDE_DEVICE, GTS_ACCESS_READ, s, &src_data,
                                      NULL) == GTS_OK);
    FUZZ_CHECK(gts_storage_access(&to, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, &dst_data,
                                  NULL) == GTS_OK);
    for (int64_t i = 0; i < count; ++i) /* a copy's ranges never meet (one_step) */
        f->model[first + i] = src ? src->model[src_first + i] : value;
    int rc = src ? gts_device_copy(emulated, dst_data, to.strides, src_data, from.strides, 1,
                                   to.shape, 8, s, NULL)
                 : gts_device_fill(emulated, dst_data, 1, to.shape, to.strides, 8, &value, s,
                                   NULL);
    FUZZ_CHECK(rc == GTS_OK);
    FUZZ_CHECK(gts_storage_access_end(&to, GTS_SIDE_DEVICE, GTS_ACCESS_WRITE_HELD, s, NULL) ==
               GTS_OK);
    if (src)
        FUZZ_CHECK(gts_storage_access_end(&from, GTS_SIDE_DEVICE, GTS_ACCESS_READ, s, NULL) ==
                   GTS_OK);
    gts_storage_release(&to);
    gts_storage_release(&from);
}

static void host_write(field *f, int64_t first, int64_t count, double *next)
{
    void *data;
    gts_storage view = range_of(f, first, count);
    FUZZ_CHECK(gts_storage_access(&view, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, &data,
                                  NULL) == GTS_OK);
    for (int64_t i = 0; i < count; ++i)
        ((double *)data)[i] = f->model[first + i] = (*next)++;
    FUZZ_CHECK(gts_storage_access_end(&view, GTS_SIDE_HOST, GTS_ACCESS_WRITE_HELD, NULL, NULL) ==
               GTS_OK);
    gts_storage_release(&view);
}

/* Side `side` read back (the device side on stream `s`) equals the model. */
static void check_side(field *f, gts_side side, gts_stream s)
{
    double got[N];
    void *data;
    FUZZ_CHECK(gts_storage_access(&f->whole, side, GTS_ACCESS_READ, s, &data, NULL) == GTS_OK);
    if (side == GTS_SIDE_HOST)
        memcpy(got, data, sizeof got);
    else
        FUZZ_CHECK(gts_device_copy_to_host(emulated, got, data, sizeof got, s, NULL) == GTS_OK);
    FUZZ_CHECK(gts_storage_access_end(&f->whole, side, GTS_ACCESS_READ, s, NULL) == GTS_OK);
    FUZZ_CHECK(gts_device_synchronize(emulated, s, NULL) == GTS_OK);
    FUZZ_CHECK(memcmp(got, f->model, sizeof got) == 0);
}

static void one_step(fuzz_input *in, field *fields, double *next)
{
    int op = (int)fuzz_range(in, 0, 5);
    field *f = &fields[fuzz_range(in, 0, 1)];
    gts_stream s = streams[fuzz_range(in, 0, 2)];
    int64_t first = fuzz_range(in, 0, N - 1), count = fuzz_range(in, 1, N - first);
    switch (op) {
    case 0:
        device_write(f, first, count, NULL, 0, (*next)++, s);
        break;
    case 1: { /* from the other field, or the same one where the ranges do not meet */
        field *src = &fields[fuzz_range(in, 0, 1)];
        int64_t src_first = fuzz_range(in, 0, N - count);
        if (src != f || src_first + count <= first || first + count <= src_first)
            device_write(f, first, count, src, src_first, 0, s);
        break;
    }
    case 2:
        if (f->mirrored)
            host_write(f, first, count, next);
        break;
    case 3:
        if (f->mirrored)
            check_side(f, GTS_SIDE_HOST, s);
        break;
    case 4:
        check_side(f, GTS_SIDE_DEVICE, s);
        break;
    default:
        FUZZ_CHECK(gts_buffer_sync(f->whole.buffer, fuzz_bool(in) ? GTS_SIDE_HOST
                                                                  : GTS_SIDE_DEVICE,
                                   false, s, NULL) == GTS_OK);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    field fields[2];
    make_field(true, &fields[0]);
    make_field(fuzz_bool(&in), &fields[1]);
    double next = 1.0;
    for (int k = 0; k < 64 && !fuzz_empty(&in); ++k)
        one_step(&in, fields, &next);
    for (int k = 0; k < 2; ++k) {
        if (fields[k].mirrored)
            check_side(&fields[k], GTS_SIDE_HOST, NULL);
        check_side(&fields[k], GTS_SIDE_DEVICE, NULL);
        gts_storage_release(&fields[k].whole);
    }
    return 0;
}
