/* The halo pieces of a cubed-sphere decomposition (gtstore/cube_partition.h):
 * which cells of which rank fill which halo cells of which other rank, and
 * turned how.
 *
 * A rank's halo of width `halo` around its subdomain has eight regions
 * (directions dx, dy in {-1, 0, 1}, not both 0). Each lies on the rank's
 * own tile or, past a tile edge, on the tile across it; there it may span
 * several ranks' blocks (always on rectangular layouts, whose blocks do not
 * line up across a turned edge), and each overlap is one piece. A region
 * past both edges of a tile corner lies at a corner of the cube, on no
 * tile: it gets no piece (the cube-corner rule: those halo cells keep
 * whatever they held; docs/distributed.md).
 *
 * A piece names its cells on both sides: the receiver's box (start, size,
 * in the receiver tile's coordinates) and, for the sender, the cell that
 * lands at `start` and how the sender's coordinates move per receiver cell
 * (`step`). The data of a piece travels in the receiver's order, so a turn
 * is a strided copy on the sender's side; vector components follow
 * gts_cube_vector_rule for the piece's `rotations`.
 *
 * Every rank computes every rank's pieces alike, so both ends of a message
 * agree on its content without asking: the message from A to B is the
 * pieces of B's receive list whose sender is A, in that list's order. */
#ifndef GTSTORE_CUBE_HALO_H
#define GTSTORE_CUBE_HALO_H

#include <stdint.h>

#include "gtstore/cube_partition.h"
#include "gtstore/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gts_cube_piece {
    int from_rank, to_rank;
    int direction[2];   /* dx, dy: the receiver's halo region it fills */
    int64_t start[2];   /* the receiver's first cell (x, y), its tile's coordinates */
    int64_t size[2];    /* cells along the receiver's x and y */
    int64_t from[2];    /* the sender's cell (its tile's coordinates) that lands at start */
    int64_t step[2][2]; /* step[a]: the sender's (x, y) change per cell along receiver axis a */
    int rotations;      /* clockwise quarter turns from the sender's frame to the receiver's */
} gts_cube_piece;

/* The pieces `rank` receives (`send` 0: to_rank == rank, in direction
 * order, dy then dx from -1 to 1, each direction's pieces in the order of
 * the sending tile's blocks, row-major) or sends (`send` 1: from_rank ==
 * rank, by receiver, each receiver's in its receive order). Writes up to
 * `capacity` to `out` (may be NULL when capacity is 0) and the total to
 * `*count`. GTS_EINVAL for a bad partition or rank, a `send` other than 0
 * or 1, a negative halo, or one wider than the smallest block (no rank
 * could fill it). Sending costs a pass over all
 * ranks (every receiver's list), receiving a pass over the blocks of the
 * eight regions. */
int gts_cube_halo_pieces(const gts_cube_partition *partition, int rank, int64_t halo, int send,
                         gts_cube_piece *out, int capacity, int *count, gts_error *err);

/* As gts_cube_halo_pieces, for a staggered field (`stagger` per axis: 0
 * cell centres, 1 the cells' lower faces, as gts_cube_wrap_point; NULL:
 * centres). The subdomain's points along a face axis are its faces
 * start .. start + size, the last one shared with the upper neighbour (or
 * the next tile): the upper region starts at that face and is halo + 1
 * wide, so that the rank whose lower face it is overwrites it, as pace's
 * synchronize_vector_interfaces does, and both hold the same value. The
 * halo must then be smaller than the smallest block. */
int gts_cube_halo_pieces_staggered(const gts_cube_partition *partition, int rank,
                                   int64_t halo, const int *stagger, int send,
                                   gts_cube_piece *out, int capacity, int *count,
                                   gts_error *err);

#ifdef __cplusplus
}
#endif
#endif
