/* Strided iterations reduced to their simplest form (strided_plan.h). */
#include "strided_plan.h"

bool gts__strided_plan_init(gts__strided_plan *p, char *dst, const int64_t *dst_strides,
                            const char *src, const int64_t *src_strides, int ndim,
                            const int64_t *shape, int64_t itemsize)
{
    p->itemsize = itemsize;
    p->dst = dst;
    p->src = src;
    p->ndim = 0;
    /* Empty before any pointer arithmetic: an empty array may sit at NULL. */
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0)
            return false;
    for (int d = 0; d < ndim; ++d) {
        int64_t n = shape[d], ds = dst_strides[d], ss = src ? src_strides[d] : 0;
        /* extent 1 adds nothing, nor does a fill of one element again */
        if (n == 1 || (!src && ds == 0))
            continue;
        if (ds < 0) { /* walk this dim backwards: same pairs, positive stride */
            p->dst += (n - 1) * ds;
            if (src) /* a fill has no src: NULL + 0 is undefined too */
                p->src += (n - 1) * ss;
            ds = -ds;
            ss = -ss;
        }
        /* insertion by decreasing destination stride, stable */
        int k = p->ndim++;
        for (; k > 0 && p->dst_strides[k - 1] < ds; --k) {
            p->shape[k] = p->shape[k - 1];
            p->dst_strides[k] = p->dst_strides[k - 1];
            p->src_strides[k] = p->src_strides[k - 1];
        }
        p->shape[k] = n;
        p->dst_strides[k] = ds;
        p->src_strides[k] = ss;
    }
    /* merge dim k into k + 1 where both arrays continue seamlessly */
    for (int k = p->ndim - 2; k >= 0; --k) {
        int64_t n = p->shape[k + 1];
        if (p->dst_strides[k] == p->dst_strides[k + 1] * n &&
            p->src_strides[k] == p->src_strides[k + 1] * n) {
            p->shape[k + 1] *= p->shape[k];
            for (int j = k; j < p->ndim - 1; ++j) {
                p->shape[j] = p->shape[j + 1];
                p->dst_strides[j] = p->dst_strides[j + 1];
                p->src_strides[j] = p->src_strides[j + 1];
            }
            --p->ndim;
        }
    }
    return true;
}

bool gts__strided_plan_distinct(const gts__strided_plan *p)
{
    int64_t reach = p->itemsize; /* bytes the dimensions inside span */
    for (int k = p->ndim - 1; k >= 0; --k) {
        if (p->dst_strides[k] < reach)
            return false;
        reach += p->dst_strides[k] * (p->shape[k] - 1); /* no overflow: the span fits */
    }
    return true;
}
