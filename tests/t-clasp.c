/* CLaSp: the layer DP against brute-force enumeration of every mask with M
 * skipped layers,
 *  - on a synthetic instance where the DP is exact (layer l adds a fixed
 *    vector orthogonal to everything else, so the cosine at every depth is
 *    a monotone function of the summed lost energy: a 0/1 knapsack with
 *    exact cardinality), every M and with pinned layers;
 *  - on a tiny generated model with two planted near-redundant layers,
 *    through the real CPU backend's sub-layer forward;
 * and the plugin itself under the mock host (config checks, DP schedule,
 * masks, draft exit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "engine/engine.h"
#include "clasp_dp.h"
#include "mock-host.h"
#include "model/model.h"
#include "policy/policy_host.h"
#include "tap.h"
#include "testmodel.h"

/* ---- synthetic layers: f_l(x) = x + amp[l] * e_{l+1} (half per sub-layer) ---- */
#define SL 7
#define SD 16
static double amp[SL];

static int synth_sublayer(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states,
                          const int32_t *pos, int n_past)
{
	for (int s = 0; s < n_seq * seq_len; s++)
		states[(size_t)s * SD + layer + 1] += (float)(0.5 * amp[layer]);
	return 0;
}

/* ---- the real backend behind a mock host ---- */
static struct skipper_backend *be;
static struct skipper_error err;

static int be_sublayer(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states, const int32_t *pos,
                       int n_past)
{
	for (int s = 0; s < n_seq; s++)
		if (skipper_backend_sublayer(be, 0, kind, layer, seq_len, states + (size_t)s * seq_len * be->model->hp.n_embd, pos,
		                      n_past, &err))
			return SKIPPER_POLICY_ERROR;
	return 0;
}

/* Best mask with exactly M skipped (none pinned) by running every one. */
static double brute_force(struct mock_host *m, int L, int d, int M, const uint8_t *pinned, const float *x, int32_t pos,
                          uint8_t *best)
{
	double best_cos = -2;
	float *s = malloc((size_t)d * sizeof *s);
	for (unsigned bits = 0; bits < (1u << L); bits++) {
		if (__builtin_popcount(bits) != M)
			continue;
		int bad = 0;
		for (int l = 0; l < L; l++)
			bad |= pinned && pinned[l] && (bits >> l & 1);
		if (bad)
			continue;
		memcpy(s, x, (size_t)d * sizeof *s);
		for (int l = 0; l < L; l++) {
			if (bits >> l & 1)
				continue;
			m->host.sublayer_forward(m, SKIPPER_SUBLAYER_ATTN, l, 1, 1, s, &pos, pos);
			m->host.sublayer_forward(m, SKIPPER_SUBLAYER_MLP, l, 1, 1, s, &pos, pos);
		}
		double c = clasp_cos(s, x + (size_t)L * d, d);
		if (c > best_cos) {
			best_cos = c;
			for (int l = 0; l < L; l++)
				best[l] = bits >> l & 1;
		}
	}
	free(s);
	return best_cos;
}

static void mask_str(const uint8_t *m, int L, char *buf)
{
	for (int l = 0; l < L; l++)
		buf[l] = m[l] ? '1' : '0';
	buf[L] = 0;
}

static void synthetic(void)
{
	struct mock_host m;
	float x[(SL + 1) * SD] = { 0 };
	uint8_t pinned[SL] = { 1, 0, 0, 0, 0, 0, 1 };

	mock_host_init(&m, SL, SD, 64);
	m.host.sublayer_forward = synth_sublayer;
	for (int l = 0; l < SL; l++)
		amp[l] = 0.3 + 0.17 * ((l * 5) % SL); /* distinct energies: no ties */
	x[0] = 1.0f;
	for (int i = 1; i <= SL; i++) {
		memcpy(x + i * SD, x + (i - 1) * SD, sizeof(float) * SD);
		synth_sublayer(NULL, 0, i - 1, 1, 1, x + i * SD, NULL, 0);
		synth_sublayer(NULL, 1, i - 1, 1, 1, x + i * SD, NULL, 0);
	}
	for (int pin = 0; pin < 2; pin++)
		for (int M = 1; M <= SL - 2 * pin; M++) {
			struct clasp_dp dp;
			uint8_t got[SL], want[SL];
			char a[SL + 1], b[SL + 1];
			double score, bf;
			if (clasp_dp_init(&dp, SL, M, SD))
				BAIL("out of memory");
			dp.pinned = pin ? pinned : NULL;
			if (clasp_dp_run(&dp, &m.host, &m, x, 5, got, &score))
				BAIL(m.error);
			bf = brute_force(&m, SL, SD, M, dp.pinned, x, 5, want);
			mask_str(got, SL, a);
			mask_str(want, SL, b);
			ok(!memcmp(got, want, SL) && fabs(score - bf) < 1e-9, "synthetic L=%d M=%d%s: DP %s == brute force %s",
			   SL, M, pin ? " (first/last pinned)" : "", a, b);
			if (M == 2 && !pin)
				is_int(dp.calls, 2 * SL - 2, "one attention + one MLP call per DP row (rows 2..L)");
			clasp_dp_free(&dp);
		}
}

static void tiny_model(void)
{
	char path[] = "/tmp/skipper-t-clasp-XXXXXX";
	int fd = mkstemp(path);
	struct skipper_test_model_opts o;
	struct skipper_model *model;
	struct skipper_backend_opts bo = { .n_ctx = 64, .n_threads = 1 };
	struct mock_host m;
	int32_t prompt[12], cap_layers[16], last;
	float *x;
	int L, d;

	close(fd);
	skipper_test_model_defaults(&o);
	o.n_layer = 6;
	o.seed = 11;
	o.redundant[2] = o.redundant[4] = 1;
	if (skipper_test_model_write(path, &o) || skipper_model_load(path, &model, &err) ||
	    skipper_backend_cpu_create(&model->view, &bo, &be, &err))
		BAIL(err.msg);
	L = model->view.hp.n_layer;
	d = model->view.hp.n_embd;
	for (int i = 0; i < 12; i++)
		prompt[i] = 3 + (i * 13) % 50;
	for (int l = 0; l <= L; l++)
		cap_layers[l] = l - 1;
	last = 11;
	x = malloc((size_t)(L + 1) * d * sizeof *x);
	{
		struct skipper_forward fw = { .n = 12, .tokens = prompt, .n_past = 0, .kv_write = 1, .n_cap_layers = L + 1,
		                              .cap_layers = cap_layers, .n_cap_rows = 1, .cap_rows = &last, .captures = x };
		if (skipper_backend_forward(be, &fw, &err))
			BAIL(err.msg);
	}
	mock_host_init(&m, L, d, model->view.hp.n_vocab);
	m.host.sublayer_forward = be_sublayer;
	for (int M = 1; M <= 3; M++) {
		struct clasp_dp dp;
		uint8_t got[64], want[64];
		char a[65], b[65];
		double score, bf;
		if (clasp_dp_init(&dp, L, M, d))
			BAIL("out of memory");
		if (clasp_dp_run(&dp, &m.host, &m, x, last, got, &score))
			BAIL(m.error);
		bf = brute_force(&m, L, d, M, NULL, x, last, want);
		mask_str(got, L, a);
		mask_str(want, L, b);
		if (M <= 2)
			ok(!memcmp(got, want, (size_t)L) && fabs(score - bf) < 1e-6,
			   "tiny model, redundant layers 2,4, M=%d: DP %s (cos %.6f) == brute force %s (cos %.6f)", M, a, score,
			   b, bf);
		else /* beyond the planted layers the greedy DP need not be optimal */
			ok(score <= bf + 1e-6 && score > 0.5, "tiny model M=3: DP %s cos %.6f <= brute force %s cos %.6f", a,
			   score, b, bf);
		clasp_dp_free(&dp);
	}
	{
		/* the engine's MLP service batches all sequences into one call: the
		 * result must be bitwise what one call per sequence gives */
		struct skipper_engine *eng;
		int32_t p2[2] = { 0, 1 };
		float *a = malloc(sizeof(float) * 10 * d), *b = malloc(sizeof(float) * 10 * d);
		for (int i = 0; i < 10 * d; i++)
			a[i] = b[i] = (float)((i * 7) % 19) - 9.0f;
		if (skipper_engine_new(be, NULL, NULL, &eng, &err) ||
		    skipper_engine_sublayer_forward(eng, SKIPPER_MLP, 3, 5, 2, a, p2, 0, &err))
			BAIL(err.msg);
		for (int s = 0; s < 5; s++)
			skipper_backend_sublayer(be, 0, SKIPPER_MLP, 3, 2, b + (size_t)s * 2 * d, p2, 0, &err);
		ok(!memcmp(a, b, sizeof(float) * 10 * d), "batched MLP service == per-sequence calls, bitwise");
		skipper_engine_free(eng);
		free(a);
		free(b);
	}
	free(x);
	be->ops->destroy(be);
	skipper_model_free(model);
	unlink(path);
}

/* ---- the plugin through the loader, under the mock host ---- */
static void plugin(void)
{
	struct skipper_policy_lib *lib;
	const struct skipper_policy *d;
	struct mock_host m;
	void *st;
	const int L = 8, D = 16;
	float data[9 * 16];
	int32_t pos = 40, tok = 5;
	uint8_t attn[8], mlp[8];

	if (skipper_policy_load("clasp", &(struct skipper_policy_search){ 0 }, &lib, &err))
		BAIL(err.msg);
	d = skipper_policy_lib_desc(lib);
	ok(d->needs == SKIPPER_NEED_LAST_LAYER_STATES, "needs the last committed row's layer states");

	mock_host_init(&m, L, D, 64);
	if (d->create(&m.host, &m, &st))
		BAIL("create");
	is_int(d->config(st, "skip_layers", "8"), 0, "skip_layers parses");
	ok(d->config_complete(st) < 0 && strstr(m.error, "skip_layers"), "M = L is refused: %s", m.error);
	d->destroy(st);
	if (d->create(&m.host, &m, &st))
		BAIL("create");
	ok(d->config(st, "bogus", "1") == SKIPPER_POLICY_UNKNOWN_KEY, "unknown key");
	ok(d->config(st, "interval", "3") == 0 && d->config(st, "threshold", "0.6") == 0 &&
	   d->config(st, "pin_first", "true") == 0 && d->config_complete(st) == 0, "interval 3, DET 0.6, pin_first");

	for (int i = 0; i < 9 * 16; i++)
		data[i] = (float)((i * 7) % 11) - 5.0f + (float)(i / 16);
	struct skipper_states sts = { .n_rows = 1, .n_points = L + 1, .n_embd = D, .pos = &pos, .token = &tok,
	                              .data = data };
	struct skipper_request req = { .id = 1, .n_prompt = 41, .n_layer = L, .max_tokens = 64, .greedy = 1,
	                               .states = &sts };
	int calls0 = m.n_sublayer;
	is_int(d->begin(st, &req), 0, "begin runs the prefill DP");
	ok(m.n_sublayer > calls0, "begin called sublayer_forward (%d calls)", m.n_sublayer - calls0);
	struct skipper_plan plan = { .n_layer = L, .skip_attn = attn, .skip_mlp = mlp, .max_draft = 32 };
	memset(attn, 0, L);
	memset(mlp, 0, L);
	is_int(d->select_draft(st, &plan), 0, "select_draft");
	int n = 0;
	for (int l = 0; l < L; l++)
		n += attn[l];
	ok(n == 4 && !memcmp(attn, mlp, L) && !attn[0], "whole layers, M = round(0.5 L) = 4, layer 0 pinned");
	is_int(plan.max_draft, 12, "draft cap K_max = 12");
	float p_lo = 0.5f, p_hi = 0.9f;
	int32_t id = 1;
	struct skipper_step s1 = { .top_k = 1, .top_ids = &id, .top_probs = &p_lo, .prob = p_lo };
	struct skipper_step s2 = { .top_k = 1, .top_ids = &id, .top_probs = &p_hi, .prob = p_hi };
	ok(d->should_exit(st, &s1) == SKIPPER_DRAFT_STOP && d->should_exit(st, &s2) == SKIPPER_DRAFT_CONTINUE,
	   "draft exit below DET");
	int runs = 0;
	for (int r = 0; r < 7; r++) {
		struct skipper_verdict v = { .round = r, .bonus = 3, .states = &sts, .n_committed = 41 };
		int before = m.n_sublayer;
		is_int(d->on_accept(st, &v), 0, "on_accept %d", r);
		runs += m.n_sublayer > before;
	}
	is_int(runs, 2, "a DP every LOI = 3 rounds (rounds 3 and 6)");
	/* verify captures only in the round before a DP (since 1 of 3 here) */
	plan.capture = 1;
	d->select_draft(st, &plan);
	is_int(plan.capture, 0, "round 2 of 3: verify captures turned off");
	struct skipper_verdict v0 = { .round = 7, .bonus = 3, .states = NULL, .n_committed = 41 };
	d->on_accept(st, &v0);
	plan.capture = 1;
	d->select_draft(st, &plan);
	is_int(plan.capture, 1, "round 3 of 3: captured for the DP");
	struct skipper_stats ss = { .seconds = 1 };
	d->end(st, &ss);
	ok(strstr(m.log, "3 DP runs, 1.00 ms per run (0.3% of 1.000 s)") != NULL,
	   "end logs the DP count and the DP time per run (mock clock: 1 ms per DP): %s", m.log);
	d->destroy(st);
	skipper_policy_unload(lib);
}

/* ---- the plugin under the cost curve: draft length and DP budget ---- */
static void costs(void)
{
	struct skipper_policy_lib *lib;
	const struct skipper_policy *d;
	const int L = 8, D = 16;
	float data[9 * 16];
	int32_t pos = 40, tok = 5;
	uint8_t attn[8], mlp[8];

	if (skipper_policy_load("clasp", &(struct skipper_policy_search){ 0 }, &lib, &err))
		BAIL(err.msg);
	d = skipper_policy_lib_desc(lib);
	for (int i = 0; i < 9 * 16; i++)
		data[i] = (float)((i * 7) % 11) - 5.0f + (float)(i / 16);
	struct skipper_states sts = { .n_rows = 1, .n_points = L + 1, .n_embd = D, .pos = &pos, .token = &tok,
	                              .data = data };
	struct skipper_request req = { .id = 1, .n_prompt = 41, .n_layer = L, .max_tokens = 64, .greedy = 1,
	                               .states = &sts };
	struct skipper_plan plan = { .n_layer = L, .skip_attn = attn, .skip_mlp = mlp };

	/* 4 of 8 layers skipped: a draft token costs 0.575 steps on the CPU
	 * curve (one pays at the prior 0.8: 1.8 / 1.715), 0.55 on the GPU one */
	for (int gpu = 0; gpu < 2; gpu++) {
		struct mock_host m;
		void *st;
		int drafted = 0, longest = 0, last = 0;
		mock_host_init(&m, L, D, 64);
		if (gpu)
			mock_costs_gpu(&m);
		else
			mock_costs_cpu(&m);
		/* the whole share: the first round pays for the first DP */
		if (mock_make(d, &m, &st, "interval", "3", "search_share", "1", NULL))
			BAIL(m.error);
		d->begin(st, &req);
		for (int r = 0; r < 30; r++) {
			plan.max_draft = 32;
			d->select_draft(st, &plan);
			last = plan.max_draft;
			drafted += last > 0;
			longest = last > longest ? last : longest;
			struct skipper_verdict v = { .round = r, .n_drafted = last, .n_accepted = gpu ? last : 0, .bonus = 3,
			                             .n_committed = 41, .states = &sts, .verify_seconds = 0.05 };
			d->on_accept(st, &v);
		}
		if (gpu)
			is_int(last, 12, "GPU curve, everything accepted: K_max = 12");
		else
			ok(drafted <= 4 && longest <= 2, "CPU curve, nothing accepted: %d of 30 rounds drafted, at most %d tokens",
			   drafted, longest);
		d->destroy(st);
	}

	/* the DP budget: rounds at plain speed (2 tokens in 0.1 s) earn 0.05 x
	 * 0.1 s each. The first DP waits for the curve's prediction (L x 0.81/L
	 * x verify[2] = 0.92 steps of 0.05 s = 0.046 s: 10 rounds; begin has no
	 * credit yet); then a 1 ms DP runs every LOI = 3 rounds, a 141 ms one
	 * (14 sub-layer calls of 10 ms) about every 28 */
	int runs[2];
	for (int hi = 0; hi < 2; hi++) {
		struct mock_host m;
		void *st;
		mock_host_init(&m, L, D, 64);
		mock_costs_cpu(&m);
		if (mock_make(d, &m, &st, "interval", "3", "search_share", "0.05", NULL))
			BAIL(m.error);
		m.compute_seconds = hi ? 0.01 : 0;
		d->begin(st, &req);
		if (m.n_sublayer)
			ok(0, "begin ran a DP without credit");
		runs[hi] = 0;
		for (int r = 0; r < 99; r++) {
			struct skipper_verdict v = { .round = r, .n_drafted = 2, .n_accepted = 1, .bonus = 3, .n_committed = 41,
			                             .states = &sts, .draft_seconds = 0.05, .verify_seconds = 0.05 };
			int before = m.n_sublayer;
			d->on_accept(st, &v);
			runs[hi] += m.n_sublayer > before;
		}
		if (hi) {
			/* the round before a due DP the budget cannot pay: no captures */
			plan.max_draft = 32;
			plan.capture = 1;
			int capture_off = 0;
			for (int r = 0; r < 3; r++) {
				d->select_draft(st, &plan);
				capture_off += plan.capture == 0;
				struct skipper_verdict v = { .round = 99 + r, .bonus = 3, .n_committed = 41 };
				d->on_accept(st, &v);
				plan.capture = 1;
			}
			struct skipper_stats ss = { .seconds = 10 };
			d->end(st, &ss);
			/* deferred: begin's prefill DP and these 3 */
			ok(capture_off == 3 && strstr(m.log, "4 DPs deferred by the budget") != NULL,
			   "a DP the budget defers asks for no captures (%d of 3 rounds), and end logs the deferrals: %s",
			   capture_off, m.log);
		}
		d->destroy(st);
	}
	ok(runs[0] == 1 + (99 - 10) / 3 && runs[1] >= 2 && runs[1] <= 5,
	   "DP budget: %d DPs in 99 rounds when a DP takes 1 ms, %d when it takes 141 ms", runs[0], runs[1]);
	skipper_policy_unload(lib);
}

int main(void)
{
	synthetic();
	tiny_model();
	plugin();
	costs();
	return tap_done();
}
