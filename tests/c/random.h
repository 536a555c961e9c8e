/* A seeded PRNG for the randomized tests (xorshift64): the same cases on
 * every run and every machine, so a failure can be replayed. */
#ifndef GTSTORE_TESTS_RANDOM_H
#define GTSTORE_TESTS_RANDOM_H

#include <stdint.h>

static uint64_t random_state = 0x9e3779b97f4a7c15u;

static inline uint64_t xorshift64(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* Uniform enough in [0, n) for n far below 2**64. */
static inline int64_t rnd(int64_t n)
{
    return (int64_t)(xorshift64() % (uint64_t)n);
}

/* A random permutation of 0 .. n-1 (Fisher-Yates). */
static inline void random_permutation(int n, int *p)
{
    for (int i = 0; i < n; ++i)
        p[i] = i;
    for (int i = n - 1; i > 0; --i) {
        int j = (int)rnd(i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

#endif
