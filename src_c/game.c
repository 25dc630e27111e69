/* game.c - rules (ko, superko, suicide), position history and scoring. */
#include "game.h"

#include <stdlib.h>
#include <string.h>

static void bloom_add(game_t *g, uint64_t h) {
    unsigned bit = (unsigned)(h >> 48) & (GAME_BLOOM_BITS - 1);
    g->bloom[bit >> 3] |= (uint8_t)(1u << (bit & 7));
}

/* Makes room for one more hash and one more move; 0, or -1 (nothing changed) out of memory. */
static int reserve(game_t *g) {
    if (g->nhashes == g->caphashes) {
        int cap = g->caphashes ? g->caphashes * 2 : 256;
        uint64_t *p = realloc(g->hashes, (size_t)cap * sizeof(*p));
        if (!p) return -1;
        g->hashes = p;
        g->caphashes = cap;
    }
    if (g->nhashes - 1 >= g->capmoves) {
        int cap = g->capmoves ? g->capmoves * 2 : 256;
        int16_t *m = realloc(g->moves, (size_t)cap * sizeof(*m));
        if (!m) return -1;
        g->moves = m;
        uint8_t *c = realloc(g->movers, (size_t)cap);
        if (!c) return -1;   /* moves grew, movers did not: capmoves still fits both */
        g->movers = c;
        g->capmoves = cap;
    }
    return 0;
}

/* After reserve(): appends a hash. */
static void push_hash(game_t *g, uint64_t h) {
    g->hashes[g->nhashes++] = h;
    bloom_add(g, h);
}

game_t *game_new(int size, rules_t rules) {
    if (size < BOARD_MIN_SIZE || size > BOARD_MAX_SIZE) return NULL;
    game_t *g = calloc(1, sizeof(*g));
    if (!g) return NULL;
    board_init(&g->board, size);
    g->rules = rules;
    if (reserve(g) != 0) { free(g); return NULL; }
    push_hash(g, g->board.hash);
    return g;
}

/* After reserve(): records that colour c played padded point v from the last position. */
static void push_move(game_t *g, int v, int c) {
    int n = g->nhashes - 1;   /* moves recorded so far */
    g->moves[n] = (int16_t)v;
    g->movers[n] = (uint8_t)c;
}

void game_free(game_t *g) {
    if (!g) return;
    free(g->moves);
    free(g->movers);
    free(g->hashes);
    free(g);
}

game_t *game_clone(const game_t *g) {
    game_t *c = malloc(sizeof(*c));
    if (!c) return NULL;
    *c = *g;
    c->hashes = malloc((size_t)g->caphashes * sizeof(uint64_t));
    if (!c->hashes) { free(c); return NULL; }
    memcpy(c->hashes, g->hashes, (size_t)g->nhashes * sizeof(uint64_t));
    c->moves = NULL;
    c->movers = NULL;
    if (g->capmoves) {
        c->moves = malloc((size_t)g->capmoves * sizeof(int16_t));
        c->movers = malloc((size_t)g->capmoves);
        if (!c->moves || !c->movers) { game_free(c); return NULL; }
        memcpy(c->moves, g->moves, (size_t)(g->nhashes - 1) * sizeof(int16_t));
        memcpy(c->movers, g->movers, (size_t)(g->nhashes - 1));
    }
    return c;
}

int game_seen(const game_t *g, uint64_t h) {
    unsigned bit = (unsigned)(h >> 48) & (GAME_BLOOM_BITS - 1);
    if (!(g->bloom[bit >> 3] & (1u << (bit & 7)))) return 0;
    for (int i = g->nhashes - 1; i >= 0; i--)
        if (g->hashes[i] == h) return 1;
    return 0;
}

static int check_point(const game_t *g, int v, int c) {
    const board_t *b = &g->board;
    int reason = board_check(b, v, c, g->rules.allow_suicide);
    if (reason != MOVE_OK || v == BOARD_PASS) return reason;
    if (g->rules.ko_rule == KO_POSITIONAL && game_seen(g, board_hash_after(b, v, c)))
        return MOVE_SUPERKO;
    return MOVE_OK;
}

int game_check(const game_t *g, int pt, int c) {
    int v = board_from_compact(&g->board, pt);
    if (v == BOARD_NONE) return MOVE_OFF_BOARD;
    return check_point(g, v, c);
}

int game_play(game_t *g, int pt, int c) {
    int reason = game_check(g, pt, c);
    if (reason != MOVE_OK) return reason;
    if (reserve(g) != 0) return -1;   /* before any change: a failed play leaves g as it was */
    /* Shift the history planes: prev[0] becomes the current position. */
    memmove(g->prev[1], g->prev[0], (size_t)(GAME_PREV - 1) * BOARD_MAX_AREA);
    game_stones(g, g->prev[0]);
    if (g->nprev < GAME_PREV) g->nprev++;
    int v = board_from_compact(&g->board, pt);
    push_move(g, v, c);
    board_play(&g->board, v, c);
    push_hash(g, g->board.hash);
    return MOVE_OK;
}

void game_legal_mask(const game_t *g, int c, uint8_t *mask) {
    const board_t *b = &g->board;
    int n = b->size;
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++)
            mask[r * n + col] = check_point(g, board_point(b, r, col), c) == MOVE_OK;
    mask[n * n] = 1;
}

float game_score(const game_t *g, uint8_t *owner) {
    return (float)board_area(&g->board, owner) - g->rules.komi;
}

void game_stones(const game_t *g, uint8_t *out) {
    const board_t *b = &g->board;
    int n = b->size;
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++) out[r * n + col] = b->color[board_point(b, r, col)];
}

void game_set_to_move(game_t *g, int c) {
    if (c == BLACK || c == WHITE) g->board.to_move = (uint8_t)c;
}
