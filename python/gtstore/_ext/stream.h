/* Streams from Python (stream.c): gtstore.Stream and the current stream.
 *
 * Every operation of the package on device storages is queued on the
 * current stream of its device (docs/storage.md, "Stream order"): the
 * Stream made current by `with stream:` in this thread (a context
 * variable, so also per asyncio task) where it is a stream of that device;
 * else, on a CUDA GPU, CuPy's current stream where CuPy is imported, else
 * CUDA's legacy default stream (CuPy's default, and torch's and GT4Py's);
 * else the device's default stream (NULL), on which everything has
 * completed on return. libgtstore orders the work by each buffer's events
 * (gtstore/access.h). */
#ifndef GTSTORE_EXT_STREAM_H
#define GTSTORE_EXT_STREAM_H

#include "ext.h"

extern PyTypeObject gtpy_Stream_Type;
extern PyMethodDef gtpy_stream_methods[];

/* The current stream for work on memory of `device` into *out (NULL: the
 * default stream). -1 with an exception only where CuPy's current stream
 * cannot be read. */
int gtpy_current_stream(const gts_device_ops *device, gts_stream *out);

/* What CuPy computes on where `device` is a CUDA GPU: CuPy's current
 * stream where CuPy is imported (never imported here), with its stream 0
 * as the legacy default stream (gts_device_legacy_stream), which is also
 * the answer without CuPy; NULL for other devices. */
int gtpy_cupy_stream(const gts_device_ops *device, gts_stream *out);

/* The stream of a DLPack or CUDA array interface stream number for memory
 * of `device` (docs/storage.md, Protocols): None and -1 are the default
 * stream (NULL, the host waits); 1 (legacy default), 2 (per-thread
 * default) and larger values are stream handles of CUDA GPU memory (for
 * managed memory the host waits), or a live stream of the emulated
 * device. */
int gtpy_stream_number(const gts_device_ops *device, PyObject *number, const char *what,
                       gts_stream *out);

/* A `stream=` argument for work on memory of `device` (NULL: no GPU work,
 * the argument is only checked): None, the current stream
 * (gtpy_current_stream); a gtstore.Stream of that device, its handle; an
 * int handle, or an object with one in `ptr` (a CuPy stream): 0 the
 * default stream, else as gtpy_stream_number takes it. TypeError or
 * ValueError naming `what`, -1. */
int gtpy_stream_arg(const gts_device_ops *device, PyObject *obj, const char *what,
                    gts_stream *out);

/* libgtstore's copies and fills on the current stream of the storages'
 * device (gtstore/storage.h, the _on variants): -1 with an exception on
 * failure. They return once the work is queued. */
int gtpy_stream_assign(const gts_storage *dst, const gts_storage *src);
int gtpy_stream_fill(const gts_storage *dst, gts_scalar value);
int gtpy_stream_fill_item(const gts_storage *dst, const void *item);
/* gts_storage_copy into *out; the GIL is let go while it runs. */
int gtpy_stream_copy(const gts_storage *src, gts_storage *out);

#endif
