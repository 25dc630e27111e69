/* failing_realloc.h - force-included (gcc -include) into the C core for tests/c/game_play_oom.c:
 * realloc fails while fail_realloc is set, so out-of-memory paths can be tested. */
#ifndef FAILING_REALLOC_H
#define FAILING_REALLOC_H
#include <stdlib.h>
extern int fail_realloc;
void *failing_realloc(void *p, size_t n);
#define realloc failing_realloc
#endif
