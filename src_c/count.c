/* count.c - see count.h. */
#include "count.h"
#include <string.h>

int count_board(const board_t *b, const uint8_t *dead, const uint8_t *seki, int scoring, int tax,
                uint8_t *owner) {
    int n = b->size;
    uint8_t color[BOARD_MAX_POINTS];   /* the board with the dead stones off */
    uint8_t in_seki[BOARD_MAX_POINTS];
    int16_t region[BOARD_MAX_POINTS];  /* region id of an empty point, -1 elsewhere */
    memcpy(color, b->color, sizeof color);
    memset(in_seki, 0, sizeof in_seki);
    int score = 0;
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++) {
            int v = board_point(b, r, col), i = r * n + col;
            if (dead && dead[i] && (b->color[v] == BLACK || b->color[v] == WHITE)) {
                if (scoring == SCORING_TERRITORY) score += b->color[v] == WHITE ? 1 : -1;
                color[v] = EMPTY;
            }
            if (seki && seki[i]) in_seki[v] = 1;
        }
    if (scoring == SCORING_TERRITORY) score += b->captures[BLACK] - b->captures[WHITE];

    /* Regions of empty points: size, which colours border them, whether a seki group does. */
    int16_t stack[BOARD_MAX_AREA];
    int rsize[BOARD_MAX_AREA], rtouch[BOARD_MAX_AREA], rseki[BOARD_MAX_AREA], nregions = 0;
    for (int v = 0; v < BOARD_MAX_POINTS; v++) region[v] = -1;
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++) {
            int v = board_point(b, r, col);
            if (color[v] != EMPTY || region[v] >= 0) continue;
            int id = nregions++, sp = 0;
            rsize[id] = rtouch[id] = rseki[id] = 0;
            region[v] = (int16_t)id;
            stack[sp++] = (int16_t)v;
            while (sp) {
                int p = stack[--sp];
                rsize[id]++;
                FOR_NEIGHBOURS(b, p, q) {
                    int cq = color[q];
                    if (cq == EMPTY && region[q] < 0) { region[q] = (int16_t)id; stack[sp++] = (int16_t)q; }
                    else if (cq == BLACK || cq == WHITE) {
                        rtouch[id] |= cq;
                        rseki[id] |= in_seki[q];
                    }
                }
            }
        }
    int rowner[BOARD_MAX_AREA];
    for (int id = 0; id < nregions; id++) {
        int who = rtouch[id] == BLACK ? BLACK : rtouch[id] == WHITE ? WHITE : EMPTY;
        if (tax != TAX_NONE && rseki[id]) who = EMPTY;
        rowner[id] = who;
        score += who == BLACK ? rsize[id] : who == WHITE ? -rsize[id] : 0;
    }
    if (scoring == SCORING_AREA)
        for (int r = 0; r < n; r++)
            for (int col = 0; col < n; col++) {
                int cv = color[board_point(b, r, col)];
                score += cv == BLACK ? 1 : cv == WHITE ? -1 : 0;
            }

    if (tax == TAX_ALL) {
        /* Living groups: stones of a colour joined directly or through the regions it owns;
         * each gives up up to 2 points of those regions. */
        uint8_t seen_pt[BOARD_MAX_POINTS], seen_region[BOARD_MAX_AREA];
        memset(seen_pt, 0, sizeof seen_pt);
        memset(seen_region, 0, sizeof seen_region);
        for (int r = 0; r < n; r++)
            for (int col = 0; col < n; col++) {
                int v = board_point(b, r, col), c = color[v];
                if ((c != BLACK && c != WHITE) || seen_pt[v]) continue;
                int sp = 0, eyes = 0;
                seen_pt[v] = 1;
                stack[sp++] = (int16_t)v;
                while (sp) {
                    int p = stack[--sp];
                    FOR_NEIGHBOURS(b, p, q) {
                        if (seen_pt[q]) continue;
                        int id = region[q];
                        if (color[q] == c || (id >= 0 && rowner[id] == c)) {
                            seen_pt[q] = 1;
                            stack[sp++] = (int16_t)q;
                            if (id >= 0 && !seen_region[id]) { seen_region[id] = 1; eyes += rsize[id]; }
                        }
                    }
                }
                int tax_points = eyes < 2 ? eyes : 2;
                score += c == BLACK ? -tax_points : tax_points;
            }
    }
    if (owner)
        for (int r = 0; r < n; r++)
            for (int col = 0; col < n; col++) {
                int v = board_point(b, r, col);
                owner[r * n + col] = (uint8_t)(color[v] != EMPTY ? color[v] : rowner[region[v]]);
            }
    return score;
}

int count_placed_difference(const board_t *b) {
    int n = b->size, placed = b->captures[WHITE] - b->captures[BLACK];  /* stones captured */
    for (int row = 0; row < n; row++)
        for (int col = 0; col < n; col++) {
            int cv = b->color[board_point(b, row, col)];
            placed += cv == BLACK ? 1 : cv == WHITE ? -1 : 0;
        }
    return placed;
}

float count_area_komi(const rules_t *r, const board_t *b) {
    if (r->scoring != SCORING_TERRITORY || r->tax == TAX_ALL) return r->komi;
    return r->komi + (float)count_placed_difference(b) + (b->to_move == BLACK ? 0.5f : -0.5f);
}

float game_count(const game_t *g, const uint8_t *dead, const uint8_t *seki, uint8_t *owner) {
    return (float)count_board(&g->board, dead, seki, g->rules.scoring, g->rules.tax, owner) - g->rules.komi;
}
