/* The cubed-sphere decomposition and its halo pieces: ranks, the edges'
 * gluing and turns, the neighbour tables of layouts 1x1, 2x2, 3x3 (against
 * a transcription of pace's CubedSpherePartitioner rank algebra) and 2x3,
 * and the pieces against a reference that wraps every halo cell alone. */
#include "check.h"

#include <stdlib.h>

#include "gtstore/cube_halo.h"
#include "gtstore/cube_partition.h"

/* ---- pace's rank algebra, transcribed (square layouts only) ---------------- */

/* Python's floor division and modulo: pace's corners pass unwrapped ranks
 * (negative ones too) from one edge function to the next. */
static int fdiv(int a, int b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int fmod_(int a, int b)
{
    return a - fdiv(a, b) * b;
}

typedef struct pace {
    int L, tpr;
} pace;

typedef struct boundary {
    int to, rot;
} boundary;

static int tile_of(const pace *p, int r) { return fdiv(r, p->tpr); }
static int row_of(const pace *p, int r) { return fmod_(r, p->tpr) / p->L; }
static int col_of(const pace *p, int r) { return fmod_(r, p->tpr) % p->L; }
static bool even(int v) { return fmod_(v, 2) == 0; }

/* fliplr(rotate(tile rank, 1)): (j, i) -> (L-1-i, L-1-j) */
static int flip_rotate(const pace *p, int tile_rank)
{
    int j = tile_rank / p->L, i = tile_rank % p->L;
    return (p->L - 1 - i) * p->L + (p->L - 1 - j);
}

static boundary left_edge(const pace *p, int r)
{
    if (col_of(p, r) == 0) {
        if (even(tile_of(p, r)))
            return (boundary){p->tpr * fdiv(r - 2 * p->tpr, p->tpr) +
                                  flip_rotate(p, fmod_(r, p->tpr)), 1};
        return (boundary){r + p->L - 1 - p->tpr, 0};
    }
    return (boundary){r - 1, 0};
}

static boundary right_edge(const pace *p, int r)
{
    if (col_of(p, r) == p->L - 1) {
        if (!even(tile_of(p, r)))
            return (boundary){p->tpr * fdiv(r + 2 * p->tpr, p->tpr) +
                                  flip_rotate(p, fmod_(r, p->tpr)), 1};
        return (boundary){r - p->L + 1 + p->tpr, 0};
    }
    return (boundary){r + 1, 0};
}

static boundary top_edge(const pace *p, int r)
{
    if (row_of(p, r) == p->L - 1) {
        if (even(tile_of(p, r)))
            return (boundary){(tile_of(p, r) + 2) * p->tpr + flip_rotate(p, fmod_(r, p->tpr)), 3};
        return (boundary){r - (p->L - 1) * p->L + p->tpr, 0};
    }
    return (boundary){r + p->L, 0};
}

static boundary bottom_edge(const pace *p, int r)
{
    bool bottom = row_of(p, r) == 0;
    if (bottom && !even(tile_of(p, r)))
        return (boundary){(tile_of(p, r) - 2) * p->tpr + flip_rotate(p, fmod_(r, p->tpr)), 3};
    if (bottom)
        return (boundary){r + (p->L - 1) * p->L - p->tpr, 0};
    return (boundary){r - p->L, 0};
}

typedef boundary (*edge_fn)(const pace *, int);

static boundary corner(const pace *p, int r, edge_fn first, edge_fn second)
{
    boundary a = first(p, r), b = second(p, a.to);
    return (boundary){b.to, a.rot + b.rot};
}

/* pace's boundary(direction, rank): GTS_NO_RANK for None. */
static boundary pace_boundary(const pace *p, int r, int dx, int dy)
{
    bool left = col_of(p, r) == 0, right = col_of(p, r) == p->L - 1;
    bool bottom = row_of(p, r) == 0, top = row_of(p, r) == p->L - 1;
    bool ev = even(tile_of(p, r));
    boundary b = {0, 0};
    bool none = (dx == -1 && dy == 1 && top && left) || (dx == 1 && dy == 1 && top && right) ||
                (dx == -1 && dy == -1 && bottom && left) ||
                (dx == 1 && dy == -1 && bottom && right);
    if (dx == -1 && dy == 0) b = left_edge(p, r);
    if (dx == 1 && dy == 0) b = right_edge(p, r);
    if (dx == 0 && dy == 1) b = top_edge(p, r);
    if (dx == 0 && dy == -1) b = bottom_edge(p, r);
    if (dx == -1 && dy == 1 && !(top && left))
        b = corner(p, r, left_edge, ev && left ? left_edge : top_edge);
    if (dx == 1 && dy == 1 && !(top && right))
        b = corner(p, r, top_edge, ev && top ? bottom_edge : right_edge);
    if (dx == -1 && dy == -1 && !(bottom && left))
        b = corner(p, r, bottom_edge, !ev && bottom ? top_edge : left_edge);
    if (dx == 1 && dy == -1 && !(bottom && right))
        b = corner(p, r, bottom_edge, !ev && bottom ? bottom_edge : right_edge);
    /* unwrapped ranks (even -1) are wrapped last, as pace does */
    return none ? (boundary){GTS_NO_RANK, 0} : (boundary){fmod_(b.to, 6 * p->tpr), b.rot};
}

/* ---- tests ------------------------------------------------------------------- */

static void test_init(void)
{
    gts_cube_partition p;
    if (CHECK_OK(gts_cube_partition_init(&p, 12, 2, 3, ERR))) {
        CHECK_INT_EQ(p.nranks, 36);
        CHECK_INT_EQ(p.ranks_per_tile, 6);
        CHECK_INT_EQ(gts_cube_partition_min_block(&p), 4);
        int tile, row, column;
        gts_cube_partition_locate(&p, 17, &tile, &row, &column); /* tile 2, rank 5 in it */
        CHECK(tile == 2 && row == 1 && column == 2);
        CHECK_INT_EQ(gts_cube_partition_rank(&p, 2, 1, 2), 17);
        int64_t start[2], size[2];
        gts_cube_partition_subdomain(&p, 17, start, size);
        CHECK(start[0] == 8 && size[0] == 4 && start[1] == 6 && size[1] == 6);
    }
    if (CHECK_OK(gts_cube_partition_init(&p, 7, 2, 3, ERR))) { /* 7 = 3 + 2 + 2; 4 + 3 */
        int64_t start[2], size[2];
        gts_cube_partition_subdomain(&p, 0, start, size);
        CHECK(start[0] == 0 && size[0] == 3 && start[1] == 0 && size[1] == 4);
        gts_cube_partition_subdomain(&p, 5, start, size);
        CHECK(start[0] == 5 && size[0] == 2 && start[1] == 4 && size[1] == 3);
        CHECK_INT_EQ(gts_cube_partition_min_block(&p), 2);
    }
    CHECK_FAILS(gts_cube_partition_init(&p, 0, 1, 1, ERR), GTS_EINVAL, "n:");
    CHECK_FAILS(gts_cube_partition_init(&p, 4, 0, 1, ERR), GTS_EINVAL, "rows");
    CHECK_FAILS(gts_cube_partition_init(&p, 4, 1, -2, ERR), GTS_EINVAL, "columns");
    CHECK_FAILS(gts_cube_partition_init(&p, 4, 5, 1, ERR), GTS_EINVAL, "rows");
    CHECK_FAILS(gts_cube_partition_init(&p, 1 << 30, 1 << 15, 1 << 15, ERR), GTS_EINVAL,
                "overflow");
    CHECK_FAILS(gts_cube_partition_init(NULL, 4, 1, 1, ERR), GTS_EINVAL, "partition");
    gts_cube_partition bad = {.n = 4, .layout = {1, 1}, .ranks_per_tile = 1, .nranks = 5};
    CHECK_FAILS(gts_cube_partition_check(&bad, ERR), GTS_EINVAL, "nranks");
}

/* 1x1: every tile's four neighbours and turns, written out (FV3's cube),
 * and no diagonal neighbour at all: every corner is a cube corner. */
static void test_layout_1x1(void)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 8, 1, 1, ERR)))
        return;
    /* [tile] = {west, east, south, north} and their turns */
    static const int to[6][4] = {{4, 1, 5, 2}, {0, 3, 5, 2}, {0, 3, 1, 4},
                                 {2, 5, 1, 4}, {2, 5, 3, 0}, {4, 1, 3, 0}};
    static const int rot[6][4] = {{1, 0, 0, 3}, {0, 1, 3, 0}, {1, 0, 0, 3},
                                  {0, 1, 3, 0}, {1, 0, 0, 3}, {0, 1, 3, 0}};
    static const int dirs[4][2] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};
    for (int t = 0; t < 6; ++t) {
        for (int d = 0; d < 4; ++d) {
            int turns = -1;
            CHECK_INT_EQ(gts_cube_partition_neighbor(&p, t, dirs[d][0], dirs[d][1], &turns),
                         to[t][d]);
            CHECK_INT_EQ(turns, rot[t][d]);
        }
        for (int dx = -1; dx <= 1; dx += 2)
            for (int dy = -1; dy <= 1; dy += 2)
                CHECK_INT_EQ(gts_cube_partition_neighbor(&p, t, dx, dy, NULL), GTS_NO_RANK);
    }
}

/* Square layouts: every rank's eight neighbours and turns equal pace's. */
static void check_against_pace(int L)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 6 * L, L, L, ERR)))
        return;
    pace ref = {L, L * L};
    int differ = 0;
    for (int r = 0; r < p.nranks; ++r)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                if (!dx && !dy)
                    continue;
                boundary b = pace_boundary(&ref, r, dx, dy);
                int turns = -1, n = gts_cube_partition_neighbor(&p, r, dx, dy, &turns);
                if (n != b.to || (n != GTS_NO_RANK && turns != fmod_(b.rot, 4))) {
                    if (differ++ < 5)
                        fprintf(stderr, "layout %dx%d rank %d (%d, %d): %d turned %d, pace %d "
                                        "turned %d\n", L, L, r, dx, dy, n, turns, b.to, b.rot);
                }
            }
    CHECK_INT_EQ(differ, 0);
}

/* 2x3 (pace has no rectangular layouts): a few entries by hand. */
static void test_layout_2x3(void)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 6, 2, 3, ERR)))
        return; /* blocks: 2 cells along x, 3 along y */
    int turns;
    /* rank 0 (tile 0, row 0, column 0): west of it is tile 4's top row,
     * reversed: cell (-1, 0) is tile 4's (5, 5), rank 4*6 + 1*3 + 2 */
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 0, -1, 0, &turns), 29);
    CHECK_INT_EQ(turns, 1);
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 0, -1, -1, NULL), GTS_NO_RANK);
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 0, 1, 1, NULL), 4);
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 0, 0, -1, &turns), 33); /* tile 5 row 1 */
    CHECK_INT_EQ(turns, 0);
    /* rank 5 (tile 0, row 1, column 2): north is tile 2's west column,
     * cell (4, 6) -> (0, 1) of tile 2: row 0, column 0 */
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 5, 0, 1, &turns), 12);
    CHECK_INT_EQ(turns, 3);
    CHECK_INT_EQ(gts_cube_partition_neighbor(&p, 5, 1, 1, NULL), GTS_NO_RANK);
}

/* Every edge glued both ways: wrapping a halo cell and then the cell just
 * past the other tile's edge again comes back, the turns adding to 0. */
static void test_edges(void)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 5, 1, 1, ERR)))
        return;
    int64_t n = p.n;
    for (int t = 0; t < 6; ++t)
        for (int64_t k = 0; k < n; ++k)
            for (int side = 0; side < 4; ++side) {
                int64_t x = side == 0 ? -1 : side == 1 ? n : k;
                int64_t y = side == 2 ? -1 : side == 3 ? n : k;
                int64_t inside_x = side == 0 ? 0 : side == 1 ? n - 1 : k;
                int64_t inside_y = side == 2 ? 0 : side == 3 ? n - 1 : k;
                int u, turns, back, back_turns;
                int64_t ux, uy, frame[4];
                if (!CHECK(gts_cube_wrap(&p, t, x, y, &u, &ux, &uy, &turns, frame)))
                    continue;
                CHECK(u != t && ux >= 0 && ux < n && uy >= 0 && uy < n);
                /* the cell one step further out on the other tile is this
                 * tile's border cell */
                int64_t bx = ux - (x - inside_x) * frame[0] - (y - inside_y) * frame[2];
                int64_t by = uy - (x - inside_x) * frame[1] - (y - inside_y) * frame[3];
                int64_t rx, ry;
                if (CHECK(gts_cube_wrap(&p, u, bx, by, &back, &rx, &ry, &back_turns, NULL))) {
                    CHECK(back == t && rx == inside_x && ry == inside_y);
                    CHECK_INT_EQ((turns + back_turns) % 4, 0);
                }
            }
    int u, turns;
    int64_t ux, uy;
    CHECK(!gts_cube_wrap(&p, 0, -1, -1, &u, &ux, &uy, &turns, NULL));
    CHECK(!gts_cube_wrap(&p, 3, n, n + 2, &u, &ux, &uy, &turns, NULL));
}

/* The vector rule: four turns are none; one turn of (1, 0) is (0, -1). */
static void test_vector_rule(void)
{
    double u = 1.5, v = -2.0;
    for (int r = 0; r < 4; ++r) {
        int source[2], sign[2];
        gts_cube_vector_rule(1, source, sign);
        double c[2] = {u, v};
        u = sign[0] * c[source[0]];
        v = sign[1] * c[source[1]];
        if (r == 0)
            CHECK(u == -2.0 && v == -1.5);
    }
    CHECK(u == 1.5 && v == -2.0);
    int source[2], sign[2];
    gts_cube_vector_rule(-1, source, sign); /* = 3 */
    CHECK(source[0] == 1 && sign[0] == -1 && source[1] == 0 && sign[1] == 1);
}

/* The pieces against the reference: every halo cell of every rank, wrapped
 * alone (gts_cube_wrap), must be filled exactly once, from the cell the
 * piece names, which the piece's sender owns; cube-corner cells never.
 * And each rank's send list is the receive lists' pieces it sends, in the
 * receivers' order. */
static void check_pieces(int64_t n, int rows, int columns, int64_t halo)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, n, rows, columns, ERR)))
        return;
    int bad = 0, total_received = 0;
    for (int q = 0; q < p.nranks && bad < 5; ++q) {
        int64_t start[2], size[2];
        gts_cube_partition_subdomain(&p, q, start, size);
        int64_t wx = size[0] + 2 * halo, wy = size[1] + 2 * halo;
        int *filled = calloc((size_t)(wx * wy), sizeof *filled);
        int count = 0;
        if (!CHECK_OK(gts_cube_halo_pieces(&p, q, halo, 0, NULL, 0, &count, ERR)))
            break;
        gts_cube_piece *pieces = calloc((size_t)count + 1, sizeof *pieces);
        int again = 0;
        CHECK_OK(gts_cube_halo_pieces(&p, q, halo, 0, pieces, count, &again, ERR));
        CHECK_INT_EQ(again, count);
        total_received += count;
        int tile = q / p.ranks_per_tile;
        for (int i = 0; i < count; ++i) {
            const gts_cube_piece *c = &pieces[i];
            int64_t s0[2], sn[2];
            gts_cube_partition_subdomain(&p, c->from_rank, s0, sn);
            for (int64_t b = 0; b < c->size[1]; ++b)
                for (int64_t a = 0; a < c->size[0]; ++a) {
                    int64_t x = c->start[0] + a, y = c->start[1] + b;
                    int64_t sx = c->from[0] + a * c->step[0][0] + b * c->step[1][0];
                    int64_t sy = c->from[1] + a * c->step[0][1] + b * c->step[1][1];
                    int u, turns;
                    int64_t ux, uy;
                    bool ok = c->to_rank == q && gts_cube_wrap(&p, tile, x, y, &u, &ux, &uy,
                                                               &turns, NULL);
                    ok = ok && u == c->from_rank / p.ranks_per_tile && ux == sx && uy == sy &&
                         turns == c->rotations;
                    ok = ok && sx >= s0[0] && sx < s0[0] + sn[0] && sy >= s0[1] &&
                         sy < s0[1] + sn[1]; /* the sender owns it */
                    int64_t hx = x - start[0] + halo, hy = y - start[1] + halo;
                    ok = ok && hx >= 0 && hx < wx && hy >= 0 && hy < wy;
                    ok = ok && !(hx >= halo && hx < halo + size[0] && hy >= halo &&
                                 hy < halo + size[1]); /* not the domain */
                    if (ok)
                        filled[hy * wx + hx]++;
                    else if (bad++ < 5)
                        fprintf(stderr, "n %lld layout %dx%d halo %lld rank %d piece %d: cell "
                                        "(%lld, %lld) is wrong\n", (long long)n, rows, columns,
                                        (long long)halo, q, i, (long long)x, (long long)y);
                }
        }
        for (int64_t hy = 0; hy < wy; ++hy) /* every halo cell on a tile: once */
            for (int64_t hx = 0; hx < wx; ++hx) {
                bool domain = hx >= halo && hx < halo + size[0] && hy >= halo &&
                              hy < halo + size[1];
                int64_t x = start[0] + hx - halo, y = start[1] + hy - halo;
                int u, turns;
                int64_t ux, uy;
                int expect = !domain && gts_cube_wrap(&p, tile, x, y, &u, &ux, &uy, &turns,
                                                      NULL);
                if (filled[hy * wx + hx] != expect && bad++ < 5)
                    fprintf(stderr, "n %lld layout %dx%d halo %lld rank %d: cell (%lld, %lld) "
                                    "filled %d times\n", (long long)n, rows, columns,
                                    (long long)halo, q, (long long)x, (long long)y,
                                    filled[hy * wx + hx]);
            }
        free(filled);
        free(pieces);
    }
    CHECK_INT_EQ(bad, 0);
    /* the send lists: every piece once, by receiver, in its order */
    int total_sent = 0;
    for (int r = 0; r < p.nranks; ++r) {
        int count = 0;
        CHECK_OK(gts_cube_halo_pieces(&p, r, halo, 1, NULL, 0, &count, ERR));
        gts_cube_piece *sends = calloc((size_t)count + 1, sizeof *sends);
        CHECK_OK(gts_cube_halo_pieces(&p, r, halo, 1, sends, count, &count, ERR));
        total_sent += count;
        int last_to = -1;
        for (int i = 0; i < count; ++i) {
            CHECK(sends[i].from_rank == r && sends[i].to_rank >= last_to);
            last_to = sends[i].to_rank;
        }
        free(sends);
    }
    CHECK_INT_EQ(total_sent, total_received);
}

static void test_pieces(void)
{
    check_pieces(4, 1, 1, 2);
    check_pieces(8, 2, 2, 3);
    check_pieces(9, 3, 3, 3);
    check_pieces(12, 2, 3, 3);  /* rectangular: edges cut blocks */
    check_pieces(7, 2, 3, 2);   /* blocks of unequal size */
    check_pieces(6, 1, 1, 0);   /* no halo: no piece */
    check_pieces(5, 1, 4, 1);
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 6, 2, 2, ERR)))
        return;
    int count;
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, 4, 0, NULL, 0, &count, ERR), GTS_EINVAL, "halo");
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, -1, 0, NULL, 0, &count, ERR), GTS_EINVAL, "halo");
    CHECK_FAILS(gts_cube_halo_pieces(&p, 24, 1, 0, NULL, 0, &count, ERR), GTS_EINVAL, "rank");
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, 1, 0, NULL, 3, &count, ERR), GTS_EINVAL, "out");
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, 1, 0, NULL, 0, NULL, ERR), GTS_EINVAL, "count");
    /* send is a direction, 0 or 1: 2 was taken as sending */
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, 1, 2, NULL, 0, &count, ERR), GTS_EINVAL,
                "send is 2, not 0 or 1");
    CHECK_FAILS(gts_cube_halo_pieces(&p, 0, 1, -1, NULL, 0, &count, ERR), GTS_EINVAL, "send");
    /* faces: the halo must leave room for the shared face */
    int faces[2] = {0, 1}, bad_stagger[2] = {2, 0};
    CHECK_OK(gts_cube_halo_pieces_staggered(&p, 0, 2, faces, 0, NULL, 0, &count, ERR));
    CHECK_FAILS(gts_cube_halo_pieces_staggered(&p, 0, 3, faces, 0, NULL, 0, &count, ERR),
                GTS_EINVAL, "shared face");
    CHECK_FAILS(gts_cube_halo_pieces_staggered(&p, 0, 1, bad_stagger, 0, NULL, 0, &count, ERR),
                GTS_EINVAL, "stagger");
    /* 1x1, halo 1: four pieces, one per edge, turned as the table says */
    gts_cube_partition one;
    gts_cube_piece pieces[8];
    if (CHECK_OK(gts_cube_partition_init(&one, 4, 1, 1, ERR)) &&
        CHECK_OK(gts_cube_halo_pieces(&one, 0, 1, 0, pieces, 8, &count, ERR)) &&
        CHECK_INT_EQ(count, 4)) {
        CHECK(pieces[0].direction[1] == -1 && pieces[0].from_rank == 5);
        CHECK(pieces[1].direction[0] == -1 && pieces[1].from_rank == 4 &&
              pieces[1].rotations == 1);
        /* west of tile 0 is tile 4's top row reversed: (-1, 0) <- (3, 3) */
        CHECK(pieces[1].from[0] == 3 && pieces[1].from[1] == 3);
        CHECK(pieces[1].step[1][0] == -1 && pieces[1].step[1][1] == 0);
        CHECK(pieces[3].direction[1] == 1 && pieces[3].from_rank == 2 &&
              pieces[3].rotations == 3);
    }
}

/* The widest halo: the smallest block (6 cells over 2 x 3 ranks: 2),
 * one less for a staggered field; negatives never. */
static void test_check_halo(void)
{
    gts_cube_partition p;
    if (!CHECK_OK(gts_cube_partition_init(&p, 6, 2, 3, ERR)))
        return;
    CHECK_OK(gts_cube_partition_check_halo(&p, 0, false, ERR));
    CHECK_OK(gts_cube_partition_check_halo(&p, 2, false, ERR));
    CHECK_OK(gts_cube_partition_check_halo(&p, 1, true, ERR));
    CHECK_FAILS(gts_cube_partition_check_halo(&p, 3, false, ERR), GTS_EINVAL,
                "halo: 3 is outside [0, 2] (the smallest block, which must fill it)");
    CHECK_FAILS(gts_cube_partition_check_halo(&p, 2, true, ERR), GTS_EINVAL,
                "halo: 2 is outside [0, 1] (the smallest block less the shared face, which "
                "must fill it)");
    CHECK_FAILS(gts_cube_partition_check_halo(&p, -1, false, ERR), GTS_EINVAL,
                "halo: -1 is outside [0, 2]");
}

int main(void)
{
    test_init();
    test_layout_1x1();
    check_against_pace(2);
    check_against_pace(3);
    test_layout_2x3();
    test_edges();
    test_vector_rule();
    test_pieces();
    test_check_halo();
    return check_summary("cube");
}
