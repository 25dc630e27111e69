/* kata_ladder.c - KataGo's ladder reader on a board that keeps KataGo's group lists. */
#include "kata_ladder.h"

#include <stdlib.h>
#include <string.h>

#define LADDER_BUDGET 25000
#define NO_HEAD 0            /* a border point: never the head of a group */

void kata_order_init(kata_order_t *o) { memset(o, 0, sizeof(*o)); }

/* KataGo's merge: the smaller group (ties: the one of `b`) goes right after the larger one's
 * head, keeping its own order. */
static void order_merge(int16_t *head, int16_t *next, int16_t *nstones, int a, int b) {
    int h1 = head[a], h2 = head[b];
    if (nstones[h1] < nstones[h2]) { int t = h1; h1 = h2; h2 = t; }
    nstones[h1] = (int16_t)(nstones[h1] + nstones[h2]);
    int s = h2;
    for (;;) {
        head[s] = (int16_t)h1;
        if (next[s] == h2) break;
        s = next[s];
    }
    next[s] = next[h1];
    next[h1] = (int16_t)h2;
}

static const int *offsets(int stride, int d[4]) {
    d[0] = -stride; d[1] = -1; d[2] = 1; d[3] = stride;
    return d;
}

void kata_order_play(kata_order_t *o, const board_t *before, int v, int c) {
    if (v == BOARD_PASS) return;
    int d[4];
    offsets(before->stride, d);
    o->head[v] = (int16_t)v;
    o->next[v] = (int16_t)v;
    o->nstones[v] = 1;
    for (int i = 0; i < 4; i++) {
        int a = v + d[i];
        if (before->color[a] != c || o->head[a] == o->head[v]) continue;
        order_merge(o->head, o->next, o->nstones, a, v);
    }
}

/* ---------------------------------------------------------------------------------------------
 * A board in KataGo's representation: colours, group lists, exact liberties, ko point. */

typedef struct {
    int size, stride;
    int d[4];
    int16_t ko;
    uint8_t color[BOARD_MAX_POINTS];
    int16_t head[BOARD_MAX_POINTS];
    int16_t next[BOARD_MAX_POINTS];
    int16_t nstones[BOARD_MAX_POINTS];   /* at the head */
    int16_t libs[BOARD_MAX_POINTS];      /* at the head */
} kb_t;

typedef struct { int16_t loc, ko; uint8_t pla, capdirs; } kmove_t;

static void kb_from(kb_t *k, const board_t *b, const kata_order_t *o) {
    k->size = b->size;
    k->stride = b->stride;
    offsets(b->stride, k->d);
    k->ko = b->ko;
    int points = b->stride * b->stride;
    memcpy(k->color, b->color, sizeof(k->color));
    for (int v = 0; v < points; v++) {
        int c = b->color[v];
        if (c != BLACK && c != WHITE) { k->head[v] = NO_HEAD; continue; }
        int h = o->head[v];
        k->head[v] = (int16_t)h;
        k->next[v] = o->next[v];
        k->nstones[h] = o->nstones[h];
        k->libs[h] = b->libs[b->head[v]];
    }
}

static inline int kb_libs(const kb_t *k, int v) { return k->libs[k->head[v]]; }
static inline int is_stone(int c) { return c == BLACK || c == WHITE; }

/* Recounts the liberties of the group at stone p. */
static void kb_recount(kb_t *k, int p) {
    uint8_t seen[BOARD_MAX_POINTS];
    memset(seen, 0, (size_t)(k->stride * k->stride));
    int h = k->head[p], n = 0, s = h;
    do {
        for (int i = 0; i < 4; i++) {
            int a = s + k->d[i];
            if (k->color[a] == EMPTY && !seen[a]) { seen[a] = 1; n++; }
        }
        s = k->next[s];
    } while (s != h);
    k->libs[h] = (int16_t)n;
}

/* Recounts every group with a stone next to p (and the one on p). */
static void kb_recount_around(kb_t *k, int p) {
    int16_t done[5];
    int nd = 0;
    for (int i = -1; i < 4; i++) {
        int a = i < 0 ? p : p + k->d[i];
        if (!is_stone(k->color[a])) continue;
        int h = k->head[a], dup = 0;
        for (int j = 0; j < nd; j++) dup |= done[j] == h;
        if (dup) continue;
        done[nd++] = (int16_t)h;
        kb_recount(k, a);
    }
}

static int kb_immediate(const kb_t *k, int v) {
    int n = 0;
    for (int i = 0; i < 4; i++) n += k->color[v + k->d[i]] == EMPTY;
    return n;
}

static int kb_illegal_suicide(const kb_t *k, int v, int pla) {
    int opp = board_other(pla);
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i], c = k->color[a];
        if (c == EMPTY) return 0;
        if (c == pla && kb_libs(k, a) > 1) return 0;
        if (c == opp && kb_libs(k, a) == 1) return 0;
    }
    return 1;
}

static int kb_legal(const kb_t *k, int v, int pla) {
    return k->color[v] == EMPTY && v != k->ko && !kb_illegal_suicide(k, v, pla);
}

/* Plays a legal, non-suicide move; returns what undo needs. */
static kmove_t kb_play(kb_t *k, int v, int pla) {
    int opp = board_other(pla);
    kmove_t m = {(int16_t)v, k->ko, (uint8_t)pla, 0};
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (k->color[a] == opp && kb_libs(k, a) == 1) m.capdirs |= (uint8_t)(1 << i);
    }
    k->color[v] = (uint8_t)pla;
    k->head[v] = (int16_t)v;
    k->next[v] = (int16_t)v;
    k->nstones[v] = 1;
    int captured = 0, maybe_ko = BOARD_NONE;
    int16_t seen[4];
    int nseen = 0;
    int16_t removed[BOARD_MAX_AREA];
    int nremoved = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (k->color[a] == pla) {
            if (k->head[a] != k->head[v]) order_merge(k->head, k->next, k->nstones, a, v);
        } else if (k->color[a] == opp) {
            int h = k->head[a], dup = 0;
            for (int j = 0; j < nseen; j++) dup |= seen[j] == h;
            if (dup) continue;
            seen[nseen++] = (int16_t)h;
            if (k->libs[h] == 1) {           /* v was its last liberty */
                int s = a;
                do { k->color[s] = EMPTY; removed[nremoved++] = (int16_t)s; captured++; s = k->next[s]; } while (s != a);
                maybe_ko = a;
            }
        }
    }
    kb_recount_around(k, v);
    for (int i = 0; i < nremoved; i++)
        for (int j = 0; j < 4; j++) {
            int a = removed[i] + k->d[j];
            if (k->color[a] == pla) kb_recount(k, a);
        }
    int h = k->head[v];
    k->ko = (captured == 1 && k->nstones[h] == 1 && k->libs[h] == 1) ? (int16_t)maybe_ko : BOARD_NONE;
    return m;
}

/* Puts back a captured group: flood fill of the empty region from p, KataGo's list order. */
static int kb_fill(kb_t *k, int h, int tail, int p, int col) {
    k->color[p] = (uint8_t)col;
    k->head[p] = (int16_t)h;
    k->nstones[h]++;
    k->next[p] = (int16_t)tail;
    int t = p;
    for (int i = 0; i < 4; i++) {
        int a = p + k->d[i];
        if (k->color[a] == EMPTY) t = kb_fill(k, h, t, a, col);
    }
    return t;
}

/* Relinks the stones of colour col connected to p (their heads reset to NO_HEAD first). */
static int kb_relink(kb_t *k, int h, int tail, int p, int col) {
    k->head[p] = (int16_t)h;
    k->nstones[h]++;
    k->next[p] = (int16_t)tail;
    int t = p;
    for (int i = 0; i < 4; i++) {
        int a = p + k->d[i];
        if (k->color[a] == col && k->head[a] != h) t = kb_relink(k, h, t, a, col);
    }
    return t;
}

static void kb_undo(kb_t *k, kmove_t m) {
    k->ko = m.ko;
    int v = m.loc, pla = m.pla, opp = board_other(pla);
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (!(m.capdirs & (1 << i)) || k->color[a] != EMPTY) continue;
        k->nstones[a] = 0;
        int front = kb_fill(k, a, a, a, opp);
        k->next[a] = (int16_t)front;
    }
    k->color[v] = EMPTY;
    int h = k->head[v];
    if (k->nstones[h] > 1) {
        int friends = 0;
        for (int i = 0; i < 4; i++) friends += k->color[v + k->d[i]] == pla;
        if (friends <= 1) {
            if (h == v) {   /* the head leaves: its next stone becomes the head */
                int nh = k->next[v], s = v;
                do { k->head[s] = (int16_t)nh; s = k->next[s]; } while (s != v);
                k->nstones[nh] = k->nstones[h];
                h = nh;
            }
            int s = h;
            while (k->next[s] != v) s = k->next[s];
            k->next[s] = k->next[v];
            k->nstones[h]--;
        } else {
            int s = v;
            do { k->head[s] = NO_HEAD; s = k->next[s]; } while (s != v);
            for (int i = 0; i < 4; i++) {
                int a = v + k->d[i];
                if (k->color[a] != pla || k->head[a] != NO_HEAD) continue;
                k->nstones[a] = 0;
                int front = kb_relink(k, a, a, a, pla);
                k->next[a] = (int16_t)front;
            }
        }
    }
    /* liberties: groups around v, refilled groups and the groups around them */
    kb_recount_around(k, v);
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (!(m.capdirs & (1 << i)) || k->color[a] != opp) continue;
        int s = a;
        do { kb_recount_around(k, s); s = k->next[s]; } while (s != a);
    }
}

/* Appends the liberties of the group at p (walking from p) not yet in buf[start..*len). */
static int kb_find_libs(const kb_t *k, int p, int16_t *buf, int start, int len) {
    int found = 0, s = p;
    do {
        for (int i = 0; i < 4; i++) {
            int a = s + k->d[i];
            if (k->color[a] != EMPTY) continue;
            int dup = 0;
            for (int j = start; j < len + found && !dup; j++) dup = buf[j] == a;
            if (!dup) { buf[len + found] = (int16_t)a; found++; }
        }
        s = k->next[s];
    } while (s != p);
    return found;
}

/* Appends the capturing points of the opponent groups in atari next to the group at p. */
static int kb_find_captures(const kb_t *k, int p, int16_t *buf, int start, int len) {
    int opp = board_other(k->color[p]), found = 0, s = p;
    int16_t checked[BOARD_MAX_AREA];
    int nchecked = 0;
    do {
        for (int i = 0; i < 4; i++) {
            int a = s + k->d[i];
            if (k->color[a] != opp || kb_libs(k, a) != 1) continue;
            int h = k->head[a], dup = 0;
            for (int j = 0; j < nchecked && !dup; j++) dup = checked[j] == h;
            if (dup) continue;
            found += kb_find_libs(k, a, buf, start, len + found);
            checked[nchecked++] = (int16_t)h;
        }
        s = k->next[s];
    } while (s != p);
    return found;
}

static int kb_has_captures(const kb_t *k, int p) {
    int opp = board_other(k->color[p]), s = p;
    do {
        for (int i = 0; i < 4; i++) {
            int a = s + k->d[i];
            if (k->color[a] == opp && kb_libs(k, a) == 1) return 1;
        }
        s = k->next[s];
    } while (s != p);
    return 0;
}

static void kb_bounds(const kb_t *k, int v, int pla, int *lower, int *upper) {
    int opp = board_other(pla), empties = 0, caps = 0, cap_stones = 0, conn = 0, conn_max = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i], c = k->color[a];
        if (c == EMPTY) empties++;
        else if (c == opp && kb_libs(k, a) == 1) { caps++; cap_stones += k->nstones[k->head[a]]; }
        else if (c == pla) {
            int l = kb_libs(k, a) - 1;
            conn += l;
            if (l > conn_max) conn_max = l;
        }
    }
    *lower = caps + (conn_max > empties ? conn_max : empties);
    *upper = empties + cap_stones + conn;
}

static int kb_libs_after(const kb_t *k, int v, int pla, int max) {
    int opp = board_other(pla), n = 0;
    int16_t libs[BOARD_MAX_AREA];
    int16_t caught[4];
    int ncaught = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i], c = k->color[a];
        if (c == EMPTY || (c == opp && kb_libs(k, a) == 1)) {
            libs[n++] = (int16_t)a;
            if (n >= max) return max;
            if (c == opp) {
                int h = k->head[a], dup = 0;
                for (int j = 0; j < ncaught; j++) dup |= caught[j] == h;
                if (!dup) caught[ncaught++] = (int16_t)h;
            }
        }
    }
    int16_t joined[4];
    int njoined = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (k->color[a] != pla) continue;
        int h = k->head[a], dup = 0;
        for (int j = 0; j < njoined; j++) dup |= joined[j] == h;
        if (dup) continue;
        joined[njoined++] = (int16_t)h;
        int s = a;
        do {
            for (int j = 0; j < 4; j++) {
                int q = s + k->d[j];
                if (q == v) continue;
                int free_after = k->color[q] == EMPTY;
                if (!free_after && k->color[q] == opp)
                    for (int c2 = 0; c2 < ncaught; c2++) free_after |= k->head[q] == caught[c2];
                if (!free_after) continue;
                int dup2 = 0;
                for (int l = 0; l < n && !dup2; l++) dup2 = libs[l] == q;
                if (!dup2) {
                    libs[n++] = (int16_t)q;
                    if (n >= max) return max;
                }
            }
            s = k->next[s];
        } while (s != a);
    }
    return n;
}

static int kb_ko_capture(const kb_t *k, int v, int pla) {
    if (k->color[v] != EMPTY) return 0;
    int opp = board_other(pla), found = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i], c = k->color[a];
        if (c != BORDER && c != opp) return 0;
        if (c == opp && kb_libs(k, a) == 1) {
            if (found) return 0;
            found = a;
        }
    }
    return found && k->nstones[k->head[found]] == 1;
}

static int kb_heuristic_x2(const kb_t *k, int v, int pla) {
    int n = 0;
    for (int i = 0; i < 4; i++) {
        int a = v + k->d[i];
        if (k->color[a] != pla) continue;
        int l = kb_libs(k, a);
        if (l > 1) n += 2 * l - 3;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * The search: an explicit stack, one level per move, the defender moving first at even levels
 * when defender_first.  Same control flow as KataGo's, so the same budget accounting. */

typedef struct { int16_t *buf; int cap; } movebuf_t;

static int ensure(movebuf_t *mb, int need) {
    if (need <= mb->cap) return 0;
    int cap = mb->cap * 2;
    while (cap < need) cap *= 2;
    int16_t *b = realloc(mb->buf, (size_t)cap * sizeof(int16_t));
    if (!b) return -1;
    mb->buf = b;
    mb->cap = cap;
    return 0;
}

static int kb_search(kb_t *k, int loc, int defender_first, movebuf_t *mb) {
    if (!is_stone(k->color[loc])) return 0;
    int libs0 = kb_libs(k, loc);
    if (libs0 > 2 || (defender_first && libs0 > 1)) return 0;
    int pla = k->color[loc], opp = board_other(pla);
    int saved_ko = k->ko;
    if (defender_first) k->ko = BOARD_NONE;
    int stack_size = k->size * k->size * 3 / 2 + 1;
    int *start = malloc((size_t)stack_size * sizeof(int));
    int *len = malloc((size_t)stack_size * sizeof(int));
    int *cur = malloc((size_t)stack_size * sizeof(int));
    kmove_t *rec = malloc((size_t)stack_size * sizeof(kmove_t));
    int result = 0;
    if (!start || !len || !cur || !rec) goto done;
    int idx = 0, nodes = 0, ret = 0, from_deeper = 0;
    cur[0] = -1; start[0] = 0; len[0] = 0;
    for (;;) {
        if (idx <= -1) { k->ko = (int16_t)saved_ko; result = ret; goto done; }
        if (idx >= stack_size - 1) { ret = 1; from_deeper = 1; idx--; continue; }
        if (nodes >= LADDER_BUDGET) {
            for (idx--; idx >= 0; idx--) kb_undo(k, rec[idx]);
            result = 0;
            goto done;
        }
        int defender = (defender_first && idx % 2 == 0) || (!defender_first && idx % 2 == 1);
        if (cur[idx] == -1) {
            int libs = kb_libs(k, loc);
            if (!defender && libs <= 1) { ret = 1; from_deeper = 1; idx--; continue; }
            if (!defender && libs >= 3) { ret = 0; from_deeper = 1; idx--; continue; }
            if (defender && libs >= 2) { ret = 0; from_deeper = 1; idx--; continue; }
            if (defender && k->ko != BOARD_NONE) { ret = 0; from_deeper = 1; idx--; continue; }
            int s = start[idx], n = 0;
            if (ensure(mb, s + BOARD_MAX_AREA + 8) != 0) { result = 0; goto done; }
            int16_t *buf = mb->buf;
            if (defender) {
                n = kb_find_captures(k, loc, buf, s, s);
                n += kb_find_libs(k, loc, buf, s, s + n);
                int lower, upper;
                kb_bounds(k, buf[s + n - 1], pla, &lower, &upper);
                if (lower >= 3) { ret = 0; from_deeper = 1; idx--; continue; }
                if (n == 1 && upper <= 1) { ret = 1; from_deeper = 1; idx--; continue; }
            } else {
                n = kb_find_libs(k, loc, buf, s, s);
                int l0 = kb_immediate(k, buf[s]), l1 = kb_immediate(k, buf[s + 1]);
                if (l0 == 0 && l1 == 0 && kb_ko_capture(k, buf[s], opp) && kb_ko_capture(k, buf[s + 1], opp)
                    && kb_libs_after(k, buf[s], pla, 3) <= 2 && kb_libs_after(k, buf[s + 1], pla, 3) <= 2
                    && !kb_has_captures(k, loc)) { ret = 1; from_deeper = 1; idx--; continue; }
                int dd = buf[s] - buf[s + 1];
                int adjacent = dd == 1 || dd == -1 || dd == k->stride || dd == -k->stride;
                if (!adjacent) {
                    if (l0 >= 3 && l1 >= 3) { ret = 0; from_deeper = 1; idx--; continue; }
                    else if (l0 >= 3) n = 1;
                    else if (l1 >= 3) { buf[s] = buf[s + 1]; n = 1; }
                }
                if (n > 1) {
                    l0 = l0 * 2 + kb_heuristic_x2(k, buf[s], pla);
                    l1 = l1 * 2 + kb_heuristic_x2(k, buf[s + 1], pla);
                    if (l1 > l0) { int16_t t = buf[s]; buf[s] = buf[s + 1]; buf[s + 1] = t; }
                }
            }
            len[idx] = n;
            cur[idx] = 0;
        } else {
            if (from_deeper) kb_undo(k, rec[idx]);
            if (defender && !ret) { from_deeper = 1; idx--; continue; }
            if (!defender && ret) { from_deeper = 1; idx--; continue; }
            cur[idx]++;
        }
        if (cur[idx] >= len[idx]) { ret = defender; from_deeper = 1; idx--; continue; }
        int move = mb->buf[start[idx] + cur[idx]];
        int p = defender ? pla : opp;
        if (!kb_legal(k, move, p)) { ret = defender; from_deeper = 0; continue; }
        rec[idx] = kb_play(k, move, p);
        nodes++;
        idx++;
        cur[idx] = -1;
        start[idx] = start[idx - 1] + len[idx - 1];
        len[idx] = 0;
    }
done:
    free(start); free(len); free(cur); free(rec);
    return result;
}

/* Attacker first against a group with two liberties: bit 0/1 set when playing on the first /
 * second liberty (KataGo's liberty order) captures it in a ladder. */
static int kb_attack_two(kb_t *k, int loc, movebuf_t *mb, int16_t works[2]) {
    if (!is_stone(k->color[loc]) || kb_libs(k, loc) != 2) return 0;
    int opp = board_other(k->color[loc]);
    if (ensure(mb, BOARD_MAX_AREA + 8) != 0) return 0;
    kb_find_libs(k, loc, mb->buf, 0, 0);
    int m[2] = {mb->buf[0], mb->buf[1]};
    int mask = 0;
    for (int i = 0; i < 2; i++) {
        works[i] = (int16_t)m[i];
        if (!kb_legal(k, m[i], opp)) continue;
        kmove_t r = kb_play(k, m[i], opp);
        if (kb_search(k, loc, 1, mb)) mask |= 1 << i;
        kb_undo(k, r);
    }
    return mask;
}

void kata_ladders_ordered(const board_t *b, const kata_order_t *o, int attacked, uint8_t *laddered,
                          uint8_t *working) {
    int n = b->size;
    memset(laddered, 0, (size_t)(n * n));
    if (working) memset(working, 0, (size_t)(n * n));
    kb_t *orig = malloc(sizeof(kb_t)), *copy = malloc(sizeof(kb_t));
    movebuf_t mb = {malloc(1024 * sizeof(int16_t)), 1024};
    if (!orig || !copy || !mb.buf) { free(orig); free(copy); free(mb.buf); return; }
    kb_from(orig, b, o);
    *copy = *orig;
    int16_t solved_head[BOARD_MAX_AREA];
    uint8_t solved_value[BOARD_MAX_AREA];
    int nsolved = 0;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            int v = board_point(b, r, c);
            if (!is_stone(orig->color[v])) continue;
            int libs = kb_libs(orig, v);
            if (libs != 1 && libs != 2) continue;
            int h = orig->head[v], known = -1;
            for (int i = 0; i < nsolved && known < 0; i++)
                if (solved_head[i] == h) known = solved_value[i];
            if (known < 0) {
                if (libs == 1) {
                    known = kb_search(copy, v, 1, &mb);
                } else {
                    int16_t moves[2];
                    int mask = kb_attack_two(copy, v, &mb, moves);
                    known = mask != 0;
                    if (known && working && orig->color[v] == attacked)
                        for (int i = 0; i < 2; i++)
                            if (mask & (1 << i)) working[board_to_compact(b, moves[i])] = 1;
                }
                solved_head[nsolved] = (int16_t)h;
                solved_value[nsolved++] = (uint8_t)known;
            }
            if (known) laddered[r * n + c] = 1;
        }
    free(orig);
    free(copy);
    free(mb.buf);
}
