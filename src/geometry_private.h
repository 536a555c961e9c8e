/* The rule on an alignment (geometry.c), shared by the allocation
 * geometry, the spec's resolution, a view's alignment and the signature
 * check, so that a storage and a stencil's annotation accept the same
 * alignments; not installed. */
#ifndef GTSTORE_GEOMETRY_PRIVATE_H
#define GTSTORE_GEOMETRY_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"

/* Whether `alignment` bytes suit elements of `itemsize` bytes (> 0):
 * positive, and a multiple or a divisor of the itemsize. */
bool gts__alignment_suits(int64_t alignment, int64_t itemsize);

/* GTS_OK where it suits, else GTS_EINVAL saying why ("3 bytes and the
 * itemsize (8 bytes) must divide one another", "0 bytes is not
 * positive"): the caller puts the parameter's name before it. */
int gts__alignment_check(int64_t alignment, int64_t itemsize, gts_error *err);

#endif
