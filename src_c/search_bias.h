/* search_bias.h - the subtree value-bias table (search_bias.c). */
#ifndef GO_SEARCH_BIAS_H
#define GO_SEARCH_BIAS_H

#include "search_tree.h"

/* The table key of the node that `color` reaches by playing `move` on board b. */
uint64_t search_bias_key(const board_t *b, int move, int color);
/* The index of the entry of `key` (added when new; the table is made on first use), or -1 out
 * of memory or when the table is full. */
int32_t search_bias_get(search_t *s, uint64_t key);
/* Refreshes the corrections of the nodes on a backed-up path of len nodes, root first. */
void search_bias_update(search_t *s, const int32_t *path, int len);
/* Refreshes node n's share of its bias entry from its children's mean utility `mean` (its
 * view) and total weight `children` (0: no children yet, the share stays) and returns the
 * correction its own evaluation now gets. */
float search_bias_refresh(search_t *s, node_t *n, double mean, double children);
/* Adds `scale` times the shares of the n nodes to their entries (a negative scale withdraws
 * them: nodes leaving the tree). */
void search_bias_release(search_t *s, const node_t *nodes, int64_t n, double scale);
/* When the table is nearly full, rebuilds it from the nodes in the tree. */
void search_bias_compact(search_t *s);

#endif
