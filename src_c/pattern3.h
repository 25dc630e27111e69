/* pattern3.h - MoGo's 3x3 playout patterns around an empty point (see pattern3.c). */
#ifndef GO_PATTERN3_H
#define GO_PATTERN3_H

#include <stdint.h>

#include "board.h"

/* 1 where the eight neighbours' colours (pattern3_code) match a pattern, else 0.  Filled by
 * pattern3_init. */
extern uint8_t pattern3_table[1 << 16];

/* Fills pattern3_table once (pthread_once): safe to call more than once, from any thread. */
void pattern3_init(void);

/* The eight neighbours of the on-board point v, two bits each (EMPTY, BLACK, WHITE, BORDER),
 * rows from the top, left to right. */
unsigned pattern3_code(const board_t *b, int v);

/* Whether the empty point v matches a pattern. */
static inline int pattern3_match(const board_t *b, int v) { return pattern3_table[pattern3_code(b, v)]; }

#endif
