/* The fake CUDA driver's counters by name and its failures on demand
 * (fake_cuda.h), for tests that load the driver through libgtstore
 * (GTSTORE_LIBCUDA names it). */
#ifndef GTSTORE_TESTS_FAKE_CUDA_STAT_H
#define GTSTORE_TESTS_FAKE_CUDA_STAT_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef long long (*stat_fn)(const char *name);
typedef int (*fail_fn)(const char *name, int code, long long nth);

/* Function `name` of the loaded driver, where it is the fake one; else
 * NULL. (The library stays loaded: libgtstore holds it.) */
static inline void *fake_symbol(const char *name)
{
    const char *path = getenv("GTSTORE_LIBCUDA");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *symbol = NULL;
    if (lib) {
        symbol = dlsym(lib, name);
        dlclose(lib);
    }
    return symbol;
}

/* fake_cuda_stat of the loaded driver, where it is the fake one; else NULL. */
static inline stat_fn fake_stat(void)
{
    void *symbol = fake_symbol("fake_cuda_stat");
    stat_fn fn;
    memcpy(&fn, &symbol, sizeof fn);
    return fn;
}

/* fake_cuda_fail of the loaded driver, where it is the fake one; else NULL. */
static inline fail_fn fake_fail(void)
{
    void *symbol = fake_symbol("fake_cuda_fail");
    fail_fn fn;
    memcpy(&fn, &symbol, sizeof fn);
    return fn;
}

#endif
