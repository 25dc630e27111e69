/* search_stats.c - what a search reports: root value, score and utility, the children with
 * their lower confidence bounds (Student's t), principal variations, the move choice, and the
 * consistency check the tests use. */
#include "search_select.h"

#include <math.h>



int32_t search_root_visits(const search_t *s) { return s->nodes[s->root].visits; }
float search_root_weight(const search_t *s) { return s->nodes[s->root].weight_sum; }

float search_root_value(const search_t *s) {
    const node_t *r = &s->nodes[s->root];
    return r->visits ? -r->value_sum / r->weight_sum : 0.0f;
}

float search_root_score(const search_t *s) {
    const node_t *r = &s->nodes[s->root];
    return r->visits ? -r->score_sum / r->weight_sum : 0.0f;
}

float search_root_utility(const search_t *s) {
    const node_t *r = &s->nodes[s->root];
    return r->visits ? -r->util_sum / r->weight_sum : 0.0f;
}

float search_score_centre(const search_t *s) { return s->score_centre; }

float search_child_utility(const search_t *s, int pt) {
    const node_t *r = &s->nodes[s->root];
    if (pt < 0 || pt > s->area) return -2.0f;
    int v = board_from_compact(&s->game->board, pt);
    for (int k = 0; r->edges >= 0 && k < r->nedges; k++) {
        const edge_t *e = &s->edges[r->edges + k];
        if (e->move != v) continue;
        if (e->child < 0 || s->nodes[e->child].visits == 0) return -2.0f;
        return utility_sum(&s->nodes[e->child]) / s->nodes[e->child].weight_sum;
    }
    return -2.0f;
}

float search_root_explore_factor(const search_t *s) { return search_explore_factor(s, &s->nodes[s->root]); }

/* Student's t for the LCB (as Leela Zero picks its move): with n visits the bound is
 * mean - t(n-1) * sqrt(sample variance / n), where t(df) has the upper-tail probability that
 * lcb_z has under the normal distribution.  With few visits t is far wider than z (df 2 at
 * z 4.265: t 223), so a child with 3 lucky visits cannot outrank one with 17. */

/* Continued fraction of the regularized incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-13;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d; h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d; if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c; if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < eps) break;
    }
    return h;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double inc_beta(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_cf(a, b, x) / a;
    return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;
}

/* P(T > t) for Student's t with df degrees of freedom, t >= 0. */
static double t_upper_tail(double t, double df) {
    return 0.5 * inc_beta(0.5 * df, 0.5, df / (df + t * t));
}

/* The t whose upper-tail probability equals that of z under the normal distribution. */
double search_t_quantile(double z, int df) {
    if (df < 1) df = 1;
    if (df > 1000) {  /* Cornish-Fisher: within 1e-5 of the exact value from here on */
        double n = df, z3 = z * z * z, z5 = z3 * z * z;
        return z + (z3 + z) / (4.0 * n) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n);
    }
    double p = 0.5 * erfc(z / sqrt(2.0));
    double lo = 0.0, hi = z > 1.0 ? z : 1.0;
    while (t_upper_tail(hi, df) > p && hi < 1e12) { lo = hi; hi *= 2.0; }
    for (int i = 0; i < 60 && hi - lo > 1e-7 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (t_upper_tail(mid, df) > p) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

float search_lcb(float z, int32_t visits, float value_sum, float value_sq) {
    return search_lcb_weighted(z, visits, (float)visits, value_sum, value_sq);
}

float search_lcb_weighted(float z, int32_t visits, float weight_sum, float value_sum, float value_sq) {
    if (visits < 2 || !(weight_sum > 0.0f)) return -1e6f + (float)(visits > 0 ? visits : 0);
    float n = (float)visits, w = weight_sum;
    float q = value_sum / w;
    /* sample variance: (sum of squares / w - q^2) * n / (n - 1), written so that it is exactly
     * (value_sq - n q^2) / (n - 1) when w = n */
    float var = (value_sq - w * q * q) / (w - w / n);
    if (var < 1e-4f) var = 1e-4f;
    return q - (float)search_t_quantile(z, visits - 1) * sqrtf(var / n);
}

static float node_lcb(const search_t *s, const node_t *c) {
    if (!c) return -1e6f;
    return search_lcb_weighted(s->p.lcb_z, c->visits, c->weight_sum, c->value_sum, c->value_sq);
}

/* The bound the move choice compares: on values, or with lcb_utility on value plus score
 * utility (and value-bias correction), shifted from the value bound by the mean utility (the
 * spread is the values'; the utility sums hold corrections their squares do not). */
static float choice_lcb(const search_t *s, const node_t *c) {
    float l = node_lcb(s, c);
    if (s->p.lcb_utility == 0.0f || !c || c->visits < 2) return l;
    return l + c->util_sum / c->weight_sum;
}

static int compact_of(const search_t *s, int v) { return board_to_compact(&s->game->board, v); }

static const node_t *edge_node(const search_t *s, const edge_t *e) {
    return e->child >= 0 ? &s->nodes[e->child] : NULL;
}

static int32_t edge_visits(const search_t *s, const edge_t *e) {
    return e->child >= 0 ? s->nodes[e->child].visits : 0;
}

int search_root_children(const search_t *s, int32_t *moves, int32_t *visits, float *q,
                         float *prior, float *lcb, int max) {
    const node_t *r = &s->nodes[s->root];
    if (r->edges < 0) return 0;
    int k = r->nedges < max ? r->nedges : max;
    for (int i = 0; i < k; i++) {
        const edge_t *e = &s->edges[r->edges + i];
        const node_t *c = edge_node(s, e);
        moves[i] = compact_of(s, e->move);
        visits[i] = c ? c->visits : 0;
        q[i] = (c && c->visits) ? c->value_sum / c->weight_sum : 0.0f;
        prior[i] = e->prior;
        lcb[i] = node_lcb(s, c);
    }
    return k;
}

/* Most visited edge of n (ties: higher prior), -1 if none. */
static int32_t most_visited(const search_t *s, const node_t *n) {
    int32_t best = -1;
    for (int k = 0; k < n->nedges; k++) {
        int32_t ei = n->edges + k;
        const edge_t *e = &s->edges[ei];
        if (best < 0) { best = ei; continue; }
        int32_t v = edge_visits(s, e), bv = edge_visits(s, &s->edges[best]);
        if (v > bv || (v == bv && e->prior > s->edges[best].prior)) best = ei;
    }
    return best;
}

int search_pv(const search_t *s, int pt, int32_t *out, int max) {
    const node_t *n = &s->nodes[s->root];
    int len = 0;
    int32_t ei = -1;
    if (n->edges < 0) return 0;
    if (pt >= 0) {
        int v = board_from_compact(&s->game->board, pt);
        for (int k = 0; k < n->nedges; k++)
            if (s->edges[n->edges + k].move == v) ei = n->edges + k;
    } else {
        ei = most_visited(s, n);
    }
    while (ei >= 0 && len < max && edge_visits(s, &s->edges[ei]) > 0) {
        out[len++] = compact_of(s, s->edges[ei].move);
        n = &s->nodes[s->edges[ei].child];
        if (n->edges < 0) break;
        ei = most_visited(s, n);
    }
    return len;
}

int search_choose(search_t *s) {
    const node_t *r = &s->nodes[s->root];
    if (r->edges < 0 || r->nedges == 0) return s->area;
    int32_t best = most_visited(s, r);
    int32_t top = edge_visits(s, &s->edges[best]);
    if (top == 0) return compact_of(s, s->edges[best].move);
    if (s->p.temperature > 0.0f) {
        double w[BOARD_MAX_AREA + 1], total = 0.0;
        double inv = 1.0 / s->p.temperature;
        for (int k = 0; k < r->nedges; k++) {
            int32_t v = edge_visits(s, &s->edges[r->edges + k]);
            w[k] = v > 0 ? pow((double)v / (double)top, inv) : 0.0;
            total += w[k];
        }
        double x = search_uniform01(s) * total;
        for (int k = 0; k < r->nedges; k++) {
            x -= w[k];
            if (x <= 0.0 && w[k] > 0.0) return compact_of(s, s->edges[r->edges + k].move);
        }
        return compact_of(s, s->edges[best].move);
    }
    if (s->p.lcb_z > 0.0f) {
        float floor_visits = s->p.lcb_min_visit_frac * (float)top;
        int32_t pick = best;
        float pick_lcb = choice_lcb(s, edge_node(s, &s->edges[best]));
        for (int k = 0; k < r->nedges; k++) {
            const edge_t *e = &s->edges[r->edges + k];
            const node_t *c = edge_node(s, e);
            if (!c || (float)c->visits < floor_visits || c->visits < 2) continue;
            float l = choice_lcb(s, c);
            if (l > pick_lcb) { pick_lcb = l; pick = r->edges + k; }
        }
        best = pick;
    }
    return compact_of(s, s->edges[best].move);
}

int64_t search_nodes(const search_t *s) { return s->nnodes; }
int64_t search_full_events(const search_t *s) { return s->full_events; }
int search_to_move(const search_t *s) { return s->game->board.to_move; }
const game_t *search_game(const search_t *s) { return s->game; }

int64_t search_check(const search_t *s) {
    int pending = search_any_pending(s);
    for (int64_t i = 0; i < s->nnodes; i++) {
        const node_t *n = &s->nodes[i];
        if (n->in_flight < 0 || (!pending && n->in_flight != 0)) return -(i + 1);
        if (n->state == NODE_PENDING && !pending) return -(i + 1);
        if (n->visits > 0 && !(n->weight_sum > 0.0f)) return -(i + 1);
    }
    /* Visits add up below the root: an expanded node's visits are its own evaluation plus its
     * children's (terminal nodes and re-evaluations at the memory cap excepted). */
    if (s->full_events) return 0;
    for (int64_t i = 0; i < s->nnodes; i++) {
        const node_t *n = &s->nodes[i];
        if (n->state != NODE_EXPANDED || n->edges < 0) continue;
        int64_t sum = 0, flight = 0;
        for (int k = 0; k < n->nedges; k++) {
            const edge_t *e = &s->edges[n->edges + k];
            if (e->child < 0) continue;
            sum += s->nodes[e->child].visits;
            flight += s->nodes[e->child].in_flight;
        }
        if (n->visits != 1 + sum && !(i == s->root && n->visits == sum)) return -(i + 1);
        if (n->in_flight != flight) return -(i + 1);
    }
    return 0;
}
