#include "gtstore/dtype.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NATIVE_ORDER '>'
#else
#define NATIVE_ORDER '<'
#endif

static bool valid_size(char kind, int itemsize)
{
    switch (kind) {
    case GTS_KIND_BOOL: return itemsize == 1;
    case GTS_KIND_INT:
    case GTS_KIND_UINT: return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8;
    case GTS_KIND_FLOAT: return itemsize == 2 || itemsize == 4 || itemsize == 8;
    case GTS_KIND_COMPLEX: return itemsize == 8 || itemsize == 16;
    default: return false;
    }
}

int gts_dtype_make(char kind, int itemsize, gts_dtype *out, gts_error *err)
{
    if (!valid_size(kind, itemsize))
        return gts_error_set(err, GTS_ETYPE,
                             "dtype: unsupported kind '%c' with itemsize %d (supported: bool, "
                             "int/uint 8-64, float 16/32/64, complex 64/128)",
                             kind ? kind : '?', itemsize);
    out->kind = kind;
    out->itemsize = (uint8_t)itemsize;
    return GTS_OK;
}

bool gts_dtype_equal(gts_dtype a, gts_dtype b)
{
    return a.kind == b.kind && a.itemsize == b.itemsize;
}

/* ---- NumPy typestr ---------------------------------------------------- */

int gts_dtype_from_typestr(const char *typestr, gts_dtype *out, gts_error *err)
{
    if (!typestr || strlen(typestr) < 3 || strlen(typestr) > 4)
        return gts_error_set(err, GTS_ETYPE, "typestr: '%s' is not a typestr such as '<f8'",
                             typestr ? typestr : "(null)");
    char order = typestr[0], kind = typestr[1];
    int itemsize = 0;
    for (const char *p = typestr + 2; *p; ++p) {
        if (*p < '0' || *p > '9')
            return gts_error_set(err, GTS_ETYPE, "typestr: '%s' has no valid itemsize", typestr);
        itemsize = itemsize * 10 + (*p - '0');
    }
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return gts_error_set(err, GTS_ETYPE, "typestr: '%s' has no byte order ('<', '>', '|', '=')",
                             typestr);
    if (kind == '?')
        kind = GTS_KIND_BOOL;
    int rc = gts_dtype_make(kind, itemsize, out, NULL);
    if (rc)
        return gts_error_set(err, GTS_ETYPE, "typestr: unsupported dtype '%s' (supported: bool, "
                             "int/uint 8-64, float 16/32/64, complex 64/128)", typestr);
    bool relevant = itemsize > 1;
    if (relevant && order == '|')
        return gts_error_set(err, GTS_ETYPE, "typestr: '%s' has no byte order for a %d-byte type",
                             typestr, itemsize);
    if (relevant && order != '=' && order != NATIVE_ORDER)
        return gts_error_set(err, GTS_ETYPE, "typestr: '%s' is not in native byte order ('%c')",
                             typestr, NATIVE_ORDER);
    return GTS_OK;
}

void gts_dtype_typestr(gts_dtype dtype, char text[GTS_DTYPE_TEXT_SIZE])
{
    text[0] = dtype.itemsize == 1 ? '|' : NATIVE_ORDER;
    text[1] = dtype.kind;
    if (dtype.itemsize >= 10) {
        text[2] = (char)('0' + dtype.itemsize / 10);
        text[3] = (char)('0' + dtype.itemsize % 10);
        text[4] = '\0';
    } else {
        text[2] = (char)('0' + dtype.itemsize);
        text[3] = '\0';
    }
}

/* ---- PEP 3118 format codes -------------------------------------------- */

int gts_dtype_from_format(const char *format, gts_dtype *out, gts_error *err)
{
    if (!format)
        format = "B"; /* PEP 3118: NULL means unsigned bytes */
    const char *p = format;
    bool native_sizes = true;
    char order = NATIVE_ORDER;
    switch (*p) {
    case '@': ++p; break;
    case '=': native_sizes = false; ++p; break;
    case '<': native_sizes = false; order = '<'; ++p; break;
    case '>':
    case '!': native_sizes = false; order = '>'; ++p; break;
    default: break;
    }
    char kind = 0;
    int itemsize = 0;
    bool complex = false;
    if (*p == 'Z') {
        complex = true;
        ++p;
    }
    switch (*p) {
    case '?': kind = GTS_KIND_BOOL; itemsize = 1; break;
    case 'b': kind = GTS_KIND_INT; itemsize = 1; break;
    case 'B': kind = GTS_KIND_UINT; itemsize = 1; break;
    case 'h': kind = GTS_KIND_INT; itemsize = 2; break;
    case 'H': kind = GTS_KIND_UINT; itemsize = 2; break;
    case 'i': kind = GTS_KIND_INT; itemsize = 4; break;
    case 'I': kind = GTS_KIND_UINT; itemsize = 4; break;
    case 'l': kind = GTS_KIND_INT; itemsize = native_sizes ? (int)sizeof(long) : 4; break;
    case 'L': kind = GTS_KIND_UINT; itemsize = native_sizes ? (int)sizeof(long) : 4; break;
    case 'q': kind = GTS_KIND_INT; itemsize = 8; break;
    case 'Q': kind = GTS_KIND_UINT; itemsize = 8; break;
    case 'n': kind = native_sizes ? GTS_KIND_INT : 0; itemsize = (int)sizeof(size_t); break;
    case 'N': kind = native_sizes ? GTS_KIND_UINT : 0; itemsize = (int)sizeof(size_t); break;
    case 'e': kind = GTS_KIND_FLOAT; itemsize = 2; break;
    case 'f': kind = GTS_KIND_FLOAT; itemsize = 4; break;
    case 'd': kind = GTS_KIND_FLOAT; itemsize = 8; break;
    default: break;
    }
    if (kind && *p)
        ++p;
    if (complex) { /* Zf and Zd; there is no complex half */
        if (kind == GTS_KIND_FLOAT && itemsize >= 4) {
            kind = GTS_KIND_COMPLEX;
            itemsize *= 2;
        } else {
            kind = 0;
        }
    }
    if (!kind || *p != '\0')
        return gts_error_set(err, GTS_ETYPE, "format: unsupported buffer format '%s' (supported: "
                             "?, b, B, h, H, i, I, l, L, q, Q, n, N, e, f, d, Zf, Zd)", format);
    if (itemsize > 1 && order != NATIVE_ORDER)
        return gts_error_set(err, GTS_ETYPE, "format: '%s' is not in native byte order", format);
    return gts_dtype_make(kind, itemsize, out, err);
}

const char *gts_dtype_format(gts_dtype dtype)
{
    bool long64 = sizeof(long) == 8;
    switch (dtype.kind) {
    case GTS_KIND_BOOL: return "?";
    case GTS_KIND_INT:
        switch (dtype.itemsize) {
        case 1: return "b";
        case 2: return "h";
        case 4: return "i";
        default: return long64 ? "l" : "q";
        }
    case GTS_KIND_UINT:
        switch (dtype.itemsize) {
        case 1: return "B";
        case 2: return "H";
        case 4: return "I";
        default: return long64 ? "L" : "Q";
        }
    case GTS_KIND_FLOAT: return dtype.itemsize == 2 ? "e" : dtype.itemsize == 4 ? "f" : "d";
    case GTS_KIND_COMPLEX: return dtype.itemsize == 8 ? "Zf" : "Zd";
    default: return "";
    }
}

/* ---- DLPack ------------------------------------------------------------ */

int gts_dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, gts_dtype *out,
                          gts_error *err)
{
    char kind = 0;
    switch (code) {
    case GTS_DLPACK_INT: kind = GTS_KIND_INT; break;
    case GTS_DLPACK_UINT: kind = GTS_KIND_UINT; break;
    case GTS_DLPACK_FLOAT: kind = GTS_KIND_FLOAT; break;
    case GTS_DLPACK_COMPLEX: kind = GTS_KIND_COMPLEX; break;
    case GTS_DLPACK_BOOL: kind = GTS_KIND_BOOL; break;
    default: break;
    }
    if (!kind || lanes != 1 || bits % 8 != 0 || !valid_size(kind, bits / 8))
        return gts_error_set(err, GTS_ETYPE,
                             "dlpack dtype: unsupported (code=%u, bits=%u, lanes=%u)",
                             (unsigned)code, (unsigned)bits, (unsigned)lanes);
    return gts_dtype_make(kind, bits / 8, out, err);
}

void gts_dtype_to_dlpack(gts_dtype dtype, uint8_t *code, uint8_t *bits, uint16_t *lanes)
{
    switch (dtype.kind) {
    case GTS_KIND_BOOL: *code = GTS_DLPACK_BOOL; break;
    case GTS_KIND_INT: *code = GTS_DLPACK_INT; break;
    case GTS_KIND_UINT: *code = GTS_DLPACK_UINT; break;
    case GTS_KIND_FLOAT: *code = GTS_DLPACK_FLOAT; break;
    default: *code = GTS_DLPACK_COMPLEX; break;
    }
    *bits = (uint8_t)(dtype.itemsize * 8);
    *lanes = 1;
}

const char *gts_dtype_name(gts_dtype dtype)
{
    static const char *const ints[] = {"int8", "int16", "int32", "int64"};
    static const char *const uints[] = {"uint8", "uint16", "uint32", "uint64"};
    int log2size = dtype.itemsize == 1 ? 0 : dtype.itemsize == 2 ? 1 : dtype.itemsize == 4 ? 2 : 3;
    switch (dtype.kind) {
    case GTS_KIND_BOOL: return "bool";
    case GTS_KIND_INT: return ints[log2size];
    case GTS_KIND_UINT: return uints[log2size];
    case GTS_KIND_FLOAT: return log2size == 1 ? "float16" : log2size == 2 ? "float32" : "float64";
    case GTS_KIND_COMPLEX: return dtype.itemsize == 8 ? "complex64" : "complex128";
    default: return "invalid";
    }
}

/* ---- scalars ----------------------------------------------------------- */

/* IEEE binary16 from binary64, rounding to nearest even in one step (going
 * through float would round twice). */
static uint16_t half_from_double(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 48) & 0x8000u);
    int exponent = (int)((bits >> 52) & 0x7ff);
    uint64_t mantissa = bits & ((UINT64_C(1) << 52) - 1);
    if (exponent == 0x7ff) /* inf, or NaN kept quiet and non-zero */
        return (uint16_t)(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 42) : 0));
    if (exponent == 0) /* zero or a double subnormal: far below half's range */
        return sign;
    int e = exponent - 1023;
    if (e > 15)
        return (uint16_t)(sign | 0x7c00u);
    uint64_t m = mantissa | (UINT64_C(1) << 52);
    /* normal halves keep 10 of 52 fraction bits; subnormals fewer */
    int shift = e >= -14 ? 42 : 28 - e;
    if (shift > 53)
        return sign;
    uint64_t q = m >> shift, rest = m & ((UINT64_C(1) << shift) - 1);
    uint64_t halfway = UINT64_C(1) << (shift - 1);
    if (e >= -14)
        q = ((uint64_t)(e + 15) << 10) | (q & 0x3ffu);
    if (rest > halfway || (rest == halfway && (q & 1)))
        ++q; /* a carry into the exponent is right, up to infinity */
    return (uint16_t)(sign | q);
}

static int store_real(double value, gts_dtype dtype, void *item)
{
    switch (dtype.itemsize) {
    case 2: {
        uint16_t h = half_from_double(value);
        memcpy(item, &h, 2);
        break;
    }
    case 4: {
        float f = (float)value;
        memcpy(item, &f, 4);
        break;
    }
    default: memcpy(item, &value, 8); break;
    }
    return GTS_OK;
}

static int store_complex(double re, double im, gts_dtype dtype, void *item)
{
    if (dtype.itemsize == 8) {
        float parts[2] = {(float)re, (float)im};
        memcpy(item, parts, sizeof parts);
    } else {
        double parts[2] = {re, im};
        memcpy(item, parts, sizeof parts);
    }
    return GTS_OK;
}

static void store_bits(uint64_t bits, int itemsize, void *item)
{
    switch (itemsize) {
    case 1: { uint8_t v = (uint8_t)bits; memcpy(item, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)bits; memcpy(item, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(item, &v, 4); break; }
    default: memcpy(item, &bits, 8); break;
    }
}

/* The shortest text that reads back as the same double ("-2.7", not
 * "-2.7000000000000002"). */
static void double_text(double value, char *text, size_t size)
{
    for (int precision = 1; precision <= 17; ++precision) {
        snprintf(text, size, "%.*g", precision, value);
        if (strtod(text, NULL) == value || value != value)
            return;
    }
}

static void scalar_text(gts_scalar s, char *text, size_t size)
{
    char re[32], im[32];
    switch (s.kind) {
    case GTS_SCALAR_BOOL: snprintf(text, size, "%s", s.value.b ? "True" : "False"); break;
    case GTS_SCALAR_INT: snprintf(text, size, "%lld", (long long)s.value.i); break;
    case GTS_SCALAR_UINT: snprintf(text, size, "%llu", (unsigned long long)s.value.u); break;
    case GTS_SCALAR_FLOAT: double_text(s.value.f, text, size); break;
    default:
        double_text(s.value.c.re, re, sizeof re);
        double_text(s.value.c.im, im, sizeof im);
        snprintf(text, size, "(%s%s%sj)", re, s.value.c.im < 0 || im[0] == '-' ? "" : "+", im);
        break;
    }
}

static int out_of_range(gts_scalar value, gts_dtype dtype, gts_error *err)
{
    char text[96];
    scalar_text(value, text, sizeof text);
    return gts_error_set(err, GTS_ERANGE, "value %s is out of bounds for %s", text,
                         gts_dtype_name(dtype));
}

/* Integer targets: the value as a signed or unsigned 64-bit quantity, with
 * the range of the dtype checked. */
static int store_integer(gts_scalar value, gts_dtype dtype, void *item, gts_error *err)
{
    int bits = dtype.itemsize * 8;
    bool is_signed = dtype.kind == GTS_KIND_INT;
    int64_t min = is_signed ? (bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1))) : 0;
    uint64_t max = is_signed ? (UINT64_C(1) << (bits - 1)) - 1
                             : (bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1);
    bool negative;
    uint64_t magnitude; /* |value| */
    double real;
    switch (value.kind) {
    case GTS_SCALAR_BOOL: negative = false; magnitude = value.value.b; break;
    case GTS_SCALAR_INT:
        negative = value.value.i < 0;
        magnitude = negative ? (uint64_t)0 - (uint64_t)value.value.i : (uint64_t)value.value.i;
        break;
    case GTS_SCALAR_UINT: negative = false; magnitude = value.value.u; break;
    case GTS_SCALAR_COMPLEX:
    case GTS_SCALAR_FLOAT:
        real = value.kind == GTS_SCALAR_FLOAT ? value.value.f : value.value.c.re;
        if (!isfinite(real))
            return out_of_range(value, dtype, err);
        real = trunc(real);
        negative = real < 0;
        if (fabs(real) >= 18446744073709551616.0) /* 2**64 */
            return out_of_range(value, dtype, err);
        magnitude = (uint64_t)fabs(real);
        break;
    default: return gts_error_set(err, GTS_EINVAL, "value: invalid scalar kind");
    }
    if (negative ? magnitude > (uint64_t)0 - (uint64_t)min : magnitude > max)
        return out_of_range(value, dtype, err);
    store_bits(negative ? (uint64_t)0 - magnitude : magnitude, dtype.itemsize, item);
    return GTS_OK;
}

int gts_scalar_store(gts_scalar value, gts_dtype dtype, void *item, gts_error *err)
{
    if (!valid_size(dtype.kind, dtype.itemsize))
        return gts_error_set(err, GTS_ETYPE, "dtype: invalid dtype (kind %d, itemsize %d)",
                             dtype.kind, dtype.itemsize);
    if (value.kind == GTS_SCALAR_COMPLEX && value.value.c.im != 0 &&
        dtype.kind != GTS_KIND_COMPLEX && dtype.kind != GTS_KIND_BOOL) {
        char text[96];
        scalar_text(value, text, sizeof text);
        return gts_error_set(err, GTS_ETYPE,
                             "value %s has an imaginary part; %s cannot hold it", text,
                             gts_dtype_name(dtype));
    }
    double re = 0, im = 0;
    switch (value.kind) {
    case GTS_SCALAR_BOOL: re = value.value.b; break;
    case GTS_SCALAR_INT: re = (double)value.value.i; break;
    case GTS_SCALAR_UINT: re = (double)value.value.u; break;
    case GTS_SCALAR_FLOAT: re = value.value.f; break;
    case GTS_SCALAR_COMPLEX: re = value.value.c.re; im = value.value.c.im; break;
    default: return gts_error_set(err, GTS_EINVAL, "value: invalid scalar kind");
    }
    switch (dtype.kind) {
    case GTS_KIND_BOOL: {
        uint8_t b = (re != 0 || im != 0 || isnan(re)) ? 1 : 0;
        memcpy(item, &b, 1);
        return GTS_OK;
    }
    case GTS_KIND_INT:
    case GTS_KIND_UINT: return store_integer(value, dtype, item, err);
    case GTS_KIND_FLOAT:
        if (dtype.itemsize == 4 && value.kind == GTS_SCALAR_INT) /* round once */
            return store_real((double)(float)value.value.i, dtype, item);
        if (dtype.itemsize == 4 && value.kind == GTS_SCALAR_UINT)
            return store_real((double)(float)value.value.u, dtype, item);
        return store_real(re, dtype, item);
    default: return store_complex(re, im, dtype, item);
    }
}
