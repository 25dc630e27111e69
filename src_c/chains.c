/* chains.c - chains, liberties, eyes and enclosed regions of a game's position. */
#include "chains.h"

#include <string.h>

int game_chains(const game_t *g, int16_t *label) {
    const board_t *b = &g->board;
    int n = b->size, chains = 0;
    int16_t first[BOARD_MAX_POINTS];    /* per chain head: its smallest point, -1 unseen */
    memset(first, 0xff, sizeof(first));
    for (int p = 0; p < n * n; p++) {
        int v = board_from_compact(b, p);
        if (b->color[v] == EMPTY) { label[p] = -1; continue; }
        int h = b->head[v];
        if (first[h] < 0) { first[h] = (int16_t)p; chains++; }   /* points run in order */
        label[p] = first[h];
    }
    return chains;
}

int game_chain_liberties(const game_t *g, int pt, int16_t *libs) {
    const board_t *b = &g->board;
    int n = b->size, s = b->stride;
    if (pt < 0 || pt >= n * n) return 0;
    int v = board_from_compact(b, pt);
    if (b->color[v] != BLACK && b->color[v] != WHITE) return 0;
    uint8_t is_lib[BOARD_MAX_AREA];
    memset(is_lib, 0, sizeof(is_lib));
    int w = v;
    do {
        int d[4] = {-s, -1, 1, s};
        for (int k = 0; k < 4; k++)
            if (b->color[w + d[k]] == EMPTY) is_lib[board_to_compact(b, w + d[k])] = 1;
        w = b->next[w];
    } while (w != v);
    int count = 0;
    for (int p = 0; p < n * n; p++)
        if (is_lib[p]) libs[count++] = (int16_t)p;
    return count;
}

void game_eyes(const game_t *g, int c, uint8_t *mask) {
    const board_t *b = &g->board;
    int n = b->size;
    for (int p = 0; p < n * n; p++) mask[p] = (uint8_t)board_is_eye(b, board_from_compact(b, p), c);
}

/* Marks in `seen` (1) every point reachable from the marked ones through empty points and
 * stones of colour `through` (EMPTY: empty points only); stack holds the marked points. */
static void flood(const board_t *b, uint8_t *seen, int16_t *stack, int sp, int through) {
    int s = b->stride, d[4] = {-s, -1, 1, s};
    while (sp) {
        int v = stack[--sp];
        for (int k = 0; k < 4; k++) {
            int q = v + d[k], cq = b->color[q];
            if (!seen[q] && (cq == EMPTY || (through != EMPTY && cq == through))) {
                seen[q] = 1;
                stack[sp++] = (int16_t)q;
            }
        }
    }
}

int game_floating(const game_t *g, uint8_t *dead) {
    const board_t *b = &g->board;
    int n = b->size, count = 0;
    uint8_t region_seen[BOARD_MAX_POINTS], ext[3][BOARD_MAX_POINTS], is_dead[BOARD_MAX_POINTS];
    int16_t stack[BOARD_MAX_POINTS];
    memset(region_seen, 0, sizeof(region_seen));
    memset(is_dead, 0, sizeof(is_dead));
    for (int p = 0; p < n * n; p++) {
        int v0 = board_from_compact(b, p);
        if (b->color[v0] != EMPTY || region_seen[v0]) continue;
        uint8_t region[BOARD_MAX_POINTS];
        memset(region, 0, sizeof(region));
        region[v0] = 1;
        stack[0] = (int16_t)v0;
        flood(b, region, stack, 1, EMPTY);
        for (int c = BLACK; c <= WHITE; c++) {
            int sp = 0;
            memcpy(ext[c], region, sizeof(region));
            for (int q = 0; q < n * n; q++) {
                int v = board_from_compact(b, q);
                if (region[v]) {
                    region_seen[v] = 1;
                    stack[sp++] = (int16_t)v;
                }
            }
            flood(b, ext[c], stack, sp, c);
        }
        int inside[3] = {0, 0, 0}, private_[3] = {0, 0, 0};
        for (int q = 0; q < n * n; q++) {
            int v = board_from_compact(b, q), cv = b->color[v];
            for (int c = BLACK; c <= WHITE; c++) {
                if (!ext[c][v]) continue;
                if (cv == c) inside[c]++;
                else if (cv == EMPTY && !ext[board_other(c)][v]) private_[c]++;
            }
        }
        int floats = 0, loser = EMPTY;
        for (int c = BLACK; c <= WHITE; c++)
            if (inside[c] && private_[c] <= 1 && inside[c] <= inside[board_other(c)]) {
                floats++;
                loser = c;
            }
        if (floats != 1) continue;
        for (int q = 0; q < n * n; q++) {
            int v = board_from_compact(b, q);
            if (ext[loser][v] && b->color[v] == loser) is_dead[v] = 1;
        }
    }
    for (int q = 0; q < n * n; q++) {
        dead[q] = is_dead[board_from_compact(b, q)];
        count += dead[q];
    }
    return count;
}
