/* One side of a storage for reading or writing (gtstore/access.h). */
#include "gtstore/access.h"

#include "gtstore/buffer.h"
#include "buffer_private.h"

static int check_arguments(const gts_storage *storage, gts_side side, gts_access access,
                           void **element0, gts_error *err)
{
    if (!storage || !storage->buffer)
        return gts_error_set(err, GTS_EINVAL, "storage: NULL");
    if (!element0)
        return gts_error_set(err, GTS_EINVAL, "element0: NULL");
    if (side != GTS_SIDE_HOST && side != GTS_SIDE_DEVICE)
        return gts_error_set(err, GTS_EINVAL, "side: %d is no gts_side", (int)side);
    if (access != GTS_ACCESS_READ && access != GTS_ACCESS_WRITE &&
        access != GTS_ACCESS_WRITE_HELD)
        return gts_error_set(err, GTS_EINVAL, "access: %d is no gts_access", (int)access);
    if (access != GTS_ACCESS_READ && storage->readonly)
        return gts_error_set(err, GTS_EREADONLY, "assignment destination is read-only");
    return GTS_OK;
}

/* The sync rule of gtstore/sync.h for the access, which also orders the
 * side after the device work on the buffer (on a buffer with one side,
 * only that). */
static int apply_sync_rule(gts_buffer *buffer, gts_side side, gts_access access,
                           gts_stream stream, gts_error *err)
{
    switch (access) {
    case GTS_ACCESS_WRITE:
        return gts_buffer_prepare_write(buffer, side, stream, err);
    case GTS_ACCESS_WRITE_HELD:
        return gts_buffer_write_begin(buffer, side, stream, err);
    default:
        return gts_buffer_sync(buffer, side, false, stream, err);
    }
}

/* Work on side `side` is ordered after the device work on the buffer
 * (stream_order.h): the host waits for it; a stream waits for it on the
 * device. */
int gts_buffer_order_wait(gts_buffer *buffer, gts_side side, gts_stream stream, gts_error *err)
{
    if (!buffer)
        return gts_error_set(err, GTS_EINVAL, "buffer: NULL");
    if (side != GTS_SIDE_HOST && side != GTS_SIDE_DEVICE)
        return gts_error_set(err, GTS_EINVAL, "side: %d is no gts_side", (int)side);
    return side == GTS_SIDE_HOST ? gts__order_host(buffer->device, &buffer->order, err)
                                 : gts__order_device(buffer->device, &buffer->order, stream, err);
}

int gts_buffer_order_record(gts_buffer *buffer, gts_stream stream, gts_error *err)
{
    if (!buffer)
        return gts_error_set(err, GTS_EINVAL, "buffer: NULL");
    return gts__order_record(buffer->device, &buffer->order, stream, err);
}

/* Whether a buffer before `first` is on `device` (whose buffers were then
 * recorded with it). */
static bool device_seen(gts_buffer *const *buffers, int first, const gts_device_ops *device)
{
    for (int i = 0; i < first; ++i)
        if (buffers[i]->device == device)
            return true;
    return false;
}

/* One record for each device's buffers, in batches of at most
 * GTS__ORDER_BATCH (the rare call beyond records more than one event). */
int gts_buffers_order_record(gts_buffer *const *buffers, int n, gts_stream stream,
                             gts_error *err)
{
    if (n < 0)
        return gts_error_set(err, GTS_EINVAL, "n: %d is negative", n);
    if (n > 0 && !buffers)
        return gts_error_set(err, GTS_EINVAL, "buffers: NULL");
    for (int i = 0; i < n; ++i)
        if (!buffers[i])
            return gts_error_set(err, GTS_EINVAL, "buffers[%d]: NULL", i);
    int rc = GTS_OK;
    for (int first = 0; first < n; ++first) {
        const gts_device_ops *device = buffers[first]->device;
        if (device_seen(buffers, first, device))
            continue;
        gts__order *batch[GTS__ORDER_BATCH];
        int count = 0;
        for (int i = first; i < n; ++i) {
            if (buffers[i]->device == device)
                batch[count++] = &buffers[i]->order;
            if (count == GTS__ORDER_BATCH || (i == n - 1 && count > 0)) {
                int batch_rc = gts__order_record_all(device, batch, count, stream,
                                                     rc ? NULL : err);
                rc = rc ? rc : batch_rc;
                count = 0;
            }
        }
    }
    return rc;
}

/* Ends what the access holds: a write in flight. */
static void end_held(gts_buffer *buffer, gts_access access)
{
    if (access == GTS_ACCESS_WRITE_HELD)
        gts_buffer_write_end(buffer, NULL);
}

int gts_storage_access(const gts_storage *storage, gts_side side, gts_access access,
                       gts_stream stream, void **element0, gts_error *err)
{
    int rc = check_arguments(storage, side, access, element0, err);
    if (rc)
        return rc;
    gts_buffer *buffer = storage->buffer;
    const gts_device_ops *device = gts_buffer_device(buffer);
    char *base = side == GTS_SIDE_HOST ? gts_buffer_host(buffer) : gts_buffer_data(buffer);
    if (side == GTS_SIDE_HOST && !device->host_accessible && !gts_buffer_mirrored(buffer))
        return gts_error_set(err, GTS_ENOTSUP,
                             "storage: its memory on the %s device has no host side",
                             device->name);
    /* the side brought up to date and ordered after the device work on
     * the buffer (the sync rules order every buffer's side) */
    if ((rc = apply_sync_rule(buffer, side, access, stream, err)))
        return rc;
    /* Memory the host shares with a GPU: the host reads and writes it only
     * once the work queued there is done. */
    if (side == GTS_SIDE_HOST && device->kind != GTS_MEMORY_HOST && device->host_accessible &&
        (rc = gts_device_synchronize(device, stream, err))) {
        end_held(buffer, access);
        return rc;
    }
    *element0 = base ? base + storage->offset : NULL;
    return GTS_OK;
}

int gts_storage_access_end(const gts_storage *storage, gts_side side, gts_access access,
                           gts_stream stream, gts_error *err)
{
    if (!storage || !storage->buffer)
        return GTS_OK; /* nothing was accessed */
    gts_buffer *buffer = storage->buffer;
    /* recorded before the write ends, so that a sync that waited for the
     * write waits for its device work too */
    int rc = side == GTS_SIDE_DEVICE ? gts_buffer_order_record(buffer, stream, err) : GTS_OK;
    end_held(buffer, access);
    return rc;
}
