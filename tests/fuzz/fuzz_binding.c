/* Binding (gtstore/binding.h): a signature of 1-3 fields with any labels,
 * extents, layout and alignment expectations, and per call fields over real
 * memory in any order of strides (or hostile strides without memory), with
 * halos, default origins, read-only flags, own labels (some wrong) and
 * dtypes, plus the call's domain and origins; bound by gts_bind.
 *
 * Checks: a failure has its code and a message; a success has a domain of
 * at least one point per axis, the canonical order of each field, its
 * shape and strides permuted from the field's own, an origin address that
 * matches, every accessed point (origin - lower extent .. origin + domain +
 * upper extent) inside the field, which is then read (AddressSanitizer
 * checks the reads), and no written read-only field or wrong dtype. */
#include "fuzz_input.h"
#include "gtstore/binding.h"

#define MAX_FIELDS 3
#define MAX_EXTENT 8

typedef struct field_memory {
    double *block;
    int64_t shape[4], strides[4], origin[4], call_origin[4];
    gts_dim dims[4];
    gts_halo halo[4];
} field_memory;

static const gts_dim pool[4] = {GTS_DIM_I, GTS_DIM_J, GTS_DIM_K, 0};

static void read_spec(fuzz_input *in, gts_field_spec *spec, const char *name)
{
    int perm[4];
    *spec = (gts_field_spec){.name = name, .dtype = {'f', 8}};
    spec->ndim = (int)fuzz_range(in, 1, 4);
    fuzz_permutation(in, 4, perm);
    for (int d = 0; d < spec->ndim; ++d)
        spec->dims[d] = pool[perm[d]];
    int order[4];
    gts_dims_canonical(spec->ndim, spec->dims, order);
    for (int c = 0; c < spec->ndim; ++c)
        if (spec->dims[order[c]] < 0)
            spec->extent[c] = (gts_halo){fuzz_range(in, 0, 2), fuzz_range(in, 0, 2)};
    spec->written = fuzz_bool(in);
    if ((spec->has_layout = fuzz_bool(in)))
        fuzz_permutation(in, spec->ndim, spec->layout);
    static const int64_t alignments[] = {0, 1, 8, 64};
    spec->alignment = alignments[fuzz_range(in, 0, 3)];
    spec->relies_on_layout = fuzz_bool(in);
}

/* A field over fresh memory whose strides follow a random order (some
 * negative), or hostile strides over no memory (`*real` false). */
static void read_field(fuzz_input *in, const gts_field_spec *spec, field_memory *m,
                       gts_field_desc *desc, bool *real)
{
    int ndim = spec->ndim, order[4];
    for (int d = 0; d < ndim; ++d)
        m->shape[d] = fuzz_range(in, 0, MAX_EXTENT);
    fuzz_permutation(in, ndim, order);
    int64_t size = 1;
    for (int r = ndim - 1; r >= 0; --r) { /* order[ndim - 1] contiguous */
        m->strides[order[r]] = 8 * size;
        size *= m->shape[order[r]] ? m->shape[order[r]] : 1;
    }
    m->block = malloc((size_t)size * sizeof(double));
    FUZZ_CHECK(m->block);
    char *data = (char *)m->block;
    for (int d = 0; d < ndim; ++d)
        if (fuzz_bool(in) && m->shape[d] > 0) { /* walk this dimension backwards */
            data += (m->shape[d] - 1) * m->strides[d];
            m->strides[d] = -m->strides[d];
        }
    *real = !fuzz_bool(in);
    if (!*real)
        for (int d = 0; d < ndim; ++d)
            if (fuzz_bool(in))
                m->strides[d] = fuzz_hostile(in);
    *desc = (gts_field_desc){.data = data, .device = GTS_DEVICE_CPU, .dtype = {'f', 8},
                             .ndim = ndim, .shape = m->shape, .strides = m->strides};
    if (fuzz_range(in, 0, 7) == 0)
        desc->dtype = (gts_dtype){'f', 4};
    if (fuzz_range(in, 0, 15) == 0)
        desc->ndim = (int)fuzz_range(in, 0, 4);
    if (fuzz_bool(in)) { /* its own labels: a permutation, sometimes wrong */
        int perm[4];
        fuzz_permutation(in, ndim, perm);
        for (int d = 0; d < ndim; ++d)
            m->dims[d] = spec->dims[perm[d]];
        if (fuzz_range(in, 0, 7) == 0)
            m->dims[0] = (gts_dim)fuzz_range(in, -4, 3);
        desc->dims = m->dims;
    }
    if (fuzz_bool(in)) {
        for (int d = 0; d < ndim; ++d)
            m->halo[d] = (gts_halo){fuzz_range(in, -1, 4), fuzz_range(in, 0, 4)};
        desc->halo = m->halo;
    }
    if (fuzz_bool(in)) {
        for (int d = 0; d < ndim; ++d)
            m->origin[d] = fuzz_range(in, -1, MAX_EXTENT);
        desc->origin = m->origin;
    }
    desc->readonly = fuzz_bool(in);
}

/* Reads every element of the box [lo, hi) of a bound field. */
static double read_box(const gts_bound_field *b, const int64_t *lo, const int64_t *hi)
{
    int64_t idx[4];
    double sum = 0;
    for (int c = 0; c < b->ndim; ++c) {
        if (lo[c] >= hi[c])
            return 0;
        idx[c] = lo[c];
    }
    for (;;) {
        int64_t offset = 0;
        for (int c = 0; c < b->ndim; ++c)
            offset += (idx[c] - b->origin[c]) * b->strides[c];
        double value;
        memcpy(&value, b->origin_data + offset, sizeof value);
        sum += value;
        int c = b->ndim - 1;
        for (; c >= 0 && ++idx[c] == hi[c]; --c)
            idx[c] = lo[c];
        if (c < 0)
            return sum;
    }
}

static void check_success(const gts_signature *sig, const gts_field_desc *descs,
                          const gts_binding *out, const gts_bound_field *bound, const bool *real)
{
    for (int a = 0; a < 3; ++a)
        FUZZ_CHECK(out->domain[a] >= 1);
    for (int f = 0; f < sig->nfields; ++f) {
        const gts_field_spec *spec = &sig->fields[f];
        const gts_bound_field *b = &bound[f];
        const gts_field_desc *d = &descs[f];
        FUZZ_CHECK(!(spec->written && d->readonly));
        FUZZ_CHECK(gts_dtype_equal(d->dtype, spec->dtype));
        FUZZ_CHECK(b->ndim == spec->ndim);
        uint64_t offset = 0; /* unsigned: any wrap in the library shows as a mismatch */
        int64_t lo[4], hi[4];
        for (int c = 0; c < b->ndim; ++c) {
            FUZZ_CHECK(c == 0 || b->dims[c - 1] < b->dims[c]);
            FUZZ_CHECK(b->shape[c] == d->shape[b->axis[c]]);
            FUZZ_CHECK(b->strides[c] == d->strides[b->axis[c]]);
            offset += (uint64_t)b->origin[c] * (uint64_t)b->strides[c];
            if (b->dims[c] < 0) {
                lo[c] = b->origin[c] - spec->extent[c].lower;
                hi[c] = b->origin[c] + out->domain[gts_domain_axis(b->dims[c])] +
                        spec->extent[c].upper;
                FUZZ_CHECK(lo[c] >= 0 && hi[c] <= b->shape[c]);
            } else {
                FUZZ_CHECK(b->origin[c] >= 0 && b->origin[c] <= b->shape[c]);
                lo[c] = 0, hi[c] = b->shape[c];
            }
        }
        FUZZ_CHECK((uintptr_t)b->origin_data == (uintptr_t)d->data + (uintptr_t)offset);
        if (real[f])
            (void)read_box(b, lo, hi);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    static const char *const names[MAX_FIELDS] = {"out", "inp", "coeff"};
    gts_field_spec specs[MAX_FIELDS];
    int nfields = (int)fuzz_range(&in, 1, MAX_FIELDS);
    for (int f = 0; f < nfields; ++f)
        read_spec(&in, &specs[f], names[f]);
    gts_signature sig = {nfields, specs, GTS_DEVICE_CPU};
    FUZZ_CHECK(gts_signature_check(&sig, NULL) == GTS_OK);

    field_memory mem[MAX_FIELDS];
    gts_field_desc descs[MAX_FIELDS];
    bool real[MAX_FIELDS];
    for (int f = 0; f < nfields; ++f)
        read_field(&in, &specs[f], &mem[f], &descs[f], &real[f]);
    int64_t domain[3], all[3];
    const int64_t *origins[MAX_FIELDS] = {NULL, NULL, NULL};
    gts_bind_args args = {NULL, NULL, NULL};
    if (fuzz_bool(&in)) {
        for (int a = 0; a < 3; ++a)
            domain[a] = fuzz_bool(&in) ? fuzz_hostile(&in) : fuzz_range(&in, -1, MAX_EXTENT);
        args.domain = domain;
    }
    if (fuzz_bool(&in)) {
        for (int a = 0; a < 3; ++a)
            all[a] = fuzz_range(&in, -1, MAX_EXTENT);
        args.origin_all = all;
    }
    for (int f = 0; f < nfields; ++f)
        if (fuzz_bool(&in)) {
            for (int c = 0; c < specs[f].ndim; ++c)
                mem[f].call_origin[c] = fuzz_range(&in, -1, MAX_EXTENT);
            origins[f] = mem[f].call_origin;
            args.origins = origins;
        }

    gts_binding out;
    gts_bound_field bound[MAX_FIELDS];
    gts_error err = {0, ""};
    int rc = gts_bind(&sig, descs, &args, &out, bound, &err);
    if (rc == GTS_OK)
        check_success(&sig, descs, &out, bound, real);
    else
        FUZZ_CHECK(rc < 0 && err.code == rc && err.message[0] != '\0');
    /* an inferred domain never fails the bounds check (the upper margin is
     * the larger of the upper halo and the extent) */
    if (rc != GTS_OK && !args.domain)
        FUZZ_CHECK(!strstr(err.message, "exceeds the field's extent"));
    for (int f = 0; f < nfields; ++f)
        free(mem[f].block);
    return 0;
}
