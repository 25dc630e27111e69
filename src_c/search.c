/* search.c - the search's parameters and their defaults (search.h).  The search itself lives in
 * the files above search_tree.h: search_descent.c, search_select.c, search_bias.c,
 * search_recompute.c and search_stats.c. */
#include "search.h"

void search_default_params(search_params_t *p) {
    p->c_puct = 1.1f;
    p->c_puct_base = 19652.0f;
    p->c_puct_factor = 1.0f;
    p->fpu_reduction = 0.25f;
    p->fpu_reduction_root = 0.25f;
    p->virtual_loss = 1.0f;
    p->noise_alpha = 10.83f;
    p->noise_epsilon = 0.0f;
    p->policy_temperature = 1.0f;
    p->temperature = 0.0f;
    p->lcb_z = 4.265f;          /* upper tail 1e-5, Leela Zero's ci_alpha */
    p->lcb_min_visit_frac = 0.10f;
    p->max_memory = (int64_t)2 << 30;
    p->max_collisions = 8;
    p->forced_playouts_k = 0.0f;
    p->static_score_utility = 0.0f;   /* KataGo's GTP default: 0.1 */
    p->dynamic_score_utility = 0.0f;  /* KataGo's GTP default: 0.3 */
    p->dynamic_score_scale = 0.75f;
    p->score_centre_zero_weight = 0.2f;
    p->cpuct_stdev_prior = 0.4f;
    p->cpuct_stdev_prior_weight = 2.0f;
    p->cpuct_stdev_scale = 0.0f;      /* KataGo's GTP default: 0.85 */
    p->subtree_bias_factor = 0.0f;    /* KataGo's GTP default: 0.45 */
    p->subtree_bias_free_prop = 0.8f;
    p->subtree_bias_weight_exponent = 0.85f;
    p->lcb_utility = 0.0f;
    p->policy_optimism = 0.0f;        /* KataGo's GTP default: 1.0 */
    p->root_policy_optimism = 0.0f;   /* KataGo's GTP default: 0.2 */
    p->use_uncertainty = 0.0f;        /* KataGo's GTP default: on */
    p->uncertainty_coeff = 0.25f;
    p->uncertainty_exponent = 1.0f;
    p->uncertainty_max_weight = 8.0f;
    p->fpu_parent_nn = 0.0f;          /* KataGo's GTP default: on */
    p->fpu_parent_nn_pow = 2.0f;
    p->value_weight_exponent = 0.0f;  /* KataGo's GTP default: 0.25 */
    p->noise_pruning = 0.0f;          /* KataGo's GTP default: on */
    p->noise_prune_utility_scale = 0.15f;
    p->conservative_pass = 1.0f;      /* KataGo's GTP: on (its self-play: off, as ours) */
    p->rollout_weight = 0.0f;
    p->rollouts = 16.0f;
    p->rollout_policy = 0.0f;
    p->rollout_ramp_start = 0.0f;
    p->rollout_ramp_end = 0.0f;
    p->terminal_judge = 32.0f;
}
