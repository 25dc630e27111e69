/* chains.h - a position's chains, liberties, eyes and enclosed regions, read from the board's
 * own group lists: what dead-stone judgement (engine/scoring.py) needs, so that no Go logic is
 * repeated in Python.  All points are compact (row * N + col). */
#ifndef GO_CHAINS_H
#define GO_CHAINS_H

#include "game.h"

/* Labels every point's chain: label[N*N] gets the smallest point of the chain a stone belongs
 * to, -1 for empty points.  Returns the number of chains. */
int game_chains(const game_t *g, int16_t *label);
/* The liberties of the chain at pt, ascending, into libs[N*N]; returns their number (0 for an
 * empty or off-board pt). */
int game_chain_liberties(const game_t *g, int pt, int16_t *libs);
/* mask[N*N] = 1 where an empty point is colour c's eye: every neighbour c or the edge, at most
 * one diagonal enemy stone (none on the edge), as random playouts judge it. */
void game_eyes(const game_t *g, int c, uint8_t *mask);
/* Stones that float in an area the other colour encloses (a finished game's dead stones): for
 * each empty region, extend it through one colour's stones and through the other's; when one
 * colour's extension reaches at most one empty point the other's does not (no room for two
 * eyes) and holds no more stones than the other's, that colour's stones there are dead; when
 * both or neither qualify the region decides nothing.  dead[N*N] gets 1 for those stones;
 * returns their number. */
int game_floating(const game_t *g, uint8_t *dead);

#endif
