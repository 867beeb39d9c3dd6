/* INI keys shared by the offline-calibrated policies (bo-static,
 * knn-router): the draft exit and the skip-set search. Each plugin sets its
 * own defaults (the two papers differ) and forwards keys here. */
#ifndef COMMON_SELFSD_SSDKEYS_H
#define COMMON_SELFSD_SSDKEYS_H

#include "skipper/policy.h"

struct ssd_keys {
	/* run time */
	int max_draft;          /* K */
	double threshold;       /* static threshold, or γ0 when adaptive */
	int adaptive;
	double alpha, eps, beta1, beta2;
	/* calibration */
	int iterations, probes, calib_prompts, calib_tokens;
	int search_max_draft;
	double search_threshold;
	int acq_samples, acq_starts;
	int objective;          /* SSD_OBJ_* of masksearch.h */
	double early_stop;      /* ssd_search's early_stop, ar_every, confirm */
	int ar_every, confirm;
	double min_speedup;
};

/* Parse one key into k. SKIPPER_POLICY_UNKNOWN_KEY if not one of ours. */
int ssd_keys_config(const struct skipper_host *h, void *ctx, struct ssd_keys *k, const char *key,
                       const char *value);

/* config_help lines for these keys (no defaults: the man pages give them). */
#define SSD_KEYS_HELP                                                                               \
	"max_draft = K        most tokens drafted per round\n"                                        \
	"threshold = P        draft exit threshold (initial γ when adaptive)\n"                       \
	"adaptive = BOOL      move the threshold after each round to keep acceptance near alpha\n"     \
	"alpha = A            target acceptance rate of the adaptive exit\n"                         \
	"epsilon = E          adaptive threshold step\n"                                               \
	"beta1 = B            smoothing of the acceptance rate\n"                                      \
	"beta2 = B            smoothing of the threshold\n"                                            \
	"iterations = N       calibrate: Bayesian-optimisation steps per search\n"                     \
	"probes = N           calibrate: starting sets evaluated before the search (0-3)\n"           \
	"calib_prompts = N    calibrate: prompts per objective evaluation\n"                           \
	"calib_tokens = N     calibrate: new tokens per prompt per evaluation\n"                       \
	"search_max_draft = K calibrate: K while searching\n"                                          \
	"search_threshold = P calibrate: initial threshold while searching\n"                          \
	"acq_samples = N      calibrate: random candidates scored per BO step\n"                       \
	"acq_starts = N       calibrate: candidates refined by local search per BO step\n"                \
	"objective = time|expected  calibrate: measured tokens/s, or the expected-speedup formula\n"          \
	"early_stop = R       calibrate: end a trial below R x plain decoding's speed (0 = off)\n"          \
	"ar_every = N         calibrate: a plain-decoding trial after every N evaluations\n"              \
	"confirm = N          calibrate: (plain, best) trial pairs that decide whether drafting pays\n"       \
	"min_speedup = S      calibrate: drafting is kept only if at least S x faster than plain decoding\n"

#endif
