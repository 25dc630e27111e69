"""cffi build script: compiles src_c/*.c into the extension module ``engine._core``.

Used by setup.py (``cffi_modules``) and runnable directly for a quick in-place build:
``python src_c/build_core.py``.  Set GOENGINE_SANITIZE=1 to build with AddressSanitizer and
UndefinedBehaviorSanitizer (see tests/run_sanitizers.sh).
"""
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["board.c", "game.c", "feature_planes.c", "kata_ladder.c", "kata_features.c", "search.c"]

CDEF = """
enum { EMPTY = 0, BLACK = 1, WHITE = 2, BORDER = 3 };
enum { MOVE_OK = 0, MOVE_OCCUPIED = 1, MOVE_SUICIDE = 2, MOVE_KO = 3, MOVE_SUPERKO = 4,
       MOVE_OFF_BOARD = 5, MOVE_BAD_COLOR = 6 };
enum { KO_SIMPLE = 0, KO_POSITIONAL = 1 };
enum { FEATURES_RICH = 0, FEATURES_LZ18 = 1, FEATURES_KATA = 2, FEATURES_KATA_S = 3, FEATURES_COUNT = 4 };
#define BOARD_MIN_SIZE 2
#define BOARD_MAX_SIZE 19
#define SEARCH_MAX_SLOTS 64

typedef struct { int ko_rule; int allow_suicide; float komi; } rules_t;

typedef ... game_t;

game_t *game_new(int size, rules_t rules);
void game_free(game_t *g);
game_t *game_clone(const game_t *g);
int game_check(const game_t *g, int pt, int c);
int game_play(game_t *g, int pt, int c);
void game_legal_mask(const game_t *g, int c, uint8_t *mask);
float game_score(const game_t *g, uint8_t *owner);
void game_stones(const game_t *g, uint8_t *out);
void game_set_to_move(game_t *g, int c);
int game_area(const game_t *g, uint8_t *owner);
int game_size(const game_t *g);
int game_to_move(const game_t *g);
int game_passes(const game_t *g);
uint64_t game_hash(const game_t *g);
int game_captures(const game_t *g, int c);
int game_ko_point(const game_t *g);
int game_group_libs(const game_t *g, int pt);

int features_planes(int set);
void kata_game_area(const game_t *g, int suicide_legal, uint8_t *owner);
void kata_game_ladders(const game_t *g, int attacked, uint8_t *laddered, uint8_t *working);
int kata_game_features(const game_t *g, int pass_alive_suicide, float *out, uint64_t *key);
void features_game(int set, const game_t *g, float *out);
uint64_t features_game_key(int set, const game_t *g);

int bench_playouts(int size, int games, uint64_t seed, int64_t *moves_out);
int game_playout_ownership(const game_t *g, int playouts, uint64_t seed, int max_moves,
                           float *ownership);

typedef struct {
    float c_puct; float c_puct_base; float c_puct_factor; float fpu_reduction;
    float fpu_reduction_root; float virtual_loss; float noise_alpha; float noise_epsilon;
    float policy_temperature; float temperature; float lcb_z; float lcb_min_visit_frac;
    float resign_threshold; int64_t max_memory; int32_t max_collisions; float forced_playouts_k;
} search_params_t;
typedef struct search search_t;
void search_default_params(search_params_t *p);
search_t *search_new(const game_t *g, const search_params_t *p, int feature_set, int max_batch,
                     uint64_t seed);
void search_free(search_t *s);
void search_set_params(search_t *s, const search_params_t *p);
int search_set_game(search_t *s, const game_t *g);
int search_advance(search_t *s, int pt, int c);
void search_request_noise(search_t *s);
int search_set_root_targets(search_t *s, const int32_t *moves, const int32_t *targets, int n);
int search_set_slots(search_t *s, int nslots);
int search_slots(const search_t *s);
int search_pending(const search_t *s, int slot);
int search_collect_slot(search_t *s, int slot, int max_leaves, float *planes, uint64_t *keys);
int search_backup_slot(search_t *s, int slot, const float *policy, const float *values, int n);
int search_cancel_slot(search_t *s, int slot);
int search_collect(search_t *s, int max_leaves, float *planes, uint64_t *keys);
int search_backup(search_t *s, const float *policy, const float *values, int n);
int64_t search_check(const search_t *s);
int search_collect_many(search_t **ss, int n, int per_search, float *planes, uint64_t *keys,
                        int32_t *counts);
int search_backup_many(search_t **ss, int n, const int32_t *counts, const float *policy,
                       const float *values);
int32_t search_root_visits(const search_t *s);
float search_root_value(const search_t *s);
int search_root_children(const search_t *s, int32_t *moves, int32_t *visits, float *q,
                         float *prior, float *lcb, int max);
int search_pv(const search_t *s, int pt, int32_t *out, int max);
int search_choose(search_t *s);
int64_t search_nodes(const search_t *s);
int64_t search_full_events(const search_t *s);
int search_to_move(const search_t *s);
int64_t search_node_bytes(void);
int64_t search_edge_bytes(void);
int64_t search_memory(const search_t *s);
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)

_flags = ["-std=c99", "-O3", "-Wall", "-Wextra", "-Werror", "-fno-strict-aliasing"]
_link = []
if os.environ.get("GOENGINE_SANITIZE"):
    # -fno-wrapv: Python's own CFLAGS carry -fwrapv, which would hide signed overflow from UBSan.
    _flags = ["-std=c99", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-wrapv", "-Wall", "-Wextra", "-Werror",
              "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    _link = ["-fsanitize=address,undefined"]

ffibuilder.set_source(
    "engine._core",
    '#include "api.h"\n#include "kata_features.h"',
    sources=[os.path.relpath(os.path.join(HERE, f)) for f in SOURCES + ["api.c"]],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=_flags,
    extra_link_args=_link,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
