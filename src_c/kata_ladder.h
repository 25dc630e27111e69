/* kata_ladder.h - KataGo's ladder reader, reproduced move for move.
 *
 * KataGo's reader keeps each group's stones in a circular list whose order comes from the
 * history of merges (a stone joining a group goes right after the larger group's first stone,
 * a smaller group is spliced in after it) and from how its undo rebuilds groups (flood fill
 * in up/left/right/down order).  The reader's move lists, and so one of its shortcuts (it
 * tests the liberties of the last move of the defender's list) and its 25,000-move budget,
 * depend on that order; this module keeps the same lists so that its answers are KataGo's.
 *
 * kata_order_t follows a board_t's groups through a game: kata_order_play must see every move
 * (with the board BEFORE the move), from the empty board on. */
#ifndef GO_KATA_LADDER_H
#define GO_KATA_LADDER_H

#include "board.h"

typedef struct {
    int16_t head[BOARD_MAX_POINTS];   /* KataGo's group representative of each stone */
    int16_t next[BOARD_MAX_POINTS];   /* circular list of each group's stones */
    int16_t nstones[BOARD_MAX_POINTS];/* stones, valid at the head */
} kata_order_t;

/* An empty board's order (no stones). */
void kata_order_init(kata_order_t *o);
/* Updates o for colour c playing at v (BOARD_PASS: nothing) on `before`, the board before the
 * move (which must be legal there). */
void kata_order_play(kata_order_t *o, const board_t *before, int v, int c);

/* Ladders of every stone of board b (groups and order o), as KataGo's feature code finds them:
 * laddered[N*N] (compact) gets 1 on stones of groups in a working ladder; working[N*N] (may be
 * NULL) gets 1 on the moves that start a working ladder against groups with 2 liberties of
 * colour `attacked` (EMPTY: none).  The board's ko point is barred for both colours. */
void kata_ladders_ordered(const board_t *b, const kata_order_t *o, int attacked, uint8_t *laddered,
                          uint8_t *working);

#endif
