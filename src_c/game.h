/* game.h - a game: a board under a rules value, with the history that superko, network
 * history planes and two-pass endings need.  Board (board.h) knows simple ko only; this layer
 * adds positional superko and Tromp-Taylor scoring with komi. */
#ifndef GO_GAME_H
#define GO_GAME_H

#include "board.h"

enum { KO_SIMPLE = 0, KO_POSITIONAL = 1 };
enum { SCORING_AREA = 0, SCORING_TERRITORY = 1 };
/* Tax: TAX_NONE counts every region a colour encloses; TAX_SEKI gives no points for regions that
 * touch a group in seki; TAX_ALL also takes up to 2 points (its two eyes) from every living group. */
enum { TAX_NONE = 0, TAX_SEKI = 1, TAX_ALL = 2 };

/* Rules as a plain value, passed explicitly. */
typedef struct {
    int ko_rule;        /* KO_SIMPLE or KO_POSITIONAL (positional superko) */
    int allow_suicide;  /* 1: multi- and single-stone suicide legal (Tromp-Taylor) */
    float komi;         /* added to White's score */
    int scoring;        /* SCORING_AREA (stones + territory) or SCORING_TERRITORY (territory + prisoners);
                           the count of a finished game (count.h) and the net's rules inputs */
    int tax;            /* TAX_NONE, TAX_SEKI or TAX_ALL (count.h) */
} rules_t;

#define GAME_PREV 7                 /* previous positions kept for history planes */
#define GAME_BLOOM_BITS 65536       /* bitmap filter in front of the superko hash list */

typedef struct {
    board_t board;
    rules_t rules;
    uint64_t *hashes;               /* positional hash of every position so far, [0] = initial */
    int nhashes, caphashes;
    uint8_t bloom[GAME_BLOOM_BITS / 8];
    uint8_t prev[GAME_PREV][BOARD_MAX_AREA]; /* compact colours of positions t-1 .. t-7 */
    int nprev;                      /* how many of prev[] are valid */
    int16_t *moves;                 /* moves[i] (padded point or BOARD_PASS) led from hashes[i] */
    uint8_t *movers;                /* ... to hashes[i + 1]; movers[i] is the colour that played it */
    int capmoves;                   /* allocated entries of moves/movers (nhashes - 1 are used) */
} game_t;

/* Allocates a new game on an empty board; NULL if size is outside 2..19 or out of memory. */
game_t *game_new(int size, rules_t rules);
/* Frees a game (NULL is fine). */
void game_free(game_t *g);
/* Deep copy; NULL on out of memory. */
game_t *game_clone(const game_t *g);
/* True if positional hash h occurred earlier in this game. */
int game_seen(const game_t *g, uint64_t h);
/* MOVE_* reason why colour c may not play compact point `pt` (MOVE_OK if legal). */
int game_check(const game_t *g, int pt, int c);
/* Plays colour c at compact point pt after checking; returns the MOVE_* reason (MOVE_OK when
 * played), or -1 out of memory.  Unless it returns MOVE_OK, g is left unchanged. */
int game_play(game_t *g, int pt, int c);
/* Writes 1/0 legality of every compact point and pass for colour c into mask[N*N+1]. */
void game_legal_mask(const game_t *g, int c, uint8_t *mask);
/* Tromp-Taylor score, Black minus White minus komi; owner[N*N] gets area owners if non-NULL. */
float game_score(const game_t *g, uint8_t *owner);
/* Writes the compact colours of the current board into out[N*N]. */
void game_stones(const game_t *g, uint8_t *out);
/* Sets the colour to move (GTP lets either colour play). */
void game_set_to_move(game_t *g, int c);

#endif
