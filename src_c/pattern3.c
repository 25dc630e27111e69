/* pattern3.c - MoGo's 3x3 playout patterns (Gelly, Wang, Munos and Teytaud, "Modification of
 * UCT with patterns in Monte-Carlo Go", 2006): hane, cut and edge shapes around an empty point,
 * matched in one table lookup of the point's eight neighbours. */
#include "pattern3.h"

#include <pthread.h>

/* The patterns, the candidate move in the centre.  X and O are the two colours (each pattern
 * stands for itself with the colours swapped as well, and in all eight orientations, whoever is
 * to move); x: not X (empty, O or the edge), o: not O; '.': empty; '?': anything; ' ': off the
 * board. */
static const char *const PATTERNS[][3] = {
    {"XOX", "...", "???"},   /* hane: enclosing hane */
    {"XO.", "...", "?.?"},   /* hane: non-cutting hane */
    {"XO?", "X..", "x.?"},   /* hane: magari */
    {".O.", "X..", "..."},   /* diagonal attachment */
    {"XO?", "O.o", "?o?"},   /* cut 1: unprotected cut */
    {"XO?", "O.X", "???"},   /* cut 1: peeped cut */
    {"?X?", "O.O", "ooo"},   /* cut 2 */
    {"OX?", "o.O", "???"},   /* cut keima */
    {"X.?", "O.?", "   "},   /* edge: chase */
    {"OX?", "X.O", "   "},   /* edge: block a cut */
    {"?X?", "x.O", "   "},   /* edge: block a connection */
    {"?XO", "x.x", "   "},   /* edge: sagari */
    {"?OX", "X.O", "   "},   /* edge: cut */
};
#define NPATTERNS ((int)(sizeof(PATTERNS) / sizeof(PATTERNS[0])))

uint8_t pattern3_table[1 << 16];
static pthread_once_t pattern3_once = PTHREAD_ONCE_INIT;

/* The neighbour cells in code order (row, column offsets from the centre). */
static const int CELL_DR[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
static const int CELL_DC[8] = {-1, 0, 1, -1, 1, -1, 0, 1};

static int cell_index(int dr, int dc) {
    for (int i = 0; i < 8; i++)
        if (CELL_DR[i] == dr && CELL_DC[i] == dc) return i;
    return -1;
}

/* Sets every table entry the cells' allowed colours spell, cell by cell from cell i. */
static void expand(const uint8_t allowed[8], int i, unsigned code) {
    if (i == 8) { pattern3_table[code] = 1; return; }
    for (unsigned col = 0; col < 4; col++)
        if (allowed[i] & (1u << col)) expand(allowed, i + 1, code | (col << (2 * i)));
}

/* The colours (a bit mask over EMPTY, BLACK, WHITE, BORDER) a pattern character allows when X
 * is colour x. */
static uint8_t allowed_colours(char ch, int x) {
    int o = board_other(x);
    switch (ch) {
    case '.': return 1u << EMPTY;
    case 'X': return (uint8_t)(1u << x);
    case 'O': return (uint8_t)(1u << o);
    case 'x': return (uint8_t)(0xF & ~(1u << x));
    case 'o': return (uint8_t)(0xF & ~(1u << o));
    case ' ': return 1u << BORDER;
    default: return 0xF;                                /* '?' */
    }
}

static void pattern3_fill(void) {
    for (int p = 0; p < NPATTERNS; p++)
        for (int sym = 0; sym < 8; sym++)
            for (int x = BLACK; x <= WHITE; x++) {
                uint8_t allowed[8];
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++) {
                        if (r == 1 && c == 1) continue;
                        int dr = r - 1, dc = c - 1, t;
                        if (sym & 1) dc = -dc;                   /* mirror */
                        if (sym & 2) dr = -dr;                   /* flip */
                        if (sym & 4) { t = dr; dr = dc; dc = t; } /* transpose */
                        allowed[cell_index(dr, dc)] = allowed_colours(PATTERNS[p][r][c], x);
                    }
                expand(allowed, 0, 0);
            }
}

void pattern3_init(void) { pthread_once(&pattern3_once, pattern3_fill); }

unsigned pattern3_code(const board_t *b, int v) {
    unsigned code = 0;
    for (int i = 0; i < 8; i++)
        code |= (unsigned)b->color[v + CELL_DR[i] * b->stride + CELL_DC[i]] << (2 * i);
    return code;
}
