/* The message buffers of a halo plan (gtstore/halo_plan.h): one send and
 * one receive buffer per neighbour, made once, and the memory they live in,
 * which decides how messages cross between ranks.
 *
 * - GTS_HALO_MEMORY_HOST: ordinary host memory. The plans whose fields all
 *   have a host side (host storages, GPU storages with a host side) use it.
 * - GTS_HALO_MEMORY_PINNED: the pinned host memory of the GPU that holds
 *   the plan's fields in device memory only (gts_device_pinned: CUDA's
 *   page-locked memory). Each such field is packed on its device into the
 *   plan's staging block, and the GPU copies the packed bytes straight into
 *   the message (no bounce through pageable memory); MPI reads host memory.
 * - GTS_HALO_MEMORY_DEVICE: the GPU's own memory, for an MPI that reads it
 *   (a CUDA-aware MPI). The device's strided copy packs each field's region
 *   straight into the message, MPI is handed the device buffer, and
 *   unpacking reads from it: no byte crosses to the host (fields with a
 *   host side, where a plan has some, are packed on the host and copied
 *   over).
 *
 * gts_halo_memory_choose says which one a plan gets. Nothing here
 * communicates (gtstore/halo_exchange.h runs the messages over MPI; the
 * Python package over mpi4py). */
#ifndef GTSTORE_HALO_MESSAGES_H
#define GTSTORE_HALO_MESSAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/halo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gts_halo_memory {
    GTS_HALO_MEMORY_HOST = 0,
    GTS_HALO_MEMORY_PINNED = 1,
    GTS_HALO_MEMORY_DEVICE = 2
} gts_halo_memory;

/* Whether messages may live in device memory, as the caller asks. */
typedef enum gts_halo_device_aware {
    GTS_HALO_AWARE_AUTO = -1, /* the environment variable, else detection */
    GTS_HALO_AWARE_NO = 0,    /* never: pinned host memory */
    GTS_HALO_AWARE_YES = 1    /* always: an error where impossible */
} gts_halo_device_aware;

/* The memory of `plan`'s messages:
 * - a plan without fields in device memory only: HOST, whatever is asked;
 * - else `aware` decides; GTS_HALO_AWARE_AUTO takes the environment
 *   variable GTSTORE_DEVICE_AWARE_MPI where it is set ("1" yes, "0" no,
 *   "auto" or empty: as unset; anything else GTS_EINVAL naming it), else
 *   detection: DEVICE where those fields are on one GPU whose DLPack device
 *   type is `mpi_reads` (the type of memory the MPI reads: GTS_DL_CUDA for
 *   a CUDA-aware MPI; 0 for none), PINNED otherwise;
 * - NO: PINNED;
 * - YES: DEVICE, or GTS_EINVAL where impossible: the fields in device
 *   memory only are on several devices, or their GPU's type is not
 *   `mpi_reads`. The emulated device is the exception: its memory is host
 *   memory behind addresses of its own, which any MPI reads once
 *   translated (gts_halo_message.mpi), so YES reaches it; detection never
 *   does, so only tests that ask for it do. */
int gts_halo_memory_choose(const gts_halo_plan *plan, gts_halo_device_aware aware,
                           int32_t mpi_reads, gts_halo_memory *out, gts_error *err);

/* "host", "pinned" or "device". */
const char *gts_halo_memory_name(gts_halo_memory memory);

/* One message buffer. */
typedef struct gts_halo_message {
    void *data;    /* the buffer: an address of gts_halo_messages_device */
    void *mpi;     /* the address to give MPI: `data`, except on the emulated
                      device, the host memory behind it (what a device-aware
                      MPI reads of device memory) */
    int64_t bytes; /* 0: no message that way */
} gts_halo_message;

typedef struct gts_halo_messages gts_halo_messages;

/* The buffers of `plan` in `memory` (for DEVICE and PINNED, memory of the
 * one GPU, or the first one, of gts_halo_plan_devices): two blocks, one
 * for the sends and one for the receives, cut into one buffer per
 * neighbour. The plan must outlive them. GTS_EINVAL for a memory the plan
 * cannot use (PINNED or DEVICE without fields in device memory only; DEVICE
 * with them on several devices); the device's errors. */
int gts_halo_messages_create(const gts_halo_plan *plan, gts_halo_memory memory,
                             gts_halo_messages **out, gts_error *err);

/* Frees the buffers. NULL is ignored. */
void gts_halo_messages_destroy(gts_halo_messages *messages);

gts_halo_memory gts_halo_messages_memory(const gts_halo_messages *messages);
/* Where the buffers are: the host, the GPU's pinned memory or the GPU. */
const gts_device_ops *gts_halo_messages_device(const gts_halo_messages *messages);

/* Neighbour `index`'s buffers (NULL for an index out of range). */
const gts_halo_message *gts_halo_messages_send(const gts_halo_messages *messages, int index);
const gts_halo_message *gts_halo_messages_recv(const gts_halo_messages *messages, int index);

/* Packs neighbour `index`'s send buffer from the fields; unpacks its
 * receive buffer into their halos (gts_halo_plan_pack_on). */
int gts_halo_messages_pack(const gts_halo_messages *messages, int index, gts_error *err);
int gts_halo_messages_unpack(const gts_halo_messages *messages, int index, gts_error *err);

/* Every message at once:
 * - gts_halo_messages_pack_all packs the send buffer of every neighbour
 *   that is not local, and copies the regions of local neighbours straight
 *   from the fields' domains into their halos;
 * - gts_halo_messages_unpack_all unpacks the receive buffer of every
 *   neighbour that is not local;
 * - gts_halo_messages_pack_local only copies the local neighbours' regions
 *   (for an exchange that packs each message just before it sends it).
 * Each is one batch of device copies per GPU (gtstore/copy_batch.h: one
 * kernel launch on CUDA) for the fields in device memory only, the host
 * copies of the fields with a host side, and one transfer across the bus
 * per run of contiguous bytes; they are prepared when the messages are
 * made. Completed on return (the default stream: for the fields in device
 * memory only, the host first waits for the device work queued on them,
 * gtstore/access.h). */
int gts_halo_messages_pack_all(const gts_halo_messages *messages, gts_error *err);
int gts_halo_messages_unpack_all(const gts_halo_messages *messages, gts_error *err);
int gts_halo_messages_pack_local(const gts_halo_messages *messages, gts_error *err);

/* pack_all and unpack_all in the stream order (gtstore/access.h), the
 * device work queued on `stream` of the GPU of the fields in device memory
 * only (NULL: the default stream, as pack_all and unpack_all; GTS_EINVAL
 * for a stream where those fields are on several GPUs):
 * - the copies out of (pack) or into (unpack) those fields wait on the
 *   device for the work queued on each field's buffer, and are recorded on
 *   it, so that later work on any stream (or the host) that touches the
 *   fields is ordered after them;
 * - the copies into or out of the message buffers, and the staging blocks
 *   that cross to them, are recorded in the buffers' own stream order:
 *   the host must call gts_halo_messages_host_wait before MPI reads the
 *   send buffers or writes the receive buffers;
 * - fields with a host side are copied on the host, after their device
 *   work (the host waits), and have completed on return; where their bytes
 *   cross to or from device messages, the host waits for the crossing.
 * They return once the work is queued. The caller's `stream` must be a
 * stream of that GPU. */
int gts_halo_messages_pack_all_on(const gts_halo_messages *messages, gts_stream stream,
                                  gts_error *err);
int gts_halo_messages_unpack_all_on(const gts_halo_messages *messages, gts_stream stream,
                                    gts_error *err);

/* The host waits for the device work queued on the send buffers (`send`
 * true: the packing, before MPI reads them) or the receive buffers (false:
 * the unpacking of the previous exchange, before MPI writes them again).
 * Nothing to wait for after the default stream or for host messages of
 * host fields. The device's errors. */
int gts_halo_messages_host_wait(const gts_halo_messages *messages, bool send, gts_error *err);

/* Whether neighbour `index` is this rank itself, whose messages
 * pack_all (or pack_local) delivers: an exchange sends and receives
 * nothing for it. (A rank is its own neighbour along a periodic dimension
 * it does not share; where one of its own messages would have no match,
 * none is local and all travel.) false for an index out of range. */
bool gts_halo_messages_local(const gts_halo_messages *messages, int index);

/* The layout of one direction's block (send: true for the sends, false for
 * the receives), as gts_halo_messages_create cuts its blocks, for callers
 * that place the messages in memory of their own (e.g. the receive buffers
 * in an MPI-3 shared window, which senders pack into): the messages that
 * travel first, in neighbour order, so that their bytes are one run, then
 * the local ones (gts_halo_messages_local, the same rule). offsets[i]:
 * where neighbour i's message starts (its bytes: the neighbour's
 * send_bytes or recv_bytes); *travel_bytes: the bytes of the travelling
 * messages, the size of a block that holds only those. `n` must be the
 * plan's neighbour count. GTS_EINVAL for a NULL pointer or another `n`;
 * GTS_ENOMEM. */
int gts_halo_plan_message_layout(const gts_halo_plan *plan, bool send, int64_t *offsets, int n,
                                 int64_t *travel_bytes, gts_error *err);

/* How an exchange should move the messages: true where the plan has
 * fields in device memory only, whose packing and unpacking are a launch
 * each: pack_all, then send all; wait for all, then unpack_all. false for
 * host work, which overlaps the communication best one message at a time:
 * pack_local, then pack and send each message in turn; unpack each as it
 * arrives. */
bool gts_halo_messages_at_once(const gts_halo_messages *messages);

#ifdef __cplusplus
}
#endif
#endif
