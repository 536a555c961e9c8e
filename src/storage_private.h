/* The check of a storage a C caller describes (storage.c); not
 * installed. */
#ifndef GTSTORE_STORAGE_PRIVATE_H
#define GTSTORE_STORAGE_PRIVATE_H

#include <stdbool.h>

#include "gtstore/storage.h"

/* What every storage the library makes satisfies, checked for a storage a
 * C caller describes (a public value struct): valid unrepeated dims, a
 * dtype gts_dtype_make accepts (else its GTS_ETYPE), a layout that is a
 * permutation, extents >= 0, halo and aligned point inside them; with
 * `memory`, also a buffer, and every element inside it. `who` names it in
 * the message. */
int gts__storage_check(const gts_storage *s, const char *who, bool memory, gts_error *err);

#endif
