/* What the fake CUDA driver (fake_cuda.c) has done, and the failures it is
 * told to make: test_device_cuda reads it through
 * dlsym("fake_cuda_stats_get") on the library it loaded, other tests
 * through fake_cuda_stat.h. */
#ifndef GTSTORE_TESTS_FAKE_CUDA_H
#define GTSTORE_TESTS_FAKE_CUDA_H

#if defined(__GNUC__)
#define FAKE_CUDA_EXPORT __attribute__((visibility("default")))
#else
#define FAKE_CUDA_EXPORT
#endif

typedef struct fake_cuda_stats {
    long long lookups, lookups_not_legacy, max_version; /* cuGetProcAddress */
    long long v1_calls, v2_calls;                       /* ... through which symbol */
    long long retains, pushes, pops, context_syncs, stream_syncs;
    long long allocs[4], live[4]; /* device, pinned, managed blocks; registered ranges */
    long long htod, dtoh, dtod, generic, memsets[3], async_calls;
    long long live_streams, errors;
    long long modules;              /* cuModuleLoadData */
    long long launches[8];          /* of gts_copy_kernel, gts_fill_kernel, gts_copy_batch_kernel,
                                       gts_negate_kernel, then the built-in stencils' */
    long long stencil_launches;     /* of the built-in stencils' kernels, together */
    long long kernel_arrays;        /* arrays the launches ran (a batch: one per row) */
    long long last_grid[2];         /* the last launch's gridDim.x and gridDim.y */
    long long serial_launches;      /* of one thread: elements that may overlap */
    long long pinned_copies;      /* HtoD/DtoH whose host side is pinned or registered */
    long long pools, pool_allocs, pool_reuses, pool_frees; /* stream-ordered pools */
    long long events, live_events, event_waits; /* created, alive; syncs that waited */
    long long pointer_queries; /* cuPointerGetAttributes */
    long long stream_event_waits; /* cuStreamWaitEvent */
    long long event_records;      /* cuEventRecord */
    long long injected;           /* failures made by fake_cuda_fail */
} fake_cuda_stats;

FAKE_CUDA_EXPORT void fake_cuda_stats_get(fake_cuda_stats *out);
/* One counter of the stats by its field's name (-1 for no such name), for
 * tests in other languages, which then need not copy the struct's layout. */
FAKE_CUDA_EXPORT long long fake_cuda_stat(const char *name);
typedef void (*fake_cuda_stats_fn)(fake_cuda_stats *out);

/* Failures on demand: the nth call (nth >= 1, counted from now; once) or
 * every call (nth 0) of driver function `name` (as cuGetProcAddress names
 * it, e.g. "cuEventRecord") returns `code` (a CUresult, e.g. 2 for
 * CUDA_ERROR_OUT_OF_MEMORY, 719 for CUDA_ERROR_LAUNCH_FAILED) and does
 * nothing else. Code 0 disarms `name`; name NULL disarms all. Returns 0,
 * or -1 where `name` is no entry point of the driver, nth is negative or
 * more than 8 functions are armed at once. */
FAKE_CUDA_EXPORT int fake_cuda_fail(const char *name, int code, long long nth);
typedef int (*fake_cuda_fail_fn)(const char *name, int code, long long nth);

#endif
