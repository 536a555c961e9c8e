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
    }
}
