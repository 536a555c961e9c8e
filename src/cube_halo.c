/* The halo pieces of the cubed sphere (gtstore/cube_halo.h). */
#include "gtstore/cube_halo.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The receiver's range along one axis for direction d (-1, 0, 1). Along
 * an axis of faces (stagger 1) the subdomain's upper face is its upper
 * neighbour's lower one: the upper region starts there, one wider, so that
 * the neighbour's value overwrites it (both hold the same face alike). */
static void halo_range(int d, int stagger, int64_t start, int64_t size, int64_t halo,
                       int64_t *first, int64_t *count)
{
    *first = d < 0 ? start - halo : d > 0 ? start + size : start;
    *count = d == 0 ? size : d > 0 ? halo + stagger : halo;
}

/* Where pieces go: the first `capacity` kept, all counted; with `sender`
 * >= 0 only that rank's. */
typedef struct collector {
    gts_cube_piece *out;
    int capacity, count, sender;
} collector;

static void emit(collector *c, const gts_cube_piece *piece)
{
    if (c->sender >= 0 && piece->from_rank != c->sender)
        return;
    if (c->count < c->capacity)
        c->out[c->count] = *piece;
    ++c->count;
}

/* The source range along the sender's axis s of the receiver box, whose
 * first cell maps to from[s] and which moves by step per receiver cell. */
static void source_range(const int64_t *from, const int64_t (*step)[2], const int64_t *size,
                         int s, int64_t *lo, int64_t *hi)
{
    *lo = *hi = from[s];
    for (int a = 0; a < 2; ++a) {
        int64_t end = step[a][s] * (size[a] - 1);
        *lo += end < 0 ? end : 0;
        *hi += end > 0 ? end : 0;
    }
}

/* The receiver cell of sender cell (sx, sy) in the piece's frame: the
 * inverse of a signed permutation, solved per axis. */
static void to_receiver(const gts_cube_piece *p, const int64_t *s, int64_t *r)
{
    for (int a = 0; a < 2; ++a) /* the sender axis that moves along receiver axis a */
        for (int t = 0; t < 2; ++t)
            if (p->step[a][t] != 0)
                r[a] = p->start[a] + (s[t] - p->from[t]) * p->step[a][t];
}

/* A staggered region, line by line along its longer axis: a point past a
 * tile's edge may be on the upper edge of the tile across (a face there),
 * which is the next tile's, so the map changes within a region; each run
 * of points with one owner, one map and consecutive source points is a
 * piece. */
static void staggered_pieces(const gts_cube_partition *p, int rank, const int *stagger,
                             const int64_t *first, const int64_t *count, int dx, int dy,
                             collector *c)
{
    int tile = rank / p->ranks_per_tile, L = count[0] >= count[1] ? 0 : 1, S = 1 - L;
    for (int64_t i = 0; i < count[S]; ++i) {
        gts_cube_piece run = {.from_rank = -1};
        for (int64_t j = 0; j <= count[L]; ++j) {
            gts_cube_piece next = {.to_rank = rank, .direction = {dx, dy}, .from_rank = -1};
            int64_t at[2], frame[4];
            at[L] = first[L] + j, at[S] = first[S] + i;
            int to_tile;
            bool ok = j < count[L] &&
                      gts_cube_wrap_point(p, tile, at[0], at[1], stagger, &to_tile,
                                          &next.from[0], &next.from[1], &next.rotations, frame);
            if (ok) {
                next.from_rank = gts_cube_partition_rank(
                    p, to_tile, gts_cube_block_of(p->n, p->layout[0], next.from[1]),
                    gts_cube_block_of(p->n, p->layout[1], next.from[0]));
                next.step[0][0] = frame[0], next.step[0][1] = frame[1];
                next.step[1][0] = frame[2], next.step[1][1] = frame[3];
                next.start[0] = at[0], next.start[1] = at[1];
                next.size[0] = next.size[1] = 1;
            }
            bool extends = ok && run.from_rank == next.from_rank &&
                           run.rotations == next.rotations &&
                           memcmp(run.step, next.step, sizeof run.step) == 0 &&
                           run.from[0] + run.size[L] * run.step[L][0] == next.from[0] &&
                           run.from[1] + run.size[L] * run.step[L][1] == next.from[1];
            if (extends) {
                ++run.size[L];
                continue;
            }
            if (run.from_rank >= 0)
                emit(c, &run);
            run = next;
        }
    }
}

/* One direction's pieces: the region mapped to the tile holding it, cut
 * along that tile's blocks, each cut mapped back. */
static void direction_pieces(const gts_cube_partition *p, int rank, int64_t halo,
                             const int *stagger, int dx, int dy, collector *c)
{
    int64_t start[2], size[2], first[2], count[2];
    gts_cube_partition_subdomain(p, rank, start, size);
    halo_range(dx, stagger[0], start[0], size[0], halo, &first[0], &count[0]);
    halo_range(dy, stagger[1], start[1], size[1], halo, &first[1], &count[1]);
    if (count[0] == 0 || count[1] == 0)
        return;
    if (stagger[0] || stagger[1]) {
        staggered_pieces(p, rank, stagger, first, count, dx, dy, c);
        return;
    }
    gts_cube_piece whole = {.to_rank = rank, .direction = {dx, dy},
                            .size = {count[0], count[1]}};
    int64_t frame[4];
    int tile = rank / p->ranks_per_tile, to_tile;
    if (!gts_cube_wrap_point(p, tile, first[0], first[1], stagger, &to_tile, &whole.from[0],
                             &whole.from[1], &whole.rotations, frame))
        return; /* a corner of the cube */
    whole.step[0][0] = frame[0], whole.step[0][1] = frame[1];
    whole.step[1][0] = frame[2], whole.step[1][1] = frame[3];
    whole.start[0] = first[0], whole.start[1] = first[1];
    int64_t lo[2], hi[2];
    for (int s = 0; s < 2; ++s)
        source_range(whole.from, (const int64_t (*)[2])whole.step, whole.size, s, &lo[s], &hi[s]);
    int row_lo = gts_cube_block_of(p->n, p->layout[0], lo[1]);
    int row_hi = gts_cube_block_of(p->n, p->layout[0], hi[1]);
    int col_lo = gts_cube_block_of(p->n, p->layout[1], lo[0]);
    int col_hi = gts_cube_block_of(p->n, p->layout[1], hi[0]);
    for (int row = row_lo; row <= row_hi; ++row)
        for (int col = col_lo; col <= col_hi; ++col) {
            int64_t bs[2], bn[2], s0[2], s1[2];
            gts_cube_block(p->n, p->layout[1], col, &bs[0], &bn[0]);
            gts_cube_block(p->n, p->layout[0], row, &bs[1], &bn[1]);
            gts_cube_piece piece = whole;
            piece.from_rank = gts_cube_partition_rank(p, to_tile, row, col);
            for (int s = 0; s < 2; ++s) { /* the overlap, sender coordinates */
                s0[s] = lo[s] > bs[s] ? lo[s] : bs[s];
                s1[s] = hi[s] < bs[s] + bn[s] - 1 ? hi[s] : bs[s] + bn[s] - 1;
            }
            int64_t r0[2] = {0, 0}, r1[2] = {0, 0};
            to_receiver(&whole, s0, r0);
            to_receiver(&whole, s1, r1);
            for (int a = 0; a < 2; ++a) {
                piece.start[a] = r0[a] < r1[a] ? r0[a] : r1[a];
                piece.size[a] = (r0[a] < r1[a] ? r1[a] - r0[a] : r0[a] - r1[a]) + 1;
            }
            for (int s = 0; s < 2; ++s) /* the sender's cell at the new start */
                piece.from[s] = whole.from[s] + (piece.start[0] - whole.start[0]) *
                                whole.step[0][s] + (piece.start[1] - whole.start[1]) *
                                whole.step[1][s];
            emit(c, &piece);
        }
}

static void receive_pieces(const gts_cube_partition *p, int rank, int64_t halo,
                           const int *stagger, collector *c)
{
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            if (dx || dy)
                direction_pieces(p, rank, halo, stagger, dx, dy, c);
}

/* Every receiver's list, keeping the pieces `rank` sends. */
static void send_pieces(const gts_cube_partition *p, int rank, int64_t halo,
                        const int *stagger, collector *c)
{
    c->sender = rank;
    for (int q = 0; q < p->nranks; ++q)
        receive_pieces(p, q, halo, stagger, c);
}

int gts_cube_halo_pieces(const gts_cube_partition *partition, int rank, int64_t halo, int send,
                         gts_cube_piece *out, int capacity, int *count, gts_error *err)
{
    return gts_cube_halo_pieces_staggered(partition, rank, halo, NULL, send, out, capacity,
                                          count, err);
}

/* GTS_EINVAL where an argument documented as 0 or 1 (a stagger entry; send,
 * a direction rather than any true value) is neither. */
static int check_zero_or_one(int value, const char *who, gts_error *err)
{
    if (value != 0 && value != 1)
        return gts_error_set(err, GTS_EINVAL, "%s is %d, not 0 or 1", who, value);
    return GTS_OK;
}

int gts_cube_halo_pieces_staggered(const gts_cube_partition *partition, int rank,
                                   int64_t halo, const int *stagger, int send,
                                   gts_cube_piece *out, int capacity, int *count,
                                   gts_error *err)
{
    static const int centred[2] = {0, 0};
    int rc = gts_cube_partition_check(partition, err);
    if (rc)
        return rc;
    if (!count || (!out && capacity > 0) || capacity < 0)
        return gts_error_set(err, GTS_EINVAL, "%s", !count ? "count: NULL"
                             : capacity < 0 ? "capacity: negative" : "out: NULL");
    if (rank < 0 || rank >= partition->nranks)
        return gts_error_set(err, GTS_EINVAL, "rank: %d is outside [0, %d)", rank,
                             partition->nranks);
    if (!stagger)
        stagger = centred;
    for (int a = 0; a < 2 && !rc; ++a)
        rc = check_zero_or_one(stagger[a], a ? "stagger: entry 1" : "stagger: entry 0", err);
    if (rc || (rc = check_zero_or_one(send, "send", err)))
        return rc;
    /* faces: the upper region is one wider, and must lie in one block too */
    rc = gts_cube_partition_check_halo(partition, halo, stagger[0] || stagger[1], err);
    if (rc)
        return rc;
    collector c = {.out = out, .capacity = capacity, .sender = -1};
    if (send)
        send_pieces(partition, rank, halo, stagger, &c);
    else
        receive_pieces(partition, rank, halo, stagger, &c);
    *count = c.count;
    return 0;
}
