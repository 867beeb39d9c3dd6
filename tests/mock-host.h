/* A model-free host for policy unit tests: the real generic services of
 * libskipper (parsers, layer lists, profiles) and deterministic doubles for
 * the compute services, with call counters so tests can check what a policy
 * asked for.
 *
 * The double "model": the full model predicts next = (tok * 7 + 3) % n_vocab;
 * a draft with sub-layers skipped gets row i wrong (returns next + 1) when
 * (start_pos + i) % (2 + n_skipped) == 0, so more skipping, fewer hits. */
#ifndef SKIPPER_MOCK_HOST_H
#define SKIPPER_MOCK_HOST_H

#include <stdint.h>

#include "skipper/policy.h"

struct mock_host {
	struct skipper_host host; /* handed to create(); its ctx is this struct */

	/* settings (mock_host_init sets defaults, tests may change them) */
	char sha256[65];          /* model hash reported by model_sha256 */
	const char *profile_path; /* [policy] profile, or NULL */
	uint64_t seed;
	double clock, clock_step; /* now() returns clock and advances it by clock_step */
	double ar_speed;          /* trial: plain decoding's tokens/s (sets peak at 100 * (1 + 0.5)) */
	double compute_seconds;   /* score_mask, sublayer_forward and head_argmax advance the clock by this */
	/* host->costs: fails (error set, NULL) until a test sets a curve, as a
	 * host without a model or measurement does */
	struct skipper_costs costs;
	int have_costs;

	/* what the policy did */
	char error[1024];         /* last set_error */
	int n_errors;
	char log[4096];           /* log lines, '\n'-separated, truncated */
	int n_logs;
	int n_score_mask, n_sublayer, n_head_argmax, n_time_sublayer, n_trial, n_embed, n_costs;
};

/* Fill the table for a model with these sizes (n_layer 0 = no model). */
void mock_host_init(struct mock_host *m, int n_layer, int n_embd, int n_vocab);

/* Cost curves for host->costs (shares scaled to the mock's layer count):
 * cpu: a 2-core CPU running a 1.5B model, verify[2..8] = 1.14, 1.39, 1.39,
 * 1.53, 1.74, 1.91, 2.08, then +0.2 a row to 16 (3.68) and +0.25 to 32;
 * head 0.17, attention 0.14 and MLP 0.67 over all layers; 50 ms a step.
 * gpu: verify[n] = 1 + 0.002 (n - 1); head 0.1, attention 0.3, MLP 0.6;
 * 10 ms a step. */
void mock_costs_cpu(struct mock_host *m);
void mock_costs_gpu(struct mock_host *m);

/* The mock model's next token after tok. */
int32_t mock_next_token(const struct mock_host *m, int32_t tok);

/* A policy instance as the loader builds one: d->create on m, then
 * d->config for each "key", "value" pair of the NULL-terminated list, then
 * d->config_complete. Returns the first failing code (state destroyed,
 * *state NULL) or 0 with *state set. */
int mock_make(const struct skipper_policy *d, struct mock_host *m, void **state, ...);

/* strstr(hay, needle) != NULL; prints a TAP diagnostic when not. */
int mock_has(const char *hay, const char *needle);

struct skipper_policy_lib;
/* Plugin NAME through the real loader. make check puts the build tree on
 * SKIPPER_PLUGIN_PATH, so a plugin that does not load ends the test with
 * "Bail out!" (exit 1). */
const struct skipper_policy *mock_load_policy(const char *name, struct skipper_policy_lib **lib);
/* A fresh directory /tmp/PREFIX.XXXXXX into dir (exit 99 if none), and its
 * removal with everything in it (a TAP diagnostic if that fails). */
void mock_tmpdir(char *dir, size_t size, const char *prefix);
void mock_rmdir(const char *dir);

#endif
