/* board.c - stones, groups with exact liberties, captures, ko and Zobrist hashing. */
#include "board.h"

#include <pthread.h>
#include <string.h>

uint64_t zobrist_stone[3][BOARD_MAX_POINTS];
uint64_t zobrist_aux[BOARD_MAX_POINTS];
static pthread_once_t zobrist_once = PTHREAD_ONCE_INIT;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void zobrist_fill(void) {
    uint64_t seed = 0x5eed0f60a1ULL;
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < BOARD_MAX_POINTS; v++)
            zobrist_stone[c][v] = splitmix64(&seed);
    for (int v = 0; v < BOARD_MAX_POINTS; v++) zobrist_aux[v] = splitmix64(&seed);
}

/* pthread_once: threads that create their first boards at the same time all wait until the
 * keys are filled, and they are filled once. */
void board_global_init(void) { pthread_once(&zobrist_once, zobrist_fill); }

int board_init(board_t *b, int size) {
    if (size < BOARD_MIN_SIZE || size > BOARD_MAX_SIZE) return -1;
    board_global_init();
    memset(b, 0, sizeof(*b));
    b->size = (int16_t)size;
    b->stride = (int16_t)(size + 2);
    b->ko = BOARD_NONE;
    b->to_move = BLACK;
    for (int i = 0; i < BOARD_RECENT; i++) b->recent[i] = BOARD_NONE;
    int points = b->stride * b->stride;
    for (int v = 0; v < BOARD_MAX_POINTS; v++) {
        b->color[v] = BORDER;
        b->head[v] = 0;
        b->empty_pos[v] = -1;
    }
    for (int v = 0; v < points; v++) b->color[v] = BORDER;
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) {
            int v = board_point(b, r, c);
            b->color[v] = EMPTY;
            b->head[v] = (int16_t)v;
            b->empty_pos[v] = b->nempty;
            b->empty[b->nempty++] = (int16_t)v;
        }
    return 0;
}

void board_copy(board_t *dst, const board_t *src) { *dst = *src; }

int board_from_compact(const board_t *b, int compact) {
    int n = b->size;
    if (compact == n * n) return BOARD_PASS;
    if (compact < 0 || compact > n * n) return BOARD_NONE;
    return board_point(b, compact / n, compact % n);
}

int board_to_compact(const board_t *b, int v) {
    if (v == BOARD_PASS) return b->size * b->size;
    return (v / b->stride - 1) * b->size + (v % b->stride - 1);
}

int board_check(const board_t *b, int v, int c, int allow_suicide) {
    if (c != BLACK && c != WHITE) return MOVE_BAD_COLOR;
    if (v == BOARD_PASS) return MOVE_OK;
    if (v <= 0 || v >= b->stride * b->stride || b->color[v] == BORDER) return MOVE_OFF_BOARD;
    if (b->color[v] != EMPTY) return MOVE_OCCUPIED;
    if (v == b->ko && c == b->ko_color) return MOVE_KO;
    if (allow_suicide) return MOVE_OK;
    int other = board_other(c);
    FOR_NEIGHBOURS(b, v, n) {
        int col = b->color[n];
        if (col == EMPTY) return MOVE_OK;
        if (col == c && b->libs[b->head[n]] > 1) return MOVE_OK;
        if (col == other && b->libs[b->head[n]] == 1) return MOVE_OK;
    }
    return MOVE_SUICIDE;
}

uint64_t board_hash_after(const board_t *b, int v, int c) {
    uint64_t h = b->hash ^ zobrist_stone[c][v];
    int16_t groups[4];
    int k = board_neighbour_groups(b, v, board_other(c), groups);
    int captured_any = 0;
    for (int i = 0; i < k; i++) {
        if (b->libs[groups[i]] != 1) continue;
        captured_any = 1;
        int s = groups[i];
        do { h ^= zobrist_stone[board_other(c)][s]; s = b->next[s]; } while (s != groups[i]);
    }
    if (!captured_any) {
        /* Suicide: the new stone and its merged own groups leave the board. */
        int has_lib = 0;
        FOR_NEIGHBOURS(b, v, n) {
            if (b->color[n] == EMPTY) has_lib = 1;
            else if (b->color[n] == c && b->libs[b->head[n]] > 1) has_lib = 1;
        }
        if (!has_lib) {
            h ^= zobrist_stone[c][v];
            k = board_neighbour_groups(b, v, c, groups);
            for (int i = 0; i < k; i++) {
                int s = groups[i];
                do { h ^= zobrist_stone[c][s]; s = b->next[s]; } while (s != groups[i]);
            }
        }
    }
    return h;
}

static inline void empty_remove(board_t *b, int v) {
    int i = b->empty_pos[v];
    int last = b->empty[--b->nempty];
    b->empty[i] = (int16_t)last;
    b->empty_pos[last] = (int16_t)i;
    b->empty_pos[v] = -1;
}

static inline void empty_add(board_t *b, int v) {
    b->empty_pos[v] = b->nempty;
    b->empty[b->nempty++] = (int16_t)v;
}

/* Removes the group with head h from the board; returns the number of stones removed. */
static int remove_group(board_t *b, int h) {
    int col = b->color[h];
    int count = 0;
    int s = h;
    do {
        int nxt = b->next[s];
        b->color[s] = EMPTY;
        b->hash ^= zobrist_stone[col][s];
        empty_add(b, s);
        count++;
        s = nxt;
    } while (s != h);
    /* Each removed point becomes one new liberty of every distinct adjacent group. */
    s = h;
    do {
        int nxt = b->next[s];
        int16_t groups[4];
        int k = 0;
        FOR_NEIGHBOURS(b, s, n) {
            int cn = b->color[n];
            if (cn != BLACK && cn != WHITE) continue;
            int g = b->head[n];
            int seen = 0;
            for (int i = 0; i < k; i++) seen |= (groups[i] == g);
            if (!seen) { groups[k++] = (int16_t)g; b->libs[g]++; }
        }
        b->head[s] = (int16_t)s;
        b->next[s] = (int16_t)s;
        s = nxt;
    } while (s != h);
    return count;
}

/* True if empty point p touches the group with head g. */
static inline int touches_group(const board_t *b, int p, int g) {
    FOR_NEIGHBOURS(b, p, n) {
        if (b->head[n] == g && b->color[n] != EMPTY && b->color[n] != BORDER) return 1;
    }
    return 0;
}

void board_play(board_t *b, int v, int c) {
    for (int i = BOARD_RECENT - 1; i > 0; i--) b->recent[i] = b->recent[i - 1];
    b->recent[0] = (int16_t)v;
    b->move_count++;
    b->to_move = (uint8_t)board_other(c);
    if (v == BOARD_PASS) {
        if (b->passes < 2) b->passes++;   /* only "two or more" matters; never wraps */
        b->ko = BOARD_NONE;
        return;
    }
    b->passes = 0;
    int other = board_other(c);
    empty_remove(b, v);
    b->color[v] = (uint8_t)c;
    b->head[v] = (int16_t)v;
    b->next[v] = (int16_t)v;
    b->nstones[v] = 1;
    b->hash ^= zobrist_stone[c][v];
    int libs = 0;
    FOR_NEIGHBOURS(b, v, n) libs += (b->color[n] == EMPTY);
    b->libs[v] = (int16_t)libs;

    int16_t groups[4];
    int k = 0;
    FOR_NEIGHBOURS(b, v, n) {
        int cn = b->color[n];
        if (cn != BLACK && cn != WHITE) continue;
        int g = b->head[n];
        int seen = 0;
        for (int i = 0; i < k; i++) seen |= (groups[i] == g);
        if (!seen) { groups[k++] = (int16_t)g; }
    }
    /* v was one liberty of each distinct neighbouring group. */
    for (int i = 0; i < k; i++) b->libs[groups[i]]--;

    int captured = 0, last_captured = BOARD_NONE;
    for (int i = 0; i < k; i++) {
        int g = groups[i];
        if (b->color[g] == other && b->libs[g] == 0) {
            int n_removed = remove_group(b, g);
            captured += n_removed;
            last_captured = g;
        }
    }
    b->captures[c] += captured;

    /* Merge v and its own neighbouring groups into the largest group G.  G's liberty count is
     * exact already (v taken off, captures added back); the merged group's liberties are G's
     * plus the empty neighbours of the other stones that G does not touch, counted once. */
    int h = v;
    int big = -1;
    for (int i = 0; i < k; i++) {
        int g = groups[i];
        if (b->color[g] == c && (big < 0 || b->nstones[g] > b->nstones[big])) big = g;
    }
    if (big >= 0) {
        int libs_total = b->libs[big];
        uint8_t mark[BOARD_MAX_POINTS];
        int marked = 0;
        for (int i = -1; i < k; i++) {
            int g = i < 0 ? v : groups[i];
            if (g == big || b->color[g] != c) continue;
            int st = g;
            do {
                FOR_NEIGHBOURS(b, st, n) {
                    if (b->color[n] != EMPTY || touches_group(b, n, big)) continue;
                    if (!marked) { memset(mark, 0, (size_t)(b->stride * b->stride)); marked = 1; }
                    if (!mark[n]) { mark[n] = 1; libs_total++; }
                }
                st = b->next[st];
            } while (st != g);
        }
        for (int i = -1; i < k; i++) {
            int g = i < 0 ? v : groups[i];
            if (g == big || b->color[g] != c) continue;
            int st = g;
            do { b->head[st] = (int16_t)big; st = b->next[st]; } while (st != g);
            int tmp = b->next[big];
            b->next[big] = b->next[g];
            b->next[g] = (int16_t)tmp;
            b->nstones[big] = (int16_t)(b->nstones[big] + b->nstones[g]);
        }
        b->libs[big] = (int16_t)libs_total;
        h = big;
    }

    b->ko = BOARD_NONE;
    if (b->libs[h] == 0) {
        /* Suicide (only reached when the rules allow it). */
        int n_removed = remove_group(b, h);
        b->captures[other] += n_removed;
    } else if (captured == 1 && b->nstones[h] == 1 && b->libs[h] == 1) {
        b->ko = (int16_t)last_captured;
        b->ko_color = (uint8_t)other;
    }
}

int board_is_eye(const board_t *b, int v, int c) {
    if (b->color[v] != EMPTY) return 0;
    FOR_NEIGHBOURS(b, v, n) {
        int cn = b->color[n];
        if (cn != c && cn != BORDER) return 0;
    }
    int other = board_other(c), bad = 0, edge = 0;
    int s = b->stride;
    int diag[4] = {v - s - 1, v - s + 1, v + s - 1, v + s + 1};
    for (int i = 0; i < 4; i++) {
        int cn = b->color[diag[i]];
        if (cn == BORDER) edge = 1;
        else if (cn == other) bad++;
    }
    return bad + edge < 2;
}

int board_area(const board_t *b, uint8_t *owner) {
    int n = b->size;
    int16_t stack[BOARD_MAX_AREA];
    uint8_t seen[BOARD_MAX_POINTS];
    uint8_t region_owner[BOARD_MAX_POINTS];
    memset(seen, 0, sizeof(seen));
    int score = 0;
    for (int r = 0; r < n; r++)
        for (int col = 0; col < n; col++) {
            int v = board_point(b, r, col);
            int cv = b->color[v];
            if (cv == BLACK) { score++; region_owner[v] = BLACK; continue; }
            if (cv == WHITE) { score--; region_owner[v] = WHITE; continue; }
            if (seen[v]) continue;
            /* Flood the empty region, noting which colours it touches. */
            int sp = 0, touches = 0, size = 0;
            int16_t members[BOARD_MAX_AREA];
            stack[sp++] = (int16_t)v;
            seen[v] = 1;
            while (sp) {
                int p = stack[--sp];
                members[size++] = (int16_t)p;
                FOR_NEIGHBOURS(b, p, q) {
                    int cq = b->color[q];
                    if (cq == EMPTY && !seen[q]) { seen[q] = 1; stack[sp++] = (int16_t)q; }
                    else if (cq == BLACK) touches |= 1;
                    else if (cq == WHITE) touches |= 2;
                }
            }
            int who = touches == 1 ? BLACK : touches == 2 ? WHITE : EMPTY;
            if (who == BLACK) score += size;
            if (who == WHITE) score -= size;
            for (int i = 0; i < size; i++) region_owner[members[i]] = (uint8_t)who;
        }
    if (owner)
        for (int r = 0; r < n; r++)
            for (int col = 0; col < n; col++) owner[r * n + col] = region_owner[board_point(b, r, col)];
    return score;
}
