/* Element types: bool, signed and unsigned integers of 1-8 bytes, floats of
 * 2-8 bytes and complex of 8 and 16 bytes, always in native byte order.
 * Conversions from and to NumPy typestrs, PEP 3118 format codes and DLPack
 * (code, bits, lanes) triples. */
#ifndef GTSTORE_DTYPE_H
#define GTSTORE_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gts_kind {
    GTS_KIND_BOOL = 'b',
    GTS_KIND_INT = 'i',
    GTS_KIND_UINT = 'u',
    GTS_KIND_FLOAT = 'f',
    GTS_KIND_COMPLEX = 'c'
} gts_kind;

typedef struct gts_dtype {
    char kind;        /* a gts_kind */
    uint8_t itemsize; /* bytes */
} gts_dtype;

/* Big enough for every typestr and format this library writes. */
#define GTS_DTYPE_TEXT_SIZE 8

/* Validates (kind, itemsize) and stores the dtype in `out`. */
int gts_dtype_make(char kind, int itemsize, gts_dtype *out, gts_error *err);

bool gts_dtype_equal(gts_dtype a, gts_dtype b);

/* NumPy typestr such as "<f8", "|b1", "<c16", "=i4". Only native byte order
 * is accepted ("|" only for one-byte types). */
int gts_dtype_from_typestr(const char *typestr, gts_dtype *out, gts_error *err);
/* Writes the typestr ("<f8", "|b1", ...) into `text`. */
void gts_dtype_typestr(gts_dtype dtype, char text[GTS_DTYPE_TEXT_SIZE]);

/* PEP 3118 / struct-module format such as "d", "<q", "=l", "Zd", "?". */
int gts_dtype_from_format(const char *format, gts_dtype *out, gts_error *err);
/* The native format code ("d", "l", "Zd", "?", "e", ...); a static string. */
const char *gts_dtype_format(gts_dtype dtype);

/* DLPack type codes (dlpack.h DLDataTypeCode). */
enum {
    GTS_DLPACK_INT = 0,
    GTS_DLPACK_UINT = 1,
    GTS_DLPACK_FLOAT = 2,
    GTS_DLPACK_BFLOAT = 4,
    GTS_DLPACK_COMPLEX = 5,
    GTS_DLPACK_BOOL = 6
};
int gts_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, gts_dtype *out,
                          gts_error *err);
void gts_dtype_to_dlpack(gts_dtype dtype, uint8_t *code, uint8_t *bits, uint16_t *lanes);

/* A scalar value as the caller has it, before it is stored in some dtype. */
typedef enum gts_scalar_kind {
    GTS_SCALAR_BOOL,
    GTS_SCALAR_INT,
    GTS_SCALAR_UINT,
    GTS_SCALAR_FLOAT,
    GTS_SCALAR_COMPLEX
} gts_scalar_kind;

typedef struct gts_scalar {
    gts_scalar_kind kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
        struct {
            double re, im;
        } c;
    } value;
} gts_scalar;

/* Stores `value` as one element of `dtype` at `item` (itemsize bytes).
 * Follows NumPy's scalar construction (np.int8(5), np.float16(0.1)):
 * floats are truncated towards zero into integers, doubles round to nearest
 * even into float32/float16. Refuses what NumPy would not store exactly or
 * silently garbles: integers out of range (GTS_ERANGE), NaN or infinity into
 * an integer (GTS_ERANGE), a complex with non-zero imaginary part into a
 * real dtype (GTS_ETYPE). */
int gts_scalar_store(gts_scalar value, gts_dtype dtype, void *item, gts_error *err);

/* NumPy's name for the dtype: "bool", "int32", "float16", "complex128". */
const char *gts_dtype_name(gts_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
