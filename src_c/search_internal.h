/* search_internal.h - the search's private state, shared by its source files:
 * search.c (arenas, tree reuse, descent, backup), search_select.c (PUCT selection, root noise),
 * search_bias.c (subtree value-bias table) and search_stats.c (read-outs, LCB, the move choice). */
#ifndef GO_SEARCH_INTERNAL_H
#define GO_SEARCH_INTERNAL_H

#include "search.h"


#define SEARCH_MAX_DEPTH 1024

/* The leaves of one batch between collect and backup. */
typedef struct {
    int npending;
    int32_t *path;                /* [max_batch][SEARCH_MAX_DEPTH] node indices, root first */
    int16_t *len;                 /* path length of each pending leaf */
    uint8_t *was;                 /* state of the leaf before it became pending */
    float *rollout;               /* its random playouts' mean result (rollout_w nonzero) */
    float *rollout_w;             /* their weight (lambda) at that leaf; 0: none played */
} pending_t;

/* An entry of the value-bias table (key 0: empty). */
typedef struct {
    uint64_t key;
    double delta;                 /* sum of weighted (children's mean utility - net's utility) */
    double weight;                /* sum of weights */
} bias_entry_t;

struct search {
    search_params_t p;
    game_t *game;                 /* root position (owned) */
    int feature_set, planes, area;
    node_t *nodes;
    int64_t nnodes, capnodes;
    edge_t *edges;
    int64_t nedges, capedges;
    int32_t root;
    uint64_t rng;
    uint64_t rollout_salt;         /* seeds the leaves' random playouts (rollout_weight) */
    int noise_requested;
    int64_t full_events;
    /* Score utility: whether any backup carried scores, and the dynamic centre (Black's lead). */
    int scored, centre_set;
    float score_centre;
    /* Root visit targets (search_set_root_targets), by root edge index; -1: not a candidate. */
    int root_targets_on;
    int32_t root_target[BOARD_MAX_AREA + 1];
    /* Avoided moves (search_set_avoid): a move by colour c at depth d (0: a root child) is
     * skipped while d < avoid_until[c - 1][padded point]; avoid_on says whether any is set. */
    int avoid_on;
    int32_t avoid_until[2][BOARD_MAX_POINTS];
    /* Pending leaves, one batch per slot (search_set_slots): slots are collected and backed up
     * independently, so several batches can be in flight at once. */
    int max_batch, nslots;
    pending_t slot[SEARCH_MAX_SLOTS];
    /* Value-bias table (search_bias.c), allocated when subtree_bias_factor is first nonzero. */
    bias_entry_t *bias_table;
    int32_t bias_cap, bias_used;
    /* Scratch for one descent. */
    board_t board;
    uint64_t path_hash[SEARCH_MAX_DEPTH + 1];
    int16_t path_move[SEARCH_MAX_DEPTH];  /* moves from the root (KataGo features replay them) */
    uint8_t snaps[8][BOARD_MAX_AREA];
};

/* Sum of a node's utilities: value plus score utility (the view of the player who moved). */
static inline float utility_sum(const node_t *n) { return n->value_sum + n->util_sum; }

/* search_select.c */
double search_uniform01(search_t *s);
void search_apply_noise(search_t *s);
float search_explore_factor(const search_t *s, const node_t *parent);
int32_t search_select_edge(const search_t *s, const node_t *parent, int is_root, int depth, int color);
/* search_bias.c */
uint64_t search_bias_key(const board_t *b, int move, int color);
int32_t search_bias_get(search_t *s, uint64_t key);
void search_bias_update(search_t *s, const int32_t *path, int len);
/* Refreshes node n's share of its bias entry from its children's mean utility `mean` (its
 * view) and total weight `children` (0: no children yet, the share stays) and returns the
 * correction its own evaluation now gets. */
float search_bias_refresh(search_t *s, node_t *n, double mean, double children);
void search_bias_release(search_t *s, const node_t *nodes, int64_t n, double scale);
void search_bias_compact(search_t *s);
/* search_recompute.c */
/* Whether nodes are recomputed from their children (value_weight_exponent, noise_pruning). */
static inline int search_recomputes(const search_t *s) {
    return s->p.value_weight_exponent != 0.0f || s->p.noise_pruning != 0.0f;
}
/* Recomputes node n (its sums: the view of the player who moved into it) from its own
 * evaluation and its visited children (none: its evaluation alone); returns 0, changing
 * nothing, for terminal and unevaluated nodes.  `bias`: its value-bias share is refreshed
 * and applied (every node but the root). */
int search_recompute_node(search_t *s, node_t *n, int bias);
/* search.c */
int search_any_pending(const search_t *s);

#endif
