/* Dtype parsers: NumPy typestrs, PEP 3118 formats, DLPack (code, bits,
 * lanes) triples, (kind, itemsize) pairs, and storing scalars.
 *
 * Checks: a successful parse gives a valid dtype and round-trips (the
 * typestr, format or triple the library writes for it parses back to the
 * same dtype); a failure returns a negative code with a message; an integer
 * or bool scalar that is stored reads back unchanged. */
#include <math.h>

#include "fuzz_input.h"
#include "gtstore/dtype.h"

static void check_valid(gts_dtype dtype)
{
    gts_dtype again;
    FUZZ_CHECK(gts_dtype_make(dtype.kind, dtype.itemsize, &again, NULL) == GTS_OK);
    FUZZ_CHECK(gts_dtype_equal(dtype, again));
}

/* The text the library writes for `dtype` parses back to it. */
static void check_round_trip(gts_dtype dtype)
{
    gts_error err;
    gts_dtype back;
    char typestr[GTS_DTYPE_TEXT_SIZE];
    gts_dtype_typestr(dtype, typestr);
    FUZZ_CHECK(memchr(typestr, '\0', sizeof typestr) != NULL);
    FUZZ_CHECK(gts_dtype_from_typestr(typestr, &back, fuzz_error(&err)) == GTS_OK);
    FUZZ_CHECK(gts_dtype_equal(back, dtype));
    FUZZ_CHECK(gts_dtype_from_format(gts_dtype_format(dtype), &back, &err) == GTS_OK);
    FUZZ_CHECK(gts_dtype_equal(back, dtype));
    uint8_t code, bits;
    uint16_t lanes;
    gts_dtype_to_dlpack(dtype, &code, &bits, &lanes);
    FUZZ_CHECK(gts_dtype_from_dlpack(code, bits, lanes, &back, &err) == GTS_OK);
    FUZZ_CHECK(gts_dtype_equal(back, dtype));
    FUZZ_CHECK(strcmp(gts_dtype_name(dtype), "invalid") != 0);
}

static void parse_text(const char *text)
{
    gts_error err;
    gts_dtype dtype;
    int rc = gts_dtype_from_typestr(text, &dtype, fuzz_error(&err));
    if (rc == GTS_OK) {
        check_valid(dtype);
        check_round_trip(dtype);
    } else {
        fuzz_check_error(rc, &err);
    }
    rc = gts_dtype_from_format(text, &dtype, fuzz_error(&err));
    if (rc == GTS_OK) {
        check_valid(dtype);
        check_round_trip(dtype);
    } else {
        fuzz_check_error(rc, &err);
    }
}

static void parse_dlpack(fuzz_input *in)
{
    gts_error err;
    gts_dtype dtype;
    uint8_t code = fuzz_u8(in), bits = fuzz_u8(in);
    uint16_t lanes = (uint16_t)fuzz_bits(in, 2);
    int rc = gts_dtype_from_dlpack(code, bits, lanes, &dtype, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    check_valid(dtype);
    uint8_t code2, bits2;
    uint16_t lanes2;
    gts_dtype_to_dlpack(dtype, &code2, &bits2, &lanes2);
    FUZZ_CHECK(code2 == code && bits2 == bits && lanes2 == lanes);
}

/* A scalar of any kind into a dtype of any kind; integers read back. */
static void store_scalar(fuzz_input *in)
{
    gts_error err;
    gts_dtype dtype;
    char kind = (char)fuzz_u8(in);
    int itemsize = (int)(int8_t)fuzz_u8(in);
    int rc = gts_dtype_make(kind, itemsize, &dtype, fuzz_error(&err));
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    check_valid(dtype);
    check_round_trip(dtype);
    gts_scalar value = {.kind = (gts_scalar_kind)fuzz_range(in, 0, 4)};
    uint64_t bits = fuzz_bits(in, 8);
    switch (value.kind) {
    case GTS_SCALAR_BOOL: value.value.b = bits & 1; break;
    case GTS_SCALAR_INT: value.value.i = (int64_t)bits; break;
    case GTS_SCALAR_UINT: value.value.u = bits; break;
    case GTS_SCALAR_FLOAT: memcpy(&value.value.f, &bits, sizeof bits); break;
    case GTS_SCALAR_COMPLEX:
        memcpy(&value.value.c.re, &bits, sizeof bits);
        bits = fuzz_bits(in, 8);
        memcpy(&value.value.c.im, &bits, sizeof bits);
        break;
    }
    unsigned char item[17];
    item[16] = 0xa5; /* a guard byte: nothing beyond the itemsize is written */
    rc = gts_scalar_store(value, dtype, item, fuzz_error(&err));
    FUZZ_CHECK(item[16] == 0xa5);
    if (rc != GTS_OK) {
        fuzz_check_error(rc, &err);
        return;
    }
    /* integers stored into integer dtypes keep their value */
    bool is_int = value.kind == GTS_SCALAR_INT || value.kind == GTS_SCALAR_UINT;
    if (is_int && (dtype.kind == GTS_KIND_INT || dtype.kind == GTS_KIND_UINT)) {
        uint64_t raw = 0;
        memcpy(&raw, item, dtype.itemsize); /* little-endian */
        int shift = 64 - 8 * dtype.itemsize;
        if (dtype.kind == GTS_KIND_INT && shift > 0) /* sign-extend */
            raw = (uint64_t)((int64_t)(raw << shift) >> shift);
        FUZZ_CHECK(raw == (value.kind == GTS_SCALAR_INT ? (uint64_t)value.value.i
                                                         : value.value.u));
        if (dtype.kind == GTS_KIND_UINT)
            FUZZ_CHECK(value.kind == GTS_SCALAR_UINT || value.value.i >= 0);
        else
            FUZZ_CHECK(value.kind == GTS_SCALAR_INT || value.value.u <= INT64_MAX);
    }
    if (dtype.kind == GTS_KIND_BOOL)
        FUZZ_CHECK(item[0] == 0 || item[0] == 1);
    if (value.kind == GTS_SCALAR_FLOAT && dtype.kind == GTS_KIND_FLOAT && dtype.itemsize == 8) {
        double back;
        memcpy(&back, item, sizeof back);
        FUZZ_CHECK(back == value.value.f || (isnan(back) && isnan(value.value.f)));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fuzz_begin(data, size);
    char text[16];
    /* the same bytes as a string, a DLPack triple and a scalar store */
    fuzz_input copy = in;
    parse_text(fuzz_string(&copy, text, sizeof text));
    parse_dlpack(&in);
    store_scalar(&in);
    parse_text(fuzz_string(&in, text, sizeof text));
    return 0;
}
