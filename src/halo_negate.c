/* Negating packed values (halo_region.h): a vector component that a cube
 * edge turns travels negated. Floats flip their sign bit (exact, and -0.0
 * for 0.0, as NumPy's negative gives); complex values both parts';
 * integers take the two's complement (wrapping, as NumPy's does). */
#include <string.h>

#include "halo_region.h"

static void flip_sign_bits(unsigned char *data, int64_t count, int part)
{
    /* the sign bit is the top bit of the most significant byte */
    union {
        uint16_t u;
        unsigned char b[2];
    } probe = {.u = 1};
    int top = probe.b[0] == 1 ? part - 1 : 0;
    for (int64_t i = 0; i < count; ++i)
        data[i * part + top] ^= 0x80;
}

/* Unsigned arithmetic wraps as two's complement does, on any byte order. */
#define NEGATE_ITEMS(type)                                        \
    for (int64_t i = 0; i < count; ++i) {                         \
        type v;                                                   \
        memcpy(&v, data + i * (int64_t)sizeof v, sizeof v);       \
        v = (type)(0u - v);                                       \
        memcpy(data + i * (int64_t)sizeof v, &v, sizeof v);       \
    }

static void twos_complement(unsigned char *data, int64_t count, int itemsize)
{
    switch (itemsize) {
    case 1: NEGATE_ITEMS(uint8_t) break;
    case 2: NEGATE_ITEMS(uint16_t) break;
    case 4: NEGATE_ITEMS(uint32_t) break;
    default: NEGATE_ITEMS(uint64_t) break;
    }
}

void gts__halo_negate(void *data, int64_t bytes, gts_dtype dtype)
{
    unsigned char *d = data;
    int itemsize = dtype.itemsize;
    if (dtype.kind == GTS_KIND_FLOAT)
        flip_sign_bits(d, bytes / itemsize, itemsize);
    else if (dtype.kind == GTS_KIND_COMPLEX)
        flip_sign_bits(d, 2 * (bytes / itemsize), itemsize / 2);
    else if (dtype.kind == GTS_KIND_INT || dtype.kind == GTS_KIND_UINT)
        twos_complement(d, bytes / itemsize, itemsize);
    /* bool: a vector of truth values has no sign; refused by the plan */
}
