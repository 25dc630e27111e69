/* api.c - accessors for the Python binding. */
#include "api.h"

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
    const board_t *start = &g->board;
    int n = start->size, area = n * n;
    if (playouts < 1) return -1;
    uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + g->board.hash + 1;
    if (!rng) rng = 1;
    uint8_t owner[BOARD_MAX_AREA];
    for (int i = 0; i < area; i++) ownership[i] = 0.0f;
    for (int p = 0; p < playouts; p++) {
        board_t b = *start;
        b.to_move = (uint8_t)((p & 1) ? WHITE : BLACK); /* half the playouts start with each side */
        board_playout(&b, &rng, max_moves, tactical);
        board_area(&b, owner);
        for (int i = 0; i < area; i++)
            ownership[i] += owner[i] == BLACK ? 1.0f : owner[i] == WHITE ? -1.0f : 0.0f;
    }
    for (int i = 0; i < area; i++) ownership[i] /= (float)playouts;
    return 0;
}
