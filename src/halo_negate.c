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

static void twos_complement(unsigned char *data, int64_t count, int itemsize)
{
    for (int64_t i = 0; i < count; ++i) {
        unsigned char *item = data + i * itemsize;
        switch (itemsize) {
        case 1: { uint8_t v; memcpy(&v, item, 1); v = (uint8_t)(0u - v); memcpy(item, &v, 1); break; }
        case 2: { uint16_t v; memcpy(&v, item, 2); v = (uint16_t)(0u - v); memcpy(item, &v, 2); break; }
        case 4: { uint32_t v; memcpy(&v, item, 4); v = 0u - v; memcpy(item, &v, 4); break; }
        default: { uint64_t v; memcpy(&v, item, 8); v = 0u - v; memcpy(item, &v, 8); break; }
        }
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
