/* Halo plans on the cubed sphere: the pieces of gtstore/cube_halo.h made a
 * gts_halo_plan (gtstore/halo_plan.h), so that everything that runs a plan
 * runs this one: packing and unpacking, the message buffers and their
 * batched device copies (gtstore/halo_messages.h), and the MPI exchange.
 *
 * The fields are this rank's storages: along I (x) and J (y) their domain
 * is the rank's subdomain, or one point more where the field is on the
 * cells' faces along that axis (an Arakawa C or D grid's wind; a scalar on
 * cell corners: gtstore/cube_halo.h's staggered pieces, whose shared upper
 * face the rank whose lower face it is overwrites), and every field has
 * the same halo width on the four sides of I and J; K and data dimensions
 * travel whole, halo included. There is one message per neighbour rank and direction, all
 * fields in it: for each piece that rank fills, in the receiver's order,
 * each field's region in field order. Every message's tag is 0 (one
 * message per pair of ranks each way).
 *
 * A piece across a turned edge is packed by the sender in the receiver's
 * order, as a strided copy (no transpose pass). Vector fields are given as
 * components: the k-th GTS_CUBE_U field pairs with the k-th GTS_CUBE_V
 * field (same dtype, shape, halo and layout). Across a turned edge the
 * receiver's u halo is filled from the sender's v or u, negated as
 * gts_cube_vector_rule says; the negation is made in the packed message,
 * where the message is: on the host for host memory, on the device (its
 * `negate` entry, gts_device_negate) for device memory. A device without
 * one refuses device messages holding a negated piece (GTS_ENOTSUP).
 *
 * Cube corners: the halo cells past both edges of a tile corner lie on no
 * tile; no message fills them, and they keep what they held (FV3 fills
 * them where a stencil needs them, from the two neighbouring edges; a
 * caller that wants a value there writes it). The result is the same for
 * every layout of the fields, since every value is moved, never computed. */
#ifndef GTSTORE_CUBE_HALO_PLAN_H
#define GTSTORE_CUBE_HALO_PLAN_H

#include "gtstore/cube_partition.h"
#include "gtstore/halo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gts_cube_component {
    GTS_CUBE_SCALAR = 0,
    GTS_CUBE_U = 1, /* the x component of a vector */
    GTS_CUBE_V = 2  /* its y component */
} gts_cube_component;

/* The plan of `rank` for `nfields` storages; `components` gives each
 * field's (NULL: all scalars). Errors (GTS_EINVAL, naming the field by its
 * position): a bad partition or rank, nfields < 1, a field that no
 * storage could be (as gts_halo_plan_create checks it; GTS_ETYPE for its
 * dtype), a field without I or J, a domain other than the rank's
 * subdomain (or one point more), halos that differ between sides or fields
 * or are wider than the smallest block (at least one narrower with faces),
 * a U without its V (or a pair that differs, or whose V is not on the
 * faces of the U's axes swapped), a scalar on the faces of one axis only,
 * a boolean vector; GTS_EREADONLY for a read-only field; those of
 * gts_halo_plan_create's allocations. */
int gts_cube_halo_plan_create(const gts_cube_partition *partition, int rank, int nfields,
                              const gts_storage *fields, const gts_cube_component *components,
                              gts_halo_plan **out, gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
