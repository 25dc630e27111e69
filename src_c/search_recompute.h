/* search_recompute.h - nodes recomputed from their children (search_recompute.c). */
#ifndef GO_SEARCH_RECOMPUTE_H
#define GO_SEARCH_RECOMPUTE_H

#include "search_tree.h"

/* Recomputes node n (its sums: the view of the player who moved into it) from its own
 * evaluation and its visited children (none: its evaluation alone); returns 0, changing
 * nothing, for terminal and unevaluated nodes.  `bias`: its value-bias share is refreshed
 * and applied (every node but the root). */
int search_recompute_node(search_t *s, node_t *n, int bias);

#endif
