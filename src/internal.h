/* Helpers shared between the library's source files; not installed. */
#ifndef GTSTORE_INTERNAL_H
#define GTSTORE_INTERNAL_H

#include <stdint.h>

/* Sets `size` bytes to zero, in parallel when large. */
void gts__zero(void *data, int64_t size);

#endif
