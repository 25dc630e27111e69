/* board.h - Go board of any size 2..19: stones, groups, exact liberties, captures,
 * simple ko point and an incremental Zobrist hash.  A board is a plain value: copying
 * it (board_copy / struct assignment) is how search branches; there is no undo.
 *
 * Points are "padded" 1-D indices: v = (row + 1) * stride + (col + 1), stride = size + 2,
 * row 0 is the TOP row.  Index 0 is a border point and doubles as the PASS sentinel.
 * The compact index used across the Python boundary is row * size + col (pass = size*size);
 * board_to_compact / board_from_compact convert. */
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
/* Liberties of the group at v (0 for an empty point). */
static inline int board_libs(const board_t *b, int v) { return b->libs[b->head[v]]; }
/* True if v is an empty point all of whose neighbours are c or border, with at most one
 * (none on the edge) diagonal enemy stone: a point random play must not fill. */
int board_is_eye(const board_t *b, int v, int c);
/* Tromp-Taylor area: writes owner of each compact point (EMPTY for neutral) into
 * owner[N*N] if non-NULL, returns black area minus white area. */
int board_area(const board_t *b, uint8_t *owner);
/* Plays a uniformly random legal, non-eye-filling move for the side to move (simple ko, no
 * suicide); passes when there is none.  rng is a xorshift64 state.  Returns the point played. */
int board_play_random(board_t *b, uint64_t *rng);
/* A tactical playout move (MoGo's playout rules, simplified): first capture the group of the
 * opponent's last move if it is in atari, or save an own group next to that move that it put
 * in atari, by capturing a neighbouring group in atari or by extending where that leaves two
 * liberties or more; failing those, board_play_random's move, except a self-atari that joins
 * an own group (a lone stone may still throw in, and a nakade throw-in may join: a group of
 * three stones at most, whose move puts an opponent group in atari).  With `patterns`, before
 * the random move, one of the eight points around the last move that matches a 3x3 pattern
 * (pattern3.h) and that those rules allow.  Passes when nothing is left. */
int board_play_tactical(board_t *b, uint64_t *rng, int patterns);
/* A random playout: board_play_random (tactical 1: board_play_tactical; 2: with its patterns)
 * from b as it stands (pass count reset) until two passes in a row or max_moves moves (<= 0:
 * three times the board's points). */
void board_playout(board_t *b, uint64_t *rng, int max_moves, int tactical);
/* Mean Black-positive final area (+1 Black, -1 White, 0 neutral) of `playouts` playouts
 * (board_playout with `tactical`; even ones start with Black, odd ones with White) from b,
 * written to ownership[N*N] (compact points).  playouts >= 1. */
void board_playout_ownership(const board_t *b, int playouts, uint64_t *rng, int max_moves, int tactical,
                             float *ownership);
/* Black's area minus White's once dead groups are off, as a referee under Chinese rules counts a
 * finished game: `playouts` random playouts (board_playout_ownership) finish it, and a group
 * whose mean ownership is below -0.2 for its colour (the opponent owns its points at the end of
 * 60% of them or more) is taken off before the area count.  playouts >= 1. */
int board_judged_area(const board_t *b, int playouts, uint64_t *rng);
/* The dead stones of that judgement: dead[N*N] (compact) gets 1 for every stone of a group
 * board_judged_area takes off, 0 elsewhere.  playouts >= 1. */
void board_judged_dead(const board_t *b, int playouts, uint64_t *rng, uint8_t *dead);
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
