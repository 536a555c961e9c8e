/* Built-in stencils (gtstore/stencils.h): float64 I, J, K fields of any
 * layout, bound by gts_bind; run here on the host, or queued on a GPU
 * (stencil_kernels.h). */
#include "gtstore/stencils.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gtstore/access.h"
#include "gtstore/buffer.h"
#include "gtstore/geometry.h"
#include "stencil_kernels.h"
#include "strided_plan.h"

#ifdef _OPENMP
#define OMP(directive) _Pragma(directive)
#else
#define OMP(directive)
#endif

/* Points from which a stencil runs in parallel. */
#define PARALLEL_POINTS ((int64_t)1 << 15)

/* The loops that compute, not only move memory, are also built for
 * x86-64-v3 (AVX2: four doubles a vector instead of SSE2's two), and the
 * dynamic loader picks the version the CPU runs (GNU ifunc): hdiff takes
 * 1.3x (one thread) to 1.6x (two) less time on such a CPU, and the same
 * build runs on any x86-64. GCC 11 and later (which know x86-64-v3) with
 * glibc (ifunc) only: in ISO C mode GCC fuses no multiply and add, so both
 * versions give the same numbers (clang would fuse, and clang 14 exports
 * the clones' resolvers of static functions). Not under ThreadSanitizer:
 * it instruments the resolver, which the loader runs before TSan's runtime
 * is up. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    __GNUC__ >= 11 && !defined(__SANITIZE_THREAD__)
#define CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CPU_CLONES
#endif

#define F8 {GTS_KIND_FLOAT, 8}
#define IJK {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K}
#define EXTENT(n) {{n, n}, {n, n}, {0, 0}}

static const gts_field_spec copy_fields[] = {
    {.name = "out", .dtype = F8, .ndim = 3, .dims = IJK, .written = true},
    {.name = "inp", .dtype = F8, .ndim = 3, .dims = IJK},
};
static const gts_field_spec laplacian_fields[] = {
    {.name = "out", .dtype = F8, .ndim = 3, .dims = IJK, .written = true},
    {.name = "inp", .dtype = F8, .ndim = 3, .dims = IJK, .extent = EXTENT(1)},
};
static const gts_field_spec hdiff_fields[] = {
    {.name = "out", .dtype = F8, .ndim = 3, .dims = IJK, .written = true},
    {.name = "inp", .dtype = F8, .ndim = 3, .dims = IJK, .extent = EXTENT(2)},
    {.name = "coeff", .dtype = F8, .ndim = 3, .dims = IJK},
};
static const gts_field_spec tridiagonal_fields[] = {
    {.name = "x", .dtype = F8, .ndim = 3, .dims = IJK, .written = true},
    {.name = "a", .dtype = F8, .ndim = 3, .dims = IJK},
    {.name = "b", .dtype = F8, .ndim = 3, .dims = IJK},
    {.name = "c", .dtype = F8, .ndim = 3, .dims = IJK},
    {.name = "d", .dtype = F8, .ndim = 3, .dims = IJK},
};
/* Per device kind: the same fields. */
static const gts_signature signatures[2][4] = {
    {
        {2, copy_fields, GTS_DEVICE_CPU},
        {2, laplacian_fields, GTS_DEVICE_CPU},
        {3, hdiff_fields, GTS_DEVICE_CPU},
        {5, tridiagonal_fields, GTS_DEVICE_CPU},
    },
    {
        {2, copy_fields, GTS_DEVICE_GPU},
        {2, laplacian_fields, GTS_DEVICE_GPU},
        {3, hdiff_fields, GTS_DEVICE_GPU},
        {5, tridiagonal_fields, GTS_DEVICE_GPU},
    },
};
#define NSTENCILS ((int)(sizeof signatures[0] / sizeof signatures[0][0]))

const gts_signature *gts_stencil_signature_on(gts_stencil stencil, gts_device device)
{
    bool known = (int)stencil >= 0 && (int)stencil < NSTENCILS &&
                 (device == GTS_DEVICE_CPU || device == GTS_DEVICE_GPU);
    return known ? &signatures[device][stencil] : NULL;
}

const gts_signature *gts_stencil_signature(gts_stencil stencil)
{
    return gts_stencil_signature_on(stencil, GTS_DEVICE_CPU);
}

/* A field as the kernels index it: the origin element and element strides
 * in I, J, K. */
typedef struct view {
    double *origin;
    int64_t step[3];
} view;

static int64_t magnitude(int64_t x)
{
    return x < 0 ? -x : x;
}

static int make_view(const gts_field_spec *spec, const gts_bound_field *b, view *v,
                     gts_error *err)
{
    for (int c = 0; c < 3; ++c) {
        if (b->strides[c] % (int64_t)sizeof(double))
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: stride %lld is not a multiple of the 8-byte element",
                                 spec->name, (long long)b->strides[c]);
        v->step[c] = b->strides[c] / (int64_t)sizeof(double);
    }
    if ((uintptr_t)b->origin_data % sizeof(double))
        return gts_error_set(err, GTS_EINVAL,
                             "%s: the origin point's address is not a multiple of 8 bytes", 
                             spec->name);
    v->origin = (double *)(void *)b->origin_data;
    return GTS_OK;
}

/* The bytes a bound field spans, from its element 0. */
static void span(const gts_bound_field *b, uintptr_t *low, uintptr_t *high)
{
    intptr_t lo = 0, hi = 0;
    for (int c = 0; c < b->ndim; ++c) {
        /* the binding checked that these fit in 64 bits */
        intptr_t first = (intptr_t)(-b->origin[c] * b->strides[c]);
        intptr_t last = (intptr_t)((b->shape[c] - 1 - b->origin[c]) * b->strides[c]);
        if (b->shape[c] == 0) {
            *low = *high = 0;
            return;
        }
        lo += first < last ? first : last;
        hi += first < last ? last : first;
    }
    *low = (uintptr_t)b->origin_data + (uintptr_t)lo;
    *high = (uintptr_t)b->origin_data + (uintptr_t)hi + sizeof(double);
}

/* The output may share no memory with an input: the kernels read inputs
 * while they write (a stencil over its own output reads written values). */
static int check_no_alias(const gts_signature *sig, const gts_bound_field *fields, gts_error *err)
{
    uintptr_t out_low, out_high;
    span(&fields[0], &out_low, &out_high);
    for (int f = 1; f < sig->nfields; ++f) {
        uintptr_t low, high;
        span(&fields[f], &low, &high);
        if (low < out_high && out_low < high)
            return gts_error_set(err, GTS_EINVAL,
                                 "%s: shares memory with the output %s; pass a separate field",
                                 sig->fields[f].name, sig->fields[0].name);
    }
    return GTS_OK;
}

/* ---- the lines: `n` points along the inner dimension ---------------------- */

/* Each runs twice: with unit steps known to the compiler (vectorised) and
 * with any steps. */
static inline void copy_line(double *restrict out, const double *restrict inp, int64_t n,
                             int64_t so, int64_t si)
{
    for (int64_t t = 0; t < n; ++t)
        out[t * so] = inp[t * si];
}

static inline void laplacian_line(double *restrict out, const double *restrict inp, int64_t n,
                                  int64_t so, int64_t si, int64_t di, int64_t dj)
{
    for (int64_t t = 0; t < n; ++t)
        out[t * so] = gts_kernel_laplacian(inp + t * si, di, dj);
}

/* GT4Py's hdiff (stencil_kernels.h has the formulas). */
static inline double hdiff_lap(const double *p, int64_t di, int64_t dj)
{
    return gts_kernel_hdiff_lap(p, di, dj);
}

static inline double limit(double flux, double gradient)
{
    return gts_kernel_hdiff_limit(flux, gradient);
}

static inline void hdiff_line(double *restrict out, const double *restrict inp,
                              const double *restrict coeff, int64_t n, int64_t so, int64_t si,
                              int64_t sc, int64_t di, int64_t dj)
{
    for (int64_t t = 0; t < n; ++t)
        out[t * so] = gts_kernel_hdiff(inp + t * si, coeff[t * sc], di, dj);
}

CPU_CLONES static void run_line(gts_stencil stencil, const view *v, const int64_t idx[3],
                                int inner, int64_t n)
{
    double *base[3] = {NULL, NULL, NULL};
    int64_t step[3] = {1, 1, 1};
    int nfields = signatures[GTS_DEVICE_CPU][stencil].nfields;
    for (int f = 0; f < nfields; ++f) {
        base[f] = v[f].origin + idx[0] * v[f].step[0] + idx[1] * v[f].step[1] +
                  idx[2] * v[f].step[2];
        step[f] = v[f].step[inner];
    }
    bool unit = step[0] == 1 && step[1] == 1 && (nfields < 3 || step[2] == 1);
    int64_t di = v[1].step[0], dj = v[1].step[1];
    switch (stencil) {
    case GTS_STENCIL_COPY:
        if (unit)
            copy_line(base[0], base[1], n, 1, 1);
        else
            copy_line(base[0], base[1], n, step[0], step[1]);
        break;
    case GTS_STENCIL_LAPLACIAN:
        if (unit)
            laplacian_line(base[0], base[1], n, 1, 1, di, dj);
        else
            laplacian_line(base[0], base[1], n, step[0], step[1], di, dj);
        break;
    case GTS_STENCIL_TRIDIAGONAL: /* by rows: tridiagonal_run */
        break;
    case GTS_STENCIL_HDIFF:
        if (unit)
            hdiff_line(base[0], base[1], base[2], n, 1, 1, 1, di, dj);
        else
            hdiff_line(base[0], base[1], base[2], n, step[0], step[1], step[2], di, dj);
        break;
    }
}

/* ---- hdiff along a horizontal inner dimension: rows with reuse ------------
 *
 * Along a line in a horizontal dimension q (the other horizontal one is p),
 * GT4Py's hdiff needs lap on the rows p - 1, p, p + 1 and the fluxes between
 * them. Walking p upwards, each row's lap and its flux to the next row are
 * computed once and reused by the next line: one lap per point instead of
 * the five of hdiff_line. */

/* The scratch rows of one thread, n points along q. */
typedef struct hdiff_rows {
    double *lap[3];   /* lap on rows p - 1, p, p + 1 at q = -1 .. n */
    double *flux_q;   /* flux along q at q = -1 .. n - 1 */
    double *flux_p[2]; /* flux from row p - 1 to p, and from p to p + 1 */
    double *block;
} hdiff_rows;

/* The bytes of `count` rows of `length` doubles: GTS_EOVERFLOW where they
 * do not fit in 64 bits (or a size_t), so that no malloc gets a wrapped
 * size. Fields of zero strides describe any extent in little memory. */
static int scratch_bytes(const char *stencil, int64_t count, int64_t length, int64_t *bytes,
                         gts_error *err)
{
    if (gts_mul_overflow(count, length, bytes) ||
        gts_mul_overflow(*bytes, (int64_t)sizeof(double), bytes) || (uint64_t)*bytes > SIZE_MAX)
        return gts_error_set(err, GTS_EOVERFLOW,
                             "%s: its scratch memory, %lld rows of %lld points, overflows 64 bits",
                             stencil, (long long)count, (long long)length);
    return GTS_OK;
}

/* `bytes` from scratch_bytes for 6 rows of n + 2 points. */
static bool hdiff_rows_alloc(hdiff_rows *r, int64_t n, int64_t bytes)
{
    size_t row = (size_t)n + 2;
    r->block = malloc((size_t)bytes);
    if (!r->block)
        return false;
    for (int i = 0; i < 3; ++i)
        r->lap[i] = r->block + (size_t)i * row;
    r->flux_q = r->block + 3 * row;
    r->flux_p[0] = r->block + 4 * row;
    r->flux_p[1] = r->block + 5 * row;
    return true;
}

/* lap at q = -1 .. n of the row starting at `p` (q = 0). */
static inline void lap_row(double *restrict lap, const double *restrict p, int64_t n,
                           int64_t sq, int64_t sp)
{
    for (int64_t t = -1; t <= n; ++t)
        lap[t + 1] = hdiff_lap(p + t * sq, sq, sp);
}

/* The flux from row `a` to row `b` (lap and values), n points. */
static inline void flux_between(double *restrict flux, const double *restrict lap_a,
                                const double *restrict lap_b, const double *restrict a,
                                const double *restrict b, int64_t n, int64_t sq)
{
    for (int64_t t = 0; t < n; ++t)
        flux[t] = limit(lap_b[t + 1] - lap_a[t + 1], b[t * sq] - a[t * sq]);
}

static inline void hdiff_row(double *restrict out, const double *restrict inp,
                             const double *restrict coeff, hdiff_rows *r, int64_t n, int64_t so,
                             int64_t si, int64_t sc)
{
    const double *lap = r->lap[1];
    for (int64_t t = -1; t < n; ++t)
        r->flux_q[t + 1] = limit(lap[t + 2] - lap[t + 1], inp[(t + 1) * si] - inp[t * si]);
    for (int64_t t = 0; t < n; ++t)
        out[t * so] = inp[t * si] - coeff[t * sc] * (r->flux_q[t + 1] - r->flux_q[t] +
                                                     r->flux_p[1][t] - r->flux_p[0][t]);
}

/* Rows p0 .. p1 - 1 of plane k, along q. */
CPU_CLONES static void hdiff_rows_run(const view *v, int q, int p, int64_t k, int64_t p0,
                                      int64_t p1, int64_t n, hdiff_rows *r)
{
    const view *o = &v[0], *in = &v[1], *c = &v[2];
    int64_t sq = in->step[q], sp = in->step[p];
    bool unit = sq == 1 && o->step[q] == 1 && c->step[q] == 1;
    const double *row = in->origin + k * in->step[2] + (p0 - 1) * sp;
    lap_row(r->lap[1], row, n, sq, sp);
    lap_row(r->lap[2], row + sp, n, sq, sp);
    flux_between(r->flux_p[1], r->lap[1], r->lap[2], row, row + sp, n, sq);
    for (int64_t j = p0; j < p1; ++j) {
        row = in->origin + k * in->step[2] + j * sp;
        double *spare = r->lap[0], *swap = r->flux_p[0];
        r->lap[0] = r->lap[1], r->lap[1] = r->lap[2], r->lap[2] = spare;
        r->flux_p[0] = r->flux_p[1], r->flux_p[1] = swap;
        if (unit)
            lap_row(r->lap[2], row + sp, n, 1, sp);
        else
            lap_row(r->lap[2], row + sp, n, sq, sp);
        flux_between(r->flux_p[1], r->lap[1], r->lap[2], row, row + sp, n, sq);
        double *out = o->origin + k * o->step[2] + j * o->step[p];
        const double *coeff = c->origin + k * c->step[2] + j * c->step[p];
        if (unit)
            hdiff_row(out, row, coeff, r, n, 1, 1, 1);
        else
            hdiff_row(out, row, coeff, r, n, o->step[q], sq, c->step[q]);
    }
}

/* Rows per task: the first two rows of a task are its warm-up. */
#define HDIFF_ROWS_PER_TASK 32

/* `points`: the domain's, `bytes` the scratch rows' (host_scratch), both
 * checked by prepare. */
static int hdiff_by_rows(const view *v, const int64_t *n, int64_t points, int q, int64_t bytes,
                         gts_error *err)
{
    int p = 1 - q;
    int64_t chunks = n[p] / HDIFF_ROWS_PER_TASK + (n[p] % HDIFF_ROWS_PER_TASK != 0);
    int64_t tasks = chunks * n[2]; /* at most the points */
    int parallel = tasks > 1 && points >= PARALLEL_POINTS;
    int failed = 0;
    OMP("omp parallel if(parallel) reduction(|:failed)")
    {
        hdiff_rows rows;
        if (!hdiff_rows_alloc(&rows, n[q], bytes)) {
            failed = 1;
        } else {
            OMP("omp for schedule(static)")
            for (int64_t task = 0; task < tasks; ++task) {
                int64_t k = task / chunks, p0 = task % chunks * HDIFF_ROWS_PER_TASK;
                int64_t p1 = n[p] - p0 > HDIFF_ROWS_PER_TASK ? p0 + HDIFF_ROWS_PER_TASK : n[p];
                hdiff_rows_run(v, q, p, k, p0, p1, n[q], &rows);
            }
            free(rows.block);
        }
    }
    (void)parallel;
    return failed ? gts_error_set(err, GTS_ENOMEM, "hdiff: out of memory for scratch rows")
                  : GTS_OK;
}

/* ---- tridiagonal solve along K (Thomas algorithm) --------------------------
 *
 * Every column (i, j) solves a[k] x[k-1] + b[k] x[k] + c[k] x[k+1] = d[k]
 * over the domain's K (a[0] and c[nk-1] are not read). One row of columns
 * (all i, or all j: the horizontal dimension q of x's smaller stride) at a
 * time, k outermost, so that the inner loop runs along q; the forward
 * sweep's modified c goes to a per-thread scratch plane, its modified d
 * into x, and the backward sweep solves in place. No pivoting: a zero
 * pivot gives infinities or NaN, as the algorithm does. */

static inline double *at(const view *v, int q, int p, int64_t t, int64_t j, int64_t k)
{
    return v->origin + t * v->step[q] + j * v->step[p] + k * v->step[2];
}

CPU_CLONES static void tridiagonal_row(const view *v, int q, int p, int64_t j, int64_t nq,
                                       int64_t nk, double *restrict cp)
{
    const view *x = &v[0], *a = &v[1], *b = &v[2], *c = &v[3], *d = &v[4];
    for (int64_t k = 0; k < nk; ++k)
        for (int64_t t = 0; t < nq; ++t) {
            double bk = *at(b, q, p, t, j, k), ck = *at(c, q, p, t, j, k);
            double dk = *at(d, q, p, t, j, k);
            if (k > 0) {
                double ak = *at(a, q, p, t, j, k);
                bk -= ak * cp[(k - 1) * nq + t];
                dk -= ak * *at(x, q, p, t, j, k - 1);
            }
            cp[k * nq + t] = ck / bk;
            *at(x, q, p, t, j, k) = dk / bk;
        }
    for (int64_t k = nk - 2; k >= 0; --k)
        for (int64_t t = 0; t < nq; ++t)
            *at(x, q, p, t, j, k) -= cp[k * nq + t] * *at(x, q, p, t, j, k + 1);
}

/* The horizontal dimension whose columns a row of the solve holds: x's
 * smaller stride. */
static int tridiagonal_row_axis(const view *x)
{
    return magnitude(x->step[0]) <= magnitude(x->step[1]) ? 0 : 1;
}

/* `points`: the domain's, `bytes` the scratch plane's, both checked by
 * prepare. */
static int tridiagonal_run(const view *v, const int64_t *n, int64_t points, int64_t bytes,
                           gts_error *err)
{
    int q = tridiagonal_row_axis(&v[0]), p = 1 - q;
    int parallel = n[p] > 1 && points >= PARALLEL_POINTS;
    int failed = 0;
    OMP("omp parallel if(parallel) reduction(|:failed)")
    {
        double *cp = malloc((size_t)bytes);
        if (!cp) {
            failed = 1;
        } else {
            OMP("omp for schedule(static)")
            for (int64_t j = 0; j < n[p]; ++j)
                tridiagonal_row(v, q, p, j, n[q], n[2], cp);
            free(cp);
        }
    }
    (void)parallel;
    return failed ? gts_error_set(err, GTS_ENOMEM, "tridiagonal: out of memory for scratch")
                  : GTS_OK;
}

/* A call's fields as the kernels index them, checked: the views, their
 * memory apart from the output's, the domain's points countable, the
 * host's scratch memory sizable, the output's points distinct; and the
 * axes from the output's smallest stride (its contiguous dimension for any
 * layout) to its largest, along which the loops (or a GPU's threads) run. */
typedef struct prepared {
    const gts_signature *sig;
    view v[GTS_KERNEL_STENCIL_FIELDS];
    int64_t points;
    int axis[3];     /* inner, middle, outer */
    int64_t scratch; /* bytes of each host thread's scratch memory (0: none) */
} prepared;

/* The host's scratch memory per thread: hdiff along a horizontal
 * contiguous dimension keeps 6 rows (hdiff_by_rows), the tridiagonal solve
 * a plane of levels x a row of columns. */
static int host_scratch(gts_stencil stencil, prepared *p, const int64_t *n, gts_error *err)
{
    p->scratch = 0;
    if (stencil == GTS_STENCIL_TRIDIAGONAL)
        return scratch_bytes("tridiagonal", n[2], n[tridiagonal_row_axis(&p->v[0])], &p->scratch,
                             err);
    if (stencil != GTS_STENCIL_HDIFF || p->axis[0] == 2)
        return GTS_OK;
    int64_t length;
    if (gts_add_overflow(n[p->axis[0]], 2, &length))
        length = INT64_MAX; /* scratch_bytes refuses it */
    return scratch_bytes("hdiff", 6, length, &p->scratch, err);
}

/* The output's points over the domain are distinct elements: threads
 * write them at once (OpenMP's here, a GPU's), and two writing one
 * element would race. */
static int check_distinct_output(const prepared *p, const gts_bound_field *out,
                                 const int64_t *domain, gts_error *err)
{
    gts__strided_plan plan;
    int64_t strides[3];
    for (int c = 0; c < 3; ++c)
        strides[c] = p->v[0].step[c] * (int64_t)sizeof(double);
    if (!gts__strided_plan_init(&plan, out->origin_data, strides, out->origin_data, strides, 3,
                                domain, (int64_t)sizeof(double)) ||
        gts__strided_plan_distinct(&plan))
        return GTS_OK;
    return gts_error_set(err, GTS_EINVAL,
                         "%s: its points over the domain share memory (element strides %lld, "
                         "%lld, %lld in I, J, K); threads writing them at once would race",
                         p->sig->fields[0].name, (long long)p->v[0].step[0],
                         (long long)p->v[0].step[1], (long long)p->v[0].step[2]);
}

static int prepare(gts_stencil stencil, const gts_binding *binding,
                   const gts_bound_field *fields, prepared *p, gts_error *err)
{
    p->sig = gts_stencil_signature(stencil);
    if (!p->sig)
        return gts_error_set(err, GTS_EINVAL, "stencil: %d is no built-in stencil", (int)stencil);
    if (!binding || !fields)
        return gts_error_set(err, GTS_EINVAL, "stencil: NULL binding");
    int rc;
    for (int f = 0; f < p->sig->nfields; ++f)
        if ((rc = make_view(&p->sig->fields[f], &fields[f], &p->v[f], err)))
            return rc;
    if ((rc = check_no_alias(p->sig, fields, err)))
        return rc;
    /* Every loop count below is at most the domain's points (and fields of
     * zero strides bind any extent in little memory). */
    const int64_t *n = binding->domain;
    if (n[0] < 0 || n[1] < 0 || n[2] < 0) /* (a binding not made by gts_bind) */
        return gts_error_set(err, GTS_EINVAL, "domain: (%lld, %lld, %lld) has a negative extent",
                             (long long)n[0], (long long)n[1], (long long)n[2]);
    if (gts_mul_overflow(n[0], n[1], &p->points) || gts_mul_overflow(p->points, n[2], &p->points))
        return gts_error_set(err, GTS_EOVERFLOW,
                             "domain: %lld x %lld x %lld points overflow 64 bits",
                             (long long)n[0], (long long)n[1], (long long)n[2]);
    const view *out = &p->v[0];
    int inner = 0;
    for (int c = 1; c < 3; ++c)
        if (magnitude(out->step[c]) < magnitude(out->step[inner]))
            inner = c;
    int outer = (inner + 1) % 3, middle = (inner + 2) % 3;
    if (magnitude(out->step[middle]) > magnitude(out->step[outer])) {
        int swap = outer;
        outer = middle;
        middle = swap;
    }
    p->axis[0] = inner, p->axis[1] = middle, p->axis[2] = outer;
    if ((rc = host_scratch(stencil, p, n, err)))
        return rc;
    return check_distinct_output(p, &fields[0], n, err);
}

int gts_stencil_run(gts_stencil stencil, const gts_binding *binding,
                    const gts_bound_field *fields, gts_error *err)
{
    prepared p;
    int rc = prepare(stencil, binding, fields, &p, err);
    if (rc)
        return rc;
    const view *v = p.v;
    const int64_t *n = binding->domain;
    int inner = p.axis[0], middle = p.axis[1], outer = p.axis[2];
    if (stencil == GTS_STENCIL_TRIDIAGONAL)
        return tridiagonal_run(v, n, p.points, p.scratch, err);
    /* hdiff along a horizontal contiguous dimension: by rows (above) */
    if (stencil == GTS_STENCIL_HDIFF && inner != 2)
        return hdiff_by_rows(v, n, p.points, inner, p.scratch, err);
    int64_t lines = n[outer] * n[middle]; /* at most the points */
    int parallel = p.points >= PARALLEL_POINTS;
    OMP("omp parallel for schedule(static) if(parallel)")
    for (int64_t line = 0; line < lines; ++line) {
        int64_t idx[3];
        idx[outer] = line / n[middle];
        idx[middle] = line % n[middle];
        idx[inner] = 0;
        run_line(stencil, v, idx, inner, n[inner]);
    }
    (void)parallel;
    return GTS_OK;
}

/* ---- on a GPU: one launch of the device's kernel (stencil_kernels.h) ------ */

/* The launch's arguments from a prepared call. The tridiagonal solve's
 * threads own columns, along x's smaller horizontal stride first. */
static void launch_args(gts_stencil stencil, const prepared *p, const gts_binding *binding,
                        gts_kernel_stencil *k)
{
    *k = (gts_kernel_stencil){.nfields = p->sig->nfields};
    for (int f = 0; f < k->nfields; ++f) {
        k->origin[f] = (unsigned long long)(uintptr_t)p->v[f].origin;
        for (int c = 0; c < 3; ++c)
            k->step[f][c] = p->v[f].step[c];
        k->extent[f] = (int)p->sig->fields[f].extent[0].lower; /* symmetric, I as J */
    }
    for (int c = 0; c < 3; ++c) {
        k->domain[c] = binding->domain[c];
        k->axis[c] = p->axis[c];
    }
    k->count = p->points;
    if (stencil == GTS_STENCIL_TRIDIAGONAL) {
        int q = tridiagonal_row_axis(&p->v[0]);
        k->axis[0] = q, k->axis[1] = 1 - q, k->axis[2] = 2;
        k->count = binding->domain[0] * binding->domain[1]; /* at most the points */
    }
}

/* Device memory for the tridiagonal solve's modified c, used on `stream`
 * and freed in its order (gts_buffer_release waits for the work recorded
 * on the buffer): columns x levels doubles. */
static int scratch_alloc(const gts_device_ops *device, const gts_kernel_stencil *k,
                         gts_stream stream, gts_buffer **out, gts_error *err)
{
    int64_t bytes = 0;
    int rc = scratch_bytes("tridiagonal", k->count, k->domain[2], &bytes, err);
    if (!rc)
        rc = gts_buffer_alloc(device, bytes, 0, out, err);
    if (!rc && (rc = gts_buffer_order_wait(*out, GTS_SIDE_DEVICE, stream, err))) {
        gts_buffer_release(*out);
        *out = NULL;
    }
    return rc;
}

int gts_stencil_launch(const gts_device_ops *device, gts_stencil stencil,
                       const gts_binding *binding, const gts_bound_field *fields, gts_error *err)
{
    if (!device)
        return gts_error_set(err, GTS_EINVAL, "device: NULL");
    if (device->kind == GTS_MEMORY_HOST)
        return gts_stencil_run(stencil, binding, fields, err);
    prepared p;
    int rc = prepare(stencil, binding, fields, &p, err);
    if (rc)
        return rc;
    if (!device->stencil)
        return gts_error_set(err, GTS_ENOTSUP, "device: %s runs no built-in stencil",
                             device->name);
    gts_kernel_stencil k;
    launch_args(stencil, &p, binding, &k);
    if (k.count == 0 || (stencil == GTS_STENCIL_TRIDIAGONAL && k.domain[2] == 0))
        return GTS_OK;
    gts_buffer *scratch = NULL;
    if (stencil == GTS_STENCIL_TRIDIAGONAL) {
        if ((rc = scratch_alloc(device, &k, binding->stream, &scratch, err)))
            return rc;
        k.scratch = (unsigned long long)(uintptr_t)gts_buffer_data(scratch);
    }
    const char *names[GTS_KERNEL_STENCIL_FIELDS];
    for (int f = 0; f < p.sig->nfields; ++f)
        names[f] = p.sig->fields[f].name;
    rc = device->stencil(device, (int)stencil, &k, names, binding->stream, err);
    if (scratch) {
        /* the block must not go back while the kernel may run */
        if (!rc && (rc = gts_buffer_order_record(scratch, binding->stream, err))) {
            gts_error ignored;
            gts_device_synchronize(device, binding->stream, &ignored);
        }
        gts_buffer_release(scratch);
    }
    return rc;
}
