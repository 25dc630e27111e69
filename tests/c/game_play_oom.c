/* game_play_oom.c - game_play leaves the game unchanged when it runs out of memory.
 * Built by tests/core/test_core_boundary.py with failing_realloc.h force-included. */
#include <stdio.h>
#include <string.h>

#include "game.h"

#undef realloc
int fail_realloc = 0;
void *failing_realloc(void *p, size_t n) { return fail_realloc ? NULL : realloc(p, n); }

static int same_game(const game_t *a, const game_t *b) {
    return memcmp(&a->board, &b->board, sizeof(a->board)) == 0 && a->nhashes == b->nhashes &&
           a->nprev == b->nprev && memcmp(a->prev, b->prev, sizeof(a->prev)) == 0 &&
           memcmp(a->bloom, b->bloom, sizeof(a->bloom)) == 0 &&
           memcmp(a->hashes, b->hashes, (size_t)a->nhashes * sizeof(uint64_t)) == 0 &&
           memcmp(a->moves, b->moves, (size_t)(a->nhashes - 1) * sizeof(int16_t)) == 0;
}

int main(void) {
    rules_t rules = {KO_SIMPLE, 0, 7.5f, SCORING_AREA, TAX_NONE};
    game_t *g = game_new(9, rules);
    if (!g) return 2;
    /* Fill the first 256-entry history exactly, then the next play must grow it. */
    int pt = 0, played = 0;
    while (g->nhashes < 256) {
        int move = (played % 3 == 2) ? 81 : pt++ % 81;   /* passes keep the board from filling */
        if (game_play(g, move, g->board.to_move) == MOVE_OK) played++;
        else if (game_play(g, 81, g->board.to_move) == MOVE_OK) played++;
    }
    game_t *before = game_clone(g);
    if (!before) return 2;
    fail_realloc = 1;
    int r = game_play(g, 81, g->board.to_move);
    fail_realloc = 0;
    if (r != -1) { printf("expected -1 out of memory, got %d\n", r); return 1; }
    if (!same_game(g, before)) { printf("the game changed after a failed play\n"); return 1; }
    if (game_play(g, 81, g->board.to_move) != MOVE_OK || g->nhashes != 257) {
        printf("the game cannot go on after the failure\n");
        return 1;
    }
    printf("ok after %d moves\n", played);
    game_free(before);
    game_free(g);
    return 0;
}
