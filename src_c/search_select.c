/* search_select.c - where a descent goes: PUCT with first-play urgency and virtual loss,
 * the exploration factor from the spread of utilities, Gumbel root targets, forced playouts,
 * and the root's Dirichlet noise. */
#include "search_select.h"

#include <math.h>


/* Random numbers ------------------------------------------------------------------------- */

double search_uniform01(search_t *s) { return ((rng_next(&s->rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static double normal01(search_t *s) {
    double u1 = search_uniform01(s), u2 = search_uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Marsaglia-Tsang gamma sampler (with the alpha < 1 boost). */
static double gamma_sample(search_t *s, double alpha) {
    if (alpha < 1.0) return gamma_sample(s, alpha + 1.0) * pow(search_uniform01(s), 1.0 / alpha);
    double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do { x = normal01(s); v = 1.0 + c * x; } while (v <= 0.0);
        v = v * v * v;
        double u = search_uniform01(s);
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
}

void search_apply_noise(search_t *s) {
    node_t *root = &s->nodes[s->root];
    if (root->state != NODE_EXPANDED || root->nedges == 0 || s->p.noise_epsilon <= 0.0f) return;
    int k = root->nedges;
    double alpha = s->p.noise_alpha / (double)k;
    double eta[BOARD_MAX_AREA + 1], total = 0.0;
    for (int i = 0; i < k; i++) { eta[i] = gamma_sample(s, alpha); total += eta[i]; }
    s->noise_requested = 0;
    if (total <= 0.0) return;
    float eps = s->p.noise_epsilon;
    for (int i = 0; i < k; i++) {
        edge_t *e = &s->edges[root->edges + i];
        e->prior = (1.0f - eps) * e->prior + eps * (float)(eta[i] / total);
    }
}

/* Selection ------------------------------------------------------------------------------ */

/* With root targets: the candidate furthest below its target (ties: the first), or -1 when
 * every candidate has reached its target. */
static int32_t select_root_target(const search_t *s, const node_t *root) {
    int32_t best = -1, best_gap = 0;
    for (int k = 0; k < root->nedges; k++) {
        if (s->root_target[k] < 0) continue;
        const edge_t *e = &s->edges[root->edges + k];
        int32_t have = e->child >= 0 ? s->nodes[e->child].visits + s->nodes[e->child].in_flight : 0;
        int32_t gap = s->root_target[k] - have;
        if (gap > best_gap) { best_gap = gap; best = k; }
    }
    return best < 0 ? -1 : root->edges + best;
}

/* Forced playouts (KataGo): a visited root child below sqrt(k * prior * total child visits)
 * visits, the one with the highest prior; -1 if none. */
static int32_t select_forced(const search_t *s, const node_t *root) {
    float total = (float)(root->visits > 0 ? root->visits - 1 : 0) + (float)root->in_flight;
    int32_t best = -1;
    float best_prior = -1.0f;
    for (int k = 0; k < root->nedges; k++) {
        const edge_t *e = &s->edges[root->edges + k];
        if (e->child < 0) continue;
        const node_t *c = &s->nodes[e->child];
        float n = (float)(c->visits + c->in_flight);
        if (n <= 0.0f) continue;
        if (n < sqrtf(s->p.forced_playouts_k * e->prior * total) && e->prior > best_prior) {
            best_prior = e->prior;
            best = root->edges + k;
        }
    }
    return best;
}

/* Factor of the PUCT term from the spread of the parent's utilities (KataGo's
 * cpuctUtilityStdev*), over the parent's playout weight; exactly 1 with cpuct_stdev_scale 0. */
float search_explore_factor(const search_t *s, const node_t *parent) {
    if (s->p.cpuct_stdev_scale == 0.0f) return 1.0f;
    double prior = s->p.cpuct_stdev_prior > 1e-6f ? s->p.cpuct_stdev_prior : 1e-6, sd = prior;
    if (parent->visits > 0 && parent->weight_sum > 1.0f) {
        double n = parent->weight_sum, m = utility_sum(parent) / n, m2 = m * m;
        double sq = parent->util_sq / n, w = s->p.cpuct_stdev_prior_weight;
        if (sq < m2) sq = m2;
        double var = ((m2 + prior * prior) * w + sq * n) / (w + n - 1.0) - m2;
        sd = sqrt(var > 0.0 ? var : 0.0);
    }
    return (float)(1.0 + s->p.cpuct_stdev_scale * (sd / prior - 1.0));
}

/* Index of the edge of `parent` that PUCT picks (at the root: the targets or forced playouts
 * first, when set); -1 when root targets leave nothing to do.  N in the PUCT terms is a
 * playout weight plus virtual loss (visits in flight); Q a weighted mean. */
int32_t search_select_edge(const search_t *s, const node_t *parent, int is_root, int depth,
                           int color) {
    if (is_root && s->root_targets_on) return select_root_target(s, parent);
    if (is_root && s->p.forced_playouts_k > 0.0f) {
        int32_t forced = select_forced(s, parent);
        if (forced >= 0) return forced;
    }
    float vl = s->p.virtual_loss;
    float parent_n = parent->weight_sum + vl * (float)parent->in_flight;
    float parent_q = parent->visits > 0 ? -utility_sum(parent) / parent->weight_sum : 0.0f;
    float cp = s->p.c_puct + s->p.c_puct_factor *
               logf((parent_n + s->p.c_puct_base + 1.0f) / s->p.c_puct_base);
    float scale = cp * sqrtf(parent_n > 1.0f ? parent_n : 1.0f) * search_explore_factor(s, parent);
    /* One pass: the best visited edge by Q + U, and the unvisited edge with the highest prior
     * (all unvisited edges share the FPU value, so that one is their best). */
    float visited_prior = 0.0f, best_score = -1e30f, best_unvisited_prior = -1.0f;
    int32_t best = -1, best_unvisited = -1;
    const edge_t *edges = &s->edges[parent->edges];
    const int32_t *avoid = s->avoid_on ? s->avoid_until[color - 1] : NULL;
    if (avoid) { /* no move left by the avoid table: the table is ignored at this node */
        int k = 0;
        while (k < parent->nedges && avoid[edges[k].move] > depth) k++;
        if (k == parent->nedges) avoid = NULL;
    }
    for (int k = 0; k < parent->nedges; k++) {
        const edge_t *e = &edges[k];
        if (avoid && avoid[e->move] > depth) continue;
        const node_t *c = e->child >= 0 ? &s->nodes[e->child] : NULL;
        if (c && c->visits + c->in_flight > 0) {
            visited_prior += e->prior;
            float n = c->weight_sum + vl * (float)c->in_flight;
            float q = (utility_sum(c) - vl * (float)c->in_flight) / n;
            float score = q + scale * e->prior / (1.0f + n);
            if (score > best_score) { best_score = score; best = k; }
        } else if (e->prior > best_unvisited_prior) {
            best_unvisited_prior = e->prior;
            best_unvisited = k;
        }
    }
    if (best_unvisited >= 0) {
        float red = is_root ? s->p.fpu_reduction_root : s->p.fpu_reduction;
        float base = parent_q;
        if (s->p.fpu_parent_nn != 0.0f && parent->visits > 0) {
            float w = powf(visited_prior, s->p.fpu_parent_nn_pow);
            if (w > 1.0f) w = 1.0f;
            base = w * parent_q + (1.0f - w) * -parent->nn_util;   /* nn_util: the mover's view */
        }
        float fpu = base - red * sqrtf(visited_prior);
        if (best < 0 || fpu + scale * best_unvisited_prior > best_score) best = best_unvisited;
    }
    return parent->edges + best;
}
