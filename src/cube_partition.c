/* The cubed-sphere decomposition (gtstore/cube_partition.h): ranks, blocks
 * and the gluing of the tiles' edges. */
#include "gtstore/cube_partition.h"

#include <limits.h>
#include <stddef.h>

int gts_cube_partition_init(gts_cube_partition *partition, int64_t n, int rows, int columns,
                            gts_error *err)
{
    if (!partition)
        return gts_error_set(err, GTS_EINVAL, "partition: NULL");
    if (n < 1)
        return gts_error_set(err, GTS_EINVAL, "n: %lld cells per tile edge is not positive",
                             (long long)n);
    if (rows < 1 || columns < 1)
        return gts_error_set(err, GTS_EINVAL, "%s: %d ranks is not positive",
                             rows < 1 ? "rows" : "columns", rows < 1 ? rows : columns);
    if (rows > n || columns > n)
        return gts_error_set(err, GTS_EINVAL,
                             "%s: %d blocks along a tile edge of %lld cells (every rank must "
                             "own a cell)",
                             rows > n ? "rows" : "columns", rows > n ? rows : columns,
                             (long long)n);
    if (rows > INT_MAX / columns / GTS_CUBE_TILES)
        return gts_error_set(err, GTS_EINVAL, "rows, columns: %d x %d x 6 ranks overflow an int",
                             rows, columns);
    *partition = (gts_cube_partition){.n = n,
                                      .layout = {rows, columns},
                                      .ranks_per_tile = rows * columns,
                                      .nranks = GTS_CUBE_TILES * rows * columns};
    return 0;
}

int gts_cube_partition_check(const gts_cube_partition *partition, gts_error *err)
{
    if (!partition)
        return gts_error_set(err, GTS_EINVAL, "partition: NULL");
    gts_cube_partition fresh;
    int rc = gts_cube_partition_init(&fresh, partition->n, partition->layout[0],
                                     partition->layout[1], err);
    if (rc)
        return rc;
    if (partition->ranks_per_tile != fresh.ranks_per_tile || partition->nranks != fresh.nranks)
        return gts_error_set(err, GTS_EINVAL,
                             "partition: ranks_per_tile %d and nranks %d do not match its "
                             "layout %d x %d",
                             partition->ranks_per_tile, partition->nranks, partition->layout[0],
                             partition->layout[1]);
    return 0;
}

void gts_cube_partition_locate(const gts_cube_partition *p, int rank, int *tile, int *row,
                               int *column)
{
    int within = rank % p->ranks_per_tile;
    *tile = rank / p->ranks_per_tile;
    *row = within / p->layout[1];
    *column = within % p->layout[1];
}

int gts_cube_partition_rank(const gts_cube_partition *p, int tile, int row, int column)
{
    return tile * p->ranks_per_tile + row * p->layout[1] + column;
}

/* Block `index` of `count` over n cells: the first n % count get one more. */
void gts_cube_block(int64_t n, int count, int index, int64_t *start, int64_t *size)
{
    int64_t base = n / count, extra = n % count;
    *size = base + (index < extra);
    *start = index * base + (index < extra ? index : extra);
}

/* The block of `count` holding cell c (0 <= c < n). */
int gts_cube_block_of(int64_t n, int count, int64_t c)
{
    int64_t base = n / count, extra = n % count, wide = extra * (base + 1);
    return (int)(c < wide ? c / (base + 1) : extra + (c - wide) / base);
}

void gts_cube_partition_subdomain(const gts_cube_partition *p, int rank, int64_t *start,
                                  int64_t *size)
{
    int tile, row, column;
    gts_cube_partition_locate(p, rank, &tile, &row, &column);
    gts_cube_block(p->n, p->layout[1], column, &start[0], &size[0]);
    gts_cube_block(p->n, p->layout[0], row, &start[1], &size[1]);
}

int64_t gts_cube_partition_min_block(const gts_cube_partition *p)
{
    int most = p->layout[0] > p->layout[1] ? p->layout[0] : p->layout[1];
    return p->n / most;
}

int gts_cube_partition_check_halo(const gts_cube_partition *p, int64_t halo, bool staggered,
                                  gts_error *err)
{
    int64_t smallest = gts_cube_partition_min_block(p) - (staggered ? 1 : 0);
    if (halo < 0 || halo > smallest)
        return gts_error_set(err, GTS_EINVAL,
                             "halo: %lld is outside [0, %lld] (the smallest block%s, which "
                             "must fill it)",
                             (long long)halo, (long long)smallest,
                             staggered ? " less the shared face" : "");
    return GTS_OK;
}

/* The edges, as a table: for each parity of tile and each side (west,
 * east, south, north), the tile across it (an offset mod 6), the turns from
 * there to here, and where a cell past that side lies there, as
 * (x', y') = (ax * x + bx * y + cx * n + dx, ay * x + by * y + cy * n + dy). */
typedef struct edge {
    int tile_offset, rotations;
    int ax, bx, cx, dx, ay, by, cy, dy;
} edge;

enum { WEST, EAST, SOUTH, NORTH };

static const edge EDGES[2][4] = {
    { /* even tiles */
     [WEST] = {4, 1, 0, -1, 1, -1, 1, 0, 1, 0},  /* (n-1-y, n+x) on t-2 */
     [EAST] = {1, 0, 1, 0, -1, 0, 0, 1, 0, 0},   /* (x-n, y) on t+1 */
     [SOUTH] = {5, 0, 1, 0, 0, 0, 0, 1, 1, 0},   /* (x, y+n) on t-1 */
     [NORTH] = {2, 3, 0, 1, -1, 0, -1, 0, 1, -1}, /* (y-n, n-1-x) on t+2 */
    },
    { /* odd tiles */
     [WEST] = {5, 0, 1, 0, 1, 0, 0, 1, 0, 0},    /* (x+n, y) on t-1 */
     [EAST] = {2, 1, 0, -1, 1, -1, 1, 0, -1, 0}, /* (n-1-y, x-n) on t+2 */
     [SOUTH] = {4, 3, 0, 1, 1, 0, -1, 0, 1, -1}, /* (n+y, n-1-x) on t-2 */
     [NORTH] = {1, 0, 1, 0, 0, 0, 0, 1, -1, 0},  /* (x, y-n) on t+1 */
    },
};

/* One crossing of the edge on `side`: the point's coordinates and stagger
 * on the tile across, and the frame of the map. */
static void cross_edge(const gts_cube_partition *p, int *tile, int side, int64_t *x, int64_t *y,
                       int *stagger, int *rotations, int64_t *frame)
{
    const edge *e = &EDGES[*tile % 2][side];
    /* In half cells (a cell's centre 2x + 1, its lower face 2x) the edge's
     * map of centres, x' = a x + b y + c n + d, is X' = a X + b Y + 2 (c n
     * + d) + 1 - a - b: one map for centres and faces alike. */
    int64_t n = p->n, X = 2 * *x + 1 - stagger[0], Y = 2 * *y + 1 - stagger[1];
    int64_t X2 = e->ax * X + e->bx * Y + 2 * (e->cx * n + e->dx) + 1 - e->ax - e->bx;
    int64_t Y2 = e->ay * X + e->by * Y + 2 * (e->cy * n + e->dy) + 1 - e->ay - e->by;
    int sx = e->ax ? stagger[0] : stagger[1], sy = e->ay ? stagger[0] : stagger[1];
    *tile = (*tile + e->tile_offset) % GTS_CUBE_TILES;
    *x = (X2 - 1 + sx) / 2;
    *y = (Y2 - 1 + sy) / 2;
    stagger[0] = sx, stagger[1] = sy;
    *rotations += e->rotations;
    /* the frames compose: here = frame(there) after this edge's */
    int64_t f[4] = {e->ax * frame[0] + e->bx * frame[1], e->ay * frame[0] + e->by * frame[1],
                    e->ax * frame[2] + e->bx * frame[3], e->ay * frame[2] + e->by * frame[3]};
    for (int i = 0; i < 4; ++i)
        frame[i] = f[i];
}

/* Where a point lies: past an edge (strictly outside), on the tile's
 * upper edge (a face at n: the next tile's), or inside. */
static int past(int64_t c, int stagger, int64_t n)
{
    return c < 0 || c > n - 1 + stagger ? 2 : stagger && c == n ? 1 : 0;
}

bool gts_cube_wrap_point(const gts_cube_partition *p, int tile, int64_t x, int64_t y,
                         const int *stagger, int *to_tile, int64_t *to_x, int64_t *to_y,
                         int *rotations, int64_t *frame)
{
    int64_t n = p->n, f[4] = {1, 0, 0, 1};
    int st[2] = {stagger ? stagger[0] : 0, stagger ? stagger[1] : 0}, turns = 0;
    if (x < -n || x > 2 * n || y < -n || y > 2 * n)
        return false;
    /* at most two crossings: past one edge, then (a face) onto the upper
     * edge of the tile across, which is the next one's */
    for (int crossing = 0; crossing < 3; ++crossing) {
        int px = past(x, st[0], n), py = past(y, st[1], n);
        if (!px && !py)
            break;
        /* past both edges of a tile corner, or on both (a face of each
           at the corner itself): a corner of the cube, no tile. A face on
           one edge and past the other lies on the edge between the two
           tiles across: crossed where it is past first. */
        if ((px == 2 && py == 2) || (px == 1 && py == 1) || crossing == 2)
            return false;
        int side = px > py ? (x < 0 ? WEST : EAST) : (y < 0 ? SOUTH : NORTH);
        cross_edge(p, &tile, side, &x, &y, st, &turns, f);
    }
    *to_tile = tile, *to_x = x, *to_y = y, *rotations = turns % 4;
    if (frame)
        for (int i = 0; i < 4; ++i)
            frame[i] = f[i];
    return true;
}

bool gts_cube_wrap(const gts_cube_partition *p, int tile, int64_t x, int64_t y, int *to_tile,
                   int64_t *to_x, int64_t *to_y, int *rotations, int64_t *frame)
{
    return gts_cube_wrap_point(p, tile, x, y, NULL, to_tile, to_x, to_y, rotations, frame);
}

int gts_cube_partition_neighbor(const gts_cube_partition *p, int rank, int dx, int dy,
                                int *rotations)
{
    int64_t start[2], size[2];
    gts_cube_partition_subdomain(p, rank, start, size);
    int64_t x = dx < 0 ? start[0] - 1 : dx > 0 ? start[0] + size[0] : start[0];
    int64_t y = dy < 0 ? start[1] - 1 : dy > 0 ? start[1] + size[1] : start[1];
    int tile = rank / p->ranks_per_tile, to_tile, turns;
    int64_t to_x, to_y;
    if (!gts_cube_wrap(p, tile, x, y, &to_tile, &to_x, &to_y, &turns, NULL))
        return GTS_NO_RANK;
    if (rotations)
        *rotations = turns;
    return gts_cube_partition_rank(p, to_tile, gts_cube_block_of(p->n, p->layout[0], to_y),
                                   gts_cube_block_of(p->n, p->layout[1], to_x));
}

void gts_cube_vector_rule(int rotations, int *source, int *sign)
{
    static const int SOURCE[4][2] = {{0, 1}, {1, 0}, {0, 1}, {1, 0}};
    static const int SIGN[4][2] = {{1, 1}, {1, -1}, {-1, -1}, {-1, 1}};
    int r = ((rotations % 4) + 4) % 4;
    for (int c = 0; c < 2; ++c) {
        source[c] = SOURCE[r][c];
        sign[c] = SIGN[r][c];
    }
}
