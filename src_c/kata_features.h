/* kata_features.h - KataGo's input features (version 7 inputs, model versions 8-17), computed
 * as KataGo's nninputs.cpp does without button or encore, for the rules this engine plays
 * (simple ko or positional superko, suicide per rules_t, komi, area scoring without tax or
 * territory scoring with any tax).
 *
 * Output: 41 planes [plane][row][col] (row 0 = top): KataGo's 22 spatial planes, then its 19
 * global inputs, each written as a constant plane.
 *   0 on board          1 own stones        2 opponent stones
 *   3-5 stones (either colour) in groups with 1 / 2 / 3 liberties
 *   6 simple-ko point and, under positional superko, points superko bans for the side to move
 *   7-8 encore ko planes (always 0 here)
 *   9-13 the last five moves (9 = the opponent's last move, 10 = own move before it, ...),
 *        following the alternation back only while colours alternate
 *   14 stones in a working ladder (1 liberty, or 2 liberties with a capturing first move)
 *   15, 16 the same for the positions 1 and 2 moves earlier
 *   17 moves that start a working ladder against an opponent group with 2 liberties
 *   18, 19 own / opponent area: pass-alive stones and territory (Benson), empty regions
 *        bordered by one colour, other stones as they stand; under territory scoring
 *        always 0 (KataGo shows them only in its second encore phase, not played here)
 *   20-21 encore start stones (always 0 here)
 * Globals (planes 22 + i):
 *   0-4 which of the last five moves (as above) were passes   5 komi from the mover's view / 20
 *        (territory scoring: plus the stones Black placed more than White, as KataGo counts)
 *   6-7 ko rule (0,0 simple; 1,0.5 positional)   8 multi-stone suicide legal
 *   9 territory scoring   10 a tax (seki or all)   11 tax all   12-13 encore (always 0 here)
 *   14 a pass now would end the game (under territory scoring: the main phase)
 *   15-17 playout doubling, button (always 0)
 *   18 komi parity wave (see kata_features.c; 0 under territory scoring)
 * History (moves, earlier positions, superko, passes) comes from the game and the moves played
 * after it, replayed from the empty board (the ladder reader, kata_ladder.h, needs KataGo's own
 * order of each group's stones); a game whose side to move did not follow its last move is featurized with its
 * history cleared, as KataGo does when asked to evaluate for the other colour. */
#ifndef GO_KATA_FEATURES_H
#define GO_KATA_FEATURES_H

#include "game.h"

#define KATA_SPATIAL 22
#define KATA_GLOBAL 19
#define KATA_PLANES (KATA_SPATIAL + KATA_GLOBAL)
#define KATA_HISTORY 5

/* Writes the planes of the position reached from game g by the npath moves path[0..npath-1]
 * (padded points or BOARD_PASS, each played by the side to move, as the search does) into
 * out[KATA_PLANES * N * N]; pass_alive_suicide computes the area planes as if multi-stone
 * suicide were legal (nets that ask for it).  If key is non-NULL it receives a 64-bit key of
 * everything the planes depend on.  Returns 0, or -1 if a path move is illegal. */
int kata_features_after(const game_t *g, const int16_t *path, int npath, int pass_alive_suicide,
                        float *out, uint64_t *key);
/* The same as the search writes them: conservative_root nonzero for the root under conservative
 * pass (KataGo's conservativePassAndIsRoot), where a pass would end the game but the search
 * goes on past it: the net is shown no history and no "a pass ends the game". */
int kata_features_search(const game_t *g, const int16_t *path, int npath, int pass_alive_suicide,
                         int conservative_root, float *out, uint64_t *key);

/* KataGo's area of board b: owner[N*N] (compact) gets BLACK/WHITE/EMPTY for every point:
 * pass-alive stones and territory (Benson), empty regions bordered by one colour only,
 * remaining stones as they stand.  suicide_legal: multi-stone suicide allowed. */
void kata_area(const board_t *b, int suicide_legal, uint8_t *owner);

/* The same for the current position of game g (Python and tests). */
void kata_game_area(const game_t *g, int suicide_legal, uint8_t *owner);
void kata_game_ladders(const game_t *g, int attacked, uint8_t *laddered, uint8_t *working);
int kata_game_features(const game_t *g, int pass_alive_suicide, float *out, uint64_t *key);

#endif
