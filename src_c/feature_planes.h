/* feature_planes.h - network input planes written into caller-provided float buffers, in the
 * compact layout [plane][row][col] (row 0 = top), always from the side to move's view.
 *
 * FEATURES_RICH (the project's default, 20 planes):
 *   0 own stones            1 opponent stones
 *   2-4 own stones in groups with 1 / 2 / >=3 liberties
 *   5-7 opponent stones in groups with 1 / 2 / >=3 liberties
 *   8 simple-ko point the side to move may not play
 *   9-12 the last four moves (stones placed; 9 = most recent)
 *   13 empty points that would be suicide for the side to move
 *   14 ones if Black is to move   15 ones (on-board mask)
 *   16 komi / 15 from the side to move's view (positive: side to move receives komi)
 *   17 ones if the last move was a pass   18 ones if the move before it was a pass
 *   19 ones under Tromp-Taylor-style rules (positional superko or suicide allowed)
 * FEATURES_LZ18 (Leela Zero's 18 planes):
 *   0-7 side-to-move stones at t, t-1, ..., t-7;  8-15 opponent stones at t .. t-7;
 *   16 ones if Black is to move;  17 ones if White is to move.
 * FEATURES_KATA / FEATURES_KATA_S (KataGo's inputs, 41 planes): see kata_features.h; _S computes
 *   the pass-alive planes as if multi-stone suicide were legal (nets that ask for it).  They need
 *   the game's history: the search writes them with kata_features_after, features_write leaves
 *   them zero. */
#ifndef GO_FEATURES_H
#define GO_FEATURES_H

#include "game.h"

enum { FEATURES_RICH = 0, FEATURES_LZ18 = 1, FEATURES_KATA = 2, FEATURES_KATA_S = 3, FEATURES_COUNT = 4 };

/* Number of planes of a feature set, or -1 for an unknown set. */
int features_planes(int set);
/* Writes the planes of `set` for board b into out[planes * N * N].  prev[i] holds the compact
 * colours of position t-1-i (NULL when the game is shorter); rules give komi and flags;
 * suicide (compact, may be NULL: then computed) marks points that are suicide for the side to move. */
void features_write(int set, const board_t *b, const uint8_t *const prev[GAME_PREV],
                    const rules_t *rules, const uint8_t *suicide, float *out);
/* A 64-bit key identifying everything features_write reads (for evaluation caches);
 * prev_hash[i] is the positional hash of position t-1-i (0 when absent). */
uint64_t features_key(int set, const board_t *b, const uint64_t prev_hash[GAME_PREV],
                      const rules_t *rules);
/* Planes of the current position of game g (convenience for Python and training). */
void features_game(int set, const game_t *g, float *out);
/* Key of the current position of game g. */
uint64_t features_game_key(int set, const game_t *g);

#endif
