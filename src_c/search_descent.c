/* search_descent.c - the search's life: a new search, its slots, tree reuse when a move is
 * played, batched collection with virtual loss (leaves scored, rolled out or handed to the
 * caller's network), and backup of values, score utilities and score leads.
 *
 * Storage (search_tree.h): a node arena (visited positions) and an edge arena (candidate moves,
 * 12 bytes); an expanded node owns a contiguous block of edges, and an edge gets a child node
 * only when it is first visited.  Tree reuse copies the kept subtree into fresh arenas. */
#include "search_tree.h"
#include "search_bias.h"
#include "search_recompute.h"
#include "search_select.h"
#include "kata_features.h"
#include "count.h"
#include "playout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Clears the tree to a fresh root; the value-bias shares of its nodes leave the table. */
static int reset_tree(search_t *s) {
    search_bias_release(s, s->nodes, s->nnodes, -(double)s->p.subtree_bias_free_prop);
    if (search_tree_clear(s) != 0) return -1;
    s->root_targets_on = 0;
    s->centre_set = 0;
    search_bias_compact(s);
    return 0;
}

search_t *search_new(const game_t *g, const search_params_t *p, int feature_set, int max_batch,
                     uint64_t seed) {
    if (!g || !p || features_planes(feature_set) < 0 || max_batch < 1) return NULL;
    search_t *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    search_set_params(s, p);
    s->feature_set = feature_set;
    s->planes = features_planes(feature_set);
    s->area = g->board.size * g->board.size;
    s->max_batch = max_batch;
    s->rng = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (!s->rng) s->rng = 1;
    s->rollout_salt = s->rng;
    s->game = game_clone(g);
    if (!s->game || search_set_slots(s, 1) != 0 || reset_tree(s) != 0) {
        search_free(s);
        return NULL;
    }
    return s;
}

static void free_slot(pending_t *q) {
    free(q->path);
    free(q->len);
    free(q->was);
    free(q->rollout);
    free(q->rollout_w);
    memset(q, 0, sizeof(*q));
}

void search_free(search_t *s) {
    if (!s) return;
    game_free(s->game);
    free(s->nodes);
    free(s->edges);
    free(s->bias_table);
    for (int i = 0; i < SEARCH_MAX_SLOTS; i++) free_slot(&s->slot[i]);
    free(s);
}

int search_set_slots(search_t *s, int nslots) {
    if (nslots < 1 || nslots > SEARCH_MAX_SLOTS || search_any_pending(s)) return -1;
    for (int i = 0; i < nslots; i++) {
        pending_t *q = &s->slot[i];
        if (q->path) continue;
        q->path = malloc((size_t)s->max_batch * SEARCH_MAX_DEPTH * sizeof(int32_t));
        q->len = malloc((size_t)s->max_batch * sizeof(int16_t));
        q->was = malloc((size_t)s->max_batch);
        q->rollout = malloc((size_t)s->max_batch * sizeof(float));
        q->rollout_w = malloc((size_t)s->max_batch * sizeof(float));
        q->npending = 0;
        if (!q->path || !q->len || !q->was || !q->rollout || !q->rollout_w) {
            free_slot(q);
            return -1;
        }
    }
    for (int i = nslots; i < SEARCH_MAX_SLOTS; i++) free_slot(&s->slot[i]);
    s->nslots = nslots;
    return 0;
}

int search_slots(const search_t *s) { return s->nslots; }

int search_pending(const search_t *s, int slot) {
    if (slot < 0) {
        int total = 0;
        for (int i = 0; i < s->nslots; i++) total += s->slot[i].npending;
        return total;
    }
    return slot < s->nslots ? s->slot[slot].npending : 0;
}

void search_set_params(search_t *s, const search_params_t *p) {
    /* a root pass child is terminal under one setting of conservative pass, not the other */
    int flip = s->game && (s->p.conservative_pass != 0.0f) != (p->conservative_pass != 0.0f);
    s->p = *p;
    if (flip && s->game->board.passes == 1 && !search_any_pending(s)) reset_tree(s);
    int64_t floor = 64 * (int64_t)(sizeof(node_t) + (BOARD_MAX_AREA + 1) * sizeof(edge_t));
    if (s->p.max_memory < floor) s->p.max_memory = floor;
}

int search_set_game(search_t *s, const game_t *g) {
    game_t *copy = game_clone(g);
    if (!copy) return -1;
    game_free(s->game);
    s->game = copy;
    s->area = g->board.size * g->board.size;
    for (int i = 0; i < s->nslots; i++) s->slot[i].npending = 0;
    s->avoid_on = 0; /* a new position: its avoided moves are set anew */
    return reset_tree(s);
}

/* Copies the subtree under node `keep` into fresh arenas; `keep` becomes the root. */
static int compact_tree(search_t *s, int32_t keep) {
    node_t *nodes = malloc((size_t)s->nnodes * sizeof(node_t));
    edge_t *edges = malloc((size_t)(s->nedges > 0 ? s->nedges : 1) * sizeof(edge_t));
    if (!nodes || !edges) { free(nodes); free(edges); return -1; }
    int64_t nn = 1, ne = 0, head = 0;
    nodes[0] = s->nodes[keep];
    while (head < nn) { /* breadth first: nodes[head] still points into the old arenas */
        node_t *n = &nodes[head++];
        if (n->edges < 0) continue;
        int32_t old = n->edges;
        n->edges = (int32_t)ne;
        memcpy(&edges[ne], &s->edges[old], n->nedges * sizeof(edge_t));
        for (int k = 0; k < n->nedges; k++) {
            edge_t *e = &edges[ne + k];
            if (e->child < 0) continue;
            nodes[nn] = s->nodes[e->child];
            e->child = (int32_t)nn++;
        }
        ne += n->nedges;
    }
    /* Discarded nodes leave free_prop of their value-bias contributions; the new root's own
     * correction is withdrawn (a root's evaluation is never corrected). */
    double fp = s->p.subtree_bias_free_prop;
    search_bias_release(s, s->nodes, s->nnodes, -fp);
    search_bias_release(s, nodes, nn, fp);
    nodes[0].util_sum -= nodes[0].bias * nodes[0].nn_weight;
    nodes[0].bias = 0.0f;
    free(s->nodes);
    free(s->edges);
    s->nodes = nodes;
    s->capnodes = s->nnodes;
    s->nnodes = nn;
    s->edges = edges;
    s->capedges = s->nedges > 0 ? s->nedges : 1;
    s->nedges = ne;
    s->root = 0;
    s->root_targets_on = 0;
    s->centre_set = 0;
    search_bias_compact(s);
    return 0;
}

int search_advance(search_t *s, int pt, int c) {
    if (search_any_pending(s)) return -2;
    int v = board_from_compact(&s->game->board, pt);
    int expected = s->game->board.to_move; /* the tree's edges are moves of this colour */
    int reason = game_play(s->game, pt, c);
    if (reason != MOVE_OK) return reason;
    s->avoid_on = 0; /* avoided moves belong to one root position */
    const node_t *root = &s->nodes[s->root];
    int32_t keep = -1;
    if (root->edges >= 0 && c == expected)
        for (int k = 0; k < root->nedges; k++)
            if (s->edges[root->edges + k].move == v) keep = s->edges[root->edges + k].child;
    /* conservative pass: below the old root, the pass after this pass was terminal */
    if (s->p.conservative_pass != 0.0f && s->game->board.passes == 1) keep = -1;
    if (keep >= 0 && s->nodes[keep].state == NODE_EXPANDED) return compact_tree(s, keep);
    return reset_tree(s);
}

void search_request_noise(search_t *s) { s->noise_requested = 1; }

int search_set_avoid(search_t *s, const int32_t *until_black, const int32_t *until_white) {
    if (search_any_pending(s)) return -2;
    int32_t table[2][BOARD_MAX_POINTS];
    memset(table, 0, sizeof table);
    int on = 0, area = s->game->board.size * s->game->board.size;
    for (int pt = 0; pt <= area; pt++) {
        int v = board_from_compact(&s->game->board, pt);
        table[0][v] = until_black ? until_black[pt] : 0;
        table[1][v] = until_white ? until_white[pt] : 0;
        on |= table[0][v] > 0 || table[1][v] > 0;
    }
    if (on == s->avoid_on && (!on || memcmp(table, s->avoid_until, sizeof table) == 0)) return 0;
    memcpy(s->avoid_until, table, sizeof table);
    s->avoid_on = on;
    return reset_tree(s); /* statistics gathered under other restrictions are not kept */
}

int search_set_root_targets(search_t *s, const int32_t *moves, const int32_t *targets, int n) {
    const node_t *root = &s->nodes[s->root];
    s->root_targets_on = 0;
    if (n <= 0 || root->edges < 0) return 0;
    int found = 0;
    for (int k = 0; k < root->nedges; k++) {
        int pt = board_to_compact(&s->game->board, s->edges[root->edges + k].move);
        s->root_target[k] = -1;
        for (int i = 0; i < n; i++)
            if (moves[i] == pt) { s->root_target[k] = targets[i]; found++; break; }
    }
    s->root_targets_on = 1;
    return found;
}

/* Final score (the rules' count minus komi) for the side to move of board b (game over by two
 * passes).  Area scoring without tax: the area count (with dead groups off when judged);
 * other rules: count_board, the judged dead stones off and counted as prisoners. */
static float terminal_score(const search_t *s, const board_t *b) {
    int playouts = (int)(s->p.terminal_judge + 0.5f);
    const rules_t *rules = &s->game->rules;
    int area;
    uint64_t rng = (b->hash ^ s->rollout_salt ^ 0xD1B54A32D192ED03ULL) * 0x9E3779B97F4A7C15ULL + 1;
    if (rules->scoring != SCORING_AREA || rules->tax != TAX_NONE) {
        uint8_t dead[BOARD_MAX_AREA];
        if (playouts > 0) playout_judged_dead(b, playouts, &rng, dead);
        area = count_board(b, playouts > 0 ? dead : NULL, NULL, rules->scoring, rules->tax, NULL);
    } else if (playouts > 0) {
        area = playout_judged_area(b, playouts, &rng);
    } else {
        area = board_area(b, NULL);
    }
    float score = (float)area - rules->komi;
    return b->to_move == WHITE ? -score : score;
}

static float sign_value(float score) { return score > 0.0f ? 1.0f : score < 0.0f ? -1.0f : 0.0f; }

/* The weight (lambda) of the playouts at a leaf with board b: rollout_weight, ramped by the
 * fraction of b's points with a stone on them when rollout_ramp_start < rollout_ramp_end. */
static float rollout_lambda(const search_t *s, const board_t *b) {
    float w = s->p.rollout_weight, f0 = s->p.rollout_ramp_start, f1 = s->p.rollout_ramp_end;
    if (w == 0.0f || !(f1 > f0)) return w;
    int area = b->size * b->size;
    float t = ((float)(area - b->nempty) / (float)area - f0) / (f1 - f0);
    return w * (t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t);
}

/* The mean result of s->p.rollouts random playouts from b for its side to move (+1 a win,
 * -1 a loss, 0 a draw; the rules' count with komi), seeded by the position and the search's seed. */
static float rollout_value(const search_t *s, const board_t *b) {
    int n = (int)s->p.rollouts;
    if (n < 1) n = 1;
    uint64_t rng = (b->hash ^ s->rollout_salt) * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (!rng) rng = 1;
    float total = 0.0f;
    for (int k = 0; k < n; k++) {
        board_t c = *b;
        playout_run(&c, &rng, 0, (int)(s->p.rollout_policy + 0.5f));
        const rules_t *rules = &s->game->rules;
        int points = rules->scoring == SCORING_AREA && rules->tax == TAX_NONE ? board_area(&c, NULL)
                     : count_board(&c, NULL, NULL, rules->scoring, rules->tax, NULL);
        float score = (float)points - rules->komi;
        total += sign_value(b->to_move == WHITE ? -score : score);
    }
    return total / (float)n;
}

/* Score utility of a lead of `lead` points for `color` to move (see search_params_t). */
static float score_utility(const search_t *s, float lead, int color) {
    const float two_over_pi = 0.63661977f, n = (float)s->game->board.size;
    float u = 0.0f;
    if (s->p.static_score_utility != 0.0f)
        u += s->p.static_score_utility * two_over_pi * atanf(lead / (2.0f * n));
    if (s->p.dynamic_score_utility != 0.0f) {
        float k = s->p.dynamic_score_scale > 0.01f ? s->p.dynamic_score_scale : 0.01f;
        float centre = color == BLACK ? s->score_centre : -s->score_centre;
        u += s->p.dynamic_score_utility * two_over_pi * atanf((lead - centre) / (k * n));
    }
    return u;
}

/* Slope of score_utility at `lead` (points per unit of utility), as KataGo's
 * getApproxScoreUtilityDerivative: d/dx 2/pi atan((x - c) / k) = 2/pi k / (k^2 + (x - c)^2). */
static float score_utility_slope(const search_t *s, float lead, int color) {
    const float two_over_pi = 0.63661977f, n = (float)s->game->board.size;
    float d = 0.0f;
    if (s->p.static_score_utility != 0.0f) {
        float k = 2.0f * n;
        d += s->p.static_score_utility * two_over_pi * k / (k * k + lead * lead);
    }
    if (s->p.dynamic_score_utility != 0.0f) {
        float k = (s->p.dynamic_score_scale > 0.01f ? s->p.dynamic_score_scale : 0.01f) * n;
        float x = lead - (color == BLACK ? s->score_centre : -s->score_centre);
        d += s->p.dynamic_score_utility * two_over_pi * k / (k * k + x * x);
    }
    return d;
}

/* Weight of a leaf with short-term errors wl and se (see search_params_t); `scored` says
 * whether the leaf has a score lead (else the score error is not used). */
static float leaf_weight(const search_t *s, float wl, float se, float lead, int color, int scored) {
    float coeff = s->p.uncertainty_coeff, max_weight = s->p.uncertainty_max_weight;
    if (s->p.use_uncertainty == 0.0f || !(coeff > 0.0f) || !(max_weight > 0.0f)) return 1.0f;
    if (wl != wl || se != se) return 1.0f;  /* NaN: no information */
    wl = wl < 0.0f ? 0.0f : wl > 1e4f ? 1e4f : wl;
    se = se < 0.0f ? 0.0f : se > 1e4f ? 1e4f : se;
    double u = (double)wl + (scored ? (double)score_utility_slope(s, lead, color) * (double)se : 0.0);
    double e = s->p.uncertainty_exponent;
    double powered = e == 1.0 ? u : pow(u, e);
    return (float)((double)coeff / (powered + (double)coeff / (double)max_weight));
}

float search_playout_weight(const search_t *s, float wl_error, float score_error, float lead, int color) {
    return leaf_weight(s, wl_error, score_error, lead, color, 1);
}

/* Sets the dynamic centre from Black's expected lead (KataGo's recentScoreCenter). */
static void set_centre(search_t *s, float black_lead) {
    float c = black_lead * (1.0f - s->p.score_centre_zero_weight);
    float k = s->p.dynamic_score_scale > 0.01f ? s->p.dynamic_score_scale : 0.01f;
    float cap = k * (float)s->game->board.size;
    if (c > black_lead + cap) c = black_lead + cap;
    if (c < black_lead - cap) c = black_lead - cap;
    s->score_centre = c;
    s->centre_set = 1;
}

/* Colour to move at the end of a path of len nodes from the root (every move alternates). */
static int path_color(const search_t *s, int len) {
    int c = s->game->board.to_move;
    return ((len - 1) & 1) ? board_other(c) : c;
}

/* Backs up a leaf's value, score utility and score lead (its side to move's view) with the
 * playout weight `weight` (with weight 1 every product below is exact: the unweighted sums). */
static void backup_path(search_t *s, const int32_t *path, int len, float value, float util,
                        float lead, float weight, int remove_vl) {
    /* the leaf's figures are for its side to move; the leaf node stores the mover's */
    float w = -value, u = -util, sc = -lead;
    int recompute = search_recomputes(s);
    for (int i = len - 1; i >= 0; i--, w = -w, u = -u, sc = -sc) {
        node_t *n = &s->nodes[path[i]];
        n->visits++;
        if (remove_vl) n->in_flight--;
        if (recompute && search_recompute_node(s, n, i > 0)) continue;
        float ww = w * weight, t = w + u, tw = t * weight;
        n->weight_sum += weight;
        n->value_sum += ww;
        n->value_sq += ww * w;
        n->util_sum += u * weight;
        n->util_sq += tw * t;
        n->score_sum += sc * weight;
    }
}

/* Superko check against the game history and the positions on the current path. */
static int path_repeats(const search_t *s, uint64_t h, int depth) {
    for (int i = 0; i <= depth; i++)
        if (s->path_hash[i] == h) return 1;
    return game_seen(s->game, h);
}

/* Scans the empty points of leaf board b once: legal moves (incl. superko, plus pass) into
 * moves[], and points that would be suicide for the side to move into suicide[] (compact).
 * Returns the number of moves. */
static int scan_leaf(search_t *s, const board_t *b, int depth, int16_t *moves, uint8_t *suicide) {
    int k = 0, n = b->size, c = b->to_move;
    const rules_t *rules = &s->game->rules;
    memset(suicide, 0, (size_t)(n * n));
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++) {
            int v = board_point(b, r, col);
            if (b->color[v] != EMPTY) continue;
            int why = board_check(b, v, c, 0);
            if (why == MOVE_SUICIDE) {
                suicide[r * n + col] = 1;
                if (!rules->allow_suicide) continue;
            } else if (why != MOVE_OK) {
                continue;
            }
            if (rules->ko_rule == KO_POSITIONAL && path_repeats(s, board_hash_after(b, v, c), depth))
                continue;
            moves[k++] = (int16_t)v;
        }
    moves[k++] = BOARD_PASS;
    return k;
}

/* Gives node ni one edge per move.  Returns 0, or -1 at the memory cap. */
static int expand_moves(search_t *s, int32_t ni, const int16_t *moves, int k) {
    int64_t first = search_tree_new_edges(s, k);
    if (first < 0) return -1;
    node_t *node = &s->nodes[ni];
    node->edges = (int32_t)first;
    node->nedges = (uint16_t)k;
    for (int i = 0; i < k; i++) {
        edge_t *e = &s->edges[first + i];
        e->prior = 1.0f / (float)k;
        e->child = -1;
        e->move = moves[i];
        e->pad = 0;
    }
    return 0;
}

/* One descent.  Returns 1 if a leaf was added to the pending list, 0 if a terminal value was
 * backed up, -1 on a collision with an in-flight leaf, -2 when the root targets are reached. */
static int descend(search_t *s, pending_t *q, float *planes, uint64_t *keys) {
    int32_t *path = q->path + (size_t)q->npending * SEARCH_MAX_DEPTH;
    board_t *b = &s->board;
    *b = s->game->board;
    int lz = s->feature_set == FEATURES_LZ18;
    int len = 0;
    int32_t ni = s->root;
    path[len++] = ni;
    s->path_hash[0] = b->hash;
    for (;;) {
        node_t *n = &s->nodes[ni];
        if (n->state == NODE_TERMINAL) {
            float inv = -1.0f / n->weight_sum;
            backup_path(s, path, len, n->value_sum * inv, n->util_sum * inv, n->score_sum * inv, 1.0f, 0);
            search_bias_update(s, path, len);
            return 0;
        }
        /* two passes end the game, except our pass from the root under conservative pass */
        if (b->passes >= 2 && !(len == 2 && s->p.conservative_pass != 0.0f)) {
            n->state = NODE_TERMINAL;
            float score = terminal_score(s, b);
            backup_path(s, path, len, sign_value(score),
                        s->scored ? score_utility(s, score, b->to_move) : 0.0f, s->scored ? score : 0.0f,
                        1.0f, 0);
            search_bias_update(s, path, len);
            return 0;
        }
        if (n->state == NODE_PENDING) return -1;
        if (n->state == NODE_FRESH || len >= SEARCH_MAX_DEPTH - 1) break;
        int32_t ei = search_select_edge(s, n, len == 1, len - 1, b->to_move);
        if (ei < 0) return -2;
        if (s->edges[ei].child < 0) {
            int32_t child = search_tree_new_node(s);
            if (child < 0) break;   /* memory cap: re-evaluate this node instead of growing */
            s->edges[ei].child = child;
            if (s->p.subtree_bias_factor != 0.0f)
                s->nodes[child].bias_entry = search_bias_get(s, search_bias_key(b, s->edges[ei].move, b->to_move));
        }
        if (lz) /* remember this position for the history planes */
            for (int r = 0, i = 0; r < b->size; r++)
                for (int col = 0; col < b->size; col++, i++)
                    s->snaps[(len - 1) & 7][i] = b->color[board_point(b, r, col)];
        s->path_move[len - 1] = s->edges[ei].move;
        board_play(b, s->edges[ei].move, b->to_move);
        ni = s->edges[ei].child;
        s->path_hash[len] = b->hash;
        path[len++] = ni;
    }
    /* A leaf: give it its edges now so the backup only has to set priors. */
    int depth = len - 1;
    int16_t moves[BOARD_MAX_AREA + 1];
    uint8_t suicide[BOARD_MAX_AREA];
    int nmoves = scan_leaf(s, b, depth, moves, suicide);
    q->was[q->npending] = s->nodes[ni].state;
    q->rollout_w[q->npending] = rollout_lambda(s, b);
    q->rollout[q->npending] = q->rollout_w[q->npending] != 0.0f ? rollout_value(s, b) : 0.0f;
    /* A fresh leaf that already has edges was collected before and cancelled: same position
     * (same path from the root), same moves. */
    if (s->nodes[ni].state == NODE_FRESH && s->nodes[ni].edges < 0 && len < SEARCH_MAX_DEPTH - 1)
        expand_moves(s, ni, moves, nmoves); /* on failure (memory cap) the leaf stays edgeless */
    s->nodes[ni].state = NODE_PENDING;
    for (int i = 0; i < len; i++) s->nodes[path[i]].in_flight++;
    q->len[q->npending] = (int16_t)len;

    const uint8_t *prev[GAME_PREV];
    uint64_t prev_hash[GAME_PREV];
    for (int i = 0; i < GAME_PREV; i++) {
        int d = depth - 1 - i; /* depth of position t-1-i */
        if (d >= 0) {
            prev[i] = lz ? s->snaps[d & 7] : NULL;
            prev_hash[i] = s->path_hash[d];
        } else {
            int gi = -d - 1; /* index into the root game's own history */
            prev[i] = gi < s->game->nprev ? s->game->prev[gi] : NULL;
            int hi = s->game->nhashes - 2 - gi;
            prev_hash[i] = hi >= 0 ? s->game->hashes[hi] : 0;
        }
    }
    if (s->feature_set == FEATURES_KATA || s->feature_set == FEATURES_KATA_S) {
        kata_features_search(s->game, s->path_move, depth, s->feature_set == FEATURES_KATA_S,
                             depth == 0 && s->p.conservative_pass != 0.0f, planes, keys);
    } else {
        const board_t *fb = b;
        board_t once;
        if (depth == 1 && b->passes >= 2) {
            /* conservative pass: our pass after the opponent's.  No game the net learnt from
             * went on after two passes, so it sees the opponent's position after one. */
            once = *b;
            once.recent[1] = BOARD_NONE;
            fb = &once;
        }
        features_write(s->feature_set, fb, prev, &s->game->rules, suicide, planes);
        if (keys) *keys = features_key(s->feature_set, fb, prev_hash, &s->game->rules);
    }
    q->npending++;
    return 1;
}

int search_cancel_slot(search_t *s, int slot) {
    if (slot < 0 || slot >= s->nslots) return -1;
    pending_t *q = &s->slot[slot];
    for (int i = 0; i < q->npending; i++) {
        const int32_t *path = q->path + (size_t)i * SEARCH_MAX_DEPTH;
        int len = q->len[i];
        for (int k = 0; k < len; k++) s->nodes[path[k]].in_flight--;
        node_t *leaf = &s->nodes[path[len - 1]];
        /* Fresh leaves keep the edges they were given (uniform priors, state fresh): the next
         * descent that reaches them evaluates them again. */
        leaf->state = q->was[i] == NODE_EXPANDED ? NODE_EXPANDED : NODE_FRESH;
    }
    q->npending = 0;
    return 0;
}

int search_collect_slot(search_t *s, int slot, int max_leaves, float *planes, uint64_t *keys) {
    if (slot < 0 || slot >= s->nslots) return -1;
    pending_t *q = &s->slot[slot];
    if (max_leaves > s->max_batch) max_leaves = s->max_batch;
    if (q->npending) search_cancel_slot(s, slot);  /* never backed up: withdraw them */
    if (s->noise_requested) search_apply_noise(s);
    size_t stride = (size_t)s->planes * (size_t)s->area;
    int collisions = 0, attempts = 0;
    while (q->npending < max_leaves && attempts < max_leaves * 4 + 16) {
        attempts++;
        int r = descend(s, q, planes + stride * (size_t)q->npending, keys ? keys + q->npending : NULL);
        if (r == -2) break;
        if (r < 0 && ++collisions > s->p.max_collisions) break;
        if (r == 0 && s->nodes[s->root].state == NODE_TERMINAL) break;
    }
    return q->npending;
}

int search_collect(search_t *s, int max_leaves, float *planes, uint64_t *keys) {
    return search_collect_slot(s, 0, max_leaves, planes, keys);
}

int search_backup_slot(search_t *s, int slot, const float *policy, const float *values,
                       const float *scores, const float *uncertainty, const float *policy_opt, int n) {
    if (slot < 0 || slot >= s->nslots) return -1;
    pending_t *q = &s->slot[slot];
    if (n != q->npending) return -1;
    int stride = s->area + 1;
    float max_lead = 2.0f * (float)s->area;
    if (scores && !s->centre_set) {
        const node_t *root = &s->nodes[s->root];
        float lead = root->visits ? -root->score_sum / root->weight_sum : 0.0f;  /* to move */
        for (int i = 0; i < n && !root->visits; i++)  /* a fresh root is evaluated on its own */
            if (q->len[i] == 1 && scores[i] == scores[i]) lead = scores[i];
        set_centre(s, s->game->board.to_move == BLACK ? lead : -lead);
    }
    if (scores) s->scored = 1;
    float pt = s->p.policy_temperature > 0.0f ? s->p.policy_temperature : 1.0f;
    for (int i = 0; i < n; i++) {
        const int32_t *path = q->path + (size_t)i * SEARCH_MAX_DEPTH;
        int len = q->len[i];
        node_t *leaf = &s->nodes[path[len - 1]];
        const float *logits = policy + (size_t)i * stride;
        const float *opt = policy_opt ? policy_opt + (size_t)i * stride : NULL;
        float optimism = len == 1 ? s->p.root_policy_optimism : s->p.policy_optimism;
        if (optimism == 0.0f) opt = NULL;
        if (q->was[i] == NODE_EXPANDED) {
            leaf->state = NODE_EXPANDED;  /* re-evaluated at the memory cap: priors stay */
        } else if (leaf->edges >= 0) {
            /* Softmax over the legal moves only. */
            edge_t *e = &s->edges[leaf->edges];
            float mx = -1e30f, total = 0.0f;
            for (int k = 0; k < leaf->nedges; k++) {
                int c = board_to_compact(&s->game->board, e[k].move);
                float x = logits[c];
                if (opt) x += (opt[c] - x) * optimism;
                x /= pt;
                /* A broken network: NaN and -inf weigh nothing, +inf as much as the best. */
                if (!(x >= -1e30f)) x = -1e30f;
                if (x > 1e30f) x = 1e30f;
                e[k].prior = x;
                if (x > mx) mx = x;
            }
            for (int k = 0; k < leaf->nedges; k++) {
                e[k].prior = expf(e[k].prior - mx);
                total += e[k].prior;
            }
            for (int k = 0; k < leaf->nedges; k++) e[k].prior /= total;
            leaf->state = NODE_EXPANDED;
        } else {
            leaf->state = NODE_FRESH; /* memory cap: evaluated but not grown */
        }
        float v = values[i];
        if (v != v) v = 0.0f;          /* NaN: no information, an even position */
        if (v < -1.0f) v = -1.0f;
        if (v > 1.0f) v = 1.0f;
        if (q->rollout_w[i] != 0.0f) v += q->rollout_w[i] * (q->rollout[i] - v);
        float lead = scores ? scores[i] : 0.0f;
        if (lead != lead) lead = 0.0f;
        if (lead < -max_lead) lead = -max_lead;
        if (lead > max_lead) lead = max_lead;
        int color = path_color(s, len);
        float u = scores ? score_utility(s, lead, color) : 0.0f;
        float weight = uncertainty ? leaf_weight(s, uncertainty[2 * i], uncertainty[2 * i + 1], lead, color,
                                                 scores != NULL) : 1.0f;
        if (leaf->visits == 0) {
            leaf->nn_util = -(v + u);  /* the mover's view, as the sums */
            leaf->nn_value = -v;
            leaf->nn_lead = -lead;
            leaf->nn_weight = weight;
        }
        backup_path(s, path, len, v, u, lead, weight, 1);
        search_bias_update(s, path, len);
    }
    q->npending = 0;
    if (s->noise_requested) search_apply_noise(s);
    return 0;
}

int search_backup(search_t *s, const float *policy, const float *values, const float *scores,
                  const float *uncertainty, const float *policy_opt, int n) {
    return search_backup_slot(s, 0, policy, values, scores, uncertainty, policy_opt, n);
}

int search_collect_many(search_t **ss, int n, int per_search, float *planes, uint64_t *keys,
                        int32_t *counts) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        search_t *s = ss[i];
        size_t stride = (size_t)s->planes * (size_t)s->area;
        counts[i] = search_collect(s, per_search, planes + stride * (size_t)total,
                                   keys ? keys + total : NULL);
        total += counts[i];
    }
    return total;
}

int search_backup_many(search_t **ss, int n, const int32_t *counts, const float *policy,
                       const float *values, const float *scores, const float *uncertainty,
                       const float *policy_opt) {
    int offset = 0;
    for (int i = 0; i < n; i++) {
        search_t *s = ss[i];
        if (search_backup(s, policy + (size_t)offset * (size_t)(s->area + 1), values + offset,
                          scores ? scores + offset : NULL,
                          uncertainty ? uncertainty + 2 * (size_t)offset : NULL,
                          policy_opt ? policy_opt + (size_t)offset * (size_t)(s->area + 1) : NULL,
                          counts[i]) != 0)
            return -1;
        offset += counts[i];
    }
    return 0;
}
