/* KnapSpec:
 *  - the latency fit recovers known coefficients from synthetic timings
 *    (exact, and within 3% under +-2% noise), and through the plugin's
 *    calibrate hook from the mock host's timings into [latency.DEVICE];
 *  - the knapsack DP returns the brute-force optimum for every budget on
 *    small instances where the cosine objective is exact (each item adds a
 *    fixed vector orthogonal to everything else, so every row's cosine is a
 *    decreasing function of the skipped items' summed energy: a 0/1
 *    knapsack with exact weight), for several weight pairs and with the
 *    first/last layer pinned; one sublayer_forward per item;
 *  - Algorithm 2 with bound pruning picks what the full grid over every
 *    live candidate picks, replaying fewer of them through the head;
 *  - TPT; the plugin's schedule under the mock host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knap_dp.h"
#include "knap_latency.h"
#include "knap_pick.h"
#include "mock-host.h"
#include "policy/policy_host.h"
#include "tap.h"

#define L 4
#define NI (2 * L)
#define D 12
#define R 3
static double amp[NI];

/* item s = 2*layer + kind adds amp[s] * beta_row * e_{s+1} */
static int synth(void *ctx, int kind, int layer, int n_seq, int seq_len, float *st, const int32_t *pos, int n_past)
{
	int s = 2 * layer + kind;
	for (int q = 0; q < n_seq; q++)
		for (int i = 0; i < seq_len; i++)
			st[((size_t)q * seq_len + i) * D + s + 1] += (float)(amp[s] * (1.0 + 0.3 * i));
	return 0;
}

static void fit(void)
{
	double n[10], ta[10], tm[10];
	struct knap_latency lat = { 0 };
	for (int i = 0; i < 10; i++) {
		n[i] = 500.0 * i;
		ta[i] = 3e-8 * n[i] + 4e-5;
		tm[i] = 1.2e-4;
	}
	ok(!knap_latency_fit(n, ta, 10, tm, 10, &lat) && fabs(lat.c1 - 1.2e-4) < 1e-15 &&
	   fabs(lat.c2 - 3e-8) < 1e-15 && fabs(lat.c3 - 4e-5) < 1e-13,
	   "exact timings: c1 %.3e c2 %.3e c3 %.3e", lat.c1, lat.c2, lat.c3);
	for (int i = 0; i < 10; i++) {
		double e = ((i * 7) % 5 - 2) * 0.01; /* deterministic +-2% */
		ta[i] *= 1 + e;
		tm[i] *= 1 - e;
	}
	ok(!knap_latency_fit(n, ta, 10, tm, 10, &lat) && fabs(lat.c1 / 1.2e-4 - 1) < 0.03 &&
	   fabs(lat.c2 / 3e-8 - 1) < 0.03 && fabs(lat.c3 / 4e-5 - 1) < 0.1,
	   "noisy timings: c1 %.3e c2 %.3e c3 %.3e", lat.c1, lat.c2, lat.c3);
	ok(knap_latency_fit(n, ta, 1, tm, 1, &lat) == -1, "one point does not make a line");
	lat = (struct knap_latency){ .c1 = 1e-4, .c2 = 1e-8, .c3 = -5e-5 };
	ok(fabs(knap_t_attn(&lat, 0) - 1e-6) < 1e-18, "negative intercept floored at 1%% of t_MLP");
	int wa, wm;
	lat = (struct knap_latency){ .c1 = 3e-4, .c2 = 1e-8, .c3 = 1e-4 };
	knap_weights(&lat, 0, 5, &wa, &wm);
	ok(wa == 1 && wm == 3, "short context: attention 1, MLP 3 (got %d, %d)", wa, wm);
	knap_weights(&lat, 100000, 5, &wa, &wm);
	ok(wa == 4 && wm == 1, "long context: attention round(1.1e-3/3e-4) = 4, MLP 1 (got %d, %d)", wa, wm);
	knap_weights(&lat, 1000000, 5, &wa, &wm);
	ok(wa == 5, "weights capped at 5 (got %d)", wa);
	ok(fabs(knap_tpt(1.0, 3, 1, 2) - 4.0 / 5) < 1e-12 && fabs(knap_tpt(0.5, 2, 1, 1) - 1.75 / 3) < 1e-12 &&
	   fabs(knap_tpt(0, 4, 1, 1) - 1.0 / 5) < 1e-12, "TPT: alpha 1, 0.5 and 0");
}

/* Brute force: best mean cosine over masks with skipped weight exactly c. */
static double brute(struct mock_host *m, const float *X, const uint8_t *pinned, int wa, int wm, int c, uint8_t *best)
{
	double bc = -INFINITY;
	float s[R * D];
	int32_t pos[R] = { 7, 8, 9 };
	for (unsigned bits = 0; bits < (1u << NI); bits++) {
		int w = 0, bad = 0;
		for (int i = 0; i < NI; i++)
			if (bits >> i & 1) {
				w += i % 2 ? wm : wa;
				bad |= pinned && pinned[i];
			}
		if (w != c || bad)
			continue;
		memcpy(s, X, sizeof s);
		for (int i = 0; i < NI; i++)
			if (!(bits >> i & 1))
				m->host.sublayer_forward(m, i % 2, i / 2, 1, R, s, pos, 7);
		double v = knap_cos(s, X + (size_t)NI * R * D, R, D);
		if (v > bc) {
			bc = v;
			for (int i = 0; i < NI; i++)
				best[i] = bits >> i & 1;
		}
	}
	return bc;
}

static void dp_vs_brute(void)
{
	static const int wpairs[][2] = { { 1, 1 }, { 1, 3 }, { 2, 1 }, { 4, 1 } };
	struct mock_host m;
	float X[(NI + 1) * R * D];
	int32_t pos[R] = { 7, 8, 9 };
	uint8_t pin[NI] = { 1, 1, 0, 0, 0, 0, 1, 1 };

	mock_host_init(&m, L, D, 64);
	m.host.sublayer_forward = synth;
	for (int s = 0; s < NI; s++)
		amp[s] = 0.2 + 0.11 * ((s * 3) % NI) + 0.013 * s; /* distinct energies */
	memset(X, 0, sizeof X);
	for (int i = 0; i < R; i++)
		X[(size_t)i * D] = 1.0f + i;
	for (int s = 1; s <= NI; s++) {
		memcpy(X + (size_t)s * R * D, X + (size_t)(s - 1) * R * D, sizeof(float) * R * D);
		synth(NULL, (s - 1) % 2, (s - 1) / 2, 1, R, X + (size_t)s * R * D, NULL, 0);
	}
	for (int p = 0; p < 2; p++)
		for (size_t wp = 0; wp < sizeof wpairs / sizeof wpairs[0]; wp++) {
			int wa = wpairs[wp][0], wm = wpairs[wp][1], Kh = L * (wa + wm) / 2, bad = 0, live = 0;
			struct knap_dp dp = { .n_items = NI, .d = D, .pinned = p ? pin : NULL, .tau = -1 };
			if (knap_dp_run(&dp, &m.host, &m, X, R, pos, Kh, wa, wm))
				BAIL(m.error);
			for (int c = 1; c <= Kh; c++) {
				uint8_t want[NI], got[NI];
				double bc = brute(&m, X, dp.pinned, wa, wm, c, want);
				if (!isfinite(bc)) {
					bad += dp.live[c]; /* no subset of that weight: the cell must be empty */
					continue;
				}
				live++;
				if (!dp.live[c] || fabs(dp.score[c] - bc) > 1e-9) {
					diag("w %d/%d c %d: DP %s %.9f, brute force %.9f", wa, wm, c, dp.live[c] ? "live" : "empty",
					     dp.score[c], bc);
					bad++;
					continue;
				}
				knap_dp_backtrack(&dp, c, got);
				if (memcmp(got, want, NI)) {
					diag("w %d/%d c %d: backtracked mask differs from the brute-force optimum", wa, wm, c);
					bad++;
				}
			}
			ok(bad == 0, "weights attn %d mlp %d%s: DP == brute-force optimum for all %d reachable budgets", wa, wm,
			   p ? ", ends pinned" : "", live);
			if (wp == 0 && !p)
				is_int(dp.calls, NI - 1, "one batched sublayer_forward per item (item 0: only the exact cell, nothing to run)");
			knap_dp_free(&dp);
		}
	/* pruning: with tau above every skipping path nothing but c = 0 survives */
	struct knap_dp dp = { .n_items = NI, .d = D, .tau = 0.99999 };
	knap_dp_run(&dp, &m.host, &m, X, R, pos, 4, 1, 1);
	int any = 0;
	for (int c = 1; c <= 4; c++)
		any |= dp.live[c];
	ok(!any && dp.live[0], "tau prunes every skipping path");
	knap_dp_free(&dp);
}

/* a head that sees every component, so candidates differ in alpha */
static int n_head_rows;
static int head_all(void *ctx, int n, const float *st, int32_t *ids)
{
	n_head_rows += n;
	for (int i = 0; i < n; i++) {
		double v = 0;
		for (int k = 0; k < D; k++)
			v += st[(size_t)i * D + k] * (k + 1);
		ids[i] = (int32_t)((long)(v * 7) % 5);
	}
	return 0;
}

/* The full grid, ascending c then gamma, strict improvement (the reference). */
static void grid_reference(struct knap_dp *dp, struct mock_host *m, const int32_t *y, double ta, double tm, int D_,
                           int *bc, int *bg, double *bt)
{
	uint8_t skip[NI];
	int32_t yh[R];
	*bc = -1, *bg = 0, *bt = -1;
	for (int c = 1; c <= dp->Kh; c++) {
		int na = 0, nm = 0, match = 0;
		if (!dp->live[c])
			continue;
		head_all(m, R, dp->g + (size_t)c * R * D, yh);
		for (int i = 0; i < R; i++)
			match += yh[i] == y[i];
		knap_dp_backtrack(dp, c, skip);
		for (int l = 0; l < L; l++)
			na += !skip[2 * l], nm += !skip[2 * l + 1];
		for (int g = 1; g <= D_; g++) {
			double t = knap_tpt((double)match / R, g, na * ta + nm * tm, L * (ta + tm));
			if (t > *bt)
				*bt = t, *bc = c, *bg = g;
		}
	}
}

static void pick_vs_grid(void)
{
	static const int wpairs[][2] = { { 1, 1 }, { 1, 3 }, { 4, 1 } };
	static const double times[][2] = { { 1e-3, 3e-3 }, { 4e-3, 1e-3 }, { 1e-3, 1e-3 } };
	struct mock_host m;
	float X[(NI + 1) * R * D];
	int32_t pos[R] = { 7, 8, 9 }, y[R];
	int same = 1, cases = 0, pruned = 0;

	mock_host_init(&m, L, D, 64);
	m.host.sublayer_forward = synth;
	m.host.head_argmax = head_all;
	memset(X, 0, sizeof X);
	for (int i = 0; i < R; i++)
		X[(size_t)i * D] = 1.0f + i;
	for (int s2 = 1; s2 <= NI; s2++) {
		memcpy(X + (size_t)s2 * R * D, X + (size_t)(s2 - 1) * R * D, sizeof(float) * R * D);
		synth(NULL, (s2 - 1) % 2, (s2 - 1) / 2, 1, R, X + (size_t)s2 * R * D, NULL, 0);
	}
	for (size_t wp = 0; wp < sizeof wpairs / sizeof wpairs[0]; wp++)
		for (size_t ti = 0; ti < sizeof times / sizeof times[0]; ti++)
			for (int yv = 0; yv < 2; yv++) {
				int wa = wpairs[wp][0], wm = wpairs[wp][1], Kh = L * (wa + wm) / 2, rc, gc, gg;
				double gt, ta = times[ti][0], tm = times[ti][1];
				struct knap_dp dp = { .n_items = NI, .d = D, .tau = -1 };
				if (knap_dp_run(&dp, &m.host, &m, X, R, pos, Kh, wa, wm))
					BAIL(m.error);
				/* targets: the full model's tokens, or those of a middle cell */
				head_all(&m, R, yv ? dp.g + (size_t)(Kh / 2) * R * D : X + (size_t)NI * R * D, y);
				grid_reference(&dp, &m, y, ta, tm, 10, &gc, &gg, &gt);
				struct knap_pick pk = { .t_attn = ta, .t_mlp = tm, .n_layer = L, .max_draft = 10, .y = y };
				n_head_rows = 0;
				rc = knap_pick_run(&dp, &m.host, &m, &pk);
				if (rc || pk.c != gc || pk.gamma != gg || pk.tpt != gt) {
					diag("w %d/%d t %zu y %d: pick c %d gamma %d tpt %g, grid c %d gamma %d tpt %g", wa, wm, ti, yv,
					     pk.c, pk.gamma, pk.tpt, gc, gg, gt);
					same = 0;
				}
				same &= n_head_rows == pk.n_replayed * R;
				pruned += pk.n_replayed < pk.n_live;
				cases++;
				knap_dp_free(&dp);
			}
	ok(same, "Algorithm 2 with bound pruning == the full grid in all %d cases", cases);
	ok(pruned > 0, "the bound spared head rows in %d of %d cases", pruned, cases);

	/* the cost curve: verify[n] = 1 and no head is the paper's model
	 * exactly; a CPU curve (verify[2..8] = 1.14 .. 2.08) charges each
	 * drafted token its verification row, so gamma* can only shrink */
	struct skipper_costs flat = { .n_max = 32 }, cpu = { .n_max = 8 };
	static const double v[9] = { 0, 1, 1.14, 1.39, 1.39, 1.53, 1.74, 1.91, 2.08 };
	for (int n = 1; n <= 32; n++)
		flat.verify[n] = 1;
	memcpy(cpu.verify, v, sizeof v);
	int equal = 1, shorter = 0, longer = 0, gmax = 0, steps = 1;
	for (size_t wp = 0; wp < sizeof wpairs / sizeof wpairs[0]; wp++)
		for (size_t ti = 0; ti < sizeof times / sizeof times[0]; ti++) {
			int wa = wpairs[wp][0], wm = wpairs[wp][1], Kh = L * (wa + wm) / 2;
			double ta = times[ti][0], tm = times[ti][1];
			struct knap_dp dp = { .n_items = NI, .d = D, .tau = -1 };
			if (knap_dp_run(&dp, &m.host, &m, X, R, pos, Kh, wa, wm))
				BAIL(m.error);
			head_all(&m, R, dp.g + (size_t)(Kh / 2) * R * D, y);
			struct knap_pick p0 = { .t_attn = ta, .t_mlp = tm, .n_layer = L, .max_draft = 10, .y = y };
			struct knap_pick pf = p0, pc = p0, ph = p0;
			pf.costs = &flat;
			pc.costs = &cpu;
			ph.costs = &flat;
			ph.t_head = 4 * ta, ph.t_draft_head = 2 * ta;
			if (knap_pick_run(&dp, &m.host, &m, &p0) || knap_pick_run(&dp, &m.host, &m, &pf) ||
			    knap_pick_run(&dp, &m.host, &m, &pc) || knap_pick_run(&dp, &m.host, &m, &ph))
				BAIL(m.error);
			equal &= pf.c == p0.c && pf.gamma == p0.gamma && pf.tpt == p0.tpt;
			shorter += pc.gamma < p0.gamma;
			longer += pc.gamma > p0.gamma;
			gmax = pc.gamma > gmax ? pc.gamma : gmax;
			steps &= fabs(pc.t_step - L * (ta + tm)) < 1e-15 && pc.t_draft > 0 && pc.t_draft < pc.t_step;
			steps &= fabs(ph.t_step - (4 * ta + L * (ta + tm))) < 1e-15 && ph.t_draft >= 2 * ta;
			knap_dp_free(&dp);
		}
	ok(steps, "t_step = t_head + L (t_attn + t_mlp); the winner's draft step includes the draft head and is cheaper");
	ok(equal, "costs with verify[n] = 1 and no head: the paper's choice");
	ok(shorter > 0 && longer == 0, "a CPU curve: gamma* shorter in %d of 9 cases, never longer (longest %d)", shorter,
	   gmax);
}

static void plugin(void)
{
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	const struct skipper_policy *d;
	struct mock_host m;
	void *st;
	const int PL = 6, PD = 8;
	float data[3 * 13 * 8];
	int32_t pos[3] = { 20, 21, 22 }, tok[3] = { 1, 2, 3 };
	uint8_t attn[6], mlp[6];
	char prof[] = "/tmp/skipper-t-knapspec-XXXXXX";
	int fd = mkstemp(prof);
	close(fd);

	if (skipper_policy_load("knapspec", &(struct skipper_policy_search){ 0 }, &lib, &err))
		BAIL(err.msg);
	d = skipper_policy_lib_desc(lib);
	ok(d->needs == (SKIPPER_NEED_ACCEPTED_STATES | SKIPPER_NEED_SUBLAYER_STATES) && d->calibrate,
	   "needs accepted rows' states at sub-layer boundaries; has calibrate");
	mock_host_init(&m, PL, PD, 64);
	if (d->create(&m.host, &m, &st))
		BAIL("create");
	ok(d->config(st, "device", "a b") < 0, "device with a space refused");
	is_int(d->config(st, "device", "mock"), 0, "device = mock");
	is_int(d->config_complete(st), 0, "config_complete");
	struct skipper_calibrate cal = { .output = prof };
	is_int(d->calibrate(st, &cal), 0, "calibrate writes %s", prof);
	ok(m.n_time_sublayer == 32, "16 context lengths x (attention, MLP) timed (%d)", m.n_time_sublayer);
	d->destroy(st);
	{
		FILE *f = fopen(prof, "r");
		char buf[2048] = { 0 };
		if (f) {
			fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
		}
		ok(strstr(buf, "[latency.mock]") != NULL, "profile has [latency.mock]");
	}
	m.profile_path = prof;
	if (d->create(&m.host, &m, &st))
		BAIL("create");
	d->config(st, "device", "mock");
	d->config(st, "interval", "8");
	d->config(st, "steps", "2");
	is_int(d->config_complete(st), 0, "profile read back");
	/* mock timings: attention 1e-6 (1 + 1e-3 n), MLP 2e-6 */
	/* consistent with the mock's sub-layers: attention of layer l adds
	 * 0.01 (l + 1) everywhere, its MLP 0.02 (l + 1) */
	for (int i = 0; i < 3; i++)
		for (int p = 0; p <= 2 * PL; p++)
			for (int k = 0; k < PD; k++)
				data[(i * 13 + p) * PD + k] = p ? data[(i * 13 + p - 1) * PD + k] +
				                                      0.01f * (float)(2 - p % 2) * (float)((p + 1) / 2)
				                                : (float)(((i + 1) * (k + 3) * 5) % 13) - 6.0f;
	struct skipper_states sts = { .n_rows = 3, .n_points = 2 * PL + 1, .n_embd = PD, .pos = pos, .token = tok,
	                              .data = data };
	struct skipper_request req = { .id = 1, .n_prompt = 23, .n_layer = PL, .max_tokens = 64, .greedy = 1,
	                               .states = &sts };
	int t0 = m.n_time_sublayer, s0 = m.n_sublayer;
	is_int(d->begin(st, &req), 0, "begin runs the prefill DP");
	is_int(m.n_time_sublayer, t0, "latency from the profile: nothing timed");
	/* the captured sub-layer states are used as they are: the only
	 * sub-layer calls are the DP's, at most one per item after the first */
	ok(m.n_sublayer - s0 >= 1 && m.n_sublayer - s0 <= 2 * PL - 1, "sub-layer calls: %d (DP only)",
	   m.n_sublayer - s0);
	struct skipper_plan plan = { .n_layer = PL, .skip_attn = attn, .skip_mlp = mlp, .max_draft = 32 };
	memset(attn, 0, PL);
	memset(mlp, 0, PL);
	is_int(d->select_draft(st, &plan), 0, "select_draft");
	int n = 0;
	for (int l = 0; l < PL; l++)
		n += attn[l] + mlp[l];
	ok(n > 0 && !attn[0] && !mlp[0] && !attn[PL - 1] && !mlp[PL - 1], "%d sub-layers skipped, ends pinned", n);
	is_int(plan.max_draft, 10, "draft cap D = 10");
	int runs = 0;
	for (int r = 0; r < 16; r++) {
		struct skipper_verdict v = { .round = r, .bonus = 3, .n_committed = 24, .states = &sts };
		int before = m.n_sublayer;
		pos[0] = 23 + r, pos[1] = 24 + r, pos[2] = 25 + r;
		sts.n_rows = 1;
		is_int(d->on_accept(st, &v), 0, "on_accept %d", r);
		runs += m.n_sublayer > before;
	}
	is_int(runs, 2, "DP every T = 8 steps");
	/* captures only for the rounds whose rows feed the next DP: steps 7, 8 of 8 */
	plan.capture = 1;
	d->select_draft(st, &plan);
	is_int(plan.capture, 0, "step 1 of the window: verify captures turned off");
	for (int r = 0; r < 6; r++) {
		struct skipper_verdict v = { .round = 16 + r, .bonus = 3, .n_committed = 40, .states = NULL };
		d->on_accept(st, &v);
	}
	plan.capture = 1;
	d->select_draft(st, &plan);
	is_int(plan.capture, 1, "step 7 of 8 (steps = 2): captures kept");
	struct skipper_stats ss = { .seconds = 1 };
	d->end(st, &ss);
	ok(strstr(m.log, "knapspec: 3 DP runs, 1.00 ms per run (0.3% of 1.000 s)") != NULL,
	   "end logs the DP count and the DP time per run (mock clock: 1 ms per DP): %s", m.log);
	/* layer-boundary states (an engine without sub-layer captures) are refused */
	{
		struct skipper_states bad = sts;
		int rc = 0;
		bad.n_points = PL + 1;
		for (int r = 0; r < 8 && !rc; r++) {
			struct skipper_verdict v = { .round = 16 + r, .bonus = 3, .n_committed = 40, .states = &bad };
			pos[0] = 39 + r;
			rc = d->on_accept(st, &v);
		}
		ok(rc < 0 && strstr(m.error, "sub-layer") != NULL, "layer-boundary states refused: %s", m.error);
	}
	/* the schedule runs over the process: a new request keeps the mask and
	 * runs no prefill DP; restart = true runs one at every request */
	{
		int s1 = m.n_sublayer;
		req.id = 2;
		is_int(d->begin(st, &req), 0, "second request");
		is_int(m.n_sublayer, s1, "restart = false: no prefill DP when a mask exists");
		d->destroy(st);
		if (d->create(&m.host, &m, &st))
			BAIL("create");
		d->config(st, "device", "mock");
		is_int(d->config(st, "restart", "true"), 0, "restart = true");
		d->config_complete(st);
		sts.n_rows = 3, sts.n_points = 2 * PL + 1;
		pos[0] = 20, pos[1] = 21, pos[2] = 22;
		d->begin(st, &req);
		s1 = m.n_sublayer;
		d->begin(st, &req);
		ok(m.n_sublayer > s1, "restart = true: a prefill DP at every request");
	}
	d->destroy(st);
	unlink(prof);
	skipper_policy_unload(lib);
}

/* states consistent with the mock's sub-layers (attention of layer l adds
 * 0.01 (l + 1) everywhere, its MLP 0.02 (l + 1)) for 3 rows of 6 layers */
static void mock_states(float *data, int PL, int PD)
{
	for (int i = 0; i < 3; i++)
		for (int p = 0; p <= 2 * PL; p++)
			for (int k = 0; k < PD; k++)
				data[(i * (2 * PL + 1) + p) * PD + k] =
					p ? data[(i * (2 * PL + 1) + p - 1) * PD + k] + 0.01f * (float)(2 - p % 2) * (float)((p + 1) / 2)
					  : (float)(((i + 1) * (k + 3) * 5) % 13) - 6.0f;
}

/* a head for which every state gives the same token: alpha_hat = 1 */
static int head_same(void *ctx, int n, const float *st, int32_t *ids)
{
	for (int i = 0; i < n; i++)
		ids[i] = 7;
	return 0;
}

/* The plugin under the cost curve: the run-time draft cap and the DP budget. */
static void plugin_costs(void)
{
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	const struct skipper_policy *d;
	const int PL = 6, PD = 8;
	float data[3 * 13 * 8];
	int32_t pos[3] = { 20, 21, 22 }, tok[3] = { 1, 2, 3 };
	uint8_t attn[6], mlp[6];

	if (skipper_policy_load("knapspec", &(struct skipper_policy_search){ 0 }, &lib, &err))
		BAIL(err.msg);
	d = skipper_policy_lib_desc(lib);
	mock_states(data, PL, PD);
	struct skipper_states sts = { .n_rows = 3, .n_points = 2 * PL + 1, .n_embd = PD, .pos = pos, .token = tok,
	                              .data = data };
	struct skipper_request req = { .id = 1, .n_prompt = 23, .n_layer = PL, .max_tokens = 64, .greedy = 1,
	                               .states = &sts };
	struct skipper_plan plan = { .n_layer = PL, .skip_attn = attn, .skip_mlp = mlp };

	/* the mock times a layer at about 3 us; the curves' step is set so
	 * that the layers are their share of it (0.83 CPU, 0.9 GPU) */
	for (int gpu = 0; gpu < 2; gpu++) {
		struct mock_host m;
		void *st;
		int drafted = 0, late = 0, last = 0, first = 0;
		mock_host_init(&m, PL, PD, 64);
		if (gpu)
			mock_costs_gpu(&m);
		else
			mock_costs_cpu(&m);
		m.costs.step_seconds = gpu ? 2.0e-5 : 2.2e-5;
		m.host.head_argmax = head_same; /* the prefill DP's set: alpha_hat 1 seeds the estimate */
		if (mock_make(d, &m, &st, "interval", "1000", NULL))
			BAIL(m.error);
		/* the first request's prefill DP waits for credit; one plain
		 * round (no states, so no DP there) pays for the next one's */
		struct skipper_verdict warm = { .bonus = 3, .n_committed = 24, .verify_seconds = 0.05 };
		sts.n_rows = 3;
		if (d->begin(st, &req) || d->on_accept(st, &warm))
			BAIL(m.error);
		int before = m.n_sublayer;
		if (d->begin(st, &req))
			BAIL(m.error);
		ok(before == 0 && m.n_sublayer > 0, "%s curve: no prefill DP without credit, one after a paid-for round",
		   gpu ? "GPU" : "CPU");
		for (int r = 0; r < 30; r++) {
			plan.max_draft = 32;
			d->select_draft(st, &plan);
			last = plan.max_draft;
			if (r == 0)
				first = last;
			drafted += last > 0;
			late += r >= 5 && last > 2;
			struct skipper_verdict v = { .round = r, .n_drafted = last, .n_accepted = gpu ? last : 0, .bonus = 3,
			                             .n_committed = 24 };
			d->on_accept(st, &v);
		}
		if (gpu)
			ok(last == 10, "GPU curve, everything accepted: D = 10 (first round %d)", first);
		else
			ok(late == 0 && drafted <= 8, "CPU curve, nothing accepted: %d of 30 rounds drafted (first %d), none "
			   "longer than a probe after the 5th", drafted, first);
		d->destroy(st);
	}

	/* the DP budget: rounds at plain speed earn 0.05 x 0.1 s each. The
	 * first DP waits for the curve's prediction (0.21 s: 42 rounds, then
	 * the capture window); after it a 1 ms DP runs every T = 8 steps, one
	 * of 11 sub-layer calls of 10 ms (and its head replays) less often:
	 * its capture window starts over */
	int runs[2];
	for (int hi = 0; hi < 2; hi++) {
		struct mock_host m;
		void *st;
		mock_host_init(&m, PL, PD, 64);
		mock_costs_cpu(&m); /* its step, 0.05 s: 2 tokens in 0.1 s is plain speed */
		if (mock_make(d, &m, &st, "interval", "8", "steps", "2", "search_share", "0.05", NULL))
			BAIL(m.error);
		sts.n_rows = 3;
		pos[0] = 20, pos[1] = 21, pos[2] = 22;
		if (d->begin(st, &req))
			BAIL(m.error);
		m.compute_seconds = hi ? 0.01 : 0;
		runs[hi] = 0;
		sts.n_rows = 1;
		for (int r = 0; r < 96; r++) {
			struct skipper_verdict v = { .round = r, .n_drafted = 2, .n_accepted = 1, .bonus = 3, .n_committed = 24 + r,
			                             .states = &sts, .draft_seconds = 0.05, .verify_seconds = 0.05 };
			int before = m.n_sublayer;
			pos[0] = 23 + r;
			d->on_accept(st, &v);
			runs[hi] += m.n_sublayer > before;
		}
		if (hi) {
			struct skipper_stats ss = { .seconds = 10 };
			d->end(st, &ss);
			ok(strstr(m.log, "DPs deferred by the budget") && strstr(m.log, "x a plain step"),
			   "end logs the deferred DPs and TPT* against a plain step: %s", m.log);
		}
		d->destroy(st);
	}
	ok(runs[0] == 7 && runs[1] >= 2 && runs[1] < runs[0],
	   "DP budget: %d DPs in 96 steps when a DP takes 1 ms, %d when its sub-layer calls take 10 ms each", runs[0],
	   runs[1]);
	skipper_policy_unload(lib);
}

int main(void)
{
	fit();
	dp_vs_brute();
	pick_vs_grid();
	plugin();
	plugin_costs();
	return tap_done();
}
