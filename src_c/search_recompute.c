/* search_recompute.c - nodes recomputed from their children (KataGo's valueWeightExponent and
 * useNoisePruning).
 *
 * By default a node's sums are the running sums of every playout backed up through it, so its
 * mean is the visit-weighted mean of its children.  With either option on, each node on a
 * backed-up path is instead rebuilt from its own evaluation and its visited children's current
 * means, with the children's weights adjusted first:
 *   - noise pruning: in prior order, a child whose utility is below the weighted mean of the
 *     higher-prior children before it, and which holds more than twice the weight its prior
 *     gives it among them, loses 1 - exp(-gap / scale) of that excess (visits that root noise
 *     or exploration forced onto a bad move stop dragging its parent down);
 *   - value weighting: each weight is multiplied by (T3(z) + 0.0001)^exponent, z how many of its
 *     (weight-dependent) standard deviations the child lies from the children's mean, then all
 *     are scaled back to the total, so the node's value leans toward its best children.
 * The node's weight sum becomes its own weight plus the adjusted total; visit counts stay
 * counts.  Its value-bias share (search_bias.c) is refreshed from the adjusted children. */
#include "search_recompute.h"
#include "search_bias.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    const node_t *node;
    double prior;      /* the edge's prior (with root noise, as selection sees it) */
    double utility;    /* the child's mean utility: the parent's side to move's view */
    double weight;     /* adjusted weight */
} child_t;

/* Student's t CDF with 3 degrees of freedom (closed form). */
static double t3_cdf(double z) {
    double x = z / sqrt(3.0);
    return 0.5 + (x / (1.0 + x * x) + atan(x)) / 3.14159265358979323846;
}

static int by_prior(const void *a, const void *b) {
    double pa = ((const child_t *)a)->prior, pb = ((const child_t *)b)->prior;
    return pa > pb ? -1 : pa < pb ? 1 : 0;
}

/* Noise pruning over children in prior order; returns the new total weight. */
static double prune_noise(const search_t *s, child_t *c, int n, double total) {
    if (n <= 1 || total <= 1e-5) return total;
    double scale = s->p.noise_prune_utility_scale > 1e-6f ? s->p.noise_prune_utility_scale : 1e-6;
    double util_so_far = 0.0, weight_so_far = 0.0, prior_so_far = 0.0;
    for (int i = 0; i < n; i++) {
        double w = c[i].weight, prior = c[i].prior > 1e-30 ? c[i].prior : 1e-30;
        if (weight_so_far > 0.0 && prior_so_far > 0.0) {
            double gap = util_so_far / weight_so_far - c[i].utility;
            double lenient = 2.0 * weight_so_far * prior / prior_so_far;
            if (gap > 0.0 && w > lenient) {
                w -= (w - lenient) * (1.0 - exp(-gap / scale));
                c[i].weight = w;
            }
        }
        util_so_far += c[i].utility * w;
        weight_so_far += w;
        prior_so_far += prior;
    }
    return weight_so_far;
}

/* Multiplies each weight by (T3(z) + 0.0001)^exponent and scales them back to `total`. */
static void downweight_bad(const search_t *s, child_t *c, int n, double total) {
    double exponent = s->p.value_weight_exponent;
    if (n <= 0 || !(total > 0.0) || exponent == 0.0) return;
    double mean = 0.0;
    for (int i = 0; i < n; i++) mean += c[i].utility * c[i].weight;
    mean /= total;
    double unnorm = 0.0;
    for (int i = 0; i < n; i++) {
        double sd = sqrt(1e-8 + 1.0 / (1.5 * sqrt(c[i].weight)));
        c[i].weight *= pow(t3_cdf((c[i].utility - mean) / sd) + 0.0001, exponent);
        unnorm += c[i].weight;
    }
    if (!(unnorm > 0.0)) return;
    for (int i = 0; i < n; i++) c[i].weight *= total / unnorm;
}

int search_recompute_node(search_t *s, node_t *n, int bias) {
    /* Terminal positions (exact results) and nodes never evaluated add playouts instead. */
    if (n->state == NODE_TERMINAL || !(n->nn_weight > 0.0f)) return 0;
    child_t c[BOARD_MAX_AREA + 1];
    int k = 0;
    const edge_t *e = n->edges >= 0 ? &s->edges[n->edges] : NULL;
    for (int i = 0; e && i < n->nedges; i++) {
        if (e[i].child < 0) continue;
        const node_t *x = &s->nodes[e[i].child];
        if (x->visits <= 0 || !(x->weight_sum > 0.0f)) continue;
        c[k].node = x;
        c[k].prior = e[i].prior;
        c[k].utility = (double)utility_sum(x) / x->weight_sum;
        c[k].weight = x->weight_sum;
        k++;
    }
    double orig = 0.0;
    for (int i = 0; i < k; i++) orig += c[i].weight;
    double total = orig;
    if (s->p.noise_pruning != 0.0f && k > 1) {
        qsort(c, (size_t)k, sizeof(child_t), by_prior);
        total = prune_noise(s, c, k, total);
    }
    downweight_bad(s, c, k, total);
    /* The children's sums are in the view of this node's side to move: negated here. */
    double value = 0.0, value_sq = 0.0, util = 0.0, util_sq = 0.0, score = 0.0, weight = 0.0;
    for (int i = 0; i < k; i++) {
        const node_t *x = c[i].node;
        double f = c[i].weight / x->weight_sum;
        value -= f * x->value_sum;
        value_sq += f * x->value_sq;
        util -= f * x->util_sum;
        util_sq += f * x->util_sq;
        score -= f * x->score_sum;
        weight += c[i].weight;
    }
    double b = 0.0;
    if (bias && s->p.subtree_bias_factor != 0.0f && s->bias_table && n->bias_entry >= 0) {
        n->bias = search_bias_refresh(s, n, weight > 0.0 ? (value + util) / weight : 0.0, orig);
        b = n->bias;
    }
    double w = n->nn_weight, v = n->nn_value, t = n->nn_util;
    value += w * v;
    value_sq += w * v * v;
    util += w * (t - v + b);
    util_sq += w * t * t;
    score += w * n->nn_lead;
    n->value_sum = (float)value;
    n->value_sq = (float)value_sq;
    n->util_sum = (float)util;
    n->util_sq = (float)util_sq;
    n->score_sum = (float)score;
    n->weight_sum = (float)(weight + w);
    return 1;
}
