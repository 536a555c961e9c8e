/* The built-in stencils (gtstore/stencils.h) as a GPU runs them: their
 * arguments, and what one thread does.
 *
 * Shared, as device_kernels.h is, by three readers, so that the code tested
 * without a GPU is the code a GPU runs:
 * - device_kernels.cu, whose CUDA kernels call the per-thread functions;
 * - the emulated device (device_emulated.c), which runs every thread of a
 *   launch on a stream's worker, over host addresses;
 * - the tests' fake CUDA driver, which does the same over its own memory.
 * The formulas of one point are also what the host's loops compute
 * (stencils.c), so that every device gives the same numbers.
 *
 * A thread owns work items, striding over the grid as the strided kernels
 * do: points of the domain, numbered with axis[0] varying fastest (the
 * output's smallest stride: neighbouring threads touch neighbouring
 * memory), or for the tridiagonal solve columns (I, J), each walking K. */
#ifndef GTSTORE_STENCIL_KERNELS_H
#define GTSTORE_STENCIL_KERNELS_H

#include "device_kernels.h"

/* The most fields of a built-in stencil (the tridiagonal solve's). */
#define GTS_KERNEL_STENCIL_FIELDS 5

typedef struct gts_kernel_stencil {
    unsigned long long origin[GTS_KERNEL_STENCIL_FIELDS]; /* each field's origin point */
    long long step[GTS_KERNEL_STENCIL_FIELDS][3];         /* element strides in I, J, K */
    int extent[GTS_KERNEL_STENCIL_FIELDS]; /* points read around the domain in I and J */
    int nfields;
    int axis[3];             /* I, J, K (0, 1, 2) from the fastest varying index */
    long long domain[3];     /* points in I, J, K */
    long long count;         /* work items: points, or columns for the tridiagonal solve */
    unsigned long long scratch; /* the tridiagonal solve: count * domain[2] doubles */
} gts_kernel_stencil;

/* The bytes [low, high) around field f's origin that a launch touches:
 * its points from -extent to domain - 1 + extent in I and J, the domain
 * in K (a launch with work items only). */
GTS_KERNEL_FN void gts_kernel_stencil_span(const gts_kernel_stencil *s, int f, long long *low,
                                           long long *high)
{
    *low = 0;
    *high = (long long)sizeof(double);
    for (int a = 0; a < 3; ++a) {
        long long around = a < 2 ? s->extent[f] : 0;
        long long first = -around * s->step[f][a] * (long long)sizeof(double);
        long long last = (s->domain[a] - 1 + around) * s->step[f][a] * (long long)sizeof(double);
        *low += first < last ? first : last;
        *high += first < last ? last : first;
    }
}

/* The point of work item `item`: its I, J, K. 32-bit arithmetic where the
 * items allow (division is much cheaper on a GPU). */
GTS_KERNEL_FN void gts_kernel_stencil_point(const gts_kernel_stencil *s, long long item,
                                            long long idx[3])
{
    long long n0 = s->domain[s->axis[0]], n1 = s->domain[s->axis[1]];
    if (s->count <= 0xffffffffLL) {
        unsigned int rest = (unsigned int)item;
        idx[s->axis[0]] = (long long)(rest % (unsigned int)n0);
        rest /= (unsigned int)n0;
        idx[s->axis[1]] = (long long)(rest % (unsigned int)n1);
        idx[s->axis[2]] = (long long)(rest / (unsigned int)n1);
    } else {
        idx[s->axis[0]] = item % n0;
        idx[s->axis[1]] = item / n0 % n1;
        idx[s->axis[2]] = item / n0 / n1;
    }
}

/* The element of field f at point idx. */
GTS_KERNEL_FN double *gts_kernel_stencil_at(const gts_kernel_stencil *s, int f,
                                            const long long idx[3])
{
    double *origin = (double *)(void *)GTS_KERNEL_ADDRESS(s->origin[f]);
    return origin + idx[0] * s->step[f][0] + idx[1] * s->step[f][1] + idx[2] * s->step[f][2];
}

/* ---- one point: the formulas (the host's loops use them too) ---- */

/* The Laplacian at p, neighbours di and dj elements away. */
GTS_KERNEL_FN double gts_kernel_laplacian(const double *p, long long di, long long dj)
{
    return p[-di] + p[di] + p[-dj] + p[dj] - 4.0 * p[0];
}

/* GT4Py's hdiff: lap = 4 inp - neighbours; the fluxes of lap in I and J,
 * zeroed where they run against the gradient of inp; out = inp - coeff *
 * (divergence of the fluxes). */
GTS_KERNEL_FN double gts_kernel_hdiff_lap(const double *p, long long di, long long dj)
{
    return 4.0 * p[0] - (p[di] + p[-di] + p[dj] + p[-dj]);
}

GTS_KERNEL_FN double gts_kernel_hdiff_limit(double flux, double gradient)
{
    return flux * gradient > 0.0 ? 0.0 : flux;
}

GTS_KERNEL_FN double gts_kernel_hdiff(const double *p, double coeff, long long di, long long dj)
{
    double lap = gts_kernel_hdiff_lap(p, di, dj);
    double flx = gts_kernel_hdiff_limit(gts_kernel_hdiff_lap(p + di, di, dj) - lap, p[di] - p[0]);
    double flx_west =
        gts_kernel_hdiff_limit(lap - gts_kernel_hdiff_lap(p - di, di, dj), p[0] - p[-di]);
    double fly = gts_kernel_hdiff_limit(gts_kernel_hdiff_lap(p + dj, di, dj) - lap, p[dj] - p[0]);
    double fly_south =
        gts_kernel_hdiff_limit(lap - gts_kernel_hdiff_lap(p - dj, di, dj), p[0] - p[-dj]);
    return p[0] - coeff * (flx - flx_west + fly - fly_south);
}

/* ---- one thread ---- */

/* copy: out = inp. */
GTS_KERNEL_FN void gts_kernel_copy_stencil_thread(const gts_kernel_stencil *s,
                                                  gts_kernel_thread t)
{
    for (unsigned long long i = t.first; i < (unsigned long long)s->count; i += t.stride) {
        long long idx[3];
        gts_kernel_stencil_point(s, (long long)i, idx);
        *gts_kernel_stencil_at(s, 0, idx) = *gts_kernel_stencil_at(s, 1, idx);
    }
}

GTS_KERNEL_FN void gts_kernel_laplacian_thread(const gts_kernel_stencil *s, gts_kernel_thread t)
{
    for (unsigned long long i = t.first; i < (unsigned long long)s->count; i += t.stride) {
        long long idx[3];
        gts_kernel_stencil_point(s, (long long)i, idx);
        *gts_kernel_stencil_at(s, 0, idx) =
            gts_kernel_laplacian(gts_kernel_stencil_at(s, 1, idx), s->step[1][0], s->step[1][1]);
    }
}

GTS_KERNEL_FN void gts_kernel_hdiff_thread(const gts_kernel_stencil *s, gts_kernel_thread t)
{
    for (unsigned long long i = t.first; i < (unsigned long long)s->count; i += t.stride) {
        long long idx[3];
        gts_kernel_stencil_point(s, (long long)i, idx);
        *gts_kernel_stencil_at(s, 0, idx) =
            gts_kernel_hdiff(gts_kernel_stencil_at(s, 1, idx), *gts_kernel_stencil_at(s, 2, idx),
                             s->step[1][0], s->step[1][1]);
    }
}

/* The Thomas algorithm down one column per work item (x, a, b, c, d are
 * fields 0-4): the forward sweep's modified c in the scratch memory, level
 * k of every column together (neighbouring threads, neighbouring words),
 * its modified d in x; the backward sweep solves in place. The same steps
 * as the host's (stencils.c), so the same numbers. */
GTS_KERNEL_FN void gts_kernel_tridiagonal_thread(const gts_kernel_stencil *s, gts_kernel_thread t)
{
    long long nk = s->domain[2];
    double *scratch = (double *)(void *)GTS_KERNEL_ADDRESS(s->scratch);
    for (unsigned long long i = t.first; i < (unsigned long long)s->count; i += t.stride) {
        long long idx[3];
        gts_kernel_stencil_point(s, (long long)i, idx);
        double *x = gts_kernel_stencil_at(s, 0, idx), *cp = scratch + i;
        const double *a = gts_kernel_stencil_at(s, 1, idx), *b = gts_kernel_stencil_at(s, 2, idx);
        const double *c = gts_kernel_stencil_at(s, 3, idx), *d = gts_kernel_stencil_at(s, 4, idx);
        long long sx = s->step[0][2], sa = s->step[1][2], sb = s->step[2][2];
        long long sc = s->step[3][2], sd = s->step[4][2], n = s->count;
        for (long long k = 0; k < nk; ++k) {
            double bk = b[k * sb], ck = c[k * sc], dk = d[k * sd];
            if (k > 0) {
                double ak = a[k * sa];
                bk -= ak * cp[(k - 1) * n];
                dk -= ak * x[(k - 1) * sx];
            }
            cp[k * n] = ck / bk;
            x[k * sx] = dk / bk;
        }
        for (long long k = nk - 2; k >= 0; --k)
            x[k * sx] -= cp[k * n] * x[(k + 1) * sx];
    }
}

#endif
