/* Halo exchange plans: which points of which fields one rank sends to and
 * receives from each neighbour, packed into one contiguous message per
 * neighbour. No communication happens here (gtstore/halo_exchange.h runs a
 * plan over MPI; the Python package over mpi4py), so plans are tested, and
 * usable with any transport, without MPI.
 *
 * The fields are this rank's storages of a partition (gtstore/partition.h):
 * along each split dimension (found by its label) the domain extent is the
 * rank's subdomain, and the halo is what neighbours fill. Each field has
 * its own halo, per side. Neighbours are every rank at an offset in
 * {-1, 0, 1} per split dimension, the diagonal ones included, so that
 * corner points of the halo are filled too (a 9-point stencil reads them).
 * Along an offset of -1 a field receives its lower halo and sends its first
 * `upper halo` domain points (which are the lower neighbour's upper halo);
 * along 0 the domain extent; along +1 the mirror image. Dimensions the
 * partition does not split (K, data dimensions) travel whole, halo
 * included: the neighbour's values there are what a one-rank field holds.
 *
 * A message is the fields' regions one after the other, each packed
 * contiguously in its storage's own layout order (the contiguous dimension
 * stays contiguous, so packing is a strided copy without a transpose).
 * Sender and receiver compute the same sizes, since every rank makes its
 * fields alike (same dtype, halo, layout and undivided extents): the
 * signature (gts_halo_plan_signature) lets callers check that across ranks.
 * Offsets whose message would be empty (a zero halo on that side) and
 * neighbours past a non-periodic edge have no message. Where the process
 * grid is small and periodic, a rank may be its own neighbour or one rank
 * may sit at several offsets: each offset is its own message, told apart
 * by its tag.
 *
 * Packing and unpacking use gts_copy (gtstore/kernels.h) between the
 * storage and a caller's buffer; nothing is allocated after the plan is
 * made. Storages of a mirrored buffer (a GPU storage with a host side) are
 * packed from and unpacked into the host side, synced as gtstore/sync.h
 * says. Memory without a host side (device memory only) is packed on its
 * device (its strided copy). A message is in host memory
 * (gts_halo_plan_pack) or in the memory of the GPU that holds the plan's
 * fields in device memory only (gts_halo_plan_pack_on; for an MPI that
 * reads device memory, gtstore/halo_messages.h). Where a field and the
 * message are on the same side, the field's region is copied straight
 * into the message; where not, it is packed on the field's side into a
 * staging block the plan makes once, and only the region's bytes cross
 * (the reverse for unpacking). Each call has completed on the device when
 * it returns. */
#ifndef GTSTORE_HALO_PLAN_H
#define GTSTORE_HALO_PLAN_H

#include <stdint.h>

#include "gtstore/device.h"
#include "gtstore/error.h"
#include "gtstore/partition.h"
#include "gtstore/storage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One neighbour's messages. Tags are in [0, 27): the index of the offset
 * a message travels, so that the receiver's recv_tag of an offset is the
 * sender's send_tag of the opposite one. */
typedef struct gts_halo_neighbor {
    int offset[GTS_PARTITION_MAX_NDIM]; /* -1, 0 or 1 per split dimension */
    int rank;
    int send_tag, recv_tag;
    int64_t send_bytes, recv_bytes; /* one may be 0: no message that way */
} gts_halo_neighbor;

typedef struct gts_halo_plan gts_halo_plan;

/* The plan of `rank` for `nfields` storages (each keeps a reference until
 * gts_halo_plan_destroy). Errors, naming the field by its position:
 * GTS_EINVAL for a rank outside the partition, nfields < 1, a field that
 * no storage could be (checked as a public value struct: dims, a layout
 * that is a permutation, extents, halo and aligned point, every element
 * in its buffer), a field without a dimension the partition splits, a
 * domain extent other than the rank's subdomain (a field of another
 * partition), or a halo side wider than the smallest subdomain along its
 * dimension (no neighbour could fill it: every rank reports it alike,
 * since all know every subdomain); GTS_ETYPE for a dtype gts_dtype_make
 * refuses; GTS_EREADONLY for a read-only field; a device's errors (its
 * staging memory); GTS_ENOMEM, GTS_EOVERFLOW. Staging blocks are made only
 * where a plan has fields in device memory only: one per such field on its
 * device, and one per field with a host side on the host. */
int gts_halo_plan_create(const gts_partition *partition, int rank, int nfields,
                         const gts_storage *fields, gts_halo_plan **out, gts_error *err);

/* Frees the plan and drops its field references. NULL is ignored. */
void gts_halo_plan_destroy(gts_halo_plan *plan);

/* The neighbours with a message either way, in a fixed order (offsets in row-major
 * order, the last split dimension fastest). */
int gts_halo_plan_neighbor_count(const gts_halo_plan *plan);
const gts_halo_neighbor *gts_halo_plan_neighbor(const gts_halo_plan *plan, int index);

/* Bytes this rank sends (and receives) in one exchange, all neighbours. */
int64_t gts_halo_plan_send_bytes(const gts_halo_plan *plan);
int64_t gts_halo_plan_recv_bytes(const gts_halo_plan *plan);

/* A hash of what must agree on every rank for messages to match: the
 * fields' dtypes, halos, layouts and undivided extents, and the partition.
 * Equal on all ranks of a consistent exchange. */
uint64_t gts_halo_plan_signature(const gts_halo_plan *plan);

/* The rank the plan was made for. */
int gts_halo_plan_rank(const gts_halo_plan *plan);

/* Packs the message for neighbour `index` into `buffer`, which holds
 * `nbytes` (it must be the neighbour's send_bytes: GTS_EINVAL otherwise,
 * as for an index out of range). */
int gts_halo_plan_pack(const gts_halo_plan *plan, int index, void *buffer, int64_t nbytes,
                       gts_error *err);

/* Writes the message received from neighbour `index` (`nbytes`: its
 * recv_bytes) into the fields' halos. */
int gts_halo_plan_unpack(const gts_halo_plan *plan, int index, const void *buffer,
                         int64_t nbytes, gts_error *err);

/* The devices of the plan's fields in device memory only (neither host
 * memory nor a mirrored buffer), in field order without repeats: writes up
 * to `capacity` of them to `out` (may be NULL when capacity is 0) and
 * returns how many there are (0: every field has a host side). */
int gts_halo_plan_devices(const gts_halo_plan *plan, const gts_device_ops **out, int capacity);

/* As gts_halo_plan_pack and gts_halo_plan_unpack, with the message in
 * memory of `device`. NULL or a host-accessible device (host, pinned or
 * managed memory): host memory, as gts_halo_plan_pack. Device memory: it
 * must be the one device of gts_halo_plan_devices (GTS_EINVAL otherwise);
 * fields in device memory only are then packed straight into the message
 * by the device's strided copy, with no staging and no byte to or from
 * the host, and fields with a host side are packed on the host and their
 * bytes copied to the device (the reverse for unpacking). */
int gts_halo_plan_pack_on(const gts_halo_plan *plan, int index, const gts_device_ops *device,
                          void *buffer, int64_t nbytes, gts_error *err);
int gts_halo_plan_unpack_on(const gts_halo_plan *plan, int index, const gts_device_ops *device,
                            const void *buffer, int64_t nbytes, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
