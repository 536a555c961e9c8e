/* Strided fills and copies as GPU kernel arrays (kernel_args.h).
 *
 * The iteration is first reduced as the host's kernels reduce it
 * (strided_plan.h: no extent 1, positive destination strides, merged
 * dimensions), then turned inside out for the kernels, innermost first, so
 * that neighbouring threads touch neighbouring bytes. The kernels see
 * words, not elements: the widest unit of 1, 2, 4 or 8 bytes that divides
 * the itemsize, both first addresses and every stride. An element of
 * several words is an extra innermost dimension, merged with the next where
 * the elements are contiguous; a fill finds an item's word by that
 * innermost index, which is why it stays innermost. */
#include "kernel_args.h"

#include <string.h>

#include "gtstore/geometry.h"
#include "strided_plan.h"

static int64_t lowest_bit(int64_t value)
{
    uint64_t v = (uint64_t)value;
    return (int64_t)(v & (~v + 1)); /* 0 for 0 */
}

/* The widest word that divides the itemsize, both first addresses and
 * every stride of the plan. */
static int choose_unit(const gts__strided_plan *p)
{
    int64_t unit = 8;
    int64_t need[3] = {p->itemsize, (int64_t)((uintptr_t)p->dst & 7),
                       (int64_t)((uintptr_t)p->src & 7)};
    for (int k = 0; k < 3; ++k)
        if (need[k] && lowest_bit(need[k]) < unit)
            unit = lowest_bit(need[k]);
    for (int d = 0; d < p->ndim; ++d) {
        int64_t bits[2] = {lowest_bit(p->dst_strides[d]), lowest_bit(p->src_strides[d])};
        for (int k = 0; k < 2; ++k)
            if (bits[k] && bits[k] < unit)
                unit = bits[k];
    }
    return (int)unit;
}

/* Appends a dimension, innermost first: the kernel array's first
 * GTS_KERNEL_NDIM, the plan's outer ones beyond. */
static void append(gts_kernel_plan *plan, int64_t extent, int64_t dst, int64_t src)
{
    gts_kernel_array *a = &plan->inner;
    if (a->ndim < GTS_KERNEL_NDIM) {
        a->shape[a->ndim] = extent;
        a->dst_strides[a->ndim] = dst;
        a->src_strides[a->ndim] = src;
        ++a->ndim;
        return;
    }
    int o = plan->outer_ndim++;
    plan->outer_shape[o] = extent;
    plan->outer_dst[o] = dst;
    plan->outer_src[o] = src;
}

int gts__kernel_plan_init(gts_kernel_plan *plan, void *dst, const int64_t *dst_strides,
                          const void *src, const int64_t *src_strides, int ndim,
                          const int64_t *shape, int64_t itemsize, gts_error *err)
{
    gts__strided_plan p;
    memset(plan, 0, sizeof *plan);
    gts__strided_plan_init(&p, dst, dst_strides, src, src_strides, ndim, shape, itemsize);
    plan->serial = !gts__strided_plan_distinct(&p);
    int unit = choose_unit(&p);
    int64_t words = itemsize / unit, count = words;
    for (int d = 0; d < p.ndim; ++d) /* so every product of extents below fits too */
        if (gts_mul_overflow(count, p.shape[d], &count))
            return gts_error_set(err, GTS_EOVERFLOW,
                                 "shape: the array's %d-byte words do not fit in 64 bits", unit);
    int inner = p.ndim - 1; /* the plan's innermost dimension */
    /* the element's words, merged with contiguous elements */
    bool merge = words > 1 && inner >= 0 && p.dst_strides[inner] == itemsize &&
                 (!src || p.src_strides[inner] == itemsize);
    if (words > 1 && !merge)
        append(plan, words, unit, src ? unit : 0);
    for (int d = inner; d >= 0; --d) {
        bool first = merge && d == inner;
        append(plan, first ? p.shape[d] * words : p.shape[d], first ? unit : p.dst_strides[d],
               first ? (src ? unit : 0) : p.src_strides[d]);
    }
    gts_kernel_array *a = &plan->inner;
    a->dst = (unsigned long long)(uintptr_t)p.dst;
    a->src = (unsigned long long)(uintptr_t)p.src;
    a->unit = unit;
    a->count = 1;
    for (int k = 0; k < a->ndim; ++k)
        a->count *= a->shape[k]; /* a divisor of count */
    return GTS_OK;
}

int gts__kernel_plan_each(const gts_kernel_plan *plan,
                          int (*visit)(const gts_kernel_array *array, void *ctx), void *ctx)
{
    gts_kernel_array a = plan->inner;
    int64_t index[GTS_MAX_NDIM + 1] = {0};
    for (;;) {
        int rc = visit(&a, ctx);
        if (rc)
            return rc;
        int o = 0; /* the next outer index, as an odometer */
        for (; o < plan->outer_ndim; ++o) {
            a.dst += (unsigned long long)plan->outer_dst[o];
            a.src += (unsigned long long)plan->outer_src[o];
            if (++index[o] < plan->outer_shape[o])
                break;
            /* back to index 0 (modulo 2**64, as addresses are) */
            a.dst -= (unsigned long long)plan->outer_dst[o] *
                     (unsigned long long)plan->outer_shape[o];
            a.src -= (unsigned long long)plan->outer_src[o] *
                     (unsigned long long)plan->outer_shape[o];
            index[o] = 0;
        }
        if (o == plan->outer_ndim)
            return 0;
    }
}

void gts__kernel_fill_init(gts_kernel_fill *fill, const gts_kernel_array *array,
                           const void *item, int64_t itemsize)
{
    memset(fill, 0, sizeof *fill);
    fill->array = *array;
    fill->words = (int)(itemsize / array->unit);
    memcpy(fill->item, item, (size_t)itemsize);
}

unsigned gts__kernel_blocks(long long count)
{
    long long blocks = (count + GTS_KERNEL_THREADS - 1) / GTS_KERNEL_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks < GTS_KERNEL_MAX_BLOCKS ? blocks
                                                                      : GTS_KERNEL_MAX_BLOCKS);
}
