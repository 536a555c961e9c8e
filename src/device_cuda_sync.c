/* Synchronisation and streams of the CUDA devices (device_cuda.h). */
#define _POSIX_C_SOURCE 200809L
#include "device_cuda.h"

/* ---- streams ------------------------------------------------------------------------ */

static int any_synchronize(const gts_device_ops *dev, gts_stream s, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    rc = s ? check(d, "cuStreamSynchronize", api.StreamSynchronize((CUstream)s), err)
           : check(d, "cuCtxSynchronize", api.CtxSynchronize(), err);
    leave();
    return rc;
}

static int any_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    CUstream stream = NULL;
    rc = check(d, "cuStreamCreate", api.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), err);
    leave();
    if (!rc)
        *out = stream;
    return rc;
}

static void any_stream_destroy(const gts_device_ops *dev, gts_stream s)
{
    cuda_device *d = device_of(dev);
    if (gts__cuda_enter(d, NULL))
        return;
    CUresult rc = api.StreamDestroy((CUstream)s);
    leave();
    if (rc != CUDA_SUCCESS)
        gts__cuda_free_failed(d, "cuStreamDestroy", rc, s);
}

/* ---- events ------------------------------------------------------------------------- */

static int any_event_create(const gts_device_ops *dev, gts_event *out, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    CUevent event = NULL;
    rc = check(d, "cuEventCreate", api.EventCreate(&event, CU_EVENT_DISABLE_TIMING), err);
    leave();
    if (!rc)
        *out = event;
    return rc;
}

static void any_event_destroy(const gts_device_ops *dev, gts_event e)
{
    cuda_device *d = device_of(dev);
    if (gts__cuda_enter(d, NULL))
        return;
    CUresult rc = api.EventDestroy((CUevent)e);
    leave();
    if (rc != CUDA_SUCCESS)
        gts__cuda_free_failed(d, "cuEventDestroy", rc, e);
}

static int any_event_record(const gts_device_ops *dev, gts_event e, gts_stream s,
                            gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    rc = check(d, "cuEventRecord", api.EventRecord((CUevent)e, (CUstream)s), err);
    leave();
    return rc;
}

/* The host waits, whatever the stream: an event never recorded has
 * completed (the driver answers so). */
static int any_event_synchronize(const gts_device_ops *dev, gts_event e, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    rc = check(d, "cuEventSynchronize", api.EventSynchronize((CUevent)e), err);
    leave();
    return rc;
}

/* The default stream's operations complete before they return, some on
 * the host (pinned memory): the host waits there. */
static int any_stream_wait_event(const gts_device_ops *dev, gts_stream s, gts_event e,
                                 gts_error *err)
{
    if (!s)
        return any_event_synchronize(dev, e, err);
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    rc = check(d, "cuStreamWaitEvent", api.StreamWaitEvent((CUstream)s, (CUevent)e, 0), err);
    leave();
    return rc;
}

static int any_event_query(const gts_device_ops *dev, gts_event e, bool *done, gts_error *err)
{
    cuda_device *d = device_of(dev);
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    CUresult cu = api.EventQuery((CUevent)e);
    leave();
    *done = cu == CUDA_SUCCESS;
    return cu == CUDA_ERROR_NOT_READY ? GTS_OK : check(d, "cuEventQuery", cu, err);
}

/* ---- host-accessible memory: waits before the host touches it ------------------------ */

int gts__cuda_pinned_wait(const cuda_device *d, gts_stream s, gts_error *err)
{
    return s ? check(d, "cuStreamSynchronize", api.StreamSynchronize((CUstream)s), err) : GTS_OK;
}

/* Devices without concurrent managed access fault otherwise. */
int gts__cuda_managed_wait(cuda_device *d, gts_error *err)
{
    int rc = gts__cuda_enter(d, err);
    if (rc)
        return rc;
    rc = check(d, "cuCtxSynchronize", api.CtxSynchronize(), err);
    leave();
    return rc;
}


void gts__cuda_sync_ops(gts_device_ops *memory, gts_device_ops *managed, gts_device_ops *pinned)
{
    gts_device_ops *tables[] = {memory, managed, pinned};
    for (int i = 0; i < 3; ++i) {
        if (!tables[i])
            continue;
        tables[i]->synchronize = any_synchronize;
        tables[i]->stream_create = any_stream_create;
        tables[i]->stream_destroy = any_stream_destroy;
        tables[i]->event_create = any_event_create;
        tables[i]->event_destroy = any_event_destroy;
        tables[i]->event_record = any_event_record;
        tables[i]->stream_wait_event = any_stream_wait_event;
        tables[i]->event_synchronize = any_event_synchronize;
        tables[i]->event_query = any_event_query;
    }
}
