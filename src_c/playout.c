/* playout.c - random playouts: uniformly random and tactical moves (MoGo's rules, with its 3x3
 * patterns), playouts to the end of a game, and what they judge (ownership, dead stones). */
#include "playout.h"
#include "pattern3.h"

#include <string.h>

/* An empty point next to the group of head h (its liberty when it is in atari). */
static int group_liberty(const board_t *b, int h) {
    int s = h;
    do {
        FOR_NEIGHBOURS(b, s, n) if (b->color[n] == EMPTY) return n;
        s = b->next[s];
    } while (s != h);
    return BOARD_NONE;
}

/* The liberties of the group c would have after playing at the empty point v, counted up to
 * 2 (0, 1 or 2 for "two or more"); a capture counts as 2.  Exact: a liberty shared by v's
 * empty neighbours and its own groups is counted once. */
static int libs_after(const board_t *b, int v, int c) {
    int libs[2], k = 0, other = board_other(c);
    FOR_NEIGHBOURS(b, v, n) {
        int col = b->color[n];
        if (col == other && b->libs[b->head[n]] == 1) return 2;
        if (col == EMPTY) {
            if (k == 0 || libs[0] != n) libs[k++] = n;
            if (k == 2) return 2;
        }
    }
    int16_t groups[4];
    int ng = board_neighbour_groups(b, v, c, groups);
    for (int i = 0; i < ng; i++) {
        int h = groups[i];
        if (b->libs[h] >= 3) return 2;
        if (b->libs[h] == 1) continue;          /* its only liberty is v */
        int s = h;
        do {
            FOR_NEIGHBOURS(b, s, n) {
                if (b->color[n] != EMPTY || n == v) continue;
                if (k == 0 || libs[0] != n) libs[k++] = n;
                if (k == 2) return 2;
            }
            s = b->next[s];
        } while (s != h);
    }
    return k;
}

/* Adds v to the candidate list cand[*n] (at most `cap`) unless it is there already. */
static void add_candidate(int16_t *cand, int *n, int cap, int v) {
    if (v == BOARD_NONE) return;
    for (int i = 0; i < *n; i++) if (cand[i] == v) return;
    if (*n < cap) cand[(*n)++] = (int16_t)v;
}

/* Whether a self-atari by c at v belongs in a tactical playout: a lone stone may throw in,
 * and a stone that joins own stones only as a nakade: the group it makes has at most three
 * stones (a captured group of three leaves an eye space its capturer cannot make two eyes
 * of) and the move puts a neighbouring group of the opponent in atari, as a throw-in into
 * the opponent's eye space does when the two groups share their last liberties. */
static int throw_in_ok(const board_t *b, int v, int c) {
    int16_t groups[4];
    int ng = board_neighbour_groups(b, v, c, groups);
    if (ng == 0) return 1;
    int stones = 1;
    for (int i = 0; i < ng; i++) stones += b->nstones[groups[i]];
    if (stones > 3) return 0;
    ng = board_neighbour_groups(b, v, board_other(c), groups);
    for (int i = 0; i < ng; i++)
        if (b->libs[groups[i]] == 2) return 1;
    return 0;
}

/* A uniformly random legal move for the side to move that does not fill its own eye (simple
 * ko, no suicide), scanning the empty points from a random one; with avoid_self_atari, not a
 * self-atari either unless throw_in_ok allows it.  Passes when there is none. */
static int play_random_move(board_t *b, uint64_t *rng, int avoid_self_atari) {
    int c = b->to_move;
    int ne = b->nempty;
    if (ne > 0) {
        int start = (int)rng_below(rng, (uint32_t)ne);
        for (int i = 0; i < ne; i++) {
            int idx = start + i;
            if (idx >= ne) idx -= ne;
            int v = b->empty[idx];
            /* A point with an empty neighbour is legal unless it is the ko point and
             * cannot be an eye; only fully surrounded points need the full checks. */
            int has_empty = 0;
            FOR_NEIGHBOURS(b, v, n) has_empty |= (b->color[n] == EMPTY);
            if (has_empty) {
                if (v == b->ko && c == b->ko_color) continue;
            } else {
                if (board_is_eye(b, v, c)) continue;
                if (board_check(b, v, c, 0) != MOVE_OK) continue;
            }
            if (avoid_self_atari && libs_after(b, v, c) < 2 && !throw_in_ok(b, v, c)) continue;
            board_play(b, v, c);
            return v;
        }
    }
    board_play(b, BOARD_PASS, c);
    return BOARD_PASS;
}

int playout_random_move(board_t *b, uint64_t *rng) { return play_random_move(b, rng, 0); }

/* Whether c may play v in a playout at all: legal and not its own eye. */
static int playable(board_t *b, int v, int c) {
    return board_check(b, v, c, 0) == MOVE_OK && !board_is_eye(b, v, c);
}

/* Whether c may play the empty point v in a tactical playout: playable, and not a self-atari
 * unless throw_in_ok allows it. */
static int tactical_ok(board_t *b, int v, int c) {
    return playable(b, v, c) && (libs_after(b, v, c) >= 2 || throw_in_ok(b, v, c));
}

/* playout_tactical_move, the patterns' table filled. */
static int tactical_move(board_t *b, uint64_t *rng, int patterns) {
    int c = b->to_move, other = board_other(c), last = b->recent[0];
    int16_t cand[16];
    int nc = 0;
    if (last > 0 && b->color[last] == other) {
        int h = b->head[last];
        if (b->libs[h] == 1) add_candidate(cand, &nc, 16, group_liberty(b, h));
        FOR_NEIGHBOURS(b, last, n) {
            if (b->color[n] != c || b->libs[b->head[n]] != 1) continue;
            int g = b->head[n], s = g;
            do {   /* save it by capturing a neighbour in atari ... */
                FOR_NEIGHBOURS(b, s, m) {
                    if (b->color[m] == other && b->libs[b->head[m]] == 1)
                        add_candidate(cand, &nc, 16, group_liberty(b, b->head[m]));
                }
                s = b->next[s];
            } while (s != g);
            int l = group_liberty(b, g);        /* ... or by extending, where that gains */
            if (l != BOARD_NONE && libs_after(b, l, c) >= 2) add_candidate(cand, &nc, 16, l);
        }
    }
    if (nc > 0) {
        int start = (int)rng_below(rng, (uint32_t)nc);
        for (int i = 0; i < nc; i++) {
            int v = cand[(start + i) % nc];
            if (!playable(b, v, c)) continue;
            board_play(b, v, c);
            return v;
        }
    }
    if (patterns && last > 0) {   /* MoGo's 3x3 patterns on the eight points around the move */
        int s = b->stride;
        const int around[8] = {-s - 1, -s, -s + 1, -1, 1, s - 1, s, s + 1};
        nc = 0;
        for (int i = 0; i < 8; i++) {
            int v = last + around[i];
            if (b->color[v] == EMPTY && pattern3_match(b, v) && tactical_ok(b, v, c)) cand[nc++] = (int16_t)v;
        }
        if (nc > 0) {
            int v = cand[rng_below(rng, (uint32_t)nc)];
            board_play(b, v, c);
            return v;
        }
    }
    return play_random_move(b, rng, 1);
}

int playout_tactical_move(board_t *b, uint64_t *rng, int patterns) {
    if (patterns) pattern3_init();
    return tactical_move(b, rng, patterns);
}

void playout_run(board_t *b, uint64_t *rng, int max_moves, int tactical) {
    if (max_moves <= 0) max_moves = 3 * b->size * b->size;
    if (tactical >= 2) pattern3_init();
    b->passes = 0;
    for (int m = 0; m < max_moves && b->passes < 2; m++) {
        if (tactical) tactical_move(b, rng, tactical >= 2);
        else play_random_move(b, rng, 0);
    }
}

void playout_ownership(const board_t *b, int playouts, uint64_t *rng, int max_moves, int tactical,
                       float *ownership) {
    int area = b->size * b->size;
    uint8_t owner[BOARD_MAX_AREA];
    for (int i = 0; i < area; i++) ownership[i] = 0.0f;
    for (int p = 0; p < playouts; p++) {
        board_t c = *b;
        c.to_move = (uint8_t)((p & 1) ? WHITE : BLACK); /* half the playouts start with each side */
        playout_run(&c, rng, max_moves, tactical);
        board_area(&c, owner);
        for (int i = 0; i < area; i++) ownership[i] += owner[i] == BLACK ? 1.0f : owner[i] == WHITE ? -1.0f : 0.0f;
    }
    for (int i = 0; i < area; i++) ownership[i] /= (float)playouts;
}

void playout_judged_dead(const board_t *b, int playouts, uint64_t *rng, uint8_t *dead) {
    int area = b->size * b->size;
    float own[BOARD_MAX_AREA];
    playout_ownership(b, playouts, rng, 0, 0, own);
    /* each group's summed ownership, its own colour positive, kept at its head */
    float group_own[BOARD_MAX_POINTS];
    memset(group_own, 0, sizeof group_own);
    for (int i = 0; i < area; i++) {
        int v = board_from_compact(b, i), cv = b->color[v];
        if (cv == BLACK || cv == WHITE) group_own[b->head[v]] += cv == BLACK ? own[i] : -own[i];
    }
    for (int i = 0; i < area; i++) {
        int v = board_from_compact(b, i), h = b->head[v];
        dead[i] = (uint8_t)((b->color[v] == BLACK || b->color[v] == WHITE) &&
                            group_own[h] < -0.2f * (float)b->nstones[h]);
    }
}

int playout_judged_area(const board_t *b, int playouts, uint64_t *rng) {
    int area = b->size * b->size;
    uint8_t dead[BOARD_MAX_AREA];
    playout_judged_dead(b, playouts, rng, dead);
    board_t judged = *b;
    for (int i = 0; i < area; i++)
        if (dead[i]) judged.color[board_from_compact(b, i)] = EMPTY;
    return board_area(&judged, NULL); /* reads the colours alone */
}
