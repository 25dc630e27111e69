/* count.h - counting a position by the rules' scoring (area or territory) and tax, with the
 * dead stones the caller names taken off.  The board (board.h) knows the Tromp-Taylor area
 * only; which stones are dead is judged above it (board_judged_dead, engine/scoring.py).
 *
 * Area scoring: a colour's stones plus the empty regions (dead stones' points included) that
 * only its stones border.  Territory scoring (Japanese, Korean): those regions plus the
 * prisoners, that is the stones it captured during play and the dead stones taken off.
 * Tax seki: a region that touches a group in seki counts for nobody.  Tax all: every living
 * group (its stones joined through the regions they enclose) also gives up up to 2 points of
 * its regions, the eyes it needs to live. */
#ifndef GO_COUNT_H
#define GO_COUNT_H
#include "game.h"

/* Black's points minus White's on b by `scoring` and `tax` (SCORING_*, TAX_*), without komi;
 * under territory scoring b->captures are counted.  dead[N*N] (compact; 1 = a dead stone;
 * NULL = none) are taken off, seki[N*N] (1 = a stone of a group in seki; NULL = none) marks
 * seki groups.  owner[N*N] gets each point's owner (EMPTY for neutral) if non-NULL. */
int count_board(const board_t *b, const uint8_t *dead, const uint8_t *seki, int scoring, int tax,
                uint8_t *owner);
/* Stones Black has placed on b minus those White has placed (on the board now plus those
 * captured): a territory count is the area count less this, once the game is over (no seki). */
int count_placed_difference(const board_t *b);
/* Komi as an area count sees it on b under rules r: r->komi under area scoring; under
 * territory scoring r->komi plus the stones Black is expected to have placed more than White
 * when the game ends (placed so far, plus 1/2 when Black is to move, minus 1/2 when White is),
 * the difference between the two counts of a game without seki.  Tax all: r->komi. */
float count_area_komi(const rules_t *r, const board_t *b);
/* g counted by its rules (count_board with g's scoring and tax) minus komi; dead, seki and
 * owner as count_board. */
float game_count(const game_t *g, const uint8_t *dead, const uint8_t *seki, uint8_t *owner);
#endif
