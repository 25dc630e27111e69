/* feature_planes.c - input planes for the networks. */
#include "count.h"
#include "feature_planes.h"
#include "kata_features.h"

#include <stdlib.h>
#include <string.h>

int features_planes(int set) {
    switch (set) {
    case FEATURES_RICH: return 20;
    case FEATURES_LZ18: return 18;
    case FEATURES_KATA: case FEATURES_KATA_S: return KATA_PLANES;
    default: return -1;
    }
}

static void fill(float *plane, int area, float value) {
    for (int i = 0; i < area; i++) plane[i] = value;
}

static void write_rich(const board_t *b, const rules_t *rules, const uint8_t *suicide, float *out) {
    int n = b->size, area = n * n;
    int me = b->to_move, opp = board_other(me);
    memset(out, 0, 14 * (size_t)area * sizeof(float)); /* the sparse planes 0-13 */
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c), i = r * n + c;
            int col = b->color[v];
            if (col == me || col == opp) {
                int base = (col == me) ? 0 : 1;
                int libs = board_libs(b, v);
                out[base * area + i] = 1.0f;
                int lp = (col == me ? 2 : 5) + (libs >= 3 ? 2 : libs - 1);
                out[lp * area + i] = 1.0f;
            } else if (col == EMPTY) {
                if (suicide ? suicide[i] : board_check(b, v, me, 0) == MOVE_SUICIDE) out[13 * area + i] = 1.0f;
            }
        }
    if (b->ko != BOARD_NONE && b->ko_color == me) out[8 * area + board_to_compact(b, b->ko)] = 1.0f;
    for (int k = 0; k < BOARD_RECENT; k++) {
        int v = b->recent[k];
        if (v != BOARD_NONE && v != BOARD_PASS && b->color[v] != EMPTY)
            out[(9 + k) * area + board_to_compact(b, v)] = 1.0f;
    }
    fill(out + 14 * area, area, me == BLACK ? 1.0f : 0.0f);
    fill(out + 15 * area, area, 1.0f);
    float komi = count_area_komi(rules, b);  /* our nets know area scoring only */
    fill(out + 16 * area, area, (me == WHITE ? komi : -komi) / 15.0f);
    fill(out + 17 * area, area, b->recent[0] == BOARD_PASS ? 1.0f : 0.0f);
    fill(out + 18 * area, area, b->recent[1] == BOARD_PASS ? 1.0f : 0.0f);
    fill(out + 19 * area, area, (rules->ko_rule == KO_POSITIONAL || rules->allow_suicide) ? 1.0f : 0.0f);
}

static void write_lz18(const board_t *b, const uint8_t *const prev[GAME_PREV], float *out) {
    int n = b->size, area = n * n;
    int me = b->to_move, opp = board_other(me);
    memset(out, 0, 18 * (size_t)area * sizeof(float));
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int col = b->color[board_point(b, r, c)];
            if (col == me) out[r * n + c] = 1.0f;
            else if (col == opp) out[8 * area + r * n + c] = 1.0f;
        }
    for (int t = 1; t < 8; t++) {
        const uint8_t *p = prev[t - 1];
        if (!p) break;
        for (int i = 0; i < area; i++) {
            if (p[i] == me) out[t * area + i] = 1.0f;
            else if (p[i] == opp) out[(8 + t) * area + i] = 1.0f;
        }
    }
    fill(out + (me == BLACK ? 16 : 17) * area, area, 1.0f);
}

void features_write(int set, const board_t *b, const uint8_t *const prev[GAME_PREV],
                    const rules_t *rules, const uint8_t *suicide, float *out) {
    if (set == FEATURES_LZ18) write_lz18(b, prev, out);
    else if (set == FEATURES_KATA || set == FEATURES_KATA_S)
        memset(out, 0, (size_t)KATA_PLANES * (size_t)(b->size * b->size) * sizeof(float));
    else write_rich(b, rules, suicide, out);
}

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t features_key(int set, const board_t *b, const uint64_t prev_hash[GAME_PREV],
                      const rules_t *rules) {
    uint64_t k = mix(b->hash + 0x1234567ULL * (uint64_t)(set + 1) + (uint64_t)b->size);
    k ^= mix(zobrist_aux[1] + (uint64_t)b->to_move);
    if (set == FEATURES_LZ18) {
        for (int i = 0; i < GAME_PREV; i++) k ^= mix(prev_hash[i] + (uint64_t)(i + 1) * 0x9E37ULL);
        return k;
    }
    int ko = (b->ko != BOARD_NONE && b->ko_color == b->to_move) ? b->ko : 0;
    k ^= mix(zobrist_aux[ko] + 77);
    for (int i = 0; i < BOARD_RECENT; i++)
        k ^= mix((uint64_t)(b->recent[i] + 2) * 0x100000001B3ULL + (uint64_t)i * 0xABCDEFULL);
    int komi2 = (int)(count_area_komi(rules, b) * 2.0f);
    k ^= mix((uint64_t)(komi2 + 100000) * 0xD6E8FEB86659FD93ULL);
    k ^= mix((uint64_t)(rules->ko_rule * 2 + rules->allow_suicide) + 0xFEEDULL);
    return k;
}

void features_game(int set, const game_t *g, float *out) {
    if (set == FEATURES_KATA || set == FEATURES_KATA_S) {
        kata_features_after(g, NULL, 0, set == FEATURES_KATA_S, out, NULL);
        return;
    }
    const uint8_t *prev[GAME_PREV];
    for (int i = 0; i < GAME_PREV; i++) prev[i] = i < g->nprev ? g->prev[i] : NULL;
    features_write(set, &g->board, prev, &g->rules, NULL, out);
}

uint64_t features_game_key(int set, const game_t *g) {
    if (set == FEATURES_KATA || set == FEATURES_KATA_S) {
        uint64_t key = 0;
        float *tmp = malloc((size_t)KATA_PLANES * BOARD_MAX_AREA * sizeof(float));
        if (tmp) kata_features_after(g, NULL, 0, set == FEATURES_KATA_S, tmp, &key);
        free(tmp);
        return key;
    }
    uint64_t ph[GAME_PREV];
    for (int i = 0; i < GAME_PREV; i++) {
        int idx = g->nhashes - 2 - i;
        ph[i] = idx >= 0 ? g->hashes[idx] : 0;
    }
    return features_key(set, &g->board, ph, &g->rules);
}
