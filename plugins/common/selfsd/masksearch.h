/* Offline skip-set search shared by bo-static and knn-router: Bayesian
 * optimisation (bo.h) over the 2L relaxed variables (attention of layers
 * 0..L-1, then MLP of layers 0..L-1; unit skipped iff x > 0.5) with the
 * measured tokens/s of SSD decoding through host->trial as the objective,
 * and plain decoding measured on the same prompts through the same path as
 * the bar the result has to clear. The caller owns every buffer; nothing
 * here prints (host->log only). */
#ifndef COMMON_SELFSD_MASKSEARCH_H
#define COMMON_SELFSD_MASKSEARCH_H

#include <stdint.h>

#include "skipper/policy.h"
#include "ssdkeys.h"

struct ssd_search {
	int n_prompts;
	const char *const *prompts;
	int iterations;      /* BO steps after the probes (the total, resumed ones included) */
	int probes;          /* hand-made starting sets evaluated first (0..3) */
	int max_tokens;      /* per prompt per trial */
	int max_draft;       /* K during the search */
	double gamma0;       /* initial exit threshold during the search */
	int adaptive;        /* adaptive exit during the search */
	double alpha, eps, beta1, beta2;
	int objective;       /* SSD_OBJ_* */
	uint64_t seed;
	int n_random, n_starts; /* acquisition effort (0 = bo.h defaults) */
	/* Cost and the plain-decoding bar (time objective only; see masktrial.h) */
	double early_stop;   /* stop a trial once its speed is below this share of plain decoding's (0 = off) */
	int ar_every;        /* a plain-decoding trial after every ar_every evaluations (0 = only the first) */
	int confirm;         /* (plain, best set) trial pairs measured after the search; 0 = decide on the search's numbers */
	double min_speedup;  /* the set must be this many times faster than plain decoding (<= 1: just faster) */
	/* Resume journal (maskjournal.h): profile-format file, one section per
	 * search; NULL = none. */
	const char *journal;
	const char *journal_section;
	/* progress(ctx, done, total, what); may be NULL */
	void (*progress)(void *ctx, int done, int total, const char *what);
	void *progress_ctx;
	const char *label;   /* prefix of progress and log texts ("domain code") */
};

struct ssd_result {
	double tokens_per_s;   /* measured tokens/s of the best set (projected if its trial stopped early) */
	double objective;      /* best observed objective (tokens/s with SSD_OBJ_TIME) */
	double ar_tokens_per_s;/* plain decoding on the same prompts, mean over the search's trials */
	double alpha, mean_accepted;
	int evaluations;       /* mask trials, resumed ones included */
	int resumed;           /* of which read back from the journal */
	int stopped_early;     /* mask trials cut short by early_stop */
	int ar_trials;         /* plain-decoding trials (confirmation included) */
	/* The decision: the best set against plain decoding on the same
	 * footing (confirmation pairs when confirm > 0). For the time
	 * objective in ms per token (lower is better); for the expected one
	 * the expected speedup (plain decoding = 1, higher is better). */
	double best_cost, ar_cost;
	int draft;             /* 1: the set beat plain decoding; 0: the profile must disable drafting */
	double seconds;        /* wall time of the search */
};

/* Search; attn[n_layer] and mlp[n_layer] get the best mask found (also when
 * res->draft is 0: the caller records it as the rejected set).
 * SKIPPER_POLICY_OK or the failing service's code (error already set). */
int ssd_search_run(const struct skipper_host *h, void *ctx, const struct ssd_search *s, uint8_t *attn,
                   uint8_t *mlp, struct ssd_result *res);

/* Fill the search settings from the policy's keys and the calibrate call
 * (its iterations, max_tokens and seed override the keys when non-zero);
 * prompts, label, journal and progress are left to the caller. */
void ssd_search_setup(struct ssd_search *s, const struct ssd_keys *k, const struct skipper_calibrate *c);

/* Write the outcome into profile p: the mask as attn/mlp of mask_sec, or,
 * when the set did not beat plain decoding, empty masks and max_draft = 0
 * there (the rejected set goes to rec_sec as best_attn/best_mlp), plus the
 * search record (budget, both measured costs, the decision) in rec_sec. Logs
 * a warning line when drafting is disabled. */
int ssd_record(const struct skipper_host *h, void *ctx, struct skipper_profile *p, const char *mask_sec,
               const char *rec_sec, const struct ssd_search *s, const struct ssd_result *res,
                   const uint8_t *attn, const uint8_t *mlp);

/* Optional max_draft of a profile section (what ssd_record writes when
 * drafting does not pay): *out = its value, or left alone when absent; a
 * bad value is an error naming path (the profile's file) and the section. */
int ssd_profile_max_draft(const struct skipper_host *h, void *ctx, const struct skipper_profile *p, const char *path,
                          const char *sec, int *out);

/* SKIPPER_POLICY_ERROR (error set, naming path) when p's [profile] method
 * names another method than method; a profile without one is taken. */
int ssd_profile_method(const struct skipper_host *h, void *ctx, const struct skipper_profile *p, const char *path,
                       const char *method);

/* out without a trailing ".ini", plus suffix (malloc'ed; NULL when out of
 * memory): the files a calibration writes beside its profile. */
char *ssd_sibling_path(const char *out, const char *suffix);

/* Choose min(want, n) distinct indices of [0, n) at random (seeded), in
 * increasing order, into idx; returns how many. The Self-SD development set
 * is "8 instances drawn at random". */
int ssd_pick(int n, int want, uint64_t seed, int *idx);

#endif
