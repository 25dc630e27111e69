/* playout.h - random playouts on a board: the moves they play (uniformly random, or tactical
 * with MoGo's rules and 3x3 patterns, pattern3.h), whole playouts, and what many of them judge:
 * ownership and dead stones.  A floor above board.h and pattern3.h; the search's leaf rollouts
 * and the referee's count of a finished game (terminal_judge) use it. */
#ifndef GO_PLAYOUT_H
#define GO_PLAYOUT_H

#include "board.h"

/* Plays a uniformly random legal, non-eye-filling move for the side to move (simple ko, no
 * suicide); passes when there is none.  rng is a xorshift64 state.  Returns the point played. */
int playout_random_move(board_t *b, uint64_t *rng);
/* A tactical playout move (MoGo's playout rules, simplified): first capture the group of the
 * opponent's last move if it is in atari, or save an own group next to that move that it put
 * in atari, by capturing a neighbouring group in atari or by extending where that leaves two
 * liberties or more; failing those, playout_random_move's move, except a self-atari that joins
 * an own group (a lone stone may still throw in, and a nakade throw-in may join: a group of
 * three stones at most, whose move puts an opponent group in atari).  With `patterns`, before
 * the random move, one of the eight points around the last move that matches a 3x3 pattern
 * (pattern3.h) and that those rules allow.  Passes when nothing is left. */
int playout_tactical_move(board_t *b, uint64_t *rng, int patterns);
/* A random playout: playout_random_move (tactical 1: playout_tactical_move; 2: with its
 * patterns) from b as it stands (pass count reset) until two passes in a row or max_moves moves
 * (<= 0: three times the board's points). */
void playout_run(board_t *b, uint64_t *rng, int max_moves, int tactical);
/* Mean Black-positive final area (+1 Black, -1 White, 0 neutral) of `playouts` playouts
 * (playout_run with `tactical`; even ones start with Black, odd ones with White) from b,
 * written to ownership[N*N] (compact points).  playouts >= 1. */
void playout_ownership(const board_t *b, int playouts, uint64_t *rng, int max_moves, int tactical,
                       float *ownership);
/* Black's area minus White's once dead groups are off, as a referee under Chinese rules counts a
 * finished game: `playouts` random playouts (playout_ownership) finish it, and a group whose
 * mean ownership is below -0.2 for its colour (the opponent owns its points at the end of 60% of
 * them or more) is taken off before the area count.  playouts >= 1. */
int playout_judged_area(const board_t *b, int playouts, uint64_t *rng);
/* The dead stones of that judgement: dead[N*N] (compact) gets 1 for every stone of a group
 * playout_judged_area takes off, 0 elsewhere.  playouts >= 1. */
void playout_judged_dead(const board_t *b, int playouts, uint64_t *rng, uint8_t *dead);

#endif
