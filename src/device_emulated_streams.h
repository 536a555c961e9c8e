/* The streams and events of the emulated device (device_emulated_streams.c);
 * not installed.
 *
 * A stream created on the emulated device is a FIFO queue of device work
 * and one worker thread that runs it, each unit after a random delay
 * (0 to GTSTORE_EMULATED_DELAY_US microseconds, default 50, read at the
 * first stream created), so that work queued on a stream is still pending
 * when the call that queued it returns, as on a GPU: a reader that forgets
 * to wait sees the old bytes on this machine too. The default stream
 * (NULL) runs its work at once on the caller's thread and does not wait for
 * the other streams (like CUDA's non-blocking streams, which gtstore's are).
 *
 * Events have CUDA's semantics: a record captures how much of its stream's
 * queue came before it (a ticket); a wait captures the event's ticket when
 * it is queued. A stream is known by an id that is never reused, so that a
 * wait on a destroyed stream (whose work is complete: destroying drains it)
 * is simply complete. */
#ifndef GTSTORE_DEVICE_EMULATED_STREAMS_H
#define GTSTORE_DEVICE_EMULATED_STREAMS_H

#include "gtstore/device.h"

/* A unit of device work, owned by the queue once submitted: `run` does
 * the work and frees it. */
typedef struct gts__emu_work {
    struct gts__emu_work *next;
    void (*run)(struct gts__emu_work *work);
} gts__emu_work;

/* GTS_EINVAL unless `s` is NULL or a live stream of the emulated device. */
int gts__emu_stream_check(gts_stream s, gts_error *err);
/* Queues `work` on stream `s` (not NULL, checked), which then owns it. */
void gts__emu_submit(gts_stream s, gts__emu_work *work);

int gts__emu_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err);
/* Drains the stream (its work completes), then ends its worker. */
void gts__emu_stream_destroy(const gts_device_ops *dev, gts_stream s);
/* Stream NULL: every stream's work (the device, as cuCtxSynchronize). */
int gts__emu_synchronize(const gts_device_ops *dev, gts_stream s, gts_error *err);

int gts__emu_event_create(const gts_device_ops *dev, gts_event *out, gts_error *err);
void gts__emu_event_destroy(const gts_device_ops *dev, gts_event event);
int gts__emu_event_record(const gts_device_ops *dev, gts_event event, gts_stream s,
                          gts_error *err);
int gts__emu_stream_wait_event(const gts_device_ops *dev, gts_stream s, gts_event event,
                               gts_error *err);
int gts__emu_event_synchronize(const gts_device_ops *dev, gts_event event, gts_error *err);
int gts__emu_event_query(const gts_device_ops *dev, gts_event event, bool *done, gts_error *err);

#endif
