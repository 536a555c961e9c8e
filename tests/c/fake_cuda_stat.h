/* The fake CUDA driver's counters by name (fake_cuda.h), for tests that
 * load the driver through libgtstore (GTSTORE_LIBCUDA names it). */
#ifndef GTSTORE_TESTS_FAKE_CUDA_STAT_H
#define GTSTORE_TESTS_FAKE_CUDA_STAT_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef long long (*stat_fn)(const char *name);

/* fake_cuda_stat of the loaded driver, where it is the fake one; else NULL. */
static inline stat_fn fake_stat(void)
{
    const char *path = getenv("GTSTORE_LIBCUDA");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    stat_fn fn = NULL;
    if (lib) {
        void *symbol = dlsym(lib, "fake_cuda_stat");
        memcpy(&fn, &symbol, sizeof fn);
        dlclose(lib);
    }
    return fn;
}

#endif
