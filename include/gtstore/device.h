/* Devices: where memory lives, and the operations that reach it.
 *
 * A device is identified by its DLPack device (type, id): one id space for
 * the whole library, its DLPack import and export, and the Python extension.
 * Each device is a table of operations (gts_device_ops): allocate and free
 * device memory, copy contiguous bytes host -> device, device -> host and
 * within the device, strided fill and copy of device memory (the contracts
 * of gts_fill and gts_copy), synchronise, and optionally streams. Buffers
 * know their device (gts_buffer_device) and storages dispatch copy and fill
 * through it. Each device also says what it is (its capabilities: the kind
 * of its memory, the GPU that owns it, whether it is exported with the CUDA
 * array interface, which engine computes on it, its host alias), which
 * callers ask instead of comparing devices by identity or DLPack type.
 *
 * Built in:
 * - the host (GTS_DL_CPU, 0): always present. Its memory is host memory;
 *   its operations are the host allocator and the kernels of kernels.h.
 * - the emulated device (GTS_DL_EXT_DEV, 0): a device for tests, present in
 *   every build. Its memory is separate host memory that the rest of the
 *   library reaches only through its operations: the addresses it hands out
 *   are not host addresses (dereferencing one faults), every address it is
 *   given is checked to lie in one of its live blocks, and it counts its
 *   transfers (gts_device_emulated_counts). Its freed blocks are cached,
 *   as a GPU's are (gtstore/buffer.h); a cached block is not live. Its
 *   streams are asynchronous: work queued on one runs later on a thread of
 *   its own, after a random delay of up to GTSTORE_EMULATED_DELAY_US
 *   microseconds (default 50), so that a missing wait gives a wrong value
 *   here as on a GPU; its events have CUDA's semantics.
 * - the emulated device's managed memory (GTS_DL_EXT_DEV, 1): host memory
 *   with the host's operations under a device id that is not the CPU's,
 *   playing CUDA managed memory for tests (gts_device_managed).
 * - the emulated device's pinned host memory (GTS_DL_EXT_DEV, 2): host
 *   memory with the host's operations, whose blocks the emulated device
 *   counts (gts_device_emulated_pinned_counts), playing CUDA's pinned host
 *   memory for tests (gts_device_pinned).
 * - the CUDA devices, where an NVIDIA driver and GPU are present: the driver
 *   library (libcuda.so.1, or the path in the environment variable
 *   GTSTORE_LIBCUDA) is loaded with dlopen on first use, so one build runs
 *   with and without a GPU. For each GPU n, (GTS_DL_CUDA, n) is its device
 *   memory and (GTS_DL_CUDA_MANAGED, n) managed memory (where the GPU
 *   supports it); (GTS_DL_CUDA_HOST, 0) is pinned host memory. Device
 *   memory comes from a stream-ordered pool, released in the order of the
 *   legacy default stream; pinned blocks are cached (gtstore/buffer.h).
 *   Without a usable driver they are absent and gts_device_get of them
 *   fails with the cause (gts_device_cuda_status below).
 *
 * Not to be confused with the gts_device enum of gtstore/preset.h: that is
 * the device *kind* a preset prefers (CPU or GPU), not a device.
 *
 * Device addresses are `void *` that only the device's own operations may
 * dereference (for the host device they are host addresses). Streams are
 * opaque handles; NULL is the device's default stream, on which every
 * operation has completed when it returns. Work on other streams is
 * ordered with events (gts_device_event_*); buffers keep their own order
 * (gtstore/access.h, the stream order). */
#ifndef GTSTORE_DEVICE_H
#define GTSTORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gtstore/dtype.h"
#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device types: DLPack's DLDeviceType codes. */
enum {
    GTS_DL_CPU = 1,
    GTS_DL_CUDA = 2,
    GTS_DL_CUDA_HOST = 3,
    GTS_DL_OPENCL = 4,
    GTS_DL_VULKAN = 7,
    GTS_DL_METAL = 8,
    GTS_DL_VPI = 9,
    GTS_DL_ROCM = 10,
    GTS_DL_ROCM_HOST = 11,
    GTS_DL_EXT_DEV = 12, /* the emulated device */
    GTS_DL_CUDA_MANAGED = 13,
    GTS_DL_ONEAPI = 14,
    GTS_DL_WEBGPU = 15,
    GTS_DL_HEXAGON = 16,
    GTS_DL_MAIA = 17
};

/* A device: the layout of DLPack's DLDevice. */
typedef struct gts_device_id {
    int32_t type; /* a GTS_DL_* code */
    int32_t id;   /* which device of that type, from 0 */
} gts_device_id;

/* Allocation flags. */
enum {
    GTS_ALLOC_ZERO = 1 /* the block reads as zeros (like calloc); for a buffer, in its
                          stream order (gts_buffer_alloc) */
};

/* What kind of memory a device is: what callers ask instead of comparing
 * devices by identity. */
typedef enum gts_memory_kind {
    GTS_MEMORY_HOST = 0,    /* the host's own memory (the host device) */
    GTS_MEMORY_GPU = 1,     /* a GPU's device memory (a CUDA GPU, the emulated device) */
    GTS_MEMORY_MANAGED = 2, /* memory that the host and its GPU both reach */
    GTS_MEMORY_PINNED = 3   /* page-locked host memory that its GPU copies directly */
} gts_memory_kind;

/* Which array library computes on a device's memory (the Python
 * extension's engines): none, NumPy over host addresses (for the emulated
 * device: over the host alias of its addresses), CuPy. */
typedef enum gts_engine_kind {
    GTS_ENGINE_NONE = 0,
    GTS_ENGINE_NUMPY = 1,
    GTS_ENGINE_CUPY = 2
} gts_engine_kind;

/* A stream (queue of device work); NULL: the default stream. */
typedef void *gts_stream;

/* An event of a device: a point in one of its streams (where it was last
 * recorded) that the host or another stream can wait for. Opaque; made by
 * gts_device_event_create. */
typedef void *gts_event;

typedef struct gts_device_ops gts_device_ops;

/* The launch arguments of a built-in stencil on a GPU: libgtstore's own. */
struct gts_kernel_stencil;

/* One strided copy of a batch (gtstore/copy_batch.h): dst = src over
 * `shape`, byte strides, elements of `itemsize` bytes, addresses of the
 * device's memory. */
typedef struct gts_strided_copy {
    void *dst;
    const int64_t *dst_strides;
    const void *src;
    const int64_t *src_strides;
    int ndim;
    const int64_t *shape;
    int64_t itemsize;
} gts_strided_copy;

/* The operations of a device. The gts_device_* functions below check their
 * arguments and then call these, so an implementation may assume: sizes
 * >= 0, no NULL address for a non-empty transfer, a stream that is NULL or
 * one of its own. Every fallible entry returns 0 or a gts_status and fills
 * `err`. */
struct gts_device_ops {
    gts_device_id id;
    const char *name;       /* "cpu", "emulated", ... */
    bool host_accessible;   /* its addresses are host addresses too */
    void *ctx;              /* the implementation's own state */
    /* A block of `size` bytes (0 allowed), 64-byte aligned. */
    int (*alloc)(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                 gts_error *err);
    /* Frees a block from alloc; `size` is the size it was allocated with. */
    void (*free)(const gts_device_ops *dev, void *block, int64_t size);
    /* Contiguous bytes: host -> device, device -> host, device -> device
     * (the last may overlap, as memmove). */
    int (*copy_to_device)(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                          gts_stream stream, gts_error *err);
    int (*copy_to_host)(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                        gts_stream stream, gts_error *err);
    int (*copy_within)(const gts_device_ops *dev, void *dst, const void *src, int64_t bytes,
                       gts_stream stream, gts_error *err);
    /* Strided fill and copy of device memory, with the contracts of gts_fill
     * and gts_copy (kernels.h). */
    int (*fill)(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                const int64_t *strides, int64_t itemsize, const void *item, gts_stream stream,
                gts_error *err);
    int (*copy)(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                int64_t itemsize, gts_stream stream, gts_error *err);
    /* Waits until the work queued on `stream` has completed. */
    int (*synchronize)(const gts_device_ops *dev, gts_stream stream, gts_error *err);
    /* Optional (NULL: the device has its default stream only). */
    int (*stream_create)(const gts_device_ops *dev, gts_stream *out, gts_error *err);
    void (*stream_destroy)(const gts_device_ops *dev, gts_stream stream);
    /* Optional (NULL: gtstore/copy_batch.h runs a batch's copies one by one
     * with `copy`): a batch of strided copies prepared once and run as one
     * unit of device work (on a GPU, one kernel launch). prepare gets
     * copies already checked (copy_batch.h), and returns the device's own
     * state of the batch, which run and release take. */
    int (*batch_prepare)(const gts_device_ops *dev, int count, const gts_strided_copy *copies,
                         void **out, gts_error *err);
    int (*batch_run)(const gts_device_ops *dev, void *batch, gts_stream stream, gts_error *err);
    void (*batch_release)(const gts_device_ops *dev, void *batch);
    /* ---- capabilities (ABI 4; after every operation) ---- */
    gts_memory_kind kind;
    /* The GPU whose companion memory this is (a managed or pinned memory;
     * NULL for CUDA's pinned memory, which every CUDA GPU shares), NULL for
     * the host and GPUs. */
    const gts_device_ops *owner;
    /* Whether its memory is exported with the CUDA array interface (CUDA
     * device and managed memory). */
    bool cuda_array_interface;
    /* Which engine computes on its memory in place. */
    gts_engine_kind engine;
    /* Optional (NULL: no host alias): the host address that reaches the
     * memory at `address` (gts_device_host_alias). */
    void *(*host_alias)(const gts_device_ops *dev, const void *address);
    /* ---- events (ABI 5; after the capabilities) ----
     * Optional, all or none (NULL: every operation of the device has
     * completed when it returns, as on the host, so that there is nothing
     * to wait for; the gts_device_event_* functions then give a trivial
     * event, always complete). The semantics are CUDA's: record marks the
     * work queued on `stream` so far (NULL: the default stream, whose work
     * has completed); stream_wait_event makes the work queued on `stream`
     * afterwards wait until the event's work as recorded at the time of the
     * call has completed (NULL stream: the host waits, as the default
     * stream's next operation completes on return); synchronize waits on
     * the host; query says whether it has completed. An event never
     * recorded is complete. */
    int (*event_create)(const gts_device_ops *dev, gts_event *out, gts_error *err);
    void (*event_destroy)(const gts_device_ops *dev, gts_event event);
    int (*event_record)(const gts_device_ops *dev, gts_event event, gts_stream stream,
                        gts_error *err);
    int (*stream_wait_event)(const gts_device_ops *dev, gts_stream stream, gts_event event,
                             gts_error *err);
    int (*event_synchronize)(const gts_device_ops *dev, gts_event event, gts_error *err);
    int (*event_query)(const gts_device_ops *dev, gts_event event, bool *done, gts_error *err);
    /* ---- kernels (ABI 5) ---- */
    /* Optional (NULL: the device has no such kernel): negates `bytes` of
     * packed values of `dtype` at `data` in place (gts_device_negate). */
    int (*negate)(const gts_device_ops *dev, void *data, int64_t bytes, gts_dtype dtype,
                  gts_stream stream, gts_error *err);
    /* ---- built-in stencils (ABI 7) ---- */
    /* Optional (NULL: the device runs none): queues built-in stencil
     * `stencil` (gtstore/stencils.h) with the launch arguments `args`, a
     * struct of libgtstore's own (gts_stencil_launch fills and checks
     * them; not for other implementations), on `stream`. `names`: the
     * fields' names, for messages. */
    int (*stencil)(const gts_device_ops *dev, int stencil, const struct gts_kernel_stencil *args,
                   const char *const *names, gts_stream stream, gts_error *err);
};

/* ---- the registry -------------------------------------------------------- */

/* The device `id`. GTS_ENOTFOUND for a device that does not exist (an
 * unknown type, or an id beyond the devices of a type); GTS_ENOTSUP for a
 * DLPack device type this build of libgtstore cannot reach. */
int gts_device_get(gts_device_id id, const gts_device_ops **out, gts_error *err);

/* The host device (GTS_DL_CPU, 0), always present. */
const gts_device_ops *gts_device_host(void);

/* The emulated device (GTS_DL_EXT_DEV, 0), always present. */
const gts_device_ops *gts_device_emulated(void);

/* The managed memory of `gpu` (CUDA managed memory of a CUDA device; of
 * the emulated device, host memory under the id (GTS_DL_EXT_DEV, 1)):
 * memory both the host and `gpu` reach, which needs no sync.
 * GTS_ENOTSUP for a device without one. */
int gts_device_managed(const gts_device_ops *gpu, const gts_device_ops **out, gts_error *err);
/* Whether `device` is the managed memory of a GPU. */
bool gts_device_is_managed(const gts_device_ops *device);

/* The pinned (page-locked) host memory of `gpu`: host memory that `gpu`
 * copies to and from directly, without an extra staging copy, which is
 * what message buffers between device memory and a network should be. For
 * a CUDA device (GTS_DL_CUDA_HOST, 0), shared by every CUDA GPU; for the
 * emulated device (GTS_DL_EXT_DEV, 2), host memory whose blocks it counts.
 * Its addresses are host addresses. GTS_ENOTSUP for a device without one
 * (the host, managed memory); CUDA's errors where the driver is missing. */
int gts_device_pinned(const gts_device_ops *gpu, const gts_device_ops **out, gts_error *err);
/* Whether `device` is the pinned host memory of a GPU. */
bool gts_device_is_pinned(const gts_device_ops *device);
/* Whether `device` is host memory: the host's own, or a GPU's pinned
 * memory. Its storages are the CPU's (gts_buffer_device_kind). */
bool gts_device_is_host_memory(const gts_device_ops *device);

/* The devices available, host first: writes up to `capacity` of them to
 * `out` (may be NULL when capacity is 0) and returns how many there are. */
size_t gts_device_list(const gts_device_ops **out, size_t capacity);

/* Whether CUDA can be reached: GTS_OK and the number of CUDA GPUs in
 * *count, or the reason why not (GTS_ENOTSUP: no driver library, the CUDA
 * toolkit's stub library, a driver too old or lacking an entry point, cuInit
 * failing; GTS_ENOTFOUND: a driver without devices) with a message naming
 * the cause and the CUresult. Loads the driver on the first call (once per
 * process; later calls return the same answer). *count (0 on failure) and
 * *driver_version (cuDriverGetVersion, e.g. 12040; 0 if unknown) may be
 * NULL. */
int gts_device_cuda_status(int *count, int *driver_version, gts_error *err);

/* The device that plays the GPU: where storages of the GPU device kind
 * (gtstore/preset.h; a GPU preset, device="gpu") are allocated. By default
 * CUDA device 0; the emulated device where the environment variable
 * GTSTORE_GPU is "emulated" (read on each call until a device is chosen),
 * or after gts_device_use_gpu. Fails with the reason where there is no GPU
 * (gts_device_get's errors for CUDA; GTS_EINVAL for a GTSTORE_GPU that
 * names neither). */
int gts_device_gpu(const gts_device_ops **out, gts_error *err);
/* Chooses the device that plays the GPU (NULL: back to the environment's
 * choice). Host-accessible memory cannot (GTS_EINVAL). */
int gts_device_use_gpu(const gts_device_ops *device, gts_error *err);
/* The GPU device named `name` as the registry names its devices:
 * "emulated", "cuda" (CUDA device 0) or "cuda:N" (device_name.c).
 * GTS_EINVAL naming the value for any other name; gts_device_get's errors
 * where CUDA device N cannot be reached. */
int gts_device_gpu_named(const char *name, const gts_device_ops **out, gts_error *err);

/* The host address where the host reaches the memory at `address` of
 * `device`: `address` itself for host-accessible memory, the host memory
 * behind an emulated device address (NULL outside its live blocks), NULL
 * for memory the host cannot reach (a CUDA GPU's) or a NULL device. */
void *gts_device_host_alias(const gts_device_ops *device, const void *address);

/* Whether two ids name the same device. */
bool gts_device_id_equal(gts_device_id a, gts_device_id b);

/* Whether the memory of `device` is of DLPack device type `type`, as
 * another component reports a kind of memory by its type (the memory an
 * MPI reads, gts_halo_exchange_mpi_reads): false for a NULL device or type
 * 0 (no memory). */
bool gts_device_memory_is(const gts_device_ops *device, int32_t type);

/* ---- other libraries' memory -------------------------------------------- */

/* The device whose memory `address` is: for memory another library
 * describes without naming its device (the CUDA array interface). The
 * emulated device for an address inside one of its live blocks; for CUDA
 * what the driver says of the pointer (cuPointerGetAttributes): the device
 * memory or managed memory of GPU n, or pinned host memory. GTS_ENOTFOUND,
 * naming the reasons, where no device gtstore reaches owns it (pageable
 * host memory, no driver). */
int gts_device_locate(const void *address, const gts_device_ops **out, gts_error *err);

/* Whether gtstore can use memory on `device` beside its GPU (gts_device_gpu):
 * host-accessible memory always (host, pinned, managed); device memory
 * where `device` plays the GPU, or where no device does (the memory is
 * where it is, and its device's operations reach it). The memory of
 * another GPU than the one that plays the GPU gives GTS_EINVAL naming
 * both: gtstore copies and computes on its GPU only. */
int gts_device_check_usable(const gts_device_ops *device, gts_error *err);

/* CUDA's legacy default stream (CU_STREAM_LEGACY, stream number 1 of the
 * CUDA array interface and DLPack) where `device` is a CUDA GPU, else
 * NULL. Unlike NULL it is a stream like the others: work queued on it
 * returns without completing and is ordered by events (gtstore/access.h).
 * It is where CuPy, torch and GT4Py work by default, and it orders with
 * every blocking stream; the Python package queues its work there unless
 * another stream is current. */
gts_stream gts_device_legacy_stream(const gts_device_ops *device);

/* Waits for the work a producer queued on `stream` before its memory on
 * `device` is used: a stream number of the CUDA array interface (its
 * "stream" key) or of DLPack. 1 and 2 are the legacy and the per-thread
 * default stream, larger values a CUDA stream handle, which only CUDA
 * memory can have (GTS_EINVAL elsewhere); 0 is forbidden by both protocols
 * and negative values are not streams (GTS_EINVAL; the caller handles the
 * protocols' "no synchronization", None). On the host every operation
 * has completed already; the emulated device waits for all its streams
 * (its default stream's work has completed, and 1 and 2 stand for the
 * whole device there). */
int gts_device_wait_stream(const gts_device_ops *device, int64_t stream, gts_error *err);

/* ---- operations, checked ------------------------------------------------- */
/* Each checks the arguments every device shares (GTS_EINVAL for a NULL
 * device, a negative size, a NULL address of a non-empty transfer, a stream
 * on a device without streams) and calls the device's entry. */

int gts_device_alloc(const gts_device_ops *dev, int64_t size, unsigned flags, void **out,
                     gts_error *err);
void gts_device_free(const gts_device_ops *dev, void *block, int64_t size); /* NULL ignored */
int gts_device_copy_to_device(const gts_device_ops *dev, void *dst, const void *src,
                              int64_t bytes, gts_stream stream, gts_error *err);
int gts_device_copy_to_host(const gts_device_ops *dev, void *dst, const void *src,
                            int64_t bytes, gts_stream stream, gts_error *err);
int gts_device_copy_within(const gts_device_ops *dev, void *dst, const void *src,
                           int64_t bytes, gts_stream stream, gts_error *err);
int gts_device_fill(const gts_device_ops *dev, void *data, int ndim, const int64_t *shape,
                    const int64_t *strides, int64_t itemsize, const void *item,
                    gts_stream stream, gts_error *err);
int gts_device_copy(const gts_device_ops *dev, void *dst, const int64_t *dst_strides,
                    const void *src, const int64_t *src_strides, int ndim, const int64_t *shape,
                    int64_t itemsize, gts_stream stream, gts_error *err);
int gts_device_synchronize(const gts_device_ops *dev, gts_stream stream, gts_error *err);
/* Negates `bytes` of packed values of `dtype` at `data` (device memory)
 * in place, as a halo exchange does to a vector component that a cube edge
 * turns (gtstore/cube_halo.h) where the message is in device memory: the
 * sign bit of floats (exact; complex values: of both parts), the two's
 * complement of integers (wrapping, as NumPy's negative). GTS_ENOTSUP on a
 * device without the kernel (host memory: the caller negates it itself);
 * GTS_EINVAL for a boolean dtype (no sign) or `bytes` not a multiple of its
 * itemsize. */
int gts_device_negate(const gts_device_ops *dev, void *data, int64_t bytes, gts_dtype dtype,
                      gts_stream stream, gts_error *err);
/* GTS_ENOTSUP on a device without streams. */
int gts_device_stream_create(const gts_device_ops *dev, gts_stream *out, gts_error *err);
void gts_device_stream_destroy(const gts_device_ops *dev, gts_stream stream); /* NULL ignored */

/* Events (the contract of the event entries of gts_device_ops). A device
 * without events gives one shared trivial event, always complete, and
 * makes the rest no-ops; so callers need not ask. GTS_EINVAL for a NULL
 * device, out or event, and a stream on a device without streams. */
int gts_device_event_create(const gts_device_ops *dev, gts_event *out, gts_error *err);
void gts_device_event_destroy(const gts_device_ops *dev, gts_event event); /* NULL ignored */
/* Marks the work queued on `stream` so far. */
int gts_device_event_record(const gts_device_ops *dev, gts_event event, gts_stream stream,
                            gts_error *err);
/* Work queued on `stream` from now on waits for the event as recorded now
 * (stream NULL: the host waits). */
int gts_device_event_wait(const gts_device_ops *dev, gts_stream stream, gts_event event,
                          gts_error *err);
/* The host waits until the event's work has completed. */
int gts_device_event_synchronize(const gts_device_ops *dev, gts_event event, gts_error *err);
/* *done: whether the event's work has completed, without waiting. */
int gts_device_event_query(const gts_device_ops *dev, gts_event event, bool *done,
                           gts_error *err);

/* ---- the emulated device ------------------------------------------------- */

/* What the emulated device has done since the last reset: calls and bytes
 * of each transfer, strided kernels run, and its blocks. */
typedef struct gts_transfer_counts {
    int64_t to_device, to_device_bytes; /* host -> device */
    int64_t to_host, to_host_bytes;     /* device -> host */
    int64_t within, within_bytes;       /* device -> device, contiguous */
    int64_t fills, copies;              /* strided kernels on the device */
    int64_t allocs, frees;
    int64_t live_blocks, live_bytes;    /* not reset: what is allocated now */
} gts_transfer_counts;

void gts_device_emulated_counts(gts_transfer_counts *out);
/* Zeroes the counts (live_blocks and live_bytes stay). */
void gts_device_emulated_reset_counts(void);

/* The blocks of the emulated device's pinned host memory (GTS_DL_EXT_DEV,
 * 2): allocations and frees since the last gts_device_emulated_reset_counts,
 * and what is allocated now (not reset). */
typedef struct gts_pinned_counts {
    int64_t allocs, frees;
    int64_t live_blocks, live_bytes;
} gts_pinned_counts;

void gts_device_emulated_pinned_counts(gts_pinned_counts *out);

/* The host address behind an emulated device address (NULL if `address` is
 * not inside a live block of the emulated device): for tests that read or
 * write the "device" side directly, as a kernel would. */
void *gts_device_emulated_host_address(const void *address);

#ifdef __cplusplus
}
#endif
#endif
