/* The calibration's verdict against plain decoding, through bo-static and
 * knn-router on the mock host: where plain decoding is faster the profile
 * disables drafting (max_draft = 0, empty masks, both costs recorded) and
 * the policy then plans no draft; where a set wins it is written as before.
 * Also early stopping of losing trials and resuming from the journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock-host.h"
#include "policy/policy_host.h"
#include "policy/profile.h"
#include "tap.h"

#define L 12

static const char *get(const char *path, const char *sec, const char *key)
{
	static char val[256];
	struct skipper_profile *p;
	struct skipper_error e = { 0 };
	const char *v;
	if (skipper_profile_read(path, &p, &e))
		return NULL;
	v = skipper_profile_get(p, sec, key);
	snprintf(val, sizeof val, "%s", v ? v : "(absent)");
	skipper_profile_free(p);
	return val;
}

/* max_draft the loaded policy plans for a request (domain-free mock prompt) */
static int planned_draft(const struct skipper_policy *d, struct mock_host *m, const char *prof)
{
	uint8_t a[L], ml[L];
	float v[8] = { 1 };
	struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml, .max_draft = 32 };
	struct skipper_request req = { .n_layer = L, .prompt_mean = v };
	void *s;
	int k = -1;
	if (mock_make(d, m, &s, "profile", prof, NULL))
		return -2;
	if (d->begin(s, &req) == 0 && d->select_draft(s, &plan) == 0)
		k = plan.max_draft;
	d->destroy(s);
	return k;
}

static int calibrate(const struct skipper_policy *d, struct mock_host *m, const char *out, const char *iters,
                     const char *tokens)
{
	static const char *pr[4] = { "aaaa", "aaab", "aabb", "abbb" }, *cat[4] = { "one", "one", "one", "one" };
	struct skipper_calibrate c = { .n_prompts = 4, .prompts = pr, .categories = cat, .output = out, .seed = 3 };
	void *s;
	int knn = !strcmp(d->name, "knn-router");
	/* (the list ends early for bo-static, which has no anchors) */
	int rc = mock_make(d, m, &s, "iterations", iters, "calib_tokens", tokens, "acq_samples", "200", "acq_starts",
	                   "2", knn ? "anchors_per_domain" : NULL, "1", NULL);
	if (rc)
		return rc;
	rc = d->calibrate(s, &c);
	if (rc)
		diag("%s", m->error);
	d->destroy(s);
	return rc;
}

int main(void)
{
	struct skipper_policy_lib *bo, *knn;
	struct mock_host m;
	const struct skipper_policy *d;
	char dir[64], out[128], kout[128], journal[160];
	const char *v;
	int n;

	const struct skipper_policy *dknn = mock_load_policy("knn-router", &knn);
	d = mock_load_policy("bo-static", &bo);
	mock_tmpdir(dir, sizeof dir, "t-calib-decision");
	snprintf(out, sizeof out, "%s/bo.ini", dir);
	snprintf(kout, sizeof kout, "%s/knn.ini", dir);
	snprintf(journal, sizeof journal, "%s/bo.search", dir);

	/* --- plain decoding wins: every set is below 0.75 x its speed --- */
	mock_host_init(&m, L, 8, 100);
	m.ar_speed = 1000;
	ok(calibrate(d, &m, out, "6", "16") == 0, "bo-static calibrates where plain decoding is faster");
	is_str(get(out, "mask", "max_draft"), "0", "the profile disables drafting (max_draft = 0)");
	is_str(get(out, "mask", "attn"), "", "with an empty attention mask");
	is_str(get(out, "calibration", "decision"), "no-draft", "the decision is recorded");
	/* the mock times each prompt's first token too: 1000 tok/s reads 1.067 ms */
	double ar_ms = atof(get(out, "calibration", "ar_ms_per_token"));
	ok(ar_ms > 1.0 && ar_ms < 1.1, "plain decoding's cost in ms/token (%.3f)", ar_ms);
	v = get(out, "calibration", "best_ms_per_token");
	ok(v && atof(v) > 3 * ar_ms, "the best set's cost, above it (%s ms/token)", v ? v : "?");
	ok(strcmp(get(out, "calibration", "best_attn"), "(absent)") != 0, "the rejected set is kept as evidence");
	ok(mock_has(m.log, "no skip set beat plain decoding (best ") && mock_has(m.log, "profile disables drafting"),
	   "and a warning says so");
	is_str(get(out, "calibration", "stopped_early"), "9", "every set's trial stopped after its first prompt");
	/* 4 prompts: plain 4, 9 sets x 1 prompt, 2 confirmation pairs of 4-prompt trials */
	is_int(m.n_trial, 4 + 9 + 2 * 2, "losing sets cost one prompt each");
	is_int(planned_draft(d, &m, out), 0, "bo-static with that profile plans no draft");

	/* --- resume: the journal holds the 9 evaluations; 11 iterations add two --- */
	ok(access(journal, R_OK) == 0, "the search journal is beside the profile");
	m.n_trial = 0;
	ok(calibrate(d, &m, out, "8", "16") == 0, "calibrate again with a larger --iterations");
	is_str(get(out, "calibration", "resumed"), "9", "the journal's evaluations were read back");
	is_str(get(out, "calibration", "evaluations"), "11", "and two new ones run");
	is_int(m.n_trial, 4 + 2 + 2 * 2, "only the new evaluations cost trials");
	ok(calibrate(d, &m, out, "8", "20") < 0 && mock_has(m.error, "other settings") &&
	   mock_has(m.error, "remove the file"), "a journal from other settings is refused");

	/* --- a set wins: written as before --- */
	mock_host_init(&m, L, 8, 100);
	unlink(journal);
	ok(calibrate(d, &m, out, "6", "16") == 0, "bo-static calibrates where a set is faster");
	is_str(get(out, "calibration", "decision"), "draft", "decision draft");
	is_str(get(out, "mask", "max_draft"), "(absent)", "no max_draft cap");
	ok(strcmp(get(out, "mask", "attn"), "") != 0, "the set is the mask");
	is_int(planned_draft(d, &m, out), 12, "the policy drafts (K = 12)");

	/* --- knn-router: the same verdict per domain --- */
	d = dknn;
	mock_host_init(&m, L, 8, 100);
	m.ar_speed = 1000;
	ok(calibrate(d, &m, kout, "3", "16") == 0, "knn-router calibrates where plain decoding is faster");
	is_str(get(kout, "domain.one", "max_draft"), "0", "its domain disables drafting");
	is_str(get(kout, "domain.one", "decision"), "no-draft", "the decision is in the domain's section");
	n = planned_draft(d, &m, kout);
	is_int(n, 0, "knn-router with that profile plans no draft");

	mock_rmdir(dir);
	skipper_policy_unload(knn);
	skipper_policy_unload(bo);
	return tap_done();
}
