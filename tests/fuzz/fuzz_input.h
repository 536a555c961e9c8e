/* Shared by the libFuzzer targets: decoding the fuzzer's bytes into
 * parameters, and the checks every target makes.
 *
 * A fuzz_input hands out values from the front of the input; once the bytes
 * run out every read returns zeros, so any input decodes to some call.
 * Sizes the targets use for real memory come from fuzz_range (bounded);
 * fuzz_hostile mixes in the values that break careless arithmetic
 * (INT64_MIN, INT64_MAX, powers of two around 2**31, 2**32, 2**62, ...) for
 * the functions that must refuse them without allocating.
 *
 * FUZZ_CHECK aborts with the failed condition, which libFuzzer reports as a
 * crash and saves the input. */
#ifndef GTSTORE_FUZZ_INPUT_H
#define GTSTORE_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtstore/error.h"

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
} fuzz_input;

static inline fuzz_input fuzz_begin(const uint8_t *data, size_t size)
{
    return (fuzz_input){data, size};
}

static inline bool fuzz_empty(const fuzz_input *in)
{
    return in->size == 0;
}

/* The next `n` bytes (n <= 8) as a little-endian unsigned integer. */
static inline uint64_t fuzz_bits(fuzz_input *in, int n)
{
    uint64_t value = 0;
    for (int i = 0; i < n && in->size > 0; ++i, ++in->data, --in->size)
        value |= (uint64_t)in->data[0] << (8 * i);
    return value;
}

static inline uint8_t fuzz_u8(fuzz_input *in)
{
    return (uint8_t)fuzz_bits(in, 1);
}

static inline bool fuzz_bool(fuzz_input *in)
{
    return fuzz_u8(in) & 1;
}

/* A value in [low, high] (high - low < 2**16): extents, indices and
 * strides that real memory is sized by. */
static inline int64_t fuzz_range(fuzz_input *in, int64_t low, int64_t high)
{
    uint64_t span = (uint64_t)(high - low) + 1;
    uint64_t raw = span <= 256 ? fuzz_bits(in, 1) : fuzz_bits(in, 2);
    return low + (int64_t)(raw % span);
}

/* Any 64-bit value, drawn mostly from the edges of the arithmetic. */
static inline int64_t fuzz_hostile(fuzz_input *in)
{
    static const int64_t edges[] = {
        0, 1, -1, 2, -2, 3, 7, 8, 64, 4096,
        INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN, (int64_t)1 << 32, ((int64_t)1 << 32) - 1,
        (int64_t)1 << 33, (int64_t)1 << 31, (int64_t)1 << 40, (int64_t)1 << 52,
        (int64_t)1 << 61, (int64_t)1 << 62, ((int64_t)1 << 62) + 1, INT64_MAX, INT64_MAX - 1,
        INT64_MIN, INT64_MIN + 1, INT64_MAX / 2, INT64_MAX / 3, -((int64_t)1 << 62),
        -((int64_t)1 << 32), PTRDIFF_MAX - 4096, (int64_t)3 << 61,
    };
    const int nedges = (int)(sizeof edges / sizeof edges[0]);
    uint8_t how = fuzz_u8(in);
    if (how < 128)
        return edges[how % nedges];
    if (how < 192)
        return (int64_t)fuzz_bits(in, 8);
    return (int64_t)(int8_t)fuzz_u8(in); /* small, either sign */
}

/* A NUL-terminated string of at most `capacity - 1` bytes, read up to and
 * including the next NUL byte of the input (or its end). */
static inline char *fuzz_string(fuzz_input *in, char *text, size_t capacity)
{
    size_t n = 0;
    while (in->size > 0) {
        uint8_t c = fuzz_u8(in);
        if (c == 0)
            break;
        if (n + 1 < capacity)
            text[n++] = (char)c;
    }
    text[n] = '\0';
    return text;
}

/* A random permutation of 0 .. n-1 in `perm` (Fisher-Yates). */
static inline void fuzz_permutation(fuzz_input *in, int n, int *perm)
{
    for (int i = 0; i < n; ++i)
        perm[i] = i;
    for (int i = n - 1; i > 0; --i) {
        int j = (int)fuzz_range(in, 0, i);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* 128-bit integers for the reference computations. Sums of many 64-bit
 * products go through fuzz_saturate, which keeps them far from the limits
 * of 128 bits while anything beyond 64 bits stays beyond. */
typedef __int128 fuzz_wide;

static inline fuzz_wide fuzz_saturate(fuzz_wide value)
{
    const fuzz_wide cap = (fuzz_wide)1 << 100;
    return value > cap ? cap : value < -cap ? -cap : value;
}

/* A failed call must say why: a negative code (the one returned) and a
 * non-empty, terminated message. */
static inline void fuzz_check_error(int rc, const gts_error *err)
{
    FUZZ_CHECK(rc < 0);
    FUZZ_CHECK(err->code == rc);
    FUZZ_CHECK(memchr(err->message, '\0', sizeof err->message) != NULL);
    FUZZ_CHECK(err->message[0] != '\0');
}

/* Clears `err` before a call, so that a stale message cannot pass. */
static inline gts_error *fuzz_error(gts_error *err)
{
    err->code = 0;
    err->message[0] = '\0';
    return err;
}

#endif
