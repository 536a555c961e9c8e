/* dtypes: typestr, PEP 3118 and DLPack conversions, names, and storing
 * scalars bit-exactly (NumPy's scalar construction rules). Also the two
 * helpers of error.h, which every other test relies on. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gtstore/dtype.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NATIVE '>'
#define FOREIGN '<'
#else
#define NATIVE '<'
#define FOREIGN '>'
#endif

static gts_dtype dtype(char kind, int itemsize)
{
    gts_dtype dt = {0, 0};
    CHECK_OK(gts_dtype_make(kind, itemsize, &dt, ERR));
    return dt;
}

/* ---- error.h ----------------------------------------------------------- */

static void test_errors(void)
{
    gts_error err;
    CHECK_INT_EQ(gts_error_set(&err, GTS_ERANGE, "value %d of %s", 7, "x"), GTS_ERANGE);
    CHECK_INT_EQ(err.code, GTS_ERANGE);
    CHECK_STR_EQ(err.message, "value 7 of x");
    CHECK_INT_EQ(gts_error_set(NULL, GTS_EINVAL, "ignored"), GTS_EINVAL); /* err is optional */
    /* a message longer than the buffer is cut, never overflows */
    char long_text[2 * GTS_ERROR_MESSAGE_SIZE];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    gts_error_set(&err, GTS_EINVAL, "%s", long_text);
    CHECK_INT_EQ(strlen(err.message), GTS_ERROR_MESSAGE_SIZE - 1);

    CHECK_STR_EQ(gts_status_name(GTS_OK), "GTS_OK");
    CHECK_STR_EQ(gts_status_name(GTS_EINVAL), "GTS_EINVAL");
    CHECK_STR_EQ(gts_status_name(GTS_ETYPE), "GTS_ETYPE");
    CHECK_STR_EQ(gts_status_name(GTS_ENOTFOUND), "GTS_ENOTFOUND");
    CHECK_STR_EQ(gts_status_name(GTS_EOVERFLOW), "GTS_EOVERFLOW");
    CHECK_STR_EQ(gts_status_name(GTS_ENOMEM), "GTS_ENOMEM");
    CHECK_STR_EQ(gts_status_name(GTS_ERANGE), "GTS_ERANGE");
    CHECK_STR_EQ(gts_status_name(GTS_EEXIST), "GTS_EEXIST");
    CHECK_STR_EQ(gts_status_name(-1000), "unknown status");
}

/* ---- the supported dtypes, each through every representation ---------- */

typedef struct dtype_row {
    char kind;
    int itemsize;
    const char *type_suffix; /* typestr without the byte order character */
    const char *format;
    const char *name;
    uint8_t dlpack_code;
} dtype_row;

static void check_row(const dtype_row *row)
{
    gts_dtype dt = dtype(row->kind, row->itemsize), back = {0, 0};
    char expected[GTS_DTYPE_TEXT_SIZE], text[GTS_DTYPE_TEXT_SIZE];
    snprintf(expected, sizeof expected, "%c%s", row->itemsize == 1 ? '|' : NATIVE,
             row->type_suffix);

    gts_dtype_typestr(dt, text);
    CHECK_STR_EQ(text, expected);
    CHECK_OK(gts_dtype_from_typestr(expected, &back, ERR));
    CHECK(gts_dtype_equal(back, dt));

    CHECK_STR_EQ(gts_dtype_format(dt), row->format);
    back = (gts_dtype){0, 0};
    CHECK_OK(gts_dtype_from_format(row->format, &back, ERR));
    CHECK(gts_dtype_equal(back, dt));

    CHECK_STR_EQ(gts_dtype_name(dt), row->name);

    uint8_t code = 99, bits = 0;
    uint16_t lanes = 0;
    gts_dtype_to_dlpack(dt, &code, &bits, &lanes);
    CHECK_INT_EQ(code, row->dlpack_code);
    CHECK_INT_EQ(bits, 8 * row->itemsize);
    CHECK_INT_EQ(lanes, 1);
    back = (gts_dtype){0, 0};
    CHECK_OK(gts_dtype_from_dlpack(code, bits, lanes, &back, ERR));
    CHECK(gts_dtype_equal(back, dt));
}

static void test_supported(void)
{
    /* 8-byte integers are "l" where long has 8 bytes (LP64), else "q" */
    const char *i8 = sizeof(long) == 8 ? "l" : "q", *u8 = sizeof(long) == 8 ? "L" : "Q";
    const dtype_row rows[] = {
        {'b', 1, "b1", "?", "bool", GTS_DLPACK_BOOL},
        {'i', 1, "i1", "b", "int8", GTS_DLPACK_INT},
        {'i', 2, "i2", "h", "int16", GTS_DLPACK_INT},
        {'i', 4, "i4", "i", "int32", GTS_DLPACK_INT},
        {'i', 8, "i8", i8, "int64", GTS_DLPACK_INT},
        {'u', 1, "u1", "B", "uint8", GTS_DLPACK_UINT},
        {'u', 2, "u2", "H", "uint16", GTS_DLPACK_UINT},
        {'u', 4, "u4", "I", "uint32", GTS_DLPACK_UINT},
        {'u', 8, "u8", u8, "uint64", GTS_DLPACK_UINT},
        {'f', 2, "f2", "e", "float16", GTS_DLPACK_FLOAT},
        {'f', 4, "f4", "f", "float32", GTS_DLPACK_FLOAT},
        {'f', 8, "f8", "d", "float64", GTS_DLPACK_FLOAT},
        {'c', 8, "c8", "Zf", "complex64", GTS_DLPACK_COMPLEX},
        {'c', 16, "c16", "Zd", "complex128", GTS_DLPACK_COMPLEX},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i)
        check_row(&rows[i]);

    CHECK(!gts_dtype_equal(dtype('i', 4), dtype('u', 4)));
    CHECK(!gts_dtype_equal(dtype('f', 4), dtype('f', 8)));
}

static void test_make_rejects(void)
{
    gts_dtype dt;
    CHECK_FAILS(gts_dtype_make('f', 16, &dt, ERR), GTS_ETYPE, "itemsize 16");
    CHECK_FAILS(gts_dtype_make('b', 2, &dt, ERR), GTS_ETYPE, "itemsize 2");
    CHECK_FAILS(gts_dtype_make('c', 4, &dt, ERR), GTS_ETYPE, "itemsize 4");
    CHECK_FAILS(gts_dtype_make('i', 3, &dt, ERR), GTS_ETYPE, "itemsize 3");
    CHECK_FAILS(gts_dtype_make('V', 8, &dt, ERR), GTS_ETYPE, "'V'");
}

/* ---- typestr and format parsing ---------------------------------------- */

typedef struct parse_row {
    const char *text;
    char kind;
    int itemsize;
} parse_row;

static void test_typestr(void)
{
    const char native_f8[] = {NATIVE, 'f', '8', '\0'}, native_c16[] = {NATIVE, 'c', '1', '6', '\0'};
    const char native_f2[] = {NATIVE, 'f', '2', '\0'};
    const parse_row accepted[] = {
        {native_f8, 'f', 8}, {"|b1", 'b', 1}, {native_c16, 'c', 16},
        {native_f2, 'f', 2}, {"|i1", 'i', 1}, {"=i4", 'i', 4}, /* '=' is native */
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; ++i) {
        gts_dtype dt = {0, 0};
        CHECK_OK(gts_dtype_from_typestr(accepted[i].text, &dt, ERR));
        CHECK(gts_dtype_equal(dt, dtype(accepted[i].kind, accepted[i].itemsize)));
    }

    const char foreign_f8[] = {FOREIGN, 'f', '8', '\0'};
    const char *rejected[] = {foreign_f8, "|f8", "<f16", "<V8", "<f", "f8", "<fx", "", "<f8888"};
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; ++i) {
        gts_dtype dt;
        /* every message quotes the typestr it refuses */
        char quoted[16];
        snprintf(quoted, sizeof quoted, "'%s'", rejected[i]);
        CHECK_FAILS(gts_dtype_from_typestr(rejected[i], &dt, ERR), GTS_ETYPE, quoted);
    }
    gts_dtype dt;
    CHECK_FAILS(gts_dtype_from_typestr(NULL, &dt, ERR), GTS_ETYPE, "typestr");
}

static void test_format(void)
{
    const parse_row accepted[] = {
        {"d", 'f', 8},  {"@d", 'f', 8}, {"<q", 'i', 8},  {"=l", 'i', 4}, /* standard size */
        {"l", 'i', (int)sizeof(long)},  {"L", 'u', (int)sizeof(long)},
        {"n", 'i', (int)sizeof(size_t)}, {"Zd", 'c', 16}, {"Zf", 'c', 8},
        {"?", 'b', 1},  {"e", 'f', 2},  {"B", 'u', 1},   {"=H", 'u', 2},
        {">b", 'i', 1}, /* byte order does not matter for one byte */
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; ++i) {
        gts_dtype dt = {0, 0};
        CHECK_OK(gts_dtype_from_format(accepted[i].text, &dt, ERR));
        CHECK(gts_dtype_equal(dt, dtype(accepted[i].kind, accepted[i].itemsize)));
    }
    gts_dtype dt = {0, 0};
    CHECK_OK(gts_dtype_from_format(NULL, &dt, ERR)); /* PEP 3118: NULL means "B" */
    CHECK(gts_dtype_equal(dt, dtype('u', 1)));

    const char foreign_d[] = {FOREIGN, 'd', '\0'};
    const char *rejected[] = {"O", "g", "Ze", "dd", "", "Z", "@", "=n", "x", "2d", foreign_d};
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; ++i) {
        char quoted[16];
        snprintf(quoted, sizeof quoted, "'%s'", rejected[i]);
        CHECK_FAILS(gts_dtype_from_format(rejected[i], &dt, ERR), GTS_ETYPE, quoted);
    }
}

static void test_dlpack_rejects(void)
{
    const struct {
        uint8_t code, bits;
        uint16_t lanes;
        const char *message;
    } rejected[] = {
        {GTS_DLPACK_FLOAT, 32, 4, "lanes=4"},  {GTS_DLPACK_FLOAT, 32, 0, "lanes=0"},
        {GTS_DLPACK_BFLOAT, 16, 1, "code=4"},  {GTS_DLPACK_FLOAT, 12, 1, "bits=12"},
        {GTS_DLPACK_INT, 128, 1, "bits=128"},  {GTS_DLPACK_BOOL, 16, 1, "bits=16"},
        {GTS_DLPACK_COMPLEX, 32, 1, "bits=32"}, {3, 64, 1, "code=3"}, /* kDLOpaqueHandle */
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; ++i) {
        gts_dtype dt;
        CHECK_FAILS(gts_dtype_from_dlpack(rejected[i].code, rejected[i].bits, rejected[i].lanes,
                                          &dt, ERR),
                    GTS_ETYPE, rejected[i].message);
    }
}

/* ---- scalars ----------------------------------------------------------- */

static gts_scalar b_(bool v) { return (gts_scalar){GTS_SCALAR_BOOL, {.b = v}}; }
static gts_scalar i_(int64_t v) { return (gts_scalar){GTS_SCALAR_INT, {.i = v}}; }
static gts_scalar u_(uint64_t v) { return (gts_scalar){GTS_SCALAR_UINT, {.u = v}}; }
static gts_scalar f_(double v) { return (gts_scalar){GTS_SCALAR_FLOAT, {.f = v}}; }
static gts_scalar c_(double re, double im)
{
    gts_scalar s = {GTS_SCALAR_COMPLEX, {.f = 0}};
    s.value.c.re = re;
    s.value.c.im = im;
    return s;
}

/* Reads back `size` bytes as an unsigned integer of that size. */
static uint64_t load_bits(const unsigned char *item, int size)
{
    uint8_t u1;
    uint16_t u2;
    uint32_t u4;
    uint64_t u8;
    switch (size) {
    case 1: memcpy(&u1, item, 1); return u1;
    case 2: memcpy(&u2, item, 2); return u2;
    case 4: memcpy(&u4, item, 4); return u4;
    default: memcpy(&u8, item, 8); return u8;
    }
}

/* Stores the value and compares the element's bits; the bytes after the
 * element must stay untouched. */
static void check_store(int line, gts_scalar value, char kind, int itemsize, uint64_t expected)
{
    unsigned char item[24];
    memset(item, 0xa5, sizeof item);
    gts_dtype dt = dtype(kind, itemsize);
    check_clear_error();
    if (!check_ok(gts_scalar_store(value, dt, item, ERR), __FILE__, line, "gts_scalar_store"))
        return;
    uint64_t bits = load_bits(item, itemsize);
    if (bits != expected)
        fprintf(stderr, "%s:%d: stored 0x%llx, expected 0x%llx into %s\n", __FILE__, line,
                (unsigned long long)bits, (unsigned long long)expected, gts_dtype_name(dt));
    check_report(bits == expected, __FILE__, line, "stored bits");
    bool tail_kept = true;
    for (size_t i = (size_t)itemsize; i < sizeof item; ++i)
        tail_kept = tail_kept && item[i] == 0xa5;
    check_report(tail_kept, __FILE__, line, "bytes after the element untouched");
}
#define STORE(value, kind, itemsize, expected) \
    check_store(__LINE__, value, kind, itemsize, expected)

static uint64_t bits_f4(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t bits_f8(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static void test_store_integers(void)
{
    STORE(i_(-128), 'i', 1, 0x80);
    STORE(i_(127), 'i', 1, 0x7f);
    STORE(u_(255), 'u', 1, 0xff);
    STORE(i_(-1), 'i', 2, 0xffff);
    STORE(i_(-2), 'i', 4, 0xfffffffe);
    STORE(i_(INT64_MIN), 'i', 8, UINT64_C(0x8000000000000000));
    STORE(i_(INT64_MAX), 'i', 8, UINT64_C(0x7fffffffffffffff));
    STORE(u_(UINT64_MAX), 'u', 8, UINT64_MAX);
    STORE(u_(UINT32_MAX), 'u', 4, UINT32_MAX);
    STORE(b_(true), 'i', 1, 1);
    /* floats truncate towards zero */
    STORE(f_(3.7), 'i', 4, 3);
    STORE(f_(-3.7), 'i', 4, 0xfffffffd);
    STORE(f_(-0.5), 'u', 1, 0);
    STORE(f_(-9223372036854775808.0), 'i', 8, UINT64_C(0x8000000000000000));
    STORE(f_(1e19), 'u', 8, UINT64_C(10000000000000000000));
    STORE(c_(3.9, 0), 'i', 2, 3);
}

static void test_store_range_errors(void)
{
    unsigned char item[16];
    const struct {
        gts_scalar value;
        char kind;
        int itemsize;
        const char *message;
    } rejected[] = {
        {i_(300), 'i', 1, "300"},
        {i_(-129), 'i', 1, "-129"},
        {i_(256), 'u', 1, "256"},
        {i_(-1), 'u', 1, "-1"},
        {i_(-1), 'u', 8, "-1"},
        {u_(UINT64_MAX), 'i', 8, "18446744073709551615"},
        {i_(65536), 'u', 2, "65536"},
        {f_(NAN), 'i', 4, "nan"},
        {f_(INFINITY), 'i', 8, "inf"},
        {f_(-INFINITY), 'u', 1, "-inf"},
        {f_(9223372036854775808.0), 'i', 8, "9.223372036854776e+18"}, /* 2**63 */
        {f_(18446744073709551616.0), 'u', 8, "1.8446744073709552e+19"}, /* 2**64 */
        {f_(128.5), 'i', 1, "128.5"},
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; ++i) {
        gts_dtype dt = dtype(rejected[i].kind, rejected[i].itemsize);
        CHECK_FAILS(gts_scalar_store(rejected[i].value, dt, item, ERR), GTS_ERANGE,
                    rejected[i].message);
        CHECK(strstr(check_error.message, gts_dtype_name(dt)) != NULL);
    }
    /* an imaginary part cannot go into a real dtype */
    CHECK_FAILS(gts_scalar_store(c_(2.0, 1.0), dtype('f', 8), item, ERR), GTS_ETYPE, "(2+1j)");
    CHECK_FAILS(gts_scalar_store(c_(2.0, 1.0), dtype('i', 4), item, ERR), GTS_ETYPE, "int32");
    /* a dtype that gts_dtype_make would not have made */
    gts_dtype bad = {'f', 3};
    CHECK_FAILS(gts_scalar_store(f_(1.0), bad, item, ERR), GTS_ETYPE, "itemsize 3");
}

/* float16: round to nearest even in one step from the double. */
static void test_store_float16(void)
{
    STORE(f_(1.0), 'f', 2, 0x3c00);
    STORE(f_(-2.0), 'f', 2, 0xc000);
    STORE(f_(65504.0), 'f', 2, 0x7bff);              /* largest finite */
    STORE(f_(-65504.0), 'f', 2, 0xfbff);
    STORE(f_(65519.99), 'f', 2, 0x7bff);             /* just below the halfway point */
    STORE(f_(65520.0), 'f', 2, 0x7c00);              /* halfway to 2**16: ties to inf */
    STORE(f_(1e10), 'f', 2, 0x7c00);
    STORE(f_(-INFINITY), 'f', 2, 0xfc00);
    STORE(f_(0.1), 'f', 2, 0x2e66);
    STORE(f_(ldexp(1, -14)), 'f', 2, 0x0400);        /* smallest normal */
    STORE(f_(ldexp(1, -24)), 'f', 2, 0x0001);        /* smallest subnormal */
    STORE(f_(ldexp(1, -25)), 'f', 2, 0x0000);        /* halfway to it: tie to even 0 */
    STORE(f_(3 * ldexp(1, -26)), 'f', 2, 0x0001);    /* above halfway */
    STORE(f_(3 * ldexp(1, -25)), 'f', 2, 0x0002);    /* 1.5 subnormal steps: tie to even 2 */
    STORE(f_(ldexp(1, -14) - ldexp(1, -26)), 'f', 2, 0x0400); /* rounds up into the normals */
    STORE(f_(ldexp(1, -30)), 'f', 2, 0x0000);
    STORE(f_(1e-310), 'f', 2, 0x0000);               /* a double subnormal */
    STORE(f_(-0.0), 'f', 2, 0x8000);
    STORE(f_(1.0 + ldexp(1, -11)), 'f', 2, 0x3c00);  /* tie between 1 and 1+2**-10: even */
    STORE(f_(1.0 + 3 * ldexp(1, -11)), 'f', 2, 0x3c02); /* tie: even is up */
    STORE(i_(2049), 'f', 2, 0x6800);                 /* 2048 and 2050 tie: even 2048 */
    STORE(i_(70000), 'f', 2, 0x7c00);
    STORE(u_(UINT64_MAX), 'f', 2, 0x7c00);

    /* NaN stays NaN (exponent all ones, mantissa non-zero), sign kept */
    unsigned char item[2];
    for (int sign = 0; sign < 2; ++sign) {
        CHECK_OK(gts_scalar_store(f_(sign ? -NAN : NAN), dtype('f', 2), item, ERR));
        uint64_t h = load_bits(item, 2);
        CHECK((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0);
        CHECK_INT_EQ(h >> 15, sign);
    }
}

static void test_store_float32_64(void)
{
    STORE(f_(0.1), 'f', 4, 0x3dcccccd);
    STORE(f_(1.0 + ldexp(1, -24)), 'f', 4, 0x3f800000);                 /* tie: even */
    STORE(f_(1.0 + ldexp(1, -24) + ldexp(1, -40)), 'f', 4, 0x3f800001); /* above the tie */
    STORE(f_(1e40), 'f', 4, 0x7f800000);
    STORE(i_(16777217), 'f', 4, 0x4b800000); /* 2**24 + 1: tie, even 2**24 */
    /* Integers round once into float32: through a double, 2**60 + 2**36 + 1
     * would first lose the 1 and then tie down to 2**60. */
    STORE(i_((INT64_C(1) << 60) + (INT64_C(1) << 36) + 1), 'f', 4, 0x5d800001);
    STORE(u_((UINT64_C(1) << 63) + (UINT64_C(1) << 39) + 1), 'f', 4, 0x5f000001);
    STORE(b_(true), 'f', 4, bits_f4(1.0f));

    STORE(f_(0.1), 'f', 8, bits_f8(0.1));
    STORE(i_((INT64_C(1) << 53) + 1), 'f', 8, bits_f8(9007199254740992.0));
    STORE(u_(UINT64_MAX), 'f', 8, bits_f8(18446744073709551616.0));
    STORE(c_(2.0, 0.0), 'f', 8, bits_f8(2.0)); /* no imaginary part: fine */
    STORE(f_(-0.0), 'f', 8, bits_f8(-0.0));
}

static void test_store_bool_complex(void)
{
    STORE(i_(5), 'b', 1, 1);
    STORE(f_(0.0), 'b', 1, 0);
    STORE(f_(-0.0), 'b', 1, 0);
    STORE(f_(NAN), 'b', 1, 1);
    STORE(c_(0.0, 1.0), 'b', 1, 1); /* bool(1j) is True */
    STORE(b_(false), 'b', 1, 0);

    unsigned char item[16];
    double d[2];
    CHECK_OK(gts_scalar_store(c_(1.5, -2.25), dtype('c', 16), item, ERR));
    memcpy(d, item, sizeof d);
    CHECK(d[0] == 1.5 && d[1] == -2.25);
    CHECK_OK(gts_scalar_store(f_(2.5), dtype('c', 16), item, ERR));
    memcpy(d, item, sizeof d);
    CHECK(d[0] == 2.5 && d[1] == 0.0);
    float f[2];
    CHECK_OK(gts_scalar_store(c_(0.1, 3.0), dtype('c', 8), item, ERR));
    memcpy(f, item, sizeof f);
    CHECK(f[0] == 0.1f && f[1] == 3.0f);
    CHECK_OK(gts_scalar_store(i_(-7), dtype('c', 8), item, ERR));
    memcpy(f, item, sizeof f);
    CHECK(f[0] == -7.0f && f[1] == 0.0f);
}

int main(void)
{
    test_errors();
    test_supported();
    test_make_rejects();
    test_typestr();
    test_format();
    test_dlpack_rejects();
    test_store_integers();
    test_store_range_errors();
    test_store_float16();
    test_store_float32_64();
    test_store_bool_complex();
    return check_summary("test_dtype");
}
