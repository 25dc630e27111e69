/* kata_features.c - KataGo's input features: ladders, pass-alive areas (Benson), history. */
#include "kata_features.h"
#include "count.h"
#include "kata_ladder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline int is_stone(int c) { return c == BLACK || c == WHITE; }
static inline int libs_of(const board_t *b, int v) { return b->libs[b->head[v]]; }
static inline int compact(const board_t *b, int v) { return board_to_compact(b, v); }

/* ---------------------------------------------------------------------------------------------
 * Area (KataGo's calculateArea): Benson's pass-alive groups and territory for each colour, then
 * empty regions bordered by one colour only, then the remaining stones as they stand.
 *
 * For colour `pla`, a region is a connected set of empty-or-opponent points containing an empty
 * point.  It is vital to a pla group if every one of its points (every empty one, when suicide
 * is illegal) touches that group.  Groups with fewer than two vital regions are not pass-alive;
 * a region touching a group that is not pass-alive stops being vital; repeat.  Regions with at
 * most one point away from pla stones, touching only pass-alive groups, are pass-alive
 * territory; so are opponent-free regions touching only pass-alive groups (safe big
 * territories); other opponent-free regions count for pla where nothing was marked yet. */

typedef struct {
    int16_t head;          /* first point */
    int16_t vital[4];      /* pla group heads the region is vital to */
    uint8_t nvital;
    uint8_t internal;      /* points not touching pla, capped at 2 */
    uint8_t has_opp;
    uint8_t touches_dead;
} region_t;

static int touches_group_of(const board_t *b, int v, int pla, int head) {
    FOR_NEIGHBOURS(b, v, p) if (b->color[p] == pla && b->head[p] == head) return 1;
    return 0;
}

static void area_for(const board_t *b, int pla, int suicide_legal, uint8_t *result) {
    int opp = board_other(pla), n = b->size;
    int16_t region_of[BOARD_MAX_POINTS];
    int16_t next_in_region[BOARD_MAX_POINTS];
    region_t regions[BOARD_MAX_AREA];
    int nregions = 0, any_pla = 0;
    for (int v = 0; v < b->stride * b->stride; v++) region_of[v] = -1;
    int16_t queue[BOARD_MAX_AREA];
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c);
            if (b->color[v] == pla) any_pla = 1;
            if (b->color[v] != EMPTY || region_of[v] >= 0) continue;
            region_t *g = &regions[nregions];
            memset(g, 0, sizeof(*g));
            g->head = (int16_t)v;
            FOR_NEIGHBOURS(b, v, p) {
                if (b->color[p] != pla) continue;
                int h = b->head[p], dup = 0;
                for (int i = 0; i < g->nvital && !dup; i++) dup = g->vital[i] == h;
                if (!dup) g->vital[g->nvital++] = (int16_t)h;
            }
            int qh = 0, qt = 0, last = v;
            queue[qt++] = (int16_t)v;
            region_of[v] = (int16_t)nregions;
            while (qh < qt) {
                int u = queue[qh++];
                if (g->nvital && (suicide_legal || b->color[u] == EMPTY)) {
                    int k = 0;
                    for (int i = 0; i < g->nvital; i++)
                        if (touches_group_of(b, u, pla, g->vital[i])) g->vital[k++] = g->vital[i];
                    g->nvital = (uint8_t)k;
                }
                int near_pla = 0;
                FOR_NEIGHBOURS(b, u, p) near_pla |= b->color[p] == pla;
                if (!near_pla && g->internal < 2) g->internal++;
                if (b->color[u] == opp) g->has_opp = 1;
                if (u != v) { next_in_region[last] = (int16_t)u; last = u; }
                FOR_NEIGHBOURS(b, u, p) {
                    if ((b->color[p] == EMPTY || b->color[p] == opp) && region_of[p] < 0) {
                        region_of[p] = (int16_t)nregions;
                        queue[qt++] = (int16_t)p;
                    }
                }
            }
            next_in_region[last] = (int16_t)v;   /* circular list from the head */
            nregions++;
        }

    /* Benson iteration. */
    int16_t heads[BOARD_MAX_AREA];
    int nheads = 0;
    int16_t vital_count[BOARD_MAX_POINTS];
    uint8_t dead[BOARD_MAX_AREA];
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c);
            if (b->color[v] == pla && b->head[v] == v) {
                vital_count[v] = 0;
                dead[nheads] = 0;
                heads[nheads++] = (int16_t)v;
            }
        }
    for (int i = 0; i < nregions; i++)
        for (int j = 0; j < regions[i].nvital; j++) vital_count[regions[i].vital[j]]++;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < nheads; i++) {
            if (dead[i] || vital_count[heads[i]] >= 2) continue;
            dead[i] = 1;
            changed = 1;
            int s = heads[i];
            do {
                FOR_NEIGHBOURS(b, s, p) {
                    int ri = region_of[p];
                    if (ri < 0 || regions[ri].touches_dead) continue;
                    regions[ri].touches_dead = 1;
                    for (int j = 0; j < regions[ri].nvital; j++) vital_count[regions[ri].vital[j]]--;
                }
                s = b->next[s];
            } while (s != heads[i]);
        }
    }
    for (int i = 0; i < nheads; i++) {
        if (dead[i]) continue;
        int s = heads[i];
        do { result[s] = (uint8_t)pla; s = b->next[s]; } while (s != heads[i]);
    }
    for (int i = 0; i < nregions && any_pla; i++) {
        region_t *g = &regions[i];
        int mark = !g->touches_dead && (g->internal <= 1 || !g->has_opp);
        int u = g->head;
        if (mark) {
            do { result[u] = (uint8_t)pla; u = next_in_region[u]; } while (u != g->head);
        } else if (!g->has_opp) {
            do { if (result[u] == EMPTY) result[u] = (uint8_t)pla; u = next_in_region[u]; } while (u != g->head);
        }
    }
}

void kata_area(const board_t *b, int suicide_legal, uint8_t *owner) {
    uint8_t result[BOARD_MAX_POINTS];
    memset(result, EMPTY, sizeof(result));
    area_for(b, BLACK, suicide_legal, result);
    area_for(b, WHITE, suicide_legal, result);
    int n = b->size;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c);
            owner[r * n + c] = result[v] != EMPTY ? result[v] : (is_stone(b->color[v]) ? b->color[v] : EMPTY);
        }
}

/* ---------------------------------------------------------------------------------------------
 * History: the game's moves, then the path's. */

typedef struct {
    const game_t *g;
    const int16_t *path;
    int npath;
    int first;              /* first game move that counts (history is cleared before it) */
    uint64_t path_hash[1025];   /* path_hash[i]: hash before path move i; [npath]: the leaf */
} hist_t;

static int hist_len(const hist_t *h) { return h->g->nhashes - 1 + h->npath; }

/* Move i (0 = first game move) and its colour. */
static void hist_move(const hist_t *h, const board_t *leaf_start_colors, int i, int *move, int *color) {
    int ng = h->g->nhashes - 1;
    if (i < ng) { *move = h->g->moves[i]; *color = h->g->movers[i]; return; }
    int k = i - ng;
    *move = h->path[k];
    /* path moves alternate from the root's side to move */
    int root = leaf_start_colors->to_move;
    *color = (k % 2 == 0) ? root : board_other(root);
}

static uint64_t hist_hash_before(const hist_t *h, int i) {
    int ng = h->g->nhashes - 1;
    return i < ng ? h->g->hashes[i] : h->path_hash[i - ng];
}

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void fill(float *plane, int area, float value) {
    for (int i = 0; i < area; i++) plane[i] = value;
}

/* KataGo's triangle wave of komi parity (global input 18), for komi from the mover's view. */
static float komi_wave(float self_komi, int area) {
    int even = area % 2 == 0;
    float floor_komi = even ? floorf(self_komi / 2.0f) * 2.0f : floorf((self_komi - 1.0f) / 2.0f) * 2.0f + 1.0f;
    float d = self_komi - floor_komi;
    if (d < 0.0f) d = 0.0f;
    if (d > 2.0f) d = 2.0f;
    if (d < 0.5f) return d;
    if (d < 1.5f) return 1.0f - d;
    return d - 2.0f;
}

/* The last three positions of a game replayed from the empty board, with KataGo's group
 * order (the ladder reader needs it): cur = now, prev[0] = before the last move, prev[1] =
 * before the one ahead of it. */
typedef struct {
    board_t cur, prev[2];
    kata_order_t cur_o, prev_o[2];
    uint64_t path_hash[1025];   /* path_hash[i]: hash before path move i; [npath]: the leaf */
} replay_t;

/* Replays g's moves then the path (each by the side to move); `cleared`: the game's ko point is
 * dropped before the path (KataGo's cleared history).  -1 if a path move is illegal. */
static int replay(replay_t *r, const game_t *g, const int16_t *path, int npath, int cleared) {
    int ngame = g->nhashes - 1, total = ngame + npath;
    board_init(&r->cur, g->board.size);
    kata_order_init(&r->cur_o);
    for (int i = 0; i < total; i++) {
        int v, c;
        if (i < ngame) {
            v = g->moves[i];
            c = g->movers[i];
        } else {
            if (i == ngame) {
                r->cur.to_move = g->board.to_move;   /* set-to-move overrides */
                if (cleared) r->cur.ko = BOARD_NONE;
                r->path_hash[0] = r->cur.hash;
            }
            v = path[i - ngame];
            c = r->cur.to_move;
            if (v != BOARD_PASS && (v <= 0 || r->cur.color[v] != EMPTY)) return -1;
        }
        if (i == total - 2) { r->prev[1] = r->cur; r->prev_o[1] = r->cur_o; }
        if (i == total - 1) { r->prev[0] = r->cur; r->prev_o[0] = r->cur_o; }
        kata_order_play(&r->cur_o, &r->cur, v, c);
        board_play(&r->cur, v, c);
        if (i >= ngame) r->path_hash[i - ngame + 1] = r->cur.hash;
    }
    if (npath == 0) {
        r->cur.to_move = g->board.to_move;
        if (cleared) r->cur.ko = BOARD_NONE;
        r->path_hash[0] = r->cur.hash;
    }
    return 0;
}

int kata_features_after(const game_t *g, const int16_t *path, int npath, int pass_alive_suicide,
                        float *out, uint64_t *key) {
    return kata_features_search(g, path, npath, pass_alive_suicide, 0, out, key);
}

int kata_features_search(const game_t *g, const int16_t *path, int npath, int pass_alive_suicide,
                         int conservative_root, float *out, uint64_t *key) {
    static const int max_path = 1024;
    if (npath > max_path) return -1;
    int ngame = g->nhashes - 1;
    const board_t *root = &g->board;
    /* KataGo clears the history when the side to move did not follow the last move. */
    int cleared = ngame > 0 && g->movers[ngame - 1] == root->to_move;
    hist_t *h = malloc(sizeof(hist_t));
    replay_t *rp = malloc(sizeof(replay_t));
    if (!h || !rp || replay(rp, g, path, npath, cleared) != 0) { free(h); free(rp); return -1; }
    h->g = g;
    h->path = path;
    h->npath = npath;
    memcpy(h->path_hash, rp->path_hash, (size_t)(npath + 1) * sizeof(uint64_t));
    h->first = cleared ? ngame : 0;
    board_t *cur = &rp->cur;
    int total_moves = ngame + npath;
    const board_t *prev1 = total_moves - h->first >= 1 ? &rp->prev[0] : NULL;
    const board_t *prev2 = total_moves - h->first >= 2 ? &rp->prev[1] : NULL;
    const board_t *b = cur;
    int n = b->size, area = n * n;
    int pla = b->to_move, opp = board_other(pla);
    int total = hist_len(h);
    int simple_ko = g->rules.ko_rule == KO_SIMPLE;
    memset(out, 0, (size_t)KATA_SPATIAL * (size_t)area * sizeof(float));
    float *glob = out + (size_t)KATA_SPATIAL * (size_t)area;
    float gv[KATA_GLOBAL];
    memset(gv, 0, sizeof(gv));

    /* 0-5: board, stones, liberties */
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c), i = r * n + c;
            out[i] = 1.0f;
            int col = b->color[v];
            if (!is_stone(col)) continue;
            out[(col == pla ? 1 : 2) * area + i] = 1.0f;
            int libs = libs_of(b, v);
            if (libs >= 1 && libs <= 3) out[(2 + libs) * area + i] = 1.0f;
        }

    /* 6: ko and superko bans */
    uint64_t ban_hash = 0;
    if (b->ko != BOARD_NONE) {
        out[6 * area + compact(b, b->ko)] = 1.0f;
        ban_hash ^= mix64((uint64_t)b->ko + 0x51ULL);
    }
    if (!simple_ko) {
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) {
                int v = board_point(b, r, c);
                if (b->color[v] != EMPTY || v == b->ko) continue;
                /* KataGo never allows single-stone suicide; multi-stone per the rules */
                int reason = board_check(b, v, pla, g->rules.allow_suicide);
                if (reason != MOVE_OK) continue;
                if (g->rules.allow_suicide && board_check(b, v, pla, 0) == MOVE_SUICIDE) {
                    int own_neighbour = 0;
                    FOR_NEIGHBOURS(b, v, p) own_neighbour |= b->color[p] == pla;
                    if (!own_neighbour) continue;
                }
                uint64_t after = board_hash_after(b, v, pla);
                int seen = 0;
                for (int i = 0; i <= npath && !seen; i++) seen = h->path_hash[i] == after;
                if (!seen) {
                    if (cleared) seen = after == root->hash;
                    else seen = game_seen(g, after);
                }
                if (seen) {
                    out[6 * area + r * n + c] = 1.0f;
                    ban_hash ^= mix64((uint64_t)v * 0x9E3779B97F4A7C15ULL + 0x77ULL);
                }
            }
    }

    /* Game end and whether a pass would end it (KataGo: two passes, or under simple ko a pass
     * by a player who already passed in the same position).  KataGo counts the moves that may
     * be shown ("valid turns") from the move that follows a finished game, keeping one. */
    int valid = 0, run = 0;
    for (int i = h->first; i < total; i++) {
        int m, c;
        hist_move(h, root, i, &m, &c);
        if (run >= 2 && valid > 1) valid = 1;
        valid++;
        run = m == BOARD_PASS ? run + 1 : 0;
    }
    int last_pass = run >= 1, game_over = run >= 2, spight_now = 0;
    if (simple_ko) {
        int lm = 0, lc = 0;
        if (total > h->first) hist_move(h, root, total - 1, &lm, &lc);
        for (int i = h->first; i < total; i++) {
            int m, c;
            hist_move(h, root, i, &m, &c);
            if (m != BOARD_PASS) continue;
            uint64_t before = hist_hash_before(h, i);
            if (c == pla && before == b->hash) spight_now = 1;
            /* the last move ended the game if its mover had passed here before */
            if (i < total - 1 && last_pass && c == lc && before == hist_hash_before(h, total - 1))
                game_over = 1;
        }
    }
    int pass_ends = last_pass || spight_now;
    int hide = conservative_root && pass_ends;
    if (hide) pass_ends = 0;

    /* 9-13 and globals 0-4: the last moves while colours alternate back from the opponent */
    int max_turns = hide ? 0 : game_over ? 1 : KATA_HISTORY;
    if (valid < max_turns) max_turns = valid;
    int included = 0;
    uint64_t hist_key = 0;
    for (int k = 0; k < max_turns; k++) {
        int m, c;
        hist_move(h, root, total - 1 - k, &m, &c);
        if (c != ((k % 2 == 0) ? opp : pla)) break;
        included = k + 1;
        if (m == BOARD_PASS) gv[k] = 1.0f;
        else out[(9 + k) * area + compact(b, m)] = 1.0f;
        hist_key ^= mix64((uint64_t)(m + 3) * 0x100000001B3ULL + (uint64_t)(k * 4 + c));
    }

    /* 14-17: ladders now and one and two moves ago */
    uint8_t lad[BOARD_MAX_AREA], work[BOARD_MAX_AREA];
    kata_ladders_ordered(b, &rp->cur_o, opp, lad, work);
    for (int i = 0; i < area; i++) {
        if (lad[i]) out[14 * area + i] = 1.0f;
        if (work[i]) out[17 * area + i] = 1.0f;
    }
    const board_t *lb1 = included >= 1 && prev1 ? prev1 : b;
    const kata_order_t *lo1 = lb1 == b ? &rp->cur_o : &rp->prev_o[0];
    const board_t *lb2 = included >= 2 && prev2 ? prev2 : lb1;
    const kata_order_t *lo2 = lb2 == lb1 ? lo1 : &rp->prev_o[1];
    kata_ladders_ordered(lb1, lo1, EMPTY, lad, NULL);
    for (int i = 0; i < area; i++) if (lad[i]) out[15 * area + i] = 1.0f;
    if (lb2 != lb1) kata_ladders_ordered(lb2, lo2, EMPTY, lad, NULL);
    for (int i = 0; i < area; i++) if (lad[i]) out[16 * area + i] = 1.0f;

    /* 18-19: area */
    uint8_t owner[BOARD_MAX_AREA];
    /* KataGo shows the area only under area scoring without tax (territory scoring: not
     * before its second encore phase, which this engine does not play) */
    int area_rules = g->rules.scoring == SCORING_AREA && g->rules.tax == TAX_NONE;
    if (area_rules) kata_area(b, g->rules.allow_suicide || pass_alive_suicide, owner);
    else memset(owner, EMPTY, sizeof owner);
    for (int i = 0; i < area; i++) {
        if (owner[i] == pla) out[18 * area + i] = 1.0f;
        else if (owner[i] == opp) out[19 * area + i] = 1.0f;
    }

    /* globals */
    /* KataGo counts territory as area less one point for every stone placed (BoardHistory's
     * whiteBonusScore): the net is shown the komi plus the stones Black placed more */
    float komi = g->rules.komi;
    if (g->rules.scoring == SCORING_TERRITORY) komi += (float)count_placed_difference(b);
    float self_komi = pla == WHITE ? komi : -komi;
    float clip = (float)area + 20.0f;
    if (self_komi > clip) self_komi = clip;
    if (self_komi < -clip) self_komi = -clip;
    gv[5] = self_komi / 20.0f;
    if (!simple_ko) { gv[6] = 1.0f; gv[7] = 0.5f; }
    if (g->rules.allow_suicide) gv[8] = 1.0f;
    if (g->rules.scoring == SCORING_TERRITORY) gv[9] = 1.0f;
    if (g->rules.tax != TAX_NONE) gv[10] = 1.0f;
    if (g->rules.tax == TAX_ALL) gv[11] = 1.0f;
    gv[14] = pass_ends ? 1.0f : 0.0f;
    if (g->rules.scoring == SCORING_AREA) gv[18] = komi_wave(self_komi, area);
    for (int i = 0; i < KATA_GLOBAL; i++) fill(glob + (size_t)i * (size_t)area, area, gv[i]);

    if (key) {
        uint64_t k = mix64(b->hash ^ 0x4B415441ULL) ^ mix64((uint64_t)pla * 0x1234567ULL + (uint64_t)n);
        k ^= ban_hash ^ hist_key;
        k ^= mix64((uint64_t)included + 0xABCULL);
        if (included >= 1 && prev1) k ^= mix64(prev1->hash + (uint64_t)(prev1->ko + 2) * 0x9E37ULL + 1);
        if (included >= 2 && prev2) k ^= mix64(prev2->hash + (uint64_t)(prev2->ko + 2) * 0x9E37ULL + 2);
        int komi2 = (int)lrintf(komi * 2.0f);
        k ^= mix64((uint64_t)(komi2 + 100000) * 0xD6E8FEB86659FD93ULL);
        k ^= mix64((uint64_t)(g->rules.ko_rule * 4 + g->rules.allow_suicide * 2 + pass_alive_suicide) + 0xFEEDULL);
        k ^= mix64((uint64_t)(pass_ends * 2 + game_over) + 0xBEEFULL);
        if (g->rules.scoring != SCORING_AREA || g->rules.tax != TAX_NONE)
            k ^= mix64((uint64_t)(g->rules.scoring * 4 + g->rules.tax) + 0x5C0AEULL);
        *key = k;
    }
    free(h);
    free(rp);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Game-level views for Python and tests. */

void kata_game_area(const game_t *g, int suicide_legal, uint8_t *owner) {
    kata_area(&g->board, suicide_legal, owner);
}

void kata_game_ladders(const game_t *g, int attacked, uint8_t *laddered, uint8_t *working) {
    replay_t *rp = malloc(sizeof(replay_t));
    if (!rp || replay(rp, g, NULL, 0, 0) != 0) { free(rp); return; }
    kata_ladders_ordered(&rp->cur, &rp->cur_o, attacked, laddered, working);
    free(rp);
}

int kata_game_features(const game_t *g, int pass_alive_suicide, float *out, uint64_t *key) {
    return kata_features_after(g, NULL, 0, pass_alive_suicide, out, key);
}
