/* Cubed-sphere decomposition: six tiles (the faces of a cube) of n x n
 * cells each, every tile split over the same grid of ranks.
 *
 * Conventions are those of FV3 and of pace's CubedSpherePartitioner, so
 * that a decomposition carries over unchanged:
 * - tiles are numbered 0..5; rank r lies on tile r / ranks_per_tile;
 * - within a tile, ranks are row-major over the rank grid `layout`
 *   (layout[0] rows along y, layout[1] columns along x, pace's
 *   TilePartitioner.layout): tile rank = row * layout[1] + column;
 * - cells are (x, y) with x along a tile's columns (I) and y along its rows
 *   (J), each in [0, n). Blocks are split as gtstore/partition.h splits
 *   them: where n does not divide, the first n % count blocks get one cell
 *   more (FV3 and pace need divisible extents, which give equal blocks);
 * - the edges are glued as in FV3: an even tile t (0, 2, 4) has tile t + 1
 *   to its east and t - 1 (mod 6) to its south, both in the same
 *   orientation, tile t + 2 across its north edge and t - 2 across its west
 *   edge, both turned a quarter; an odd tile mirrors this (t - 1 west and
 *   t + 1 north unturned; t + 2 east and t - 2 south turned).
 *
 * Crossing an edge turns the frame: `rotations` is the number of clockwise
 * quarter turns that data coming from the other tile makes on its way into
 * this tile's frame (pace's n_clockwise_rotations). A vector (u, v) from
 * there is (v, -u) here after one turn, (-u, -v) after two, (-v, u) after
 * three (gts_cube_vector_rule).
 *
 * At the eight corners of the cube three tiles meet: a cell past both edges
 * of a tile corner lies on no tile, so a rank at a tile corner has no
 * neighbour in that diagonal direction (GTS_NO_RANK).
 *
 * Nothing here communicates or allocates: every rank computes the same
 * decomposition (gtstore/cube_halo.h builds the halo pieces on it). */
#ifndef GTSTORE_CUBE_PARTITION_H
#define GTSTORE_CUBE_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "gtstore/error.h"
#include "gtstore/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GTS_CUBE_TILES 6

typedef struct gts_cube_partition {
    int64_t n;          /* cells along each edge of a tile */
    int layout[2];      /* ranks per tile: [0] rows (along y), [1] columns (along x) */
    int ranks_per_tile; /* layout[0] * layout[1] */
    int nranks;         /* 6 * ranks_per_tile */
} gts_cube_partition;

/* A decomposition of tiles of `n` x `n` cells over a rank grid of
 * `rows` x `columns` per tile. GTS_EINVAL (naming the parameter) for n < 1,
 * rows or columns < 1, more blocks than cells along a side, or more ranks
 * than an int holds. */
int gts_cube_partition_init(gts_cube_partition *partition, int64_t n, int rows, int columns,
                            gts_error *err);

/* Whether `partition` is one gts_cube_partition_init could have made
 * (GTS_EINVAL naming the field otherwise). The queries below trust it. */
int gts_cube_partition_check(const gts_cube_partition *partition, gts_error *err);

/* Where `rank` (0 <= rank < nranks) lies: its tile, row and column. */
void gts_cube_partition_locate(const gts_cube_partition *partition, int rank, int *tile,
                               int *row, int *column);

/* The rank at tile, row, column (each in range). */
int gts_cube_partition_rank(const gts_cube_partition *partition, int tile, int row, int column);

/* The cells of `rank`: start[0], size[0] along x; start[1], size[1] along y. */
void gts_cube_partition_subdomain(const gts_cube_partition *partition, int rank, int64_t *start,
                                  int64_t *size);

/* The smallest block along either side: a halo must fit in it. */
int64_t gts_cube_partition_min_block(const gts_cube_partition *partition);

/* Whether a halo of `halo` cells on each side of I and J fits: in [0, the
 * smallest block], less one for a `staggered` field (whose upper region is
 * one wider, the shared face). GTS_EINVAL otherwise ("halo: 5 is outside
 * [0, 4] (the smallest block, which must fill it)"). */
int gts_cube_partition_check_halo(const gts_cube_partition *partition, int64_t halo,
                                  bool staggered, gts_error *err);

/* The cell of the cube at (x, y) of `tile` where at most one coordinate
 * lies outside [0, n) (and by at most n): the tile holding it, its
 * coordinates there, and the turns (see above) from there to `tile`.
 * `frame` (may be NULL) gets how the coordinates there change per cell
 * here: (frame[0], frame[1]) per +1 in x, (frame[2], frame[3]) per +1 in
 * y (each -1, 0 or 1), valid on that side of the edge. Returns false,
 * writing nothing, for a cell past both edges of a tile corner (no tile
 * holds it) or a coordinate further out. */
bool gts_cube_wrap(const gts_cube_partition *partition, int tile, int64_t x, int64_t y,
                   int *to_tile, int64_t *to_x, int64_t *to_y, int *rotations,
                   int64_t *frame);

/* As gts_cube_wrap, for a point of a staggered field: `stagger` (NULL:
 * none) per axis 0 for cell centres, 1 for the cells' lower faces (x the
 * face between cells x - 1 and x; the tile's edges are faces 0 and n). A
 * face on the tile's upper edge (x == n) counts as the next tile's face 0,
 * as the point past it does: that tile's rank owns it. The point there is
 * staggered along its own axes as this one is along the axes that map to
 * them (a turn makes x faces y faces). */
bool gts_cube_wrap_point(const gts_cube_partition *partition, int tile, int64_t x, int64_t y,
                         const int *stagger, int *to_tile, int64_t *to_x, int64_t *to_y,
                         int *rotations, int64_t *frame);

/* The block of `count` blocks over `n` cells holding cell c (0 <= c < n),
 * as the subdomains split a tile edge. */
int gts_cube_block_of(int64_t n, int count, int64_t c);

/* Block `index` of `count` over `n` cells: its first cell and size. */
void gts_cube_block(int64_t n, int count, int index, int64_t *start, int64_t *size);

/* The rank next to `rank` in direction (dx, dy) (each -1, 0 or 1, not
 * both 0): the owner of the cell just past the subdomain that way, at its
 * first row or column where the direction is 0 along it (on a square
 * layout with divisible n, the one rank that fills that halo, as pace's
 * CubedSpherePartitioner.boundary says). GTS_NO_RANK at a cube corner.
 * `rotations` (may be NULL) gets the turns from there to here. */
int gts_cube_partition_neighbor(const gts_cube_partition *partition, int rank, int dx, int dy,
                                int *rotations);

/* The vector rule: after `rotations` clockwise quarter turns (any
 * integer, taken mod 4), component c (0: u, 1: v) here is sign[c] (1 or
 * -1) times component source[c] there. The one statement of the rule,
 * which the halo pieces (gtstore/cube_halo.h) follow. */
void gts_cube_vector_rule(int rotations, int *source, int *sign);

#ifdef __cplusplus
}
#endif
#endif
