/* INI keys shared by the offline-calibrated policies (bo-static,
 * knn-router): the draft exit and the skip-set search, as entries of a key
 * table (common/keys/keys.h). */
#ifndef COMMON_SELFSD_SSDKEYS_H
#define COMMON_SELFSD_SSDKEYS_H

#include <stddef.h>

#include "common/keys/keys.h"
#include "skipper/policy.h"

/* Search objectives. TIME is the method's (measured tokens/s of the whole
 * draft+verify loop); EXPECTED is the cost-model speedup behind KNN-SSD's
 * E(Spd): generated / (drafted * c + verify passes), c = share of the 2L
 * sub-layers plus one (embedding and head) computed while drafting. It depends on greedy acceptance only, so it is
 * deterministic: tests and noisy machines can check what the search finds
 * without timing noise. Plain decoding scores exactly 1 on it. */
#define SSD_OBJ_TIME 0
#define SSD_OBJ_EXPECTED 1

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
	int objective;          /* SSD_OBJ_* */
	double early_stop;      /* ssd_search's early_stop, ar_every, confirm */
	int ar_every, confirm;
	double min_speedup;
};

/* The entries of a key table over struct ssd_keys, with the defaults the
 * two papers' policies differ in (the rest are common): a policy writes
 *
 *     static const struct key_spec my_ssd_keys[] = { SSD_KEYS(0.6, 1, 8), { NULL } };
 *
 * and passes &state->k to keys_config and keys_defaults. */
#define SSD_KEY(name, type, member, ...) { name, type, offsetof(struct ssd_keys, member), __VA_ARGS__ }
#define SSD_KEYS(threshold_, adaptive_, search_max_draft_)                                                  \
	SSD_KEY("max_draft", KEY_INT, max_draft, 12, 1, 32, "K", "most tokens drafted per round"),           \
	SSD_KEY("threshold", KEY_DOUBLE, threshold, threshold_, 0, 1, "P",                                    \
	        "draft exit threshold, the initial γ when adaptive"),                                          \
	SSD_KEY("adaptive", KEY_BOOL, adaptive, adaptive_, .help = "move the threshold after each round to "   \
	                                                         "keep acceptance near alpha"),              \
	SSD_KEY("alpha", KEY_DOUBLE, alpha, 0.9, 0, 1, "A", "target acceptance rate of the adaptive exit"),  \
	SSD_KEY("epsilon", KEY_DOUBLE, eps, 0.01, 0, 1, "E", "adaptive threshold step"),                     \
	SSD_KEY("beta1", KEY_DOUBLE, beta1, 0.5, 0, 1, "B", "smoothing of the acceptance rate"),             \
	SSD_KEY("beta2", KEY_DOUBLE, beta2, 0.9, 0, 1, "B", "smoothing of the threshold"),                   \
	SSD_KEY("iterations", KEY_INT, iterations, 1000, 0, 100000, "N",                                     \
	        "calibrate: Bayesian-optimisation steps per search"),                                       \
	SSD_KEY("probes", KEY_INT, probes, 3, 0, 3, "N", "calibrate: starting sets evaluated before the search, 0-3"), \
	SSD_KEY("calib_prompts", KEY_INT, calib_prompts, 4, 1, 1000, "N",                                    \
	        "calibrate: prompts per objective evaluation"),                                             \
	SSD_KEY("calib_tokens", KEY_INT, calib_tokens, 32, 1, 4096, "N",                                     \
	        "calibrate: new tokens per prompt per evaluation"),                                         \
	SSD_KEY("search_max_draft", KEY_INT, search_max_draft, search_max_draft_, 1, 32, "K",                \
	        "calibrate: K while searching"),                                                            \
	SSD_KEY("search_threshold", KEY_DOUBLE, search_threshold, 0.8, 0, 1, "P",                            \
	        "calibrate: initial threshold while searching"),                                            \
	SSD_KEY("acq_samples", KEY_INT, acq_samples, 10000, 1, 1000000, "N",                                 \
	        "calibrate: random candidates scored per BO step"),                                         \
	SSD_KEY("acq_starts", KEY_INT, acq_starts, 10, 1, 1000, "N",                                         \
	        "calibrate: candidates refined by local search per BO step"),                               \
	SSD_KEY("objective", KEY_CHOICE, objective, SSD_OBJ_TIME, .value = "time|expected",                  \
	        .help = "calibrate: measured tokens/s, or the expected-speedup formula"),                   \
	SSD_KEY("early_stop", KEY_DOUBLE, early_stop, 0.75, 0, 1, "R",                                       \
	        "calibrate: end a trial below R x plain decoding's speed; 0 = off"),                        \
	SSD_KEY("ar_every", KEY_INT, ar_every, 10, 0, 100000, "N",                                           \
	        "calibrate: a plain-decoding trial after every N evaluations"),                             \
	SSD_KEY("confirm", KEY_INT, confirm, 2, 0, 100, "N",                                                 \
	        "calibrate: (plain, best) trial pairs that decide whether drafting pays"),                  \
	SSD_KEY("min_speedup", KEY_DOUBLE, min_speedup, 1.02, 0, 100, "S",                                   \
	        "calibrate: drafting is kept only if at least S x faster than plain decoding")

#endif
