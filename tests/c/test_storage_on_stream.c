/* gts_storage_assign_on, gts_storage_fill_item_on and gts_storage_copy_on
 * (gtstore/storage.h) on the asynchronous emulated device, whose streams
 * run their work later on threads of their own: a fill queued on one
 * stream is seen by a copy on another, by the host, and a later write on a
 * third stream does not overtake an earlier read (the source's buffer
 * records it). With the waits of the stream order skipped (the argument
 * "detector") the same checks must see a wrong value. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gtstore/access.h"
#include "gtstore/storage.h"
#include "gtstore/sync.h"
#include "stream_order.h" /* the test-only hook */

#define N 96 /* rows and columns: fills long enough to be overtaken */

static const gts_dtype F8 = {GTS_KIND_FLOAT, 8};

static bool make(const gts_device_ops *dev, unsigned flags, gts_storage *out)
{
    gts_storage_spec spec;
    int64_t shape[3] = {N, N, 8};
    return CHECK_OK(gts_storage_spec_init(&spec, 3, shape, F8, ERR)) &&
           CHECK_OK(gts_storage_create_on(dev, &spec, flags | GTS_ALLOC_ZERO, out, ERR));
}

/* How many elements of `s`, read on the host, differ from `want`. */
static int64_t wrong_on_host(const gts_storage *s, double want)
{
    gts_storage host;
    int64_t wrong = 0;
    if (!CHECK_OK(gts_storage_copy_to(gts_device_host(), s, &host, ERR)))
        return -1;
    const double *v = gts_storage_data(&host);
    for (int64_t i = 0; i < gts_storage_size(&host); ++i)
        wrong += v[i] != want;
    gts_storage_release(&host);
    return wrong;
}

/* One round: fill a on s1 (several times, the last value `value`), copy a
 * into b on s2, copy b on s3, then overwrite a on s3 after b's read of it
 * was queued on s2. Returns the elements seen wrong. */
static int64_t round_trip(const gts_device_ops *dev, gts_stream *s, unsigned flags, double value)
{
    gts_storage a, b, c;
    int64_t wrong = 0;
    if (!make(dev, flags, &a) || !make(dev, flags, &b))
        return -1;
    for (int n = 0; n < 4; ++n) {
        double item = n < 3 ? -1.0 - n : value;
        CHECK_OK(gts_storage_fill_item_on(&a, &item, s[0], ERR));
    }
    CHECK_OK(gts_storage_assign_on(&b, &a, s[1], ERR));
    double later = -100.0;
    CHECK_OK(gts_storage_fill_item_on(&a, &later, s[2], ERR)); /* after b's read of a */
    if (CHECK_OK(gts_storage_copy_on(&b, s[2], &c, ERR))) {
        wrong += wrong_on_host(&c, value);
        gts_storage_release(&c);
    }
    wrong += wrong_on_host(&b, value) + wrong_on_host(&a, later);
    gts_storage_release(&a);
    gts_storage_release(&b);
    return wrong;
}

static void with_streams(const gts_device_ops *dev, bool detector)
{
    gts_stream s[3];
    for (int i = 0; i < 3; ++i)
        if (!CHECK_OK(gts_device_stream_create(dev, &s[i], ERR)))
            return;
    gts__order_skip_waits_for_testing(detector);
    int64_t wrong = 0;
    for (int round = 0; round < 6; ++round) {
        wrong += round_trip(dev, s, 0, 1.0 + round);
        wrong += round_trip(dev, s, GTS_ALLOC_MIRRORED, 10.0 + round);
    }
    gts__order_skip_waits_for_testing(false);
    for (int i = 0; i < 3; ++i) {
        gts_device_synchronize(dev, s[i], NULL);
        gts_device_stream_destroy(dev, s[i]);
    }
    if (detector)
        CHECK(wrong > 0); /* the checks see a missing wait */
    else
        CHECK_INT_EQ(wrong, 0);
}

/* The default stream (NULL) and errors: as the functions without _on. */
static void default_stream_and_errors(const gts_device_ops *dev)
{
    gts_storage a, b;
    if (!make(dev, 0, &a) || !make(dev, 0, &b))
        return;
    double item = 3.0;
    CHECK_OK(gts_storage_fill_item_on(&a, &item, NULL, ERR));
    CHECK_OK(gts_storage_assign_on(&b, &a, NULL, ERR));
    CHECK_INT_EQ(wrong_on_host(&b, 3.0), 0);
    gts_storage r = b;
    r.readonly = true;
    CHECK_FAILS(gts_storage_assign_on(&r, &a, NULL, ERR), GTS_EREADONLY, "read-only");
    CHECK_FAILS(gts_storage_fill_item_on(&r, &item, NULL, ERR), GTS_EREADONLY, "read-only");
    gts_storage host;
    if (make(gts_device_host(), 0, &host)) { /* across devices: through the host */
        CHECK_OK(gts_storage_assign_on(&host, &a, NULL, ERR));
        CHECK_INT_EQ(((double *)gts_storage_data(&host))[N * N * 8 - 1], 3.0);
        gts_storage_release(&host);
    }
    gts_storage_release(&a);
    gts_storage_release(&b);
}

int main(int argc, char **argv)
{
    const gts_device_ops *dev = gts_device_emulated();
    if (argc > 1 && strcmp(argv[1], "detector") == 0) {
        with_streams(dev, true);
        return check_summary("storage_on_stream detector");
    }
    with_streams(dev, false);
    default_stream_and_errors(dev);
    return check_summary("storage_on_stream");
}
