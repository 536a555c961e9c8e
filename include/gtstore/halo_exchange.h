/* Halo exchange over MPI: a halo plan (gtstore/halo_plan.h) run on a
 * communicator with non-blocking, persistent point-to-point messages.
 *
 * This header and its library, libgtstore_mpi (pkg-config gtstore-mpi),
 * exist only where gtstore was built with an MPI; libgtstore itself never
 * links MPI (nor does the Python package, which runs the same plans over
 * mpi4py).
 *
 * One exchange object serves a fixed set of fields for as long as they
 * live: it makes the plan, its message buffers (one per neighbour and
 * direction, gtstore/halo_messages.h) and persistent requests once, so that
 * an exchange allocates nothing. The buffers are host memory for fields
 * with a host side; for fields in device memory only, pinned host memory
 * of their GPU, or the GPU's memory itself where the MPI reads it
 * (CUDA-aware MPI) or the caller asks for it (gts_halo_exchange_create_aware). It duplicates the communicator, so that its tags never meet the
 * caller's messages. Errors of MPI itself are returned (the duplicate has
 * MPI_ERRORS_RETURN) as GTS_EINVAL with MPI's message. */
#ifndef GTSTORE_HALO_EXCHANGE_H
#define GTSTORE_HALO_EXCHANGE_H

#include <mpi.h>

#include "gtstore/cube_halo_plan.h"
#include "gtstore/halo_messages.h"
#include "gtstore/halo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gts_halo_exchange gts_halo_exchange;

/* Collective over `comm`, whose ranks are the partition's (its size must be
 * partition->nranks; this rank's number in it is its rank there). Each rank
 * makes its plan for its `nfields` storages, then all agree: where any rank
 * fails (its fields do not fit the partition) or the fields differ between
 * ranks (gts_halo_plan_signature), every rank returns an error, the failing
 * one its own message, the others one naming the lowest failing rank, so
 * that no rank waits for a message that never comes. */
int gts_halo_exchange_create(const gts_partition *partition, MPI_Comm comm, int nfields,
                             const gts_storage *fields, gts_halo_exchange **out, gts_error *err);

/* As gts_halo_exchange_create, with the caller's say on messages in device
 * memory (gts_halo_memory_choose; gts_halo_exchange_create passes
 * GTS_HALO_AWARE_AUTO): detection is gts_halo_exchange_mpi_reads. Asking
 * for device memory where it is impossible fails on every rank alike. */
int gts_halo_exchange_create_aware(const gts_partition *partition, MPI_Comm comm, int nfields,
                                   const gts_storage *fields, gts_halo_device_aware aware,
                                   gts_halo_exchange **out, gts_error *err);

/* The same on the cubed sphere (gtstore/cube_halo_plan.h): each rank's
 * plan for its fields and their components (NULL: all scalars); the
 * communicator has partition->nranks ranks. Every rank fails alike. */
int gts_cube_halo_exchange_create(const gts_cube_partition *partition, MPI_Comm comm,
                                  int nfields, const gts_storage *fields,
                                  const gts_cube_component *components,
                                  gts_halo_device_aware aware, gts_halo_exchange **out,
                                  gts_error *err);

/* The type of device memory this MPI reads (GTS_DL_CUDA where it is
 * CUDA-aware and gtstore reaches a CUDA GPU), or 0: Open MPI's MPIX_Query_cuda_support (<mpi-ext.h>) or
 * MPICH's MPIX_GPU_query_support where the MPI has one, asked at run time;
 * 0 for an MPI with neither. */
int32_t gts_halo_exchange_mpi_reads(void);

/* Frees everything; the caller's communicator stays. NULL is ignored.
 * Collective (it frees the duplicated communicator). Between start and
 * wait it first completes the exchange's messages, as
 * gts_halo_exchange_wait does but without unpacking them (the halos keep
 * their values): the neighbours must start theirs, as for a wait. */
void gts_halo_exchange_destroy(gts_halo_exchange *exchange);

/* Starts an exchange: posts the receives, packs each neighbour's message
 * and posts its send. The fields' halos must not be read, nor the domain
 * points near the subdomain's edges written, until gts_halo_exchange_wait:
 * the interior may be computed meanwhile. GTS_EINVAL if already started. */
int gts_halo_exchange_start(gts_halo_exchange *exchange, gts_error *err);

/* Completes it: unpacks each message as it arrives, then waits for the
 * sends. GTS_EINVAL if not started. */
int gts_halo_exchange_wait(gts_halo_exchange *exchange, gts_error *err);

/* start, then wait. */
int gts_halo_exchange_run(gts_halo_exchange *exchange, gts_error *err);

/* start and wait in the stream order (gtstore/access.h,
 * gts_halo_messages_pack_all_on): for fields in device memory only, the
 * packing is queued on `stream` (a stream of their GPU; NULL: the default
 * stream, as start and wait) after the work queued on each field, and the
 * host waits only for the packing, before MPI reads the send buffers (and,
 * before the receives are posted, for a previous unpacking out of the
 * receive buffers); wait_on queues the unpacking on `stream` once every
 * message has arrived and records it on each field's buffer, so that later
 * work on any stream, or a host access, follows it; it returns once the
 * unpacking is queued. Fields with a host side are packed and unpacked on
 * the host, completed on return, whatever `stream`. GTS_EINVAL for a stream
 * where the fields in device memory only are on several GPUs (start_on
 * still posts every send, and the exchange must be waited for). */
int gts_halo_exchange_start_on(gts_halo_exchange *exchange, gts_stream stream, gts_error *err);
int gts_halo_exchange_wait_on(gts_halo_exchange *exchange, gts_stream stream, gts_error *err);

/* The plan it runs (neighbours, message sizes). */
const gts_halo_plan *gts_halo_exchange_plan(const gts_halo_exchange *exchange);

/* Its message buffers: their memory (gts_halo_messages_memory), device and
 * addresses. */
const gts_halo_messages *gts_halo_exchange_messages(const gts_halo_exchange *exchange);

#ifdef __cplusplus
}
#endif
#endif
