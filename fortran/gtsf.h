/* The C side of the Fortran module gtstore (gtstore.F90): the functions its
 * bind(c) interfaces call. They convert Fortran's arguments (C descriptors,
 * Fortran indices, blank-padded names) and call the public C API; every
 * number of a storage is still decided by libgtstore. Each returns 0 or a
 * negative gts_status and explains a failure in `err`; none aborts.
 *
 * A field handle, as Fortran holds it, is a heap-allocated gts_storage that
 * owns one reference to its buffer (gtsf_release frees both). */
#ifndef GTSTORE_FORTRAN_GTSF_H
#define GTSTORE_FORTRAN_GTSF_H

#include <ISO_Fortran_binding.h>
#include <stdint.h>

#include "gtstore/gtstore.h"

/* The optional arguments of an allocation or a wrap, as gtstore.F90's
 * bind(c) type gtsf_options lays them out (keep the two in step). Names are
 * NUL-terminated; counts say how many entries the caller gave (0: none). */
#define GTSF_NAME_SIZE 64
typedef struct gtsf_options {
    char preset[GTSF_NAME_SIZE]; /* "": no preset */
    char dims[GTSF_NAME_SIZE];   /* "": the default labels */
    int32_t nhalo_lower, nhalo_upper, naligned_index;
    int32_t device; /* GTS_DEVICE_CPU or GTS_DEVICE_GPU; -1: the preset's (or the CPU) */
    int32_t readonly;
    int64_t alignment; /* bytes; 0: the preset's */
    int64_t halo_lower[CFI_MAX_RANK];
    int64_t halo_upper[CFI_MAX_RANK];
    int64_t aligned_index[CFI_MAX_RANK]; /* Fortran indices (the first domain point is 1) */
    char invalid[2 * GTSF_NAME_SIZE]; /* what the Fortran side found wrong; "": nothing */
} gtsf_options;

/* descriptor.c: C descriptors and storages */
int gtsf_dtype_of(const CFI_cdesc_t *desc, gts_dtype *out, gts_error *err);
int gtsf_set_pointer(const gts_storage *storage, CFI_cdesc_t *pointer, gts_error *err);
int gtsf_wrap(const CFI_cdesc_t *array, const gtsf_options *options, gts_storage **out,
              gts_error *err);

/* options.c: a spec of the shape and dtype, with the options */
int gtsf_spec_make(const gtsf_options *options, int ndim, const int64_t *shape, gts_dtype dtype,
                   gts_storage_spec *spec, gts_preset *preset, bool *has_preset,
                   gts_error *err);

/* field.c: handles */
int gtsf_allocate(CFI_cdesc_t *pointer, const int64_t *shape, int32_t nshape,
                  const gtsf_options *options, gts_storage **out, gts_error *err);
void gtsf_release(gts_storage *field);
int gtsf_view(const gts_storage *field, gts_storage **out, gts_error *err);
int gtsf_domain(gts_storage *view, gts_error *err);
int gtsf_slice(gts_storage *view, int32_t dim, int64_t first, int64_t last, int64_t step,
               gts_error *err);
int gtsf_pointer(const gts_storage *field, CFI_cdesc_t *pointer, int32_t domain,
                 gts_error *err);
int gtsf_shape(const gts_storage *field, int64_t *shape, int64_t *halo_lower,
               int64_t *halo_upper, int32_t *ndim, gts_error *err);

/* gpu.c: device memory and the sync of mirrored storages */
int gtsf_sync(const gts_storage *field, int32_t side, gts_error *err);
int gtsf_prepare_write(const gts_storage *field, int32_t side, gts_error *err);
int gtsf_sync_state(const gts_storage *field, int32_t *state, gts_error *err);
int gtsf_device_pointer(const gts_storage *field, void **out, gts_error *err);

#endif
