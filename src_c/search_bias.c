/* search_bias.c - subtree value-bias correction (KataGo's subtreeValueBias*).
 *
 * The net misjudges some local shapes the same way wherever they occur.  Nodes reached by the
 * same move of the same colour, after the same previous move, with the same 5x5 neighbourhood
 * and ko point share an entry; each node with visited children contributes
 *   (mean utility of its children - the net's utility of the node) * w,
 * w = (the children's playout weight)^exponent (their visits without weighted playouts)
 * and the entry's weighted mean, times the factor, is added to the net's utility of every node
 * that shares it.  Our nodes keep sums, not averages recomputed from their children, so a change
 * of a node's correction is added to its utility sum and, with alternating sign, to the sums of
 * its ancestors on the path being backed up; nodes off that path keep their last correction until
 * a backup passes through them again (KataGo also refreshes only the nodes it backs up through).
 * The correction lives in the utility sums: winrate, LCB on values and resignation never see it. */
#include "search_bias.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BIAS_MAX_ENTRIES 65536

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Key of the node reached when `color` plays `move` on board b (b before the move, so its
 * recent[0] is the previous move and its ko point the one the move was played under). */
uint64_t search_bias_key(const board_t *b, int move, int color) {
    uint64_t h = mix64(0x9E3779B97F4A7C15ULL ^ ((uint64_t)color << 48) ^
                       ((uint64_t)(uint16_t)move << 24) ^ (uint64_t)(uint16_t)b->recent[0]);
    if (move != BOARD_PASS) {
        int r0 = move / b->stride - 1, c0 = move % b->stride - 1, k = 0;
        for (int dr = -2; dr <= 2; dr++)
            for (int dc = -2; dc <= 2; dc++, k++) {
                int r = r0 + dr, c = c0 + dc;
                int code = (r < 0 || c < 0 || r >= b->size || c >= b->size) ? BORDER
                                                                          : b->color[board_point(b, r, c)];
                h = mix64(h ^ ((uint64_t)k << 8) ^ (uint64_t)code);
            }
    }
    if (b->ko != BOARD_NONE) h = mix64(h ^ ((uint64_t)(uint16_t)b->ko << 32) ^ 0xC0FFEEULL);
    return h ? h : 1;
}

static int32_t table_cap(const search_t *s) {
    int64_t want = s->p.max_memory / 1024;  /* small trees get a small table */
    int32_t cap = 1024;
    while (cap < BIAS_MAX_ENTRIES && cap < want) cap *= 2;
    return cap;
}

/* Index of the entry for key (inserted empty if new) in table t of capacity cap, or -1 full. */
static int32_t table_find(bias_entry_t *t, int32_t cap, int32_t *used, uint64_t key) {
    if ((int64_t)*used * 8 >= (int64_t)cap * 7) {  /* nearly full: only existing keys */
        for (int32_t i = (int32_t)(key & (uint64_t)(cap - 1)), n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
            if (t[i].key == key) return i;
            if (t[i].key == 0) return -1;
        }
        return -1;
    }
    for (int32_t i = (int32_t)(key & (uint64_t)(cap - 1));; i = (i + 1) & (cap - 1)) {
        if (t[i].key == key) return i;
        if (t[i].key == 0) {
            t[i].key = key;
            t[i].delta = 0.0;
            t[i].weight = 0.0;
            (*used)++;
            return i;
        }
    }
}

int32_t search_bias_get(search_t *s, uint64_t key) {
    if (!s->bias_table) {
        s->bias_cap = table_cap(s);
        s->bias_table = calloc((size_t)s->bias_cap, sizeof(bias_entry_t));
        s->bias_used = 0;
        if (!s->bias_table) return -1;
    }
    return table_find(s->bias_table, s->bias_cap, &s->bias_used, key);
}

float search_bias_refresh(search_t *s, node_t *n, double mean, double children) {
    bias_entry_t *e = &s->bias_table[n->bias_entry];
    if (children > 0.0) {
        double w = pow(children, (double)s->p.subtree_bias_weight_exponent);
        double d = (mean - (double)n->nn_util) * w;
        e->delta += d - (double)n->bias_delta;
        e->weight += w - (double)n->bias_weight;
        n->bias_delta = (float)d;
        n->bias_weight = (float)w;
    }
    return e->weight > 0.001 ? (float)(s->p.subtree_bias_factor * e->delta / e->weight) : 0.0f;
}

void search_bias_update(search_t *s, const int32_t *path, int len) {
    if (s->p.subtree_bias_factor == 0.0f || !s->bias_table || search_recomputes(s)) return;
    float carry = 0.0f;  /* change of the child below, from this node's view */
    for (int i = len - 1; i >= 0; i--) {
        node_t *n = &s->nodes[path[i]];
        float total = carry;
        n->util_sum += carry;
        if (i > 0 && n->bias_entry >= 0 && n->state != NODE_TERMINAL && n->visits > 0) {
            /* the children's weight and mean: the node's sums less its own evaluation */
            double children = (double)n->weight_sum - (double)n->nn_weight, mean = 0.0;
            if (n->visits > 1 && children > 0.0) {
                double own = (double)n->nn_weight * ((double)n->nn_util + (double)n->bias);
                mean = ((double)utility_sum(n) - own) / children;
            } else {
                children = 0.0;
            }
            float b = search_bias_refresh(s, n, mean, children);
            float change = (b - n->bias) * n->nn_weight;  /* the own evaluation's weight */
            n->util_sum += change;
            n->bias = b;
            total += change;
        }
        carry = -total;
    }
}

void search_bias_release(search_t *s, const node_t *nodes, int64_t n, double scale) {
    if (!s->bias_table) return;
    for (int64_t i = 0; i < n; i++) {
        const node_t *x = &nodes[i];
        if (x->bias_entry < 0 || x->bias_weight == 0.0f) continue;
        bias_entry_t *e = &s->bias_table[x->bias_entry];
        e->delta += scale * x->bias_delta;
        e->weight += scale * x->bias_weight;
        if (e->weight < 1e-9) { e->weight = 0.0; e->delta = 0.0; }
    }
}

/* When the table is nearly full, rebuilds it from the nodes in the tree: every entry then
 * holds exactly its live nodes' contributions, and keys no node uses are gone. */
void search_bias_compact(search_t *s) {
    if (!s->bias_table || (int64_t)s->bias_used * 8 < (int64_t)s->bias_cap * 6) return;
    bias_entry_t *fresh = calloc((size_t)s->bias_cap, sizeof(bias_entry_t));
    if (!fresh) return;
    int32_t used = 0;
    for (int64_t i = 0; i < s->nnodes; i++) {
        node_t *x = &s->nodes[i];
        if (x->bias_entry < 0) continue;
        int32_t j = table_find(fresh, s->bias_cap, &used, s->bias_table[x->bias_entry].key);
        x->bias_entry = j;
        if (j < 0) { x->bias = 0.0f; continue; }  /* cannot happen: fewer nodes than entries */
        fresh[j].delta += x->bias_delta;
        fresh[j].weight += x->bias_weight;
    }
    free(s->bias_table);
    s->bias_table = fresh;
    s->bias_used = used;
}

int search_child_bias(const search_t *s, int pt, double *delta_sum, double *weight_sum) {
    const node_t *r = &s->nodes[s->root];
    if (pt < 0 || pt > s->area || r->edges < 0 || !s->bias_table) return -1;
    int v = board_from_compact(&s->game->board, pt);
    for (int k = 0; k < r->nedges; k++) {
        const edge_t *e = &s->edges[r->edges + k];
        if (e->move != v || e->child < 0) continue;
        const node_t *c = &s->nodes[e->child];
        if (c->bias_entry < 0) return -1;
        *delta_sum = s->bias_table[c->bias_entry].delta;
        *weight_sum = s->bias_table[c->bias_entry].weight;
        return 0;
    }
    return -1;
}

int32_t search_bias_entries(const search_t *s) { return s->bias_table ? s->bias_used : 0; }
