/* Shapes and dims written as Python writes the tuples the Python package
 * gives for them ("(3, 4)", "(5,)", "('I', 'J', '0')"), so that a message
 * composed here reads the same from C and from Python. Internal. */
#ifndef GTSTORE_TUPLE_TEXT_H
#define GTSTORE_TUPLE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "gtstore/layout.h"

/* Large enough for GTS_MAX_NDIM entries of either kind. */
#define GTS__TUPLE_TEXT_SIZE (GTS_MAX_NDIM * 22 + 4)

void gts__shape_text(int n, const int64_t *values, char text[GTS__TUPLE_TEXT_SIZE]);
void gts__dims_text(int n, const gts_dim *dims, char text[GTS__TUPLE_TEXT_SIZE]);

#endif
