/* search_select.h - where a descent goes (search_select.c): PUCT selection and the root's
 * noise, with the search's random numbers. */
#ifndef GO_SEARCH_SELECT_H
#define GO_SEARCH_SELECT_H

#include "search_tree.h"

/* A uniform random number in (0, 1) from the search's generator. */
double search_uniform01(search_t *s);
/* Mixes Dirichlet noise into the root's priors when it is expanded (search_request_noise). */
void search_apply_noise(search_t *s);
/* The factor on the PUCT exploration term of `parent` (1 without cpuct_stdev_scale). */
float search_explore_factor(const search_t *s, const node_t *parent);
/* The edge (index in the edge arena) a descent takes from `parent` for `color` to move at
 * `depth` (0: the root's children), or -1 when the root targets are all reached. */
int32_t search_select_edge(const search_t *s, const node_t *parent, int is_root, int depth, int color);

#endif
