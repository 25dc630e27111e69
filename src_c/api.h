/* api.h - the surface the Python binding (engine/core.py) sees: everything in board.h,
 * game.h, count.h, chains.h, feature_planes.h, kata_features.h and search.h (src_c/build_core.py reads
 * their declarations), plus small accessors so Python never reads C structs. */
#ifndef GO_API_H
#define GO_API_H

#include "search.h"
#include "count.h"

/* Tromp-Taylor area, Black minus White, without komi; owner[N*N] as game_score. */
int game_area(const game_t *g, uint8_t *owner);
/* Board size of g. */
int game_size(const game_t *g);
/* Colour to move in g. */
int game_to_move(const game_t *g);
/* Consecutive passes at the end of g. */
int game_passes(const game_t *g);
/* Positional Zobrist hash of g's stones. */
uint64_t game_hash(const game_t *g);
/* Stones captured by colour c. */
int game_captures(const game_t *g, int c);
/* Compact simple-ko point barred to the side to move, or -1. */
int game_ko_point(const game_t *g);
/* Liberties of the group at compact point pt (0 if empty). */
int game_group_libs(const game_t *g, int pt);
/* Mean Black-positive final area (+1 Black, -1 White, 0 neutral) of `playouts` random
 * playouts (legal non-eye-filling moves to two passes, half starting with each colour;
 * tactical 1: playout_tactical_move's moves, 2: with its 3x3 patterns) from g, written to
 * ownership[N*N].  Returns 0, or -1 for playouts < 1. */
int game_playout_ownership(const game_t *g, int playouts, uint64_t seed, int max_moves,
                           int tactical, float *ownership);
/* Black's area minus White's with dead groups off (playout_judged_area, `playouts` random
 * playouts seeded by `seed` and the position); playouts < 1: the Tromp-Taylor area. */
int game_judged_area(const game_t *g, int playouts, uint64_t seed);
/* g counted by its rules (game_count) minus komi, with the dead groups of that judgement off
 * (the same playouts and seed); playouts < 1: every stone counted as it stands. */
float game_judged_count(const game_t *g, int playouts, uint64_t seed);
/* Bytes per tree node. */
int64_t search_node_bytes(void);
/* Bytes per edge (candidate move). */
int64_t search_edge_bytes(void);

#endif
