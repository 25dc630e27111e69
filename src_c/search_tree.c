/* search_tree.c - the node and edge arenas of the search (search_tree.h), grown by doubling up
 * to the memory cap (max_memory). */
#include "search_tree.h"

#include <stdlib.h>
#include <string.h>

int64_t search_memory(const search_t *s) {
    return s->nnodes * (int64_t)sizeof(node_t) + s->nedges * (int64_t)sizeof(edge_t);
}

static int fits(const search_t *s, int64_t more_nodes, int64_t more_edges) {
    return search_memory(s) + more_nodes * (int64_t)sizeof(node_t) +
           more_edges * (int64_t)sizeof(edge_t) <= s->p.max_memory;
}

static int grow(void **arr, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p) return -1;
    *arr = p;
    *cap = c;
    return 0;
}

int32_t search_tree_new_node(search_t *s) {
    if (!fits(s, 1, 0) || grow((void **)&s->nodes, &s->capnodes, s->nnodes + 1, sizeof(node_t)) != 0) {
        s->full_events++;
        return -1;
    }
    node_t *n = &s->nodes[s->nnodes];
    memset(n, 0, sizeof(*n));
    n->edges = -1;
    n->bias_entry = -1;
    n->state = NODE_FRESH;
    return (int32_t)s->nnodes++;
}

int64_t search_tree_new_edges(search_t *s, int k) {
    if (!fits(s, 0, k) || grow((void **)&s->edges, &s->capedges, s->nedges + k, sizeof(edge_t)) != 0) {
        s->full_events++;
        return -1;
    }
    int64_t first = s->nedges;
    s->nedges += k;
    return first;
}

int search_tree_clear(search_t *s) {
    s->nnodes = 0;
    s->nedges = 0;
    if (grow((void **)&s->nodes, &s->capnodes, 1, sizeof(node_t)) != 0) return -1;
    memset(&s->nodes[0], 0, sizeof(node_t));
    s->nodes[0].edges = -1;
    s->nodes[0].bias_entry = -1;
    s->nnodes = 1;
    s->root = 0;
    return 0;
}

int search_any_pending(const search_t *s) {
    for (int i = 0; i < s->nslots; i++)
        if (s->slot[i].npending) return 1;
    return 0;
}
