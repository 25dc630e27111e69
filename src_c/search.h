/* search.h - PUCT Monte Carlo tree search with batched leaf evaluation.
 *
 * The tree never calls a network.  search_collect() descends the tree up to B times with
 * virtual loss, writes the input planes of every new leaf into one caller-provided buffer and
 * returns; the caller evaluates them in one forward pass and hands policy logits and values to
 * search_backup().  search_collect_many()/search_backup_many() do the same for a pool of
 * independent searches (self-play games, gating games) in one call.
 *
 * This header holds the public API and the parameters (search.c: their defaults); the tree's
 * layout is private to the files that implement the API (search_tree.h). */
#ifndef GO_SEARCH_H
#define GO_SEARCH_H

#include "feature_planes.h"

typedef struct {
    float c_puct;              /* exploration constant at low visit counts */
    float c_puct_base;         /* visit scale of c_puct's growth: c = c_puct + c_puct_factor*log((N+base+1)/base) */
    float c_puct_factor;       /* strength of that growth (0: constant c_puct) */
    float fpu_reduction;       /* unvisited child Q = parent Q - fpu_reduction*sqrt(sum of visited priors) */
    float fpu_reduction_root;  /* the same at the root: as Leela Zero, equal to fpu_reduction in play
                                  and 0 with root noise (self-play sets it) */
    float virtual_loss;        /* each in-flight descent counts as this many lost visits */
    float noise_alpha;         /* total Dirichlet concentration: alpha per move = noise_alpha / legal moves */
    float noise_epsilon;       /* weight of the noise in root priors; 0 disables noise */
    float policy_temperature;  /* softmax temperature applied to the policy logits (1 = as given) */
    float temperature;         /* move choice: 0 picks the best child, >0 samples visits^(1/T) */
    float lcb_z;               /* the move is the child with the best lower confidence bound on Q: mean
                                  minus Student's t (df visits-1, the upper tail of this normal z)
                                  times the standard error; 0: most visits */
    float lcb_min_visit_frac;  /* children with fewer than this share of the top visits can't win by LCB */
    int64_t max_memory;        /* tree memory cap in bytes (nodes + edges); when full the tree stops
                                  growing and further visits re-evaluate existing leaves */
    int32_t max_collisions;    /* collisions with in-flight leaves tolerated per tree per batch */
    float forced_playouts_k;   /* KataGo's forced playouts at the root: a child that has been visited
                                  gets at least sqrt(k * prior * child visits total) visits (0: off;
                                  KataGo uses 2, in self-play only) */
    /* Score utility (KataGo's): a leaf whose network gives the side to move a lead of x points
     * is worth, beside its value v, the utility
     *   u = static_score_utility * f(x, 0, 2) + dynamic_score_utility * f(x, centre, dyn_scale)
     * with f(x, c, k) = 2/pi * atan((x - c) / (k * N)) on an N x N board (c from the mover's
     * view).  Selection and FPU read v + u; winrate, LCB, the move choice and resignation read v
     * alone.  The centre is the root's mean score when the root changes (its first evaluation
     * on a fresh tree, its subtree's mean on tree reuse), shrunk toward 0 by
     * score_centre_zero_weight and kept within dyn_scale * N of that mean; the utilities already
     * summed in a kept subtree keep the centre they were computed with (KataGo recomputes them
     * from each node's stored evaluation; our nodes store sums only).  Scores are backed up
     * only when the caller passes them (nets with a score head); 0 and 0 switch it off. */
    float static_score_utility;
    float dynamic_score_utility;
    float dynamic_score_scale;       /* dyn_scale above (KataGo's dynamicScoreCenterScale) */
    float score_centre_zero_weight;  /* KataGo's dynamicScoreCenterZeroWeight */
    /* Exploration scaled by the spread of utilities (KataGo's cpuctUtilityStdev*): the PUCT
     * term of a parent with n visits is multiplied by 1 + stdev_scale * (sd / prior - 1), where
     * sd^2 = ((m^2 + prior^2) * w + (sum of squared utilities)) / (w + n - 1) - m^2, m the
     * parent's mean utility, prior = cpuct_stdev_prior and w = cpuct_stdev_prior_weight (sd =
     * prior under 2 visits).  cpuct_stdev_scale 0 switches it off. */
    float cpuct_stdev_prior;
    float cpuct_stdev_prior_weight;
    float cpuct_stdev_scale;
    /* Subtree value-bias correction (KataGo's subtreeValueBias*): nodes reached by the same move
     * of the same colour, after the same previous move, with the same 5x5 neighbourhood and ko
     * point, share a table entry holding the weighted mean of (mean utility of a node's children
     * - the net's utility of the node), each node weighted by (its children's visits)^exponent.
     * A node's own evaluation then counts as the net's utility plus factor * that mean.  The
     * correction goes into the utility sums only (selection reads it; winrate, LCB on values and
     * resignation do not), and is refreshed for the nodes of each backed-up path.  When the tree
     * is cut (a move played), free_prop of the discarded nodes' contributions leaves the table.
     * The table holds up to 65,536 entries (24 bytes each), beside max_memory.  0 factor: off. */
    float subtree_bias_factor;
    float subtree_bias_free_prop;
    float subtree_bias_weight_exponent;
    /* Nonzero: the LCB move choice reads value plus score utility (and value-bias correction),
     * as KataGo's does; 0: value alone. */
    float lcb_utility;
    /* Uncertainty-weighted playouts (KataGo's useUncertainty, uncertaintyCoeff,
     * uncertaintyExponent, uncertaintyMaxWeight): a leaf whose net reports a short-term
     * win/loss error e_v and score error e_s counts with the weight
     *   w = coeff / (U^exponent + coeff / max_weight),  U = e_v + (du/dx) * e_s,
     * du/dx the slope of the score utility (static and dynamic parts) at the leaf's lead x, so
     * a confident evaluation weighs up to max_weight and an uncertain one less.  Every mean
     * the search reads (Q in selection and FPU, the exploration factor's spread, the root's
     * value, score and utility, the children's Q and LCB, the value-bias correction) is then a
     * weighted mean, and PUCT's N terms are weights (plus virtual loss); visit counts (the move
     * choice, forced playouts, root targets, budgets) stay counts.  Terminal positions and
     * leaves backed up without errors weigh 1, and with every weight 1 the search is exactly
     * the unweighted one.  use_uncertainty 0: off (every weight 1). */
    float use_uncertainty;
    float uncertainty_coeff;
    float uncertainty_exponent;
    float uncertainty_max_weight;
    /* KataGo's policy optimism (policyOptimism, rootPolicyOptimism): with nets that have an
     * optimistic policy head, the logits are blended toward it by this share below the root and
     * at the root (KataGo's GTP: 1.0 and 0.2); 0 and 0: the plain policy. */
    float policy_optimism;
    float root_policy_optimism;
    /* KataGo's fpuParentWeightByVisitedPolicy(Pow): nonzero fpu_parent_nn, the parent Q that
     * first-play urgency starts from is a blend of the parent's mean utility and the net's
     * utility of the parent position, w * mean + (1 - w) * net with w = min(1, (sum of the
     * visited children's priors)^fpu_parent_nn_pow), so a parent whose visits went to few of
     * its moves judges the rest by its own evaluation (KataGo's GTP: on, power 2).  0: the
     * mean alone. */
    float fpu_parent_nn;
    float fpu_parent_nn_pow;
    /* KataGo's valueWeightExponent and useNoisePruning (noisePruneUtilityScale): either one
     * nonzero, every node on a backed-up path that has visited children is recomputed from
     * them instead of adding the leaf's playout: its sums become its own evaluation (weight
     * nn_weight) plus each visited child's means weighted by that child's weight, adjusted.
     * Noise pruning (children in prior order) takes from a child that looks worse than the
     * weighted mean of the higher-prior children before it, and holds more than twice the
     * weight its prior gives it among them, the share 1 - exp(-gap / prune_scale) of that
     * excess.  With value_weight_exponent e > 0, each child's weight is then multiplied by
     * (T3(z) + 0.0001)^e, T3 Student's t CDF with 3 degrees of freedom and z = (child's
     * utility - the children's weighted mean) / sqrt(1e-8 + 1 / (1.5 sqrt(weight))), and the
     * weights are scaled back to their total, so children that look worse than the mean
     * count less and a node's value moves toward its best children.  Terminal positions and
     * nodes without visited children add playouts as before.  KataGo's GTP: 0.25 and on. */
    float value_weight_exponent;
    float noise_pruning;
    float noise_prune_utility_scale;
    /* KataGo's conservativePass: nonzero, when the opponent's last move was a pass our pass
     * from the root is not the end of the game (two passes, Tromp-Taylor count of the board
     * as it stands, dead stones included) but a position the net evaluates with the
     * opponent to move, and the search goes on below it (a pass there ends the game).  A
     * pass then wins only where playing on would: no passing into a count that GNU Go, a
     * referee or a human takes the dead stones off.  Advancing the root to a position where
     * a pass would end the game clears the tree (its pass child was terminal).  KataGo's GTP
     * and analysis default, and ours: on; self-play (Tromp-Taylor): off. */
    float conservative_pass;
    /* Random playouts at the leaves, mixed into the net's value (AlphaGo's leaf evaluation,
     * V = (1 - lambda) v + lambda z): nonzero rollout_weight (lambda, 0..1), each new leaf also
     * plays `rollouts` games to two passes from its position with random legal moves that do
     * not fill the mover's own eyes (playout_random_move, playout.h), each counted by
     * area with komi, z the mean of their wins (+1), losses (-1) and draws (0) for the side to
     * move.  Only the value is mixed: the score lead and utility stay the net's, and terminal
     * positions keep their exact value.  The playouts of a leaf are seeded by its position
     * (Zobrist hash) and the search's seed, so a search is as reproducible as without them.
     * 0: off (the default).  rollout_policy 1: the playouts are tactical (playout_tactical_move:
     * capture and escape atari around the last move, no self-atari that joins a group but a
     * nakade throw-in); 2: tactical with MoGo's 3x3 patterns around the last move
     * (pattern3.c); 0 (the default): uniformly random.  rollout_ramp_start <
     * rollout_ramp_end (fractions of the board's points with a stone on them, 0..1): lambda
     * grows with the leaf's board, from 0
     * at or below start to rollout_weight at or above end, linearly between (playouts judge a
     * full board better than an empty one); a leaf whose lambda is 0 plays no playouts.  Equal
     * (the default, 0 and 0): lambda is rollout_weight at every leaf. */
    float rollout_weight;
    float rollouts;
    float rollout_policy;
    float rollout_ramp_start;
    float rollout_ramp_end;
    /* How a game that ends by two passes in the tree is counted.  0: Tromp-Taylor, the board
     * as it stands, every stone alive (self-play's rules).  N > 0 (the default, 32): as a
     * referee under Chinese rules counts it, dead stones off (playout_judged_area: N random
     * playouts finish the position, half with each side moving first, since a game over has
     * no side to move; a group the opponent owns at the end of 60% of them or more is taken
     * off; then the area count), seeded by the position and the search's seed.  So a pass
     * into a count where our stone in atari or our group that lost a semeai still stands is
     * scored as the referee scores it, not as a win.  Each terminal position is judged once
     * (its node keeps the value).  The engine turns it off under Tromp-Taylor rules. */
    float terminal_judge;
} search_params_t;

typedef struct search search_t;   /* opaque: struct search is in search_tree.h */

/* Fills params with defaults suited to play (no noise). */
void search_default_params(search_params_t *p);
/* New search for a copy of game g; feature_set FEATURES_*; max_batch = most leaves per collect.
 * Returns NULL on bad arguments or out of memory. */
search_t *search_new(const game_t *g, const search_params_t *p, int feature_set, int max_batch,
                     uint64_t seed);
/* Frees a search (NULL is fine). */
void search_free(search_t *s);
/* Replaces the parameters (the tree is kept). */
void search_set_params(search_t *s, const search_params_t *p);
/* Replaces the root position by a copy of g and clears the tree and the avoided moves; 0, or -1
 * out of memory. */
int search_set_game(search_t *s, const game_t *g);
/* Plays compact point pt by colour c at the root, keeping its subtree (the avoided moves are
 * cleared); returns MOVE_OK, the MOVE_* reason when illegal, or -1 out of memory / -2 while
 * leaves are pending. */
int search_advance(search_t *s, int pt, int c);
/* Asks for Dirichlet noise on the root priors (now, or when the root is expanded). */
void search_request_noise(search_t *s);
/* Avoided moves (KataGo's avoidMoves/allowMoves): until_black[pt] / until_white[pt] (compact
 * points, pass = area; NULL: none for that colour) > 0 keeps that colour's move at pt out of
 * the search at depths below it (depth 0: the root's children); all zero clears the table.
 * Where a node would have no move left, the table is ignored there.  A changed table clears
 * the tree.  Returns 0, -1 out of memory, or -2 while leaves are pending. */
int search_set_avoid(search_t *s, const int32_t *until_black, const int32_t *until_white);
/* Root visit targets (Gumbel sequential halving): while set, the root descends only into the
 * listed children (compact moves), each until its visits (completed + in flight) reach its
 * target, the one furthest below its target first; collect returns fewer leaves (0) once every
 * target is reached.  n = 0 clears the targets (PUCT at the root again).  Returns the number of
 * moves that are root children (0 if the root is not expanded yet). */
int search_set_root_targets(search_t *s, const int32_t *moves, const int32_t *targets, int n);
/* Pending batches.  A search has nslots slots (1 after search_new); each slot holds one batch
 * of pending leaves between search_collect_slot and search_backup_slot, so up to nslots
 * batches can be in flight at once (one per search thread: while one batch is in the network,
 * another thread collects or backs up its own).  The leaves of every slot carry virtual loss,
 * and a descent that meets a leaf pending in any slot counts as a collision.  The search is
 * not thread-safe: callers serialise the calls on one search (a lock held for a collect or a
 * backup, never for a forward pass).  Returns 0, or -1 for nslots outside 1..SEARCH_MAX_SLOTS,
 * out of memory, or while leaves are pending. */
#define SEARCH_MAX_SLOTS 64
int search_set_slots(search_t *s, int nslots);
int search_slots(const search_t *s);
/* Leaves pending in one slot, or in all slots when slot < 0. */
int search_pending(const search_t *s, int slot);
/* Collects up to max_leaves leaves into slot `slot` (leaves still pending there are cancelled
 * first); planes gets planes*N*N floats per leaf and keys one evaluation-cache key per leaf
 * (keys may be NULL).  Terminal positions met on the way are scored and backed up at once.
 * Returns the number of leaves now pending in the slot, or -1 for a bad slot. */
int search_collect_slot(search_t *s, int slot, int max_leaves, float *planes, uint64_t *keys);
/* Backs up policy logits [n][N*N+1], values [n] (side to move of each leaf, -1..1), score
 * leads [n] (side to move, points; NULL when the net has no score head: no score utility) and
 * short-term errors [n][2] (win/loss error, score error in points; NULL when the net has none:
 * every weight 1) of the n leaves pending in the slot, in collection order.  Returns 0, or -1
 * if n does not match.  A broken network's outputs are tamed: NaN or -inf logits get no prior,
 * +inf ones the most; values are clamped to -1..1, scores to +-2 N*N, a NaN value or score
 * counts as 0, a NaN error gives weight 1 and errors are clamped to 0..1e4.  policy_opt
 * [n][N*N+1] (NULL: none) are the logits of an optimistic policy head (KataGo's second policy
 * channel): a leaf's logits are then policy + (policy_opt - policy) * optimism, optimism being
 * root_policy_optimism for the root and policy_optimism below it. */
int search_backup_slot(search_t *s, int slot, const float *policy, const float *values,
                       const float *scores, const float *uncertainty, const float *policy_opt, int n);
/* Withdraws the slot's pending leaves without evaluating them (virtual loss removed). */
int search_cancel_slot(search_t *s, int slot);
/* Slot 0 forms of collect and backup. */
int search_collect(search_t *s, int max_leaves, float *planes, uint64_t *keys);
int search_backup(search_t *s, const float *policy, const float *values, const float *scores,
                  const float *uncertainty, const float *policy_opt, int n);
/* Consistency check for tests: 0 when no node has negative in-flight descents, none is left
 * in flight or pending while no slot has leaves pending, and (below the memory cap) every
 * expanded node's visits are 1 + its children's and its in-flight count its children's;
 * otherwise -(index of the first bad node + 1). */
int64_t search_check(const search_t *s);
/* Pool form: collects up to per_search leaves from each of n searches into one buffer;
 * counts[i] gets the leaves of search i.  Returns the total. */
int search_collect_many(search_t **ss, int n, int per_search, float *planes, uint64_t *keys,
                        int32_t *counts);
/* Pool form of search_backup; counts as returned by search_collect_many; scores,
 * uncertainty and policy_opt may be NULL. */
int search_backup_many(search_t **ss, int n, const int32_t *counts, const float *policy,
                       const float *values, const float *scores, const float *uncertainty,
                       const float *policy_opt);
/* Root visits (including the root's own evaluation). */
int32_t search_root_visits(const search_t *s);
/* Sum of the root's playout weights (its visits when every weight is 1). */
float search_root_weight(const search_t *s);
/* Student's t quantile with df degrees of freedom at the upper-tail probability of normal z
 * (the LCB's multiplier; exposed for tests). */
double search_t_quantile(double z, int df);
/* The lower confidence bound of a child's Q from its visits, sum and sum of squares of values:
 * mean - search_t_quantile(z, visits - 1) * sqrt(sample variance / visits); the sample variance
 * is at least 1e-4.  Under 2 visits: -1e6 + visits. */
float search_lcb(float z, int32_t visits, float value_sum, float value_sq);
/* The same for weighted playouts: mean value_sum / weight_sum, sample variance
 * (value_sq / weight_sum - mean^2) * visits / (visits - 1), standard error over the visits;
 * equal to search_lcb when weight_sum is the visit count. */
float search_lcb_weighted(float z, int32_t visits, float weight_sum, float value_sum, float value_sq);
/* The weight a leaf with short-term errors wl_error and score_error and score lead `lead`
 * (points) for `color` to move gets under the search's parameters and score centre (1 when
 * use_uncertainty is 0; exposed for tests). */
float search_playout_weight(const search_t *s, float wl_error, float score_error, float lead, int color);
/* Root value from the side to move's view (-1..1), 0 if unvisited. */
float search_root_value(const search_t *s);
/* Root mean score lead (side to move, points) and mean score utility (side to move), 0 if
 * unvisited or without scores. */
float search_root_score(const search_t *s);
float search_root_utility(const search_t *s);
/* The dynamic score utility's centre (Black's lead, points). */
float search_score_centre(const search_t *s);
/* The utility of PUCT selection (exposed for tests): of root child compact move pt, the mean
 * value plus mean score utility (mover's view; -2 if unvisited or not a child), and the
 * exploration factor of the root (1 without cpuct_stdev_scale). */
float search_child_utility(const search_t *s, int pt);
float search_root_explore_factor(const search_t *s);
/* Writes up to max children of the root: compact move, visits, Q (mover's view, -1..1),
 * prior, LCB; returns the number of children. */
int search_root_children(const search_t *s, int32_t *moves, int32_t *visits, float *q,
                         float *prior, float *lcb, int max);
/* Principal variation starting with root child `pt` (compact), or the best child when pt < 0;
 * writes compact moves into out and returns its length. */
int search_pv(const search_t *s, int pt, int32_t *out, int max);
/* Chooses the move to play (compact) with the params' temperature and LCB rule; pass when the
 * root has no children.  Never returns an illegal move. */
int search_choose(search_t *s);
/* The value-bias entry of root child compact move pt (exposed for tests): its weighted delta
 * sum and weight sum; returns 0, or -1 when the child has no entry. */
int search_child_bias(const search_t *s, int pt, double *delta_sum, double *weight_sum);
/* Entries in use in the value-bias table. */
int32_t search_bias_entries(const search_t *s);
/* Nodes in use, tree bytes in use, and the number of times the tree could not grow (memory cap). */
int64_t search_nodes(const search_t *s);
int64_t search_memory(const search_t *s);
int64_t search_full_events(const search_t *s);
/* Side to move at the root. */
int search_to_move(const search_t *s);
/* The root game (read-only). */
const game_t *search_game(const search_t *s);

#endif
