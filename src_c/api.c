/* api.c - accessors for the Python binding. */
#include "api.h"
#include "playout.h"
#include "search_tree.h"

int game_area(const game_t *g, uint8_t *owner) { return board_area(&g->board, owner); }
int game_size(const game_t *g) { return g->board.size; }
int game_to_move(const game_t *g) { return g->board.to_move; }
int game_passes(const game_t *g) { return g->board.passes; }
uint64_t game_hash(const game_t *g) { return g->board.hash; }
int game_captures(const game_t *g, int c) { return (c == BLACK || c == WHITE) ? g->board.captures[c] : 0; }

int game_ko_point(const game_t *g) {
    const board_t *b = &g->board;
    if (b->ko == BOARD_NONE || b->ko_color != b->to_move) return -1;
    return board_to_compact(b, b->ko);
}

int game_group_libs(const game_t *g, int pt) {
    int v = board_from_compact(&g->board, pt);
    if (v <= 0 || g->board.color[v] == EMPTY || g->board.color[v] == BORDER) return 0;
    return board_libs(&g->board, v);
}

int64_t search_node_bytes(void) { return (int64_t)sizeof(node_t); }
int64_t search_edge_bytes(void) { return (int64_t)sizeof(edge_t); }

int game_playout_ownership(const game_t *g, int playouts, uint64_t seed, int max_moves,
                           int tactical, float *ownership) {
    if (playouts < 1) return -1;
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + g->board.hash + 1;
    if (!rng) rng = 1;
    playout_ownership(&g->board, playouts, &rng, max_moves, tactical, ownership);
    return 0;
}

int game_judged_area(const game_t *g, int playouts, uint64_t seed) {
    if (playouts < 1) return board_area(&g->board, NULL);
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + g->board.hash + 1;
    if (!rng) rng = 1;
    return playout_judged_area(&g->board, playouts, &rng);
}

float game_judged_count(const game_t *g, int playouts, uint64_t seed) {
    if (playouts < 1) return game_count(g, NULL, NULL, NULL);
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + g->board.hash + 1;
    if (!rng) rng = 1;
    uint8_t dead[BOARD_MAX_AREA];
    playout_judged_dead(&g->board, playouts, &rng, dead);
    return game_count(g, dead, NULL, NULL);
}
