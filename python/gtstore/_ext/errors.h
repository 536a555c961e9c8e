/* Python exceptions for libgtstore errors (errors.c). */
#ifndef GTSTORE_EXT_ERRORS_H
#define GTSTORE_EXT_ERRORS_H

#include "ext.h"

extern PyObject *gtpy_UnknownPresetError;
extern PyObject *gtpy_NoSuchBufferError;

/* Raises the Python exception for a libgtstore error (ValueError for invalid
 * values, TypeError for types, OverflowError for values out of a dtype's
 * range, MemoryError, UnknownPresetError) and returns -1 / NULL. If a Python
 * exception is already set (a Python callback failed), it is kept. */
int gtpy_raise(const gts_error *err);
/* The same, with the message prefixed by "param: " unless it names it. */
int gtpy_raise_param(const char *param, const gts_error *err);
PyObject *gtpy_raise_null(const gts_error *err);

#endif
