/* knn-router through the real loader with the mock host, whose embed_prompt
 * is a character histogram: domains planted by their dominant character
 * must be told apart on held-out prompts; profiles that do not fit the
 * model are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock-host.h"
#include "policy/policy_host.h"
#include "tap.h"

#define L 6
#define E 8

static const struct skipper_policy *d;

/* Route text; returns the logged domain's first letter or '?'. */
static char route(struct mock_host *m, void *s, const char *text)
{
	float v[E];
	struct skipper_request req = { .id = 1, .n_layer = L, .prompt_mean = v };
	const char *p;
	m->host.embed_prompt(m, text, v);
	m->log[0] = 0;
	if (d->begin(s, &req))
		return '!';
	p = strstr(m->log, "routed to domain ");
	return p ? p[17] : '?';
}

int main(void)
{
	struct skipper_policy_lib *lib;
	struct mock_host m;
	char dir[64], out[128], anchors[160];
	void *s;
	int rc;

	d = mock_load_policy("knn-router", &lib);
	mock_tmpdir(dir, sizeof dir, "t-knn-router");
	snprintf(out, sizeof out, "%s/knn.ini", dir);
	snprintf(anchors, sizeof anchors, "%s/knn.anchors.safetensors", dir);
	is_str(d->name, "knn-router", "descriptor name");
	ok(d->needs & SKIPPER_NEED_PROMPT_MEAN, "asks for the prompt's mean state");

	/* Planted domains: 'x' (bucket 0), 'z' (bucket 2), 'm' (bucket 5) of
	 * the mock's 8-bucket character histogram, with some noise letters. */
	const char *pr[] = { "xxxxxxxab", "xxxxxxxxc", "xxxxxxde", "xxxxxxxxxf",
	                     "zzzzzzzab", "zzzzzzzzzc", "zzzzzzde", "zzzzzzzzf",
	                     "mmmmmmmab", "mmmmmmmmc", "mmmmmmmde", "mmmmmmmmmf" };
	const char *cat[] = { "x-dom", "x-dom", "x-dom", "x-dom", "z-dom", "z-dom", "z-dom", "z-dom",
	                      "m dom", "m dom", "m dom", "m dom" };
	mock_host_init(&m, L, E, 100);
	rc = mock_make(d, &m, &s, "iterations", "4", "acq_samples", "200", "acq_starts", "2", "anchors_per_domain", "3",
	          "calib_prompts", "2", NULL);
	ok(rc == 0, "configured for calibration without a profile");
	if (rc == 0) {
		struct skipper_calibrate c = { .n_prompts = 12, .prompts = pr, .output = out, .seed = 5 };
		ok(d->calibrate(s, &c) < 0 && mock_has(m.error, "--domains"), "calibrate without domain labels is refused");
		c.categories = cat;
		rc = d->calibrate(s, &c);
		ok(rc == 0, "calibrate with three planted domains");
		if (rc)
			diag("%s", m.error);
		is_int(m.n_embed, 12, "every prompt embedded once");
		/* per domain, per prompt (2): plain, 3 probes, 4 BO steps; then 2
		 * confirmation pairs of 2-prompt trials */
		is_int(m.n_trial, 3 * (2 * (1 + 3 + 4) + 2 * 2), "per domain: plain, 3 probes, 4 BO steps, 2 pairs");
		ok(access(anchors, R_OK) == 0, "anchors written beside the profile");
		d->destroy(s);
	}

	rc = mock_make(d, &m, &s, "profile", out, NULL);
	ok(rc == 0, "the profile loads");
	if (rc == 0) {
		const char *held[] = { "xxxxxxxxxxg", "axxxxxxxx", "zzzzzzzzzzh", "bzzzzzzz", "mmmmmmmmmmk", "ammmmmmm" };
		int right = 0;
		for (int i = 0; i < 6; i++) {
			char want = held[i][strspn(held[i], "ab")];
			char got = route(&m, s, held[i]);
			right += got == want;
			if (got != want)
				diag("'%s' routed to '%c'", held[i], got);
		}
		is_int(right, 6, "held-out prompts routed to their planted domain");
		ok(mock_has(m.log, "cosine"), "the log line gives the similarity");
		/* the domain name with a blank was made a valid section name */
		ok(route(&m, s, "mmmmmmmmm") == 'm' && mock_has(m.log, "m_dom"), "domain names are made section-safe");
		uint8_t a[L], ml[L];
		struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml, .max_draft = 32 };
		ok(d->select_draft(s, &plan) == 0 && plan.max_draft == 12, "K = 12");
		float hi[1] = { 0.9f }, lo[1] = { 0.7f };
		struct skipper_step sh = { .top_k = 1, .top_probs = hi }, sl = { .top_k = 1, .top_probs = lo };
		ok(d->should_exit(s, &sh) == SKIPPER_DRAFT_CONTINUE && d->should_exit(s, &sl) == SKIPPER_DRAFT_STOP,
		   "static exit threshold 0.8");
		struct skipper_request bare = { .n_layer = L };
		ok(d->begin(s, &bare) < 0 && mock_has(m.error, "prompt state"), "no prompt state: refused");
		d->destroy(s);
	}

	/* the cost curve caps the routed domain's drafts: on a CPU with
	 * nothing accepted hardly a round drafts; on a GPU with everything
	 * accepted the whole K = 12 does */
	for (int gpu = 0; gpu < 2; gpu++) {
		uint8_t a[L], ml[L];
		struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml };
		int drafted = 0, longest = 0, last = 0;
		mock_host_init(&m, L, E, 100);
		if (gpu)
			mock_costs_gpu(&m);
		else
			mock_costs_cpu(&m);
		if (mock_make(d, &m, &s, "profile", out, NULL))
			BAIL(m.error);
		route(&m, s, "xxxxxxxxxxg");
		for (int r = 0; r < 30; r++) {
			plan.max_draft = 32;
			d->select_draft(s, &plan);
			last = plan.max_draft;
			drafted += last > 0;
			longest = last > longest ? last : longest;
			struct skipper_verdict v = { .n_drafted = last, .n_accepted = gpu ? last : 0, .bonus = 1 };
			d->on_accept(s, &v);
		}
		int skipped = 0;
		for (int l = 0; l < L; l++)
			skipped += a[l] + ml[l];
		if (gpu)
			ok(last == 12, "GPU curve, everything accepted: K = 12 (%d; %d of %d sub-layers skipped)", last, skipped,
			   2 * L);
		else
			ok(drafted <= 4 && longest <= 3, "CPU curve, nothing accepted: %d of 30 rounds drafted, at most %d tokens",
			   drafted, longest);
		d->destroy(s);
	}
	/* a request routed to another domain starts from the prior acceptance,
	 * not from what the last domain's set measured */
	{
		uint8_t a[L], ml[L];
		struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml };
		int before = -1;
		mock_host_init(&m, L, E, 100);
		mock_costs_gpu(&m);
		if (mock_make(d, &m, &s, "profile", out, NULL))
			BAIL(m.error);
		route(&m, s, "xxxxxxxxxxg");
		for (int r = 0; r < 6; r++) {
			plan.max_draft = 32;
			d->select_draft(s, &plan);
			before = plan.max_draft;
			struct skipper_verdict v = { .n_drafted = before, .n_accepted = 0, .bonus = 1 };
			d->on_accept(s, &v);
		}
		route(&m, s, "zzzzzzzzzzh");
		plan.max_draft = 32;
		d->select_draft(s, &plan);
		ok(before == 0 && plan.max_draft > 0, "GPU curve: domain x's set accepted nothing (cap %d); a request routed "
		   "to z drafts again (cap %d)", before, plan.max_draft);
		d->destroy(s);
	}

	/* the same profile with another hidden size / layer count */
	mock_host_init(&m, L, 16, 100);
	rc = mock_make(d, &m, &s, "profile", out, NULL);
	ok(rc < 0 && mock_has(m.error, "hidden size is 16"), "anchors of another width are refused");
	mock_host_init(&m, L + 2, E, 100);
	rc = mock_make(d, &m, &s, "profile", out, NULL);
	ok(rc < 0 && mock_has(m.error, "6-layer model"), "a profile for another layer count is refused");
	mock_host_init(&m, L, E, 100);
	rc = mock_make(d, &m, &s, NULL);
	if (rc == 0) {
		float v[E] = { 1 };
		struct skipper_request req = { .n_layer = L, .prompt_mean = v };
		ok(d->begin(s, &req) < 0 && mock_has(m.error, "no routing profile"), "no profile: a request is refused");
		d->destroy(s);
	}
	mock_rmdir(dir);
	skipper_policy_unload(lib);
	return tap_done();
}
