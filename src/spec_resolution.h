/* Spec resolution (spec.c) in two steps, for gts_storage_wrap, and the
 * halo check it shares with storage.c; not installed. */
#ifndef GTSTORE_SPEC_RESOLUTION_H
#define GTSTORE_SPEC_RESOLUTION_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/spec.h"

/* Each side of each dimension's halo >= 0, their sum at most the extent. */
int gts__halo_check(int ndim, const int64_t *shape, const gts_halo *halo, gts_error *err);

/* Where a resolved layout came from: wrapping compares a layout asked for
 * (given or the preset's) with the memory, and reads the memory's own where
 * nothing asked for one. */
typedef enum gts__layout_source {
    GTS__LAYOUT_GIVEN,
    GTS__LAYOUT_PRESET,
    GTS__LAYOUT_TEMPLATE,
    GTS__LAYOUT_FALLBACK
} gts__layout_source;

typedef struct gts__resolution {
    int64_t alignment;
    gts__layout_source layout_source;
    bool halo_from_template;
    gts_halo halo[GTS_MAX_NDIM]; /* the template's, until committed */
} gts__resolution;

/* Fills every parameter nobody gave (has_* false) from the preset, the
 * template and the fallbacks and checks them all, except what the geometry
 * checks. Only slots nobody gave are written (and GTS_DIM_NEXT /
 * GTS_LAYOUT_OUTER entries): the caller commits once everything passed,
 * so a failure changes no meaning. */
int gts__spec_resolve_parameters(gts_storage_spec *spec, gts__resolution *out, gts_error *err);
/* Marks everything given and drops the template and layout function. */
void gts__spec_commit(gts_storage_spec *spec, const gts__resolution *resolution);

#endif
