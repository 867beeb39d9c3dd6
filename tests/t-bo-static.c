/* bo-static through the real loader with the mock host: the adaptive exit
 * threshold on a scripted sequence of verification results, profile
 * loading and refusal, and calibrate writing a usable profile. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock-host.h"
#include "policy/policy_host.h"
#include "policy/profile.h"
#include "tap.h"

#define L 12

static const struct skipper_policy *d;

/* The policy's threshold, read back through should_exit: the smallest
 * probability that continues, found by bisection. */
static double threshold_of(void *s)
{
	double lo = 0, hi = 1;
	float probs[1];
	struct skipper_step st = { .top_k = 1, .top_probs = probs };
	for (int i = 0; i < 40; i++) {
		double mid = (lo + hi) / 2;
		probs[0] = (float)mid;
		st.prob = probs[0];
		if (d->should_exit(s, &st) == SKIPPER_DRAFT_STOP)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

static void accept_round(void *s, int acc, int drafted)
{
	struct skipper_verdict v = { .n_drafted = drafted, .n_verified = drafted, .n_accepted = acc };
	d->on_accept(s, &v);
}

static void write_profile(struct mock_host *m, const char *path, const char *attn, const char *mlp)
{
	struct skipper_profile *p;
	uint8_t a[64] = { 0 }, b[64] = { 0 };
	m->host.parse_layers(m, attn, a, m->host.n_layer);
	m->host.parse_layers(m, mlp, b, m->host.n_layer);
	if (m->host.profile_new(m, "bo-static", &p) || m->host.profile_set_mask(m, p, "mask", "attn", a) ||
	    m->host.profile_set_mask(m, p, "mask", "mlp", b) || m->host.profile_write(m, p, path))
		exit(99);
	m->host.profile_free(m, p);
}

int main(void)
{
	struct skipper_policy_lib *lib;
	struct mock_host m;
	uint8_t a[L], ml[L];
	struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml };
	struct skipper_request req = { .n_layer = L };
	char dir[64], prof[128], out[128], buf[128];
	void *s;
	int rc;

	d = mock_load_policy("bo-static", &lib);
	mock_tmpdir(dir, sizeof dir, "t-bo-static");
	snprintf(prof, sizeof prof, "%s/p.ini", dir);
	snprintf(out, sizeof out, "%s/calibrated.ini", dir);

	is_str(d->name, "bo-static", "descriptor name");
	ok(d->select_draft && d->should_exit && d->on_accept && d->calibrate, "hooks present");

	/* --- profile and defaults --- */
	mock_host_init(&m, L, 8, 100);
	write_profile(&m, prof, "6,8-11", "10");
	rc = mock_make(d, &m, &s, "profile", prof, NULL);
	ok(rc == 0, "profile loads");
	if (rc == 0) {
		ok(d->begin(s, &req) == 0, "begin");
		plan.max_draft = 32;
		ok(d->select_draft(s, &plan) == 0 && plan.max_draft == 12, "K = 12 by default");
		m.host.format_layers(&m, a, L, buf, sizeof buf);
		is_str(buf, "6,8-11", "attention skip set from the profile");
		m.host.format_layers(&m, ml, L, buf, sizeof buf);
		is_str(buf, "10", "MLP skip set from the profile");
		ok(fabs(threshold_of(s) - 0.6) < 1e-6, "initial gamma 0.6");
		d->destroy(s);
	}

	/* --- the cost curve: K is a cap, the length that pays is drafted ---
	 * the profile's set executes 7 attention and 11 MLP sub-layers of 12 */
	for (int gpu = 0; gpu < 2; gpu++) {
		int drafted = 0, longest = 0, last = -1;
		mock_host_init(&m, L, 8, 100);
		if (gpu)
			mock_costs_gpu(&m);
		else
			mock_costs_cpu(&m);
		if (mock_make(d, &m, &s, "profile", prof, NULL))
			BAIL(m.error);
		d->begin(s, &req);
		for (int r = 0; r < 60; r++) {
			plan.max_draft = 32;
			d->select_draft(s, &plan);
			last = plan.max_draft;
			drafted += last > 0;
			longest = last > longest ? last : longest;
			accept_round(s, gpu ? last : 0, last); /* GPU: all accepted; CPU: none */
		}
		if (gpu)
			ok(last == 12, "GPU curve, everything accepted: K = 12 drafted (%d)", last);
		else
			ok(drafted <= 3 && longest <= 2, "CPU curve (a draft step costs 0.87 steps), nothing accepted: %d of 60 "
			   "rounds drafted, at most %d tokens (probes)", drafted, longest);
		d->destroy(s);
	}

	/* --- the adaptive rule on a scripted sequence ---
	 * alpha 0.9, eps 0.01, beta1 0.5, beta2 0.9, gamma0 0.6. Expected values
	 * by hand: round 1 AR = 1 (> 0.9): tmp = 0.59, gamma = 0.9*0.6 + 0.1*0.59
	 * = 0.599; round 2 AR_e = 0.25, AR = 0.625 (<= 0.9): gamma = 0.9*0.599 +
	 * 0.1*0.609 = 0.6 ... computed below step by step the same way. */
	rc = mock_make(d, &m, &s, "profile", prof, NULL);
	if (rc == 0) {
		static const int script[][2] = { { 4, 4 }, { 1, 4 }, { 0, 2 }, { 3, 3 }, { 5, 5 }, { 5, 5 }, { 0, 0 } };
		double g = 0.6, ar = 0, tmp;
		int okall = 1;
		d->begin(s, &req);
		for (size_t i = 0; i < sizeof script / sizeof *script; i++) {
			accept_round(s, script[i][0], script[i][1]);
			if (script[i][1]) {
				double are = (double)script[i][0] / script[i][1];
				ar = i == 0 ? are : 0.5 * ar + 0.5 * are;
				tmp = ar <= 0.9 ? g + 0.01 : g - 0.01;
				g = 0.9 * g + 0.1 * tmp;
			}
			double got = threshold_of(s);
			if (fabs(got - g) > 1e-6) {
				diag("round %zu: gamma %.6f, expected %.6f", i + 1, got, g);
				okall = 0;
			}
		}
		ok(okall, "gamma follows the update rule over 7 scripted rounds (final %.4f)", g);
		ok(fabs(g - 0.6) < 0.01, "moves of at most 0.001 per round");
		/* a new request: gamma carries over, AR restarts (first AR = AR_e) */
		double g0 = threshold_of(s);
		d->begin(s, &req);
		accept_round(s, 1, 4); /* AR = 0.25 <= 0.9 without smoothing against the old AR */
		ok(fabs(threshold_of(s) - (0.9 * g0 + 0.1 * (g0 + 0.01))) < 1e-6, "gamma carries over, AR restarts");
		d->destroy(s);
	}
	rc = mock_make(d, &m, &s, "profile", prof, "adaptive", "no", "threshold", "0.7", NULL);
	if (rc == 0) {
		d->begin(s, &req);
		accept_round(s, 0, 5);
		ok(fabs(threshold_of(s) - 0.7) < 1e-6, "adaptive = no: static threshold");
		d->destroy(s);
	}

	/* --- refusals --- */
	rc = mock_make(d, &m, &s, NULL);
	ok(rc == 0, "no profile: configuration is fine (calibrate writes one)");
	if (rc == 0) {
		ok(d->begin(s, &req) < 0 && mock_has(m.error, "no skip profile"), "but a request is refused");
		d->destroy(s);
	}
	strcpy(m.sha256, "00000000000000000000000000000000000000000000000000000000000000ff");
	rc = mock_make(d, &m, &s, "profile", prof, NULL);
	ok(rc < 0 && mock_has(m.error, "profile made for model") && mock_has(m.error, "sha256"),
	   "a profile for another model is refused");
	mock_host_init(&m, 8, 8, 100);
	rc = mock_make(d, &m, &s, "profile", prof, NULL);
	ok(rc < 0 && mock_has(m.error, "12-layer model") && mock_has(m.error, "8 layers"),
	   "a profile for another layer count is refused");
	rc = mock_make(d, &m, &s, "max_draft", "0", NULL);
	ok(rc < 0, "max_draft 0 refused");

	/* --- calibrate with the mock's trial (speed peaks at moderate skipping) --- */
	mock_host_init(&m, L, 8, 100);
	rc = mock_make(d, &m, &s, "iterations", "12", "acq_samples", "300", "acq_starts", "3", NULL);
	if (rc == 0) {
		const char *pr[10] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j" };
		struct skipper_calibrate c = { .n_prompts = 10, .prompts = pr, .output = out, .seed = 1 };
		rc = d->calibrate(s, &c);
		ok(rc == 0, "calibrate on the mock host");
		if (rc)
			diag("%s", m.error);
		/* per prompt (early stopping is on; nothing stops: every set beats
		 * plain decoding here): 4 prompts x (plain, 3 probes + 12 BO steps,
		 * plain after the 10th), then 2 confirmation pairs of 4-prompt trials */
		is_int(m.n_trial, 4 * (1 + 3 + 12 + 1) + 2 * 2, "plain, three probes, 12 BO steps, plain, 2 confirmation pairs");
		d->destroy(s);
		rc = mock_make(d, &m, &s, "profile", out, NULL);
		ok(rc == 0, "the calibrated profile loads");
		if (rc == 0) {
			int k = 0;
			d->begin(s, &req);
			plan.max_draft = 32;
			d->select_draft(s, &plan);
			for (int i = 0; i < L; i++)
				k += a[i] + ml[i];
			ok(k > 0 && k < 2 * L, "it skips some but not all sub-layers (%d of %d)", k, 2 * L);
			d->destroy(s);
		}
	}
	mock_rmdir(dir);
	skipper_policy_unload(lib);
	return tap_done();
}
