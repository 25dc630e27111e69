/* board.h - Go board of any size 2..19: stones, groups, exact liberties, captures,
 * simple ko point and an incremental Zobrist hash.  A board is a plain value: copying
 * it (board_copy / struct assignment) is how search branches; there is no undo.
 *
 * Points are "padded" 1-D indices: v = (row + 1) * stride + (col + 1), stride = size + 2,
 * row 0 is the TOP row.  Index 0 is a border point and doubles as the PASS sentinel.
 * The compact index used across the Python boundary is row * size + col (pass = size*size);
 * board_to_compact / board_from_compact convert.  Random playouts, which play on a board,
 * are a floor above it (playout.h). */
#ifndef GO_BOARD_H
#define GO_BOARD_H

#include <stdint.h>
#include <stddef.h>

#define BOARD_MIN_SIZE 2
#define BOARD_MAX_SIZE 19
#define BOARD_MAX_STRIDE (BOARD_MAX_SIZE + 2)
#define BOARD_MAX_POINTS (BOARD_MAX_STRIDE * BOARD_MAX_STRIDE)
#define BOARD_MAX_AREA (BOARD_MAX_SIZE * BOARD_MAX_SIZE)
#define BOARD_PASS 0
#define BOARD_NONE (-1)
#define BOARD_RECENT 4

enum { EMPTY = 0, BLACK = 1, WHITE = 2, BORDER = 3 };

/* Reasons a move is illegal (0 = legal). */
enum {
    MOVE_OK = 0,
    MOVE_OCCUPIED = 1,
    MOVE_SUICIDE = 2,
    MOVE_KO = 3,
    MOVE_SUPERKO = 4,
    MOVE_OFF_BOARD = 5,
    MOVE_BAD_COLOR = 6
};

typedef struct {
    int16_t size;                        /* N, 2..19 */
    int16_t stride;                      /* N + 2 */
    int16_t ko;                          /* point the side in ko_color may not play, or BOARD_NONE */
    uint8_t ko_color;                    /* colour barred from ko (the opponent of the capturer) */
    uint8_t to_move;                     /* BLACK or WHITE */
    int16_t passes;                      /* consecutive passes just played, saturating at 2 */
    int16_t nempty;                      /* number of empty points */
    int32_t move_count;                  /* moves (incl. passes) played on this board */
    int32_t captures[3];                 /* stones captured BY colour (index BLACK/WHITE) */
    int16_t recent[BOARD_RECENT];        /* last moves, most recent first (BOARD_PASS, or BOARD_NONE) */
    uint64_t hash;                       /* Zobrist hash of the stones only (positional) */
    uint8_t color[BOARD_MAX_POINTS];     /* EMPTY/BLACK/WHITE/BORDER */
    int16_t head[BOARD_MAX_POINTS];      /* group representative of a stone */
    int16_t next[BOARD_MAX_POINTS];      /* circular list of the stones of a group */
    int16_t libs[BOARD_MAX_POINTS];      /* exact liberty count, valid at the head */
    int16_t nstones[BOARD_MAX_POINTS];   /* stone count, valid at the head */
    int16_t empty[BOARD_MAX_AREA];       /* list of empty points */
    int16_t empty_pos[BOARD_MAX_POINTS]; /* index of an empty point in `empty` */
} board_t;

/* Zobrist keys, filled once by board_global_init (idempotent, fixed seed). */
extern uint64_t zobrist_stone[3][BOARD_MAX_POINTS];
extern uint64_t zobrist_aux[BOARD_MAX_POINTS];

/* Fills the Zobrist tables once (pthread_once): safe to call more than once, from any thread. */
void board_global_init(void);
/* Clears `b` to an empty board of `size`; returns 0, or -1 if size is outside 2..19. */
int board_init(board_t *b, int size);
/* Copies src into dst (a plain struct copy). */
void board_copy(board_t *dst, const board_t *src);
/* Opposite colour of BLACK/WHITE. */
static inline int board_other(int c) { return 3 - c; }
/* Padded index of (row, col); no bounds check. */
static inline int board_point(const board_t *b, int row, int col) { return (row + 1) * b->stride + col + 1; }
/* Compact index (row*N+col, pass = N*N) -> padded point; BOARD_NONE if out of range. */
int board_from_compact(const board_t *b, int compact);
/* Padded point (or BOARD_PASS) -> compact index. */
int board_to_compact(const board_t *b, int v);
/* Reason (MOVE_*) why `c` may not play at v under simple ko; suicide allowed if allow_suicide.
 * Does not know about superko (see game.h). */
int board_check(const board_t *b, int v, int c, int allow_suicide);
/* Plays colour c at v (or passes with BOARD_PASS) WITHOUT any legality check beyond the
 * caller's; a suicide removes the own group.  Sets to_move to the opponent of c. */
void board_play(board_t *b, int v, int c);
/* Zobrist hash of the stones after c plays at v (v must be empty), without playing. */
uint64_t board_hash_after(const board_t *b, int v, int c);
/* Runs the statement that follows once for each of the four neighbours n of point v (the
 * border included): FOR_NEIGHBOURS(b, v, n) { ... }. */
#define FOR_NEIGHBOURS(b, v, n)                                                     \
    for (int _k = 0, _d[4] = {-(b)->stride, -1, 1, (b)->stride}, n;                 \
         _k < 4 && ((n = (v) + _d[_k]), 1); _k++)
/* The distinct group heads of colour `col` next to v, written to out; returns how many (<= 4). */
static inline int board_neighbour_groups(const board_t *b, int v, int col, int16_t out[4]) {
    int k = 0;
    FOR_NEIGHBOURS(b, v, n) {
        if (b->color[n] != col) continue;
        int h = b->head[n];
        int seen = 0;
        for (int i = 0; i < k; i++) seen |= (out[i] == h);
        if (!seen) out[k++] = (int16_t)h;
    }
    return k;
}
/* Liberties of the group at v (0 for an empty point). */
static inline int board_libs(const board_t *b, int v) { return b->libs[b->head[v]]; }
/* True if v is an empty point all of whose neighbours are c or border, with at most one
 * (none on the edge) diagonal enemy stone: a point random play must not fill. */
int board_is_eye(const board_t *b, int v, int c);
/* Tromp-Taylor area: writes owner of each compact point (EMPTY for neutral) into
 * owner[N*N] if non-NULL, returns black area minus white area. */
int board_area(const board_t *b, uint8_t *owner);
/* Fast xorshift64* step. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
/* Uniform integer in [0, n). */
static inline uint32_t rng_below(uint64_t *s, uint32_t n) {
    return (uint32_t)(((rng_next(s) >> 32) * (uint64_t)n) >> 32);
}

#endif
