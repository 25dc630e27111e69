/* search.c - PUCT tree, virtual loss, batched collection and backup, tree reuse. */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_MAX_DEPTH 1024

struct search {
    search_params_t p;
    game_t *game;                 /* root position (owned) */
    int feature_set, planes, area;
    node_t *nodes;
    int64_t nnodes, capnodes;
    int32_t root;
    uint64_t rng;
    int noise_requested;
    int64_t full_events;
    /* Pending leaves of the current batch. */
    int max_batch, npending;
    int32_t *pend_path;           /* [max_batch][SEARCH_MAX_DEPTH] node indices, root first */
    int16_t *pend_len;            /* path length of each pending leaf */
    /* Scratch for one descent. */
    board_t board;
    uint64_t path_hash[SEARCH_MAX_DEPTH + 1];
    uint8_t snaps[8][BOARD_MAX_AREA];
};

void search_default_params(search_params_t *p) {
    p->c_puct = 1.1f;
    p->c_puct_base = 19652.0f;
    p->c_puct_factor = 1.0f;
    p->fpu_reduction = 0.25f;
    p->fpu_reduction_root = 0.0f;
    p->virtual_loss = 1.0f;
    p->noise_alpha = 10.83f;
    p->noise_epsilon = 0.0f;
    p->policy_temperature = 1.0f;
    p->temperature = 0.0f;
    p->lcb_z = 1.96f;
    p->lcb_min_visit_frac = 0.10f;
    p->resign_threshold = -0.9f;
    p->max_nodes = 20000000;
    p->max_collisions = 8;
}

/* Arena ----------------------------------------------------------------------------------- */

static int ensure_capacity(search_t *s, int64_t need) {
    if (need <= s->capnodes) return 0;
    int64_t cap = s->capnodes ? s->capnodes : 4096;
    while (cap < need) cap *= 2;
    if (cap > s->p.max_nodes) cap = s->p.max_nodes;
    if (cap < need) return -1;
    node_t *n = realloc(s->nodes, (size_t)cap * sizeof(node_t));
    if (!n) return -1;
    s->nodes = n;
    s->capnodes = cap;
    return 0;
}

static void node_init(node_t *n, int move, float prior) {
    memset(n, 0, sizeof(*n));
    n->children = -1;
    n->move = (int16_t)move;
    n->prior = prior;
    n->state = NODE_FRESH;
}

static int reset_tree(search_t *s) {
    s->nnodes = 0;
    if (ensure_capacity(s, 1) != 0) return -1;
    node_init(&s->nodes[0], BOARD_NONE, 1.0f);
    s->root = 0;
    s->nnodes = 1;
    return 0;
}

search_t *search_new(const game_t *g, const search_params_t *p, int feature_set, int max_batch,
                     uint64_t seed) {
    if (!g || !p || features_planes(feature_set) < 0 || max_batch < 1) return NULL;
    search_t *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->p = *p;
    if (s->p.max_nodes < 64) s->p.max_nodes = 64;
    s->feature_set = feature_set;
    s->planes = features_planes(feature_set);
    s->area = g->board.size * g->board.size;
    s->max_batch = max_batch;
    s->rng = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (!s->rng) s->rng = 1;
    s->game = game_clone(g);
    s->pend_path = malloc((size_t)max_batch * SEARCH_MAX_DEPTH * sizeof(int32_t));
    s->pend_len = malloc((size_t)max_batch * sizeof(int16_t));
    if (!s->game || !s->pend_path || !s->pend_len || reset_tree(s) != 0) {
        search_free(s);
        return NULL;
    }
    return s;
}

void search_free(search_t *s) {
    if (!s) return;
    game_free(s->game);
    free(s->nodes);
    free(s->pend_path);
    free(s->pend_len);
    free(s);
}

void search_set_params(search_t *s, const search_params_t *p) {
    s->p = *p;
    if (s->p.max_nodes < 64) s->p.max_nodes = 64;
}

int search_set_game(search_t *s, const game_t *g) {
    game_t *copy = game_clone(g);
    if (!copy) return -1;
    game_free(s->game);
    s->game = copy;
    s->area = g->board.size * g->board.size;
    s->npending = 0;
    return reset_tree(s);
}

/* Copies the subtree under `keep` into a fresh arena; `keep` becomes the root. */
static int compact_tree(search_t *s, int32_t keep) {
    int64_t count = 0;
    int32_t *queue = malloc((size_t)s->nnodes * sizeof(int32_t));
    node_t *fresh = malloc((size_t)(s->capnodes > 0 ? s->capnodes : 1) * sizeof(node_t));
    if (!queue || !fresh) { free(queue); free(fresh); return -1; }
    fresh[0] = s->nodes[keep];
    int64_t nfresh = 1, head = 0;
    queue[count++] = 0;
    while (head < count) {
        int32_t i = queue[head++];
        node_t *n = &fresh[i];
        if (n->children < 0 || n->nchildren == 0) continue;
        int32_t old = n->children;
        n->children = (int32_t)nfresh;
        memcpy(&fresh[nfresh], &s->nodes[old], n->nchildren * sizeof(node_t));
        for (int k = 0; k < n->nchildren; k++) queue[count++] = (int32_t)(nfresh + k);
        nfresh += n->nchildren;
    }
    free(queue);
    free(s->nodes);
    s->nodes = fresh;
    s->nnodes = nfresh;
    s->root = 0;
    return 0;
}

int search_advance(search_t *s, int pt, int c) {
    if (s->npending) return -2;
    int v = board_from_compact(&s->game->board, pt);
    int expected = s->game->board.to_move; /* the tree's children are moves of this colour */
    int reason = game_play(s->game, pt, c);
    if (reason != MOVE_OK) return reason;
    node_t *root = &s->nodes[s->root];
    int32_t keep = -1;
    if (root->children >= 0 && c == expected)
        for (int k = 0; k < root->nchildren; k++)
            if (s->nodes[root->children + k].move == v) keep = root->children + k;
    if (keep >= 0 && s->nodes[keep].state == NODE_EXPANDED) return compact_tree(s, keep);
    return reset_tree(s);
}

void search_request_noise(search_t *s) { s->noise_requested = 1; }

/* Random numbers ------------------------------------------------------------------------- */

static double uniform01(search_t *s) { return ((rng_next(&s->rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static double normal01(search_t *s) {
    double u1 = uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Marsaglia-Tsang gamma sampler (with the alpha < 1 boost). */
static double gamma_sample(search_t *s, double alpha) {
    if (alpha < 1.0) return gamma_sample(s, alpha + 1.0) * pow(uniform01(s), 1.0 / alpha);
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do { x = normal01(s); v = 1.0 + c * x; } while (v <= 0.0);
        v = v * v * v;
        double u = uniform01(s);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

static void apply_noise(search_t *s) {
    node_t *root = &s->nodes[s->root];
    if (root->state != NODE_EXPANDED || root->nchildren == 0 || s->p.noise_epsilon <= 0.0f) return;
    int k = root->nchildren;
    double alpha = s->p.noise_alpha / (double)k;
    double eta[BOARD_MAX_AREA + 1], total = 0.0;
    for (int i = 0; i < k; i++) { eta[i] = gamma_sample(s, alpha); total += eta[i]; }
    if (total <= 0.0) return;
    float eps = s->p.noise_epsilon;
    for (int i = 0; i < k; i++) {
        node_t *c = &s->nodes[root->children + i];
        c->prior = (1.0f - eps) * c->prior + eps * (float)(eta[i] / total);
    }
    s->noise_requested = 0;
}

/* Selection ------------------------------------------------------------------------------ */

static int32_t select_child(const search_t *s, const node_t *parent, int is_root) {
    float parent_n = (float)parent->visits + s->p.virtual_loss * (float)parent->in_flight;
    float parent_q = parent->visits > 0 ? -parent->value_sum / (float)parent->visits : 0.0f;
    float cp = s->p.c_puct + s->p.c_puct_factor *
               logf((parent_n + s->p.c_puct_base + 1.0f) / s->p.c_puct_base);
    float scale = cp * sqrtf(parent_n > 1.0f ? parent_n : 1.0f);
    /* One pass: the best visited child by Q + U, and the unvisited child with the highest
     * prior (all unvisited children share the FPU value, so that one is their best). */
    float visited_prior = 0.0f, best_score = -1e30f, best_unvisited_prior = -1.0f;
    int32_t best = -1, best_unvisited = -1;
    const node_t *kids = &s->nodes[parent->children];
    for (int k = 0; k < parent->nchildren; k++) {
        const node_t *c = &kids[k];
        if (c->visits + c->in_flight > 0) {
            visited_prior += c->prior;
            float n = (float)c->visits + s->p.virtual_loss * (float)c->in_flight;
            float q = (c->value_sum - s->p.virtual_loss * (float)c->in_flight) / n;
            float score = q + scale * c->prior / (1.0f + n);
            if (score > best_score) { best_score = score; best = k; }
        } else if (c->prior > best_unvisited_prior) {
            best_unvisited_prior = c->prior;
            best_unvisited = k;
        }
    }
    if (best_unvisited >= 0) {
        float red = is_root ? s->p.fpu_reduction_root : s->p.fpu_reduction;
        float fpu = parent_q - red * sqrtf(visited_prior);
        if (best < 0 || fpu + scale * best_unvisited_prior > best_score) best = best_unvisited;
    }
    return parent->children + best;
}

/* Terminal value for the side to move of board b (game over by two passes). */
static float terminal_value(const search_t *s, const board_t *b) {
    float score = (float)board_area(b, NULL) - s->game->rules.komi;
    if (b->to_move == WHITE) score = -score;
    return score > 0.0f ? 1.0f : score < 0.0f ? -1.0f : 0.0f;
}

static void backup_path(search_t *s, const int32_t *path, int len, float value, int remove_vl) {
    float w = -value; /* the leaf's value is for its side to move; the leaf node stores the mover's */
    for (int i = len - 1; i >= 0; i--) {
        node_t *n = &s->nodes[path[i]];
        n->visits++;
        n->value_sum += w;
        n->value_sq += w * w;
        if (remove_vl) n->in_flight--;
        w = -w;
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

/* Allocates the children of node ni for the given moves.  Returns 0, or -1 at the memory cap. */
static int expand_moves(search_t *s, int32_t ni, const int16_t *moves, int k) {
    if (s->nnodes + k > s->p.max_nodes || ensure_capacity(s, s->nnodes + k) != 0) {
        s->full_events++;
        return -1;
    }
    node_t *node = &s->nodes[ni];
    node->children = (int32_t)s->nnodes;
    node->nchildren = (uint16_t)k;
    for (int i = 0; i < k; i++) node_init(&s->nodes[s->nnodes + i], moves[i], 1.0f / (float)k);
    s->nnodes += k;
    return 0;
}

/* One descent.  Returns 1 if a leaf was added to the pending list, 0 if a terminal value was
 * backed up, -1 on a collision with an in-flight leaf. */
static int descend(search_t *s, float *planes, uint64_t *keys) {
    int32_t *path = s->pend_path + (size_t)s->npending * SEARCH_MAX_DEPTH;
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
            float v = n->visits ? -n->value_sum / (float)n->visits : terminal_value(s, b);
            backup_path(s, path, len, v, 0);
            return 0;
        }
        if (b->passes >= 2) {
            n->state = NODE_TERMINAL;
            backup_path(s, path, len, terminal_value(s, b), 0);
            return 0;
        }
        if (n->state == NODE_PENDING) return -1;
        if (n->state == NODE_FRESH || len >= SEARCH_MAX_DEPTH - 1) break;
        ni = select_child(s, n, len == 1);
        if (lz) /* remember this position for the history planes */
            for (int r = 0, i = 0; r < b->size; r++)
                for (int col = 0; col < b->size; col++, i++)
                    s->snaps[(len - 1) & 7][i] = b->color[board_point(b, r, col)];
        board_play(b, s->nodes[ni].move, b->to_move);
        s->path_hash[len] = b->hash;
        path[len++] = ni;
    }
    /* A leaf: reserve its children now so the backup only has to set priors. */
    int depth = len - 1;
    int16_t moves[BOARD_MAX_AREA + 1];
    uint8_t suicide[BOARD_MAX_AREA];
    int nmoves = scan_leaf(s, b, depth, moves, suicide);
    if (s->nodes[ni].state == NODE_FRESH && len < SEARCH_MAX_DEPTH - 1)
        expand_moves(s, ni, moves, nmoves); /* on failure (memory cap) the leaf stays childless */
    s->nodes[ni].state = NODE_PENDING;
    for (int i = 0; i < len; i++) s->nodes[path[i]].in_flight++;
    s->pend_len[s->npending] = (int16_t)len;

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
    features_write(s->feature_set, b, prev, &s->game->rules, suicide, planes);
    if (keys) *keys = features_key(s->feature_set, b, prev_hash, &s->game->rules);
    s->npending++;
    return 1;
}

int search_collect(search_t *s, int max_leaves, float *planes, uint64_t *keys) {
    if (max_leaves > s->max_batch) max_leaves = s->max_batch;
    s->npending = 0;
    if (s->noise_requested) apply_noise(s);
    size_t stride = (size_t)s->planes * (size_t)s->area;
    int collisions = 0, attempts = 0;
    while (s->npending < max_leaves && attempts < max_leaves * 4 + 16) {
        attempts++;
        int r = descend(s, planes + stride * (size_t)s->npending, keys ? keys + s->npending : NULL);
        if (r < 0 && ++collisions > s->p.max_collisions) break;
        if (r == 0 && s->nodes[s->root].state == NODE_TERMINAL) break;
    }
    return s->npending;
}

int search_backup(search_t *s, const float *policy, const float *values, int n) {
    if (n != s->npending) return -1;
    int stride = s->area + 1;
    float pt = s->p.policy_temperature > 0.0f ? s->p.policy_temperature : 1.0f;
    for (int i = 0; i < n; i++) {
        const int32_t *path = s->pend_path + (size_t)i * SEARCH_MAX_DEPTH;
        int len = s->pend_len[i];
        node_t *leaf = &s->nodes[path[len - 1]];
        const float *logits = policy + (size_t)i * stride;
        if (leaf->children >= 0) {
            /* Softmax over the legal moves only. */
            float mx = -1e30f;
            for (int k = 0; k < leaf->nchildren; k++) {
                node_t *c = &s->nodes[leaf->children + k];
                c->prior = logits[board_to_compact(&s->game->board, c->move)] / pt;
                if (c->prior > mx) mx = c->prior;
            }
            float total = 0.0f;
            for (int k = 0; k < leaf->nchildren; k++) {
                node_t *c = &s->nodes[leaf->children + k];
                c->prior = expf(c->prior - mx);
                total += c->prior;
            }
            for (int k = 0; k < leaf->nchildren; k++) s->nodes[leaf->children + k].prior /= total;
            leaf->state = NODE_EXPANDED;
            if (path[len - 1] == s->root && s->noise_requested) {
                backup_path(s, path, len, values[i], 1);
                apply_noise(s);
                continue;
            }
        } else {
            leaf->state = NODE_FRESH; /* memory cap: evaluated but not grown */
        }
        float v = values[i];
        if (v > 1.0f) v = 1.0f;
        if (v < -1.0f) v = -1.0f;
        backup_path(s, path, len, v, 1);
    }
    s->npending = 0;
    return 0;
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
                       const float *values) {
    int offset = 0;
    for (int i = 0; i < n; i++) {
        search_t *s = ss[i];
        if (search_backup(s, policy + (size_t)offset * (size_t)(s->area + 1), values + offset,
                          counts[i]) != 0)
            return -1;
        offset += counts[i];
    }
    return 0;
}

/* Statistics ----------------------------------------------------------------------------- */

int32_t search_root_visits(const search_t *s) { return s->nodes[s->root].visits; }

float search_root_value(const search_t *s) {
    const node_t *r = &s->nodes[s->root];
    return r->visits ? -r->value_sum / (float)r->visits : 0.0f;
}

static float node_lcb(const search_t *s, const node_t *c) {
    if (c->visits < 2) return -1e6f + (float)c->visits;
    float q = c->value_sum / (float)c->visits;
    float var = c->value_sq / (float)c->visits - q * q;
    if (var < 1e-4f) var = 1e-4f;
    return q - s->p.lcb_z * sqrtf(var / (float)c->visits);
}

static int compact_of(const search_t *s, int v) { return board_to_compact(&s->game->board, v); }

int search_root_children(const search_t *s, int32_t *moves, int32_t *visits, float *q,
                         float *prior, float *lcb, int max) {
    const node_t *r = &s->nodes[s->root];
    if (r->children < 0) return 0;
    int k = r->nchildren < max ? r->nchildren : max;
    for (int i = 0; i < k; i++) {
        const node_t *c = &s->nodes[r->children + i];
        moves[i] = compact_of(s, c->move);
        visits[i] = c->visits;
        q[i] = c->visits ? c->value_sum / (float)c->visits : 0.0f;
        prior[i] = c->prior;
        lcb[i] = node_lcb(s, c);
    }
    return k;
}

static int32_t most_visited(const search_t *s, const node_t *n) {
    int32_t best = -1;
    for (int k = 0; k < n->nchildren; k++) {
        int32_t ci = n->children + k;
        const node_t *c = &s->nodes[ci];
        if (best < 0 || c->visits > s->nodes[best].visits ||
            (c->visits == s->nodes[best].visits && c->prior > s->nodes[best].prior))
            best = ci;
    }
    return best;
}

int search_pv(const search_t *s, int pt, int32_t *out, int max) {
    const node_t *n = &s->nodes[s->root];
    int len = 0;
    int32_t ci = -1;
    if (n->children < 0) return 0;
    if (pt >= 0) {
        int v = board_from_compact(&s->game->board, pt);
        for (int k = 0; k < n->nchildren; k++)
            if (s->nodes[n->children + k].move == v) ci = n->children + k;
    } else {
        ci = most_visited(s, n);
    }
    while (ci >= 0 && len < max && s->nodes[ci].visits > 0) {
        out[len++] = compact_of(s, s->nodes[ci].move);
        n = &s->nodes[ci];
        if (n->children < 0) break;
        ci = most_visited(s, n);
    }
    return len;
}

int search_choose(search_t *s) {
    const node_t *r = &s->nodes[s->root];
    if (r->children < 0 || r->nchildren == 0) return s->area;
    int32_t best = most_visited(s, r);
    if (s->nodes[best].visits == 0) return compact_of(s, s->nodes[best].move);
    if (s->p.temperature > 0.0f) {
        double w[BOARD_MAX_AREA + 1], total = 0.0;
        double inv = 1.0 / s->p.temperature;
        double top = (double)s->nodes[best].visits;
        for (int k = 0; k < r->nchildren; k++) {
            const node_t *c = &s->nodes[r->children + k];
            w[k] = c->visits > 0 ? pow((double)c->visits / top, inv) : 0.0;
            total += w[k];
        }
        double x = uniform01(s) * total;
        for (int k = 0; k < r->nchildren; k++) {
            x -= w[k];
            if (x <= 0.0 && w[k] > 0.0) return compact_of(s, s->nodes[r->children + k].move);
        }
        return compact_of(s, s->nodes[best].move);
    }
    if (s->p.lcb_z > 0.0f) {
        float floor_visits = s->p.lcb_min_visit_frac * (float)s->nodes[best].visits;
        int32_t pick = best;
        float pick_lcb = node_lcb(s, &s->nodes[best]);
        for (int k = 0; k < r->nchildren; k++) {
            const node_t *c = &s->nodes[r->children + k];
            if ((float)c->visits < floor_visits || c->visits < 2) continue;
            float l = node_lcb(s, c);
            if (l > pick_lcb) { pick_lcb = l; pick = r->children + k; }
        }
        best = pick;
    }
    return compact_of(s, s->nodes[best].move);
}

int64_t search_nodes(const search_t *s) { return s->nnodes; }
int64_t search_full_events(const search_t *s) { return s->full_events; }
int search_to_move(const search_t *s) { return s->game->board.to_move; }
const game_t *search_game(const search_t *s) { return s->game; }
