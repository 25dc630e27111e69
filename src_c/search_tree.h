/* search_tree.h - the search's private layout, below the files that walk the tree: nodes and
 * edges, the pending leaves, the value-bias table's entries, the search state (struct search)
 * and its node and edge arenas (search_tree.c).  search.h, under it, holds the public API and
 * the parameters; the files above: search_select.c (PUCT selection, root noise), search_bias.c
 * (subtree value-bias table), search_recompute.c (nodes recomputed from their children),
 * search_stats.c (read-outs, LCB, the move choice) and search_descent.c (the search's life,
 * descent and backup). */
#ifndef GO_SEARCH_TREE_H
#define GO_SEARCH_TREE_H

#include "search.h"

enum { NODE_FRESH = 0, NODE_PENDING = 1, NODE_EXPANDED = 2, NODE_TERMINAL = 3 };

/* A candidate move of a node: 12 bytes, one per legal move of every expanded node. */
typedef struct {
    float prior;        /* policy prior of the move */
    int32_t child;      /* node reached by the move, -1 until first visited */
    int16_t move;       /* padded point (BOARD_PASS = pass) */
    int16_t pad;
} edge_t;

/* A visited position: 72 bytes.  The sums are weighted by the playouts' weights (all 1
 * without uncertainty-weighted playouts); a mean is a sum divided by weight_sum. */
typedef struct {
    int32_t edges;      /* index of the first edge in the edge arena, -1 if none */
    int32_t visits;     /* completed visits (a count) */
    float weight_sum;   /* sum of the weights of those visits */
    float value_sum;    /* sum of values from the view of the player who moved into this node */
    float value_sq;     /* sum of squared values (for the LCB) */
    float util_sum;     /* sum of score utilities, same view (selection adds it to value_sum) */
    float util_sq;      /* sum of squared utilities, value plus score utility (cPUCT's spread) */
    float score_sum;    /* sum of score leads in points, same view (the dynamic centre) */
    float nn_util;      /* the net's value plus score utility of this position, same view */
    float nn_value;     /* the net's value alone, and its score lead, same view */
    float nn_lead;
    float nn_weight;    /* the weight of the net's evaluation of this position */
    float bias;         /* value-bias correction now included in util_sum, same view */
    float bias_delta;   /* this node's share of its bias entry: weighted delta and weight */
    float bias_weight;
    int32_t bias_entry; /* index in the value-bias table, -1: none */
    uint16_t nedges;    /* legal moves (edges) */
    int16_t in_flight;  /* descents waiting for an evaluation below this node */
    uint8_t state;      /* NODE_* */
    uint8_t pad[3];
} node_t;

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

/* Whether nodes are recomputed from their children (value_weight_exponent, noise_pruning:
 * search_recompute.c, which then refreshes their value-bias shares too). */
static inline int search_recomputes(const search_t *s) {
    return s->p.value_weight_exponent != 0.0f || s->p.noise_pruning != 0.0f;
}

/* Arenas ----------------------------------------------------------------------------------- */

/* Empties the arenas and makes node 0, the root, a fresh node.  Returns 0, or -1 out of memory. */
int search_tree_clear(search_t *s);
/* Index of a new fresh node, or -1 at the memory cap or out of memory (counted in full_events). */
int32_t search_tree_new_node(search_t *s);
/* Index of the first of k new edges (for the caller to fill), or -1 at the memory cap or out of
 * memory (counted in full_events). */
int64_t search_tree_new_edges(search_t *s, int k);
/* Whether any slot has leaves pending. */
int search_any_pending(const search_t *s);

#endif
