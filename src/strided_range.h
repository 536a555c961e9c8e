/* The bytes a strided array touches (geometry.c), for the devices that
 * move or check them and for copy batches; not installed. */
#ifndef GTSTORE_STRIDED_RANGE_H
#define GTSTORE_STRIDED_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"

/* The bytes a strided array touches, [element 0 + *low, element 0 +
 * *high). Arguments the kernels refuse before touching memory (ndim, shape,
 * itemsize, NULL strides) and arrays that touch nothing give *valid false,
 * and the caller hands them to the kernel, which says why. */
int gts__strided_range(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       bool *valid, int64_t *low, int64_t *high, gts_error *err);

#endif
