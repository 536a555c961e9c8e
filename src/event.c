/* Events of devices, checked (gtstore/device.h): the gts_device_event_*
 * functions. A device without the event entries completes every operation
 * before it returns, so its events are one shared token that is always
 * complete and the calls that take it do nothing. */
#include "gtstore/device.h"

#include "device_check.h"

/* The event of devices without events: a non-NULL handle no device makes. */
static char trivial_event;
#define TRIVIAL ((gts_event)&trivial_event)

static bool has_events(const gts_device_ops *dev)
{
    return dev->event_create != NULL;
}

/* The device, the stream and the event given are usable. */
static int check_event(const gts_device_ops *dev, gts_stream stream, gts_event event,
                       gts_error *err)
{
    int rc = gts__device_check(dev, stream, err);
    if (rc)
        return rc;
    if (!event)
        return gts_error_set(err, GTS_EINVAL, "event: NULL");
    if (event == TRIVIAL && has_events(dev))
        return gts_error_set(err, GTS_EINVAL,
                             "event: the trivial event of a device without events, given to "
                             "device %s, which has events",
                             dev->name);
    return GTS_OK;
}

/* Whether the call has nothing to do: the trivial event. */
static bool trivial(gts_event event)
{
    return event == TRIVIAL;
}

int gts_device_event_create(const gts_device_ops *dev, gts_event *out, gts_error *err)
{
    int rc = gts__device_check(dev, NULL, err);
    if (rc)
        return rc;
    if (!out)
        return gts_error_set(err, GTS_EINVAL, "out: NULL");
    if (!has_events(dev)) {
        *out = TRIVIAL;
        return GTS_OK;
    }
    return dev->event_create(dev, out, err);
}

void gts_device_event_destroy(const gts_device_ops *dev, gts_event event)
{
    if (dev && event && !trivial(event) && has_events(dev))
        dev->event_destroy(dev, event);
}

int gts_device_event_record(const gts_device_ops *dev, gts_event event, gts_stream stream,
                            gts_error *err)
{
    int rc = check_event(dev, stream, event, err);
    return rc || trivial(event) ? rc : dev->event_record(dev, event, stream, err);
}

int gts_device_event_wait(const gts_device_ops *dev, gts_stream stream, gts_event event,
                          gts_error *err)
{
    int rc = check_event(dev, stream, event, err);
    return rc || trivial(event) ? rc : dev->stream_wait_event(dev, stream, event, err);
}

int gts_device_event_synchronize(const gts_device_ops *dev, gts_event event, gts_error *err)
{
    int rc = check_event(dev, NULL, event, err);
    return rc || trivial(event) ? rc : dev->event_synchronize(dev, event, err);
}

int gts_device_event_query(const gts_device_ops *dev, gts_event event, bool *done,
                           gts_error *err)
{
    if (!done)
        return gts_error_set(err, GTS_EINVAL, "done: NULL");
    *done = true;
    int rc = check_event(dev, NULL, event, err);
    return rc || trivial(event) ? rc : dev->event_query(dev, event, done, err);
}
