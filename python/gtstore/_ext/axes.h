/* Axes given to a Storage method (axes.c): each an integer (negative ones
 * count from the end) or the label of one of the storage's dims ("K",
 * "0"). The one place where Python axis arguments become axis numbers, for
 * the reductions, cumsum/cumprod, sort/argsort, squeeze and transpose;
 * labels are found by libgtstore (gts_dims_axis). */
#ifndef GTSTORE_EXT_AXES_H
#define GTSTORE_EXT_AXES_H

#include "ext.h"

/* One axis into [0, ndim). An integer out of range is NumPy's AxisError, a
 * label that is not one of the dims a ValueError, anything else a
 * TypeError; each names `param` (and `whole`, the sequence the axis came
 * from, where not NULL). */
int gtpy_axis(PyObject *obj, const gts_storage *g, const char *param, PyObject *whole, int *axis);

/* A sequence of axes (a tuple or a list; a str is one label), none
 * repeated (AxisError naming the sequence): `*n` of them into `axes`. */
int gtpy_axes(PyObject *obj, const gts_storage *g, const char *param, int *n, int *axes);

/* NumPy's axis= argument with labels resolved: None stays None, one axis
 * becomes an int and a tuple a tuple of ints (a new reference), which NumPy
 * takes. */
PyObject *gtpy_axis_argument(PyObject *obj, const gts_storage *g, const char *param);

#endif
