/* The scenarios of the halo exchange tests (in one process, and over MPI):
 * every rank's fields filled with the values of a global field in their
 * domain, and checked after an exchange: every halo point must then hold
 * the global field's value at its (wrapped) global index. */
#ifndef GTSTORE_TESTS_HALO_HELPERS_H
#define GTSTORE_TESTS_HALO_HELPERS_H

#include "check.h"
#include "storage_helpers.h"

#include "gtstore/partition.h"

enum { MAX_RANKS = 8, MAX_FIELDS = 3 };

/* What one exchange test sets up. */
typedef struct scenario {
    const char *name;
    int pdim;                  /* split dimensions: I, or I and J */
    int64_t global[2];         /* I, J */
    int nprocs[2];
    bool periodic[2];
    int nfields;
    gts_halo halo[MAX_FIELDS][2]; /* I, J halos per field */
    int64_t k;                 /* extent of an undivided K (0: none) */
    gts_halo khalo;
    bool fortran;              /* I contiguous rather than K */
    int device;                /* 0: host memory; on the emulated device: 1 device memory
                                  only, 2 with a host side (mirrored); 3: field 0 in
                                  device memory only, the others in host memory */
} scenario;

/* The global field's value: a different number per field and point. */
static inline double reference(int f, const int64_t *global, int ndim)
{
    double v = (f + 1) * 1e6;
    for (int s = 0; s < ndim; ++s)
        v = v * 100 + (double)global[s];
    return v;
}

static const double UNSET = -1.0;

static inline int make_field(const scenario *sc, const gts_partition *p, int rank, int f, gts_storage *out)
{
    int64_t start[2], size[2];
    gts_partition_subdomain(p, rank, start, size);
    int ndim = 2 + (sc->k > 0);
    int64_t shape[3];
    gts_storage_spec spec;
    for (int d = 0; d < 2; ++d) /* an undivided J has one block: the whole extent */
        shape[d] = (d < sc->pdim ? size[d] : sc->global[d]) + sc->halo[f][d].lower +
                   sc->halo[f][d].upper;
    if (sc->k)
        shape[2] = sc->k + sc->khalo.lower + sc->khalo.upper;
    int rc = gts_storage_spec_init(&spec, ndim, shape, F8, ERR);
    if (rc)
        return rc;
    spec.has_dims = true;
    spec.dims[0] = GTS_DIM_I;
    spec.dims[1] = GTS_DIM_J;
    spec.dims[2] = GTS_DIM_K;
    spec.has_halo = true;
    spec.halo[0] = sc->halo[f][0];
    spec.halo[1] = sc->halo[f][1];
    spec.halo[2] = sc->khalo;
    spec.has_layout = true;
    if (sc->fortran)
        gts_layout_f(ndim, spec.layout);
    else
        gts_layout_c(ndim, spec.layout);
    int device = sc->device == 3 ? (f == 0 ? 1 : 0) : sc->device;
    spec.managed = device == 1 ? GTS_MANAGED_NONE : GTS_MANAGED_GT4PY;
    /* a device given wins over the spec's kind: the host side is asked for */
    return gts_storage_create_on(device ? gts_device_emulated() : NULL, &spec,
                                 device == 2 ? GTS_ALLOC_MIRRORED : 0, out, ERR);
}

/* The global index of a local point along split dimension d, wrapped where
 * periodic; false where it lies outside a non-periodic domain. */
static inline bool global_index(const scenario *sc, const gts_partition *p, int rank, int f, int d,
                         int64_t local, int64_t *out)
{
    int64_t start[2], size[2];
    gts_partition_subdomain(p, rank, start, size);
    int64_t g = (d < sc->pdim ? start[d] : 0) + local - sc->halo[f][d].lower;
    int64_t n = sc->global[d];
    bool periodic = d < sc->pdim && sc->periodic[d];
    if (periodic)
        g = ((g % n) + n) % n;
    *out = g;
    return g >= 0 && g < n;
}

/* Sets the domain to the reference, the halo to UNSET; or (check) checks
 * every point: the reference where a global point exists, else UNSET. */
static inline int visit(const scenario *sc, const gts_partition *p, int rank, int f, gts_storage *g,
                 bool check)
{
    int bad = 0;
    int64_t idx[3] = {0, 0, 0}, glob[3];
    int64_t nk = g->ndim > 2 ? g->shape[2] : 1;
    for (idx[0] = 0; idx[0] < g->shape[0]; ++idx[0])
        for (idx[1] = 0; idx[1] < g->shape[1]; ++idx[1])
            for (idx[2] = 0; idx[2] < nk; ++idx[2]) {
                bool exists = true, in_domain = true;
                for (int d = 0; d < 2; ++d) {
                    exists = global_index(sc, p, rank, f, d, idx[d], &glob[d]) && exists;
                    in_domain = in_domain && idx[d] >= sc->halo[f][d].lower &&
                                idx[d] < g->shape[d] - sc->halo[f][d].upper;
                }
                glob[2] = idx[2];
                /* undivided J: its halo is not exchanged, only the split dims' */
                bool filled = exists && (sc->pdim == 2 || (idx[1] >= sc->halo[f][1].lower &&
                                                            idx[1] < g->shape[1] - sc->halo[f][1].upper));
                double expected = filled ? reference(f, glob, g->ndim) : UNSET;
                double *at = (double *)address(g, idx);
                if (!check)
                    *at = in_domain ? expected : UNSET;
                else if (*at != expected && bad++ < 3)
                    fprintf(stderr, "%s: rank %d field %d at (%lld, %lld, %lld): %g, expected %g\n",
                            sc->name, rank, f, (long long)idx[0], (long long)idx[1],
                            (long long)idx[2], *at, expected);
            }
    return bad;
}

/* 1, 2, 4 and 6 ranks; open and periodic; uneven; several fields with
 * halos of their own, per side; with and without an undivided K (with a
 * halo of its own), C and Fortran layouts. */
static const scenario scenarios[] = {
    {"2x2 open", 2, {8, 6}, {2, 2}, {false, false}, 1, {{{2, 2}, {2, 2}}}, 3, {0, 0}, false, 0},
    {"2x2 periodic", 2, {8, 6}, {2, 2}, {true, true}, 1, {{{2, 2}, {1, 1}}}, 0, {0, 0}, false, 0},
    {"2x3 uneven, periodic in J, I first", 2, {9, 10}, {2, 3}, {false, true}, 2,
     {{{1, 2}, {3, 0}}, {{0, 1}, {1, 1}}}, 4, {1, 2}, true, 0},
    {"1x1 periodic: its own neighbour", 2, {5, 4}, {1, 1}, {true, true}, 1, {{{2, 1}, {1, 2}}},
     2, {0, 0}, false, 0},
    {"2x1 periodic: one rank on both sides", 2, {6, 5}, {2, 1}, {true, true}, 2,
     {{{3, 3}, {2, 2}}, {{1, 0}, {0, 1}}}, 0, {0, 0}, true, 0},
    {"4 in I only, J undivided", 1, {13, 4}, {4, 1}, {true, false}, 1, {{{3, 2}, {1, 1}}}, 2,
     {0, 0}, false, 0},
    {"3x2 no halo in J", 2, {7, 7}, {3, 2}, {false, false}, 3,
     {{{1, 1}, {0, 0}}, {{2, 2}, {1, 1}}, {{0, 0}, {0, 0}}}, 0, {0, 0}, false, 0},
    /* device memory without a host side: packed on the device */
    {"2x2 periodic, device memory", 2, {8, 6}, {2, 2}, {true, true}, 2,
     {{{2, 1}, {1, 2}}, {{1, 1}, {0, 1}}}, 3, {1, 0}, true, 1},
    {"1x1 periodic, device memory", 2, {5, 4}, {1, 1}, {true, true}, 1, {{{2, 1}, {1, 2}}},
     2, {0, 0}, false, 1},
    {"3x2 open, device memory", 2, {9, 7}, {3, 2}, {false, false}, 1, {{{1, 2}, {2, 1}}}, 0,
     {0, 0}, false, 1},
    /* a device buffer with a host side: packed on the host side, synced */
    {"2x2 open, mirrored", 2, {8, 6}, {2, 2}, {false, false}, 1, {{{1, 1}, {2, 2}}}, 2,
     {0, 0}, false, 2},
    /* device memory and host memory in one plan */
    {"2x1 periodic, uneven, device and host memory", 2, {7, 5}, {2, 1}, {true, false}, 3,
     {{{1, 2}, {1, 1}}, {{2, 1}, {0, 2}}, {{1, 1}, {1, 1}}}, 2, {0, 0}, false, 3},
    {"4 in I, open, device and host memory", 1, {11, 4}, {4, 1}, {false, false}, 2,
     {{{2, 1}, {1, 0}}, {{1, 2}, {0, 0}}}, 3, {1, 1}, true, 3},
};

#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

static inline int scenario_ranks(const scenario *sc)
{
    return sc->nprocs[0] * (sc->pdim > 1 ? sc->nprocs[1] : 1);
}

#endif
