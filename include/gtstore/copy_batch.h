/* Batches of strided copies: many copies of one device's memory prepared
 * once and then run, as often as needed, as one unit of device work. On a
 * CUDA GPU a batch is one kernel launch however many copies it holds, which
 * is what packing a halo exchange's messages needs: dozens of small copies
 * whose launches would otherwise cost more than their bytes.
 *
 * The copies of a batch run concurrently and in no defined order, so they
 * must be independent: no byte is written by two copies, and no copy reads
 * bytes that a copy writes (checked where it can be: gts_copy_batch_create
 * refuses a destination whose bytes [low, high) meet those of any source).
 * The addresses, strides and shapes are read at creation; the memory must
 * stay allocated while the batch is run. */
#ifndef GTSTORE_COPY_BATCH_H
#define GTSTORE_COPY_BATCH_H

#include "gtstore/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gts_copy_batch gts_copy_batch;

/* A batch of the `count` copies (count >= 0; `copies` may be NULL when 0)
 * on `dev`. Each copy is checked as gts_device_copy checks one (GTS_EINVAL
 * naming copies[i] and what is wrong, GTS_EOVERFLOW), and the sides as
 * above. */
int gts_copy_batch_create(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                          gts_copy_batch **out, gts_error *err);
/* Runs every copy of the batch on `stream` (NULL: completed on return). */
int gts_copy_batch_run(const gts_copy_batch *batch, gts_stream stream, gts_error *err);
void gts_copy_batch_destroy(gts_copy_batch *batch); /* NULL ignored */

/* The device and the number of copies. */
const gts_device_ops *gts_copy_batch_device(const gts_copy_batch *batch);
int gts_copy_batch_count(const gts_copy_batch *batch);

#ifdef __cplusplus
}
#endif
#endif
