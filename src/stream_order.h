/* The stream order of a buffer (stream_order.c); not installed.
 *
 * Each buffer remembers an event of its device recorded after the last
 * device work queued on its memory on a stream (a gts__order): work on the
 * default stream (NULL) has completed when it returns and needs none. The
 * access verb (gtstore/access.h) and the syncs of mirrored buffers
 * (gtstore/sync.h) order their work by it:
 * - before the host touches the memory (either side): the host waits for
 *   the event (gts__order_host);
 * - before device work on a stream: that stream waits for the event,
 *   unless the event is on that very stream (streams run in order); on the
 *   default stream the host waits (gts__order_device);
 * - after device work queued on a stream: the event is recorded there
 *   (gts__order_record), after that stream waited for the event's previous
 *   point if it was on another stream. So one event always covers every
 *   stream's work on the buffer: a record never drops work that another
 *   stream queued, whatever threads do meanwhile. Work on several buffers
 *   is recorded with one event for all (gts__order_record_all,
 *   order_event.h).
 * - On CUDA's legacy default stream, the stream of CuPy's, torch's and
 *   GT4Py's work unless they are told otherwise, the record is deferred:
 *   the order remembers the stream, and the event is recorded only when
 *   something waits (the host, or another stream). A loop of operations on
 *   that stream then records no event at all (a record costs about half a
 *   microsecond of a call's few). The event recorded later follows more
 *   work of the stream than the buffer's, so such a wait may wait longer,
 *   never shorter; and it needs a stream that outlives every order on it,
 *   which the legacy stream does (it lives as long as the context), while
 *   a user's stream may be destroyed before anything waits.
 * Devices without events (the host and host memory) complete everything on
 * return: there is nothing to order. */
#ifndef GTSTORE_STREAM_ORDER_H
#define GTSTORE_STREAM_ORDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "order_event.h"

typedef struct gts__order {
    atomic_bool busy;   /* a spin lock over the fields below (held for a few calls) */
    gts__order_event *event; /* one reference; NULL until the first record, and while a
                                deferred record is pending */
    gts_stream stream;  /* where the event was last recorded */
    uint64_t records;   /* how many times it was recorded */
    bool pending;       /* recorded, and not yet seen complete */
} gts__order;

/* A new buffer: no device work pending (all zeros will do too). */
void gts__order_init(gts__order *order);

/* The host waits for the device work on the buffer (where a deferred
 * record cannot be made, for its stream). A wait that fails returns the
 * error and leaves the work pending. */
int gts__order_host(const gts_device_ops *dev, gts__order *order, gts_error *err);
/* Device work on `stream` (NULL: the default stream) is ordered after the
 * device work on the buffer; where a deferred record cannot be made, the
 * host waits instead. A stream's wait that fails returns the error and
 * leaves the order as it was (nothing is queued yet). */
int gts__order_device(const gts_device_ops *dev, gts__order *order, gts_stream stream,
                      gts_error *err);
/* Device work was queued on `stream` (NULL: it has completed; nothing to
 * do). Where no event can be recorded, or the stream cannot wait for the
 * previous one, the stream is synchronised instead and the host waits for
 * the previous work (the work is then complete, and needs no order; `err`
 * is left untouched); the error is returned only if that fails too. */
int gts__order_record(const gts_device_ops *dev, gts__order *order, gts_stream stream,
                      gts_error *err);
/* The most orders one gts__order_record_all takes. */
#define GTS__ORDER_BATCH 32
/* Device work on the buffers of `orders` (of device `dev`; at most
 * GTS__ORDER_BATCH; an order may repeat) was queued on `stream`: as
 * gts__order_record for each, with one event recorded once. */
int gts__order_record_all(const gts_device_ops *dev, gts__order *const *orders, int n,
                          gts_stream stream, gts_error *err);
/* Whether device work on the buffer may still run: its event is recorded
 * and not seen complete (queried, without waiting). Where the query fails
 * the work counts as pending. */
bool gts__order_pending(const gts_device_ops *dev, gts__order *order);
/* Whether work may be pending, from what the order knows (no query): a
 * record not yet seen complete. */
bool gts__order_unfinished(const gts_device_ops *dev, gts__order *order);
/* The buffer is freed: the host waits for its device work (none is left
 * where gts__order_pending said so), its reference to the event goes. */
void gts__order_release(const gts_device_ops *dev, gts__order *order);
/* The buffer is freed in the order of a stream that waited for its work
 * already (stream_free.h): its reference to the event goes without the
 * host waiting (a destroyed or re-recorded event's record still completes). */
void gts__order_forget(gts__order *order);

/* For the test that proves the asynchronous emulated device detects a
 * missing wait (tests/c/test_stream_order.c): while set, gts__order_host
 * and gts__order_device wait for nothing. Never set outside that test. */
void gts__order_skip_waits_for_testing(bool skip);
/* For the tests on the emulated device, which has no legacy stream: records
 * on `stream` (NULL: none) are deferred as on CUDA's legacy stream. The
 * test keeps that stream alive for the rest of the process. */
void gts__order_defer_for_testing(gts_stream stream);

#endif
