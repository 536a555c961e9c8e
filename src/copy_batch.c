/* Batches of strided copies (gtstore/copy_batch.h): the checks, then the
 * device's own batch where it has one, else the copies one by one. */
#include "gtstore/copy_batch.h"

#include <stdlib.h>
#include <string.h>

#include "gtstore/kernels.h"
#include "copy_batch_private.h"
#include "strided_plan.h"
#include "strided_range.h"

struct gts_copy_batch {
    const gts_device_ops *dev;
    int count;       /* the non-empty copies */
    void *state;     /* the device's prepared batch (batch_prepare) */
    gts_strided_copy *copies; /* without batch_prepare: the copies, with */
    int64_t *pool;   /* their shapes and strides */
};

/* The bytes one side of a copy touches. */
typedef struct span {
    uintptr_t low, high;
    int copy;
} span;

/* Checks copies[i] as gts_device_copy checks a copy; *empty where it
 * touches nothing. */
static int check_copy(const gts_strided_copy *c, int i, bool *empty, span *dst, span *src,
                      gts_error *err)
{
    bool dst_valid, src_valid, zero_stride = false;
    int64_t dlow, dhigh, slow, shigh;
    gts_error why;
    int rc = gts__strided_range(c->ndim, c->shape, c->dst_strides, c->itemsize, &dst_valid,
                                &dlow, &dhigh, &why);
    if (!rc)
        rc = gts__strided_range(c->ndim, c->shape, c->src_strides, c->itemsize, &src_valid,
                                &slow, &shigh, &why);
    for (int k = 0; !rc && dst_valid && k < c->ndim; ++k)
        zero_stride = zero_stride || (c->shape[k] > 1 && c->dst_strides[k] == 0);
    int64_t size = c->itemsize;
    bool itemsize_ok = size == 1 || size == 2 || size == 4 || size == 8 || size == 16;
    /* what the host kernel refuses before touching memory, or a copy of
     * nothing: it says which (the memory is never dereferenced) */
    if (!rc && (!dst_valid || !src_valid || !c->dst || !c->src || zero_stride || !itemsize_ok))
        rc = gts_copy(c->dst, c->dst_strides, c->src, c->src_strides, c->ndim, c->shape,
                      c->itemsize, &why);
    if (rc)
        return gts_error_set(err, rc, "copies[%d]: %s", i, why.message);
    *empty = !dst_valid || !src_valid;
    gts__strided_plan p;
    if (!*empty && gts__strided_plan_init(&p, c->dst, c->dst_strides, c->src, c->src_strides,
                                          c->ndim, c->shape, c->itemsize) &&
        !gts__strided_plan_distinct(&p))
        return gts_error_set(err, GTS_EINVAL,
                             "copies[%d]: dst_strides: the destination's elements may overlap; "
                             "the copies of a batch run at once (copy it alone with "
                             "gts_device_copy)",
                             i);
    *dst = (span){(uintptr_t)c->dst + (uintptr_t)dlow, (uintptr_t)c->dst + (uintptr_t)dhigh, i};
    *src = (span){(uintptr_t)c->src + (uintptr_t)slow, (uintptr_t)c->src + (uintptr_t)shigh, i};
    return GTS_OK;
}

static int by_low(const void *a, const void *b)
{
    uintptr_t x = ((const span *)a)->low, y = ((const span *)b)->low;
    return (x > y) - (x < y);
}

/* No destination meets a source: both sorted, each destination is checked
 * against the sources that start before it ends (a sweep). */
static int check_sides(int n, span *dst, span *src, gts_error *err)
{
    qsort(dst, (size_t)n, sizeof *dst, by_low);
    qsort(src, (size_t)n, sizeof *src, by_low);
    uintptr_t reach = 0; /* the furthest end of the sources before s */
    int reach_copy = -1, s = 0;
    for (int i = 0; i < n; ++i) {
        for (; s < n && src[s].low < dst[i].high; ++s)
            if (src[s].high > reach) {
                reach = src[s].high;
                reach_copy = src[s].copy;
            }
        if (reach_copy >= 0 && reach > dst[i].low)
            return gts_error_set(err, GTS_EINVAL,
                                 "copies[%d]: writes bytes that copies[%d] reads: the copies of "
                                 "a batch run at once and must be independent",
                                 dst[i].copy, reach_copy);
    }
    return GTS_OK;
}

/* Keeps the copies themselves, for a device without batches. */
static int keep_copies(gts_copy_batch *b, const gts_strided_copy *copies, const bool *empty,
                       int count, gts_error *err)
{
    int64_t entries = 0;
    for (int i = 0; i < count; ++i)
        entries += empty[i] ? 0 : 3 * (int64_t)copies[i].ndim;
    b->copies = calloc((size_t)b->count + 1, sizeof *b->copies);
    b->pool = calloc((size_t)entries + 1, sizeof *b->pool);
    if (!b->copies || !b->pool)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a batch of %d copies", count);
    int64_t *next = b->pool;
    int n = 0;
    for (int i = 0; i < count; ++i) {
        if (empty[i])
            continue;
        gts_strided_copy c = copies[i];
        size_t bytes = (size_t)c.ndim * sizeof *next;
        if (c.ndim > 0) {
            memcpy(next, c.shape, bytes);
            memcpy(next + c.ndim, c.dst_strides, bytes);
            memcpy(next + 2 * c.ndim, c.src_strides, bytes);
            c.shape = next;
            c.dst_strides = next + c.ndim;
            c.src_strides = next + 2 * c.ndim;
            next += 3 * c.ndim;
        }
        b->copies[n++] = c;
    }
    return GTS_OK;
}

/* The non-empty copies, for the device's batch_prepare. */
static int prepare(gts_copy_batch *b, const gts_strided_copy *copies, const bool *empty,
                   int count, gts_error *err)
{
    gts_strided_copy *kept = calloc((size_t)b->count + 1, sizeof *kept);
    if (!kept)
        return gts_error_set(err, GTS_ENOMEM, "out of memory for a batch of %d copies", count);
    int n = 0;
    for (int i = 0; i < count; ++i)
        if (!empty[i])
            kept[n++] = copies[i];
    int rc = b->dev->batch_prepare(b->dev, n, kept, &b->state, err);
    free(kept);
    return rc;
}

int gts_copy_batch_create(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                          gts_copy_batch **out, gts_error *err)
{
    return gts__copy_batch_create(dev, count, copies, true, out, err);
}

int gts__copy_batch_create(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                           bool sides, gts_copy_batch **out, gts_error *err)
{
    if (!dev || !out)
        return gts_error_set(err, GTS_EINVAL, "%s: NULL", dev ? "out" : "dev");
    if (count < 0 || (count > 0 && !copies))
        return gts_error_set(err, GTS_EINVAL, count < 0 ? "count: %d is negative"
                                                        : "copies: NULL for %d copies",
                             count);
    size_t n = (size_t)count + 1;
    bool *empty = calloc(n, sizeof *empty);
    span *dst = calloc(n, sizeof *dst), *src = calloc(n, sizeof *src);
    gts_copy_batch *b = calloc(1, sizeof *b);
    int rc = empty && dst && src && b ? GTS_OK
                                      : gts_error_set(err, GTS_ENOMEM,
                                                      "out of memory for a batch of %d copies",
                                                      count);
    int touching = 0;
    for (int i = 0; !rc && i < count; ++i) {
        span d, s;
        if (!(rc = check_copy(&copies[i], i, &empty[i], &d, &s, err)) && !empty[i]) {
            dst[touching] = d;
            src[touching++] = s;
        }
    }
    if (!rc && sides)
        rc = check_sides(touching, dst, src, err);
    if (!rc) {
        b->dev = dev;
        b->count = touching;
        rc = dev->batch_prepare ? prepare(b, copies, empty, count, err)
                                : keep_copies(b, copies, empty, count, err);
    }
    free(empty);
    free(dst);
    free(src);
    if (rc) {
        gts_copy_batch_destroy(b);
        return rc;
    }
    *out = b;
    return GTS_OK;
}

int gts_copy_batch_run(const gts_copy_batch *b, gts_stream stream, gts_error *err)
{
    if (!b)
        return gts_error_set(err, GTS_EINVAL, "batch: NULL");
    if (stream && !b->dev->stream_create)
        return gts_error_set(err, GTS_EINVAL,
                             "stream: %p given, but device %s has its default stream only",
                             stream, b->dev->name);
    if (b->dev->batch_prepare)
        return b->dev->batch_run(b->dev, b->state, stream, err);
    for (int i = 0; i < b->count; ++i) {
        const gts_strided_copy *c = &b->copies[i];
        int rc = b->dev->copy(b->dev, c->dst, c->dst_strides, c->src, c->src_strides, c->ndim,
                              c->shape, c->itemsize, stream, err);
        if (rc)
            return rc;
    }
    return GTS_OK;
}

void gts_copy_batch_destroy(gts_copy_batch *b)
{
    if (!b)
        return;
    if (b->state)
        b->dev->batch_release(b->dev, b->state);
    free(b->copies);
    free(b->pool);
    free(b);
}

const gts_device_ops *gts_copy_batch_device(const gts_copy_batch *b)
{
    return b ? b->dev : NULL;
}

int gts_copy_batch_count(const gts_copy_batch *b)
{
    return b ? b->count : 0;
}
