/* The `fixed` plugin, loaded through the real loader, driven by the mock
 * host (no model) and once by the real host for the file:line path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "mock-host.h"
#include "policy/policy_host.h"
#include "policy/profile.h"
#include "tap.h"

#define CM_PROBE 2 /* plugins/common/drafting/costrule.h: COST_RULE_PROBE */

#define L 12

static const struct skipper_policy *d;
static char dir[64];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		exit(99);
	fputs(text, f);
	fclose(f);
}

static const char *mask_str(const uint8_t *mask)
{
	static char buf[128];
	skipper_layers_format(mask, L, buf, sizeof buf);
	return buf;
}

/* n rounds of select_draft (engine cap 32), each answered by a verdict that
 * accepts `acc` of the drafted tokens (all of them when acc < 0). caps[i]
 * gets round i's max_draft; returns the rounds that drafted. */
static int rounds(void *s, struct skipper_plan *plan, int n, int acc, int *caps)
{
	int drafted = 0;
	for (int i = 0; i < n; i++) {
		plan->max_draft = 32;
		d->select_draft(s, plan);
		caps[i] = plan->max_draft;
		drafted += caps[i] > 0;
		struct skipper_verdict v = { .n_drafted = caps[i], .n_accepted = acc < 0 || acc > caps[i] ? caps[i] : acc,
		                             .bonus = 1 };
		d->on_accept(s, &v);
	}
	return drafted;
}

/* The draft length and tree width under the host's cost curve. */
static void costs(void)
{
	struct mock_host m;
	uint8_t a[L], ml[L];
	struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml };
	int caps[40], n, late = 0, longest = 0;
	void *s;

	/* a 2-core CPU: a draft step with layers 1-10 skipped costs 0.17 + 2 x
	 * (0.14 + 0.67) / 12 = 0.305 steps; at the prior acceptance 0.8 three
	 * tokens pay best (2.952 / 2.305); once nothing is accepted no length
	 * pays: plain rounds and a 2-token probe now and then */
	mock_host_init(&m, L, 8, 100);
	mock_costs_cpu(&m);
	if (mock_make(d, &m, &s, "attn", "1-10", "mlp", "1-10", "draft_length", "8", NULL))
		BAIL(m.error);
	n = rounds(s, &plan, 40, 0, caps);
	for (int i = 0; i < 40; i++) {
		longest = caps[i] > longest ? caps[i] : longest;
		late += i >= 10 && caps[i] > 0 && caps[i] <= CM_PROBE;
	}
	ok(caps[0] == 3 && caps[1] == 1 && caps[2] == 0, "CPU curve: 3 tokens at the prior, 1, then none (%d, %d, %d)",
	   caps[0], caps[1], caps[2]);
	ok(n <= 5 && late == n - 2 && longest <= 3, "CPU curve, nothing accepted: %d of 40 rounds drafted, later ones "
	   "only short probes", n);
	is_int(m.n_costs, 1, "the host's costs are asked for once");
	d->destroy(s);

	/* a GPU: the same mask costs 0.1 + 2 x 0.9 / 12 = 0.25 steps and
	 * verifying 9 rows about as much as 1: with everything accepted the
	 * whole draft_length pays */
	mock_host_init(&m, L, 8, 100);
	mock_costs_gpu(&m);
	if (mock_make(d, &m, &s, "attn", "1-10", "mlp", "1-10", "draft_length", "8", NULL))
		BAIL(m.error);
	rounds(s, &plan, 10, -1, caps);
	ok(caps[0] == 3 && caps[9] == 8, "GPU curve: 3 at the prior, the full 8 once all is accepted (%d, %d)", caps[0],
	   caps[9]);
	d->destroy(s);

	/* costs = false: the configured length whatever the curve */
	mock_host_init(&m, L, 8, 100);
	mock_costs_cpu(&m);
	if (mock_make(d, &m, &s, "attn", "1-10", "mlp", "1-10", "draft_length", "8", "costs", "false", NULL))
		BAIL(m.error);
	rounds(s, &plan, 10, 0, caps);
	ok(caps[9] == 8 && m.n_costs == 0, "costs = false: draft_length 8 on the CPU curve, costs never asked");
	d->destroy(s);

	/* tree = 3 over a 3-token chain (p 0.7, 0.6, 0.5), siblings of draft
	 * probability 0.05 and 0.04: on the CPU the 5th row costs 0.14 steps
	 * for at most 0.05 tokens (the round: 2.33 tokens for 2.305 steps), so
	 * the chain; on the GPU a row costs 0.002: all six siblings */
	int32_t toks[3] = { 10, 20, 30 }, ids[9] = { 10, 11, 12, 20, 21, 22, 30, 31, 32 }, tt[16], tp[16], cn[16];
	float pr[3] = { 0.7f, 0.6f, 0.5f }, tpr[9] = { 0.7f, 0.05f, 0.04f, 0.6f, 0.05f, 0.04f, 0.5f, 0.05f, 0.04f };
	struct skipper_draft dr = { .n = 3, .tokens = toks, .probs = pr, .top_k = 3, .top_ids = ids, .top_probs = tpr };
	struct skipper_tree tree = { .capacity = 16, .tokens = tt, .parent = tp, .chain_node = cn };
	for (int gpu = 0; gpu < 2; gpu++) {
		mock_host_init(&m, L, 8, 100);
		if (gpu)
			mock_costs_gpu(&m);
		else
			mock_costs_cpu(&m);
		if (mock_make(d, &m, &s, "attn", "1-10", "mlp", "1-10", "draft_length", "3", "tree", "3", NULL))
			BAIL(m.error);
		plan.max_draft = 32;
		d->select_draft(s, &plan);
		tree.n = 0;
		d->verify(s, &dr, &tree);
		if (gpu)
			ok(tree.n == 9 && tt[1] == 11 && tt[2] == 12 && tp[4] == 0, "GPU curve: top-3 at every depth (%d nodes)",
			   tree.n);
		else
			is_int(tree.n, 0, "CPU curve: the siblings do not pay, the chain is verified");
		d->destroy(s);
	}
}

int main(void)
{
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	struct mock_host m;
	uint8_t a[L], ml[L];
	struct skipper_plan plan = { .n_layer = L, .skip_attn = a, .skip_mlp = ml };
	void *s;
	int rc;

	d = mock_load_policy("fixed", &lib);
	mock_tmpdir(dir, sizeof dir, "t-policy-fixed");
	is_str(d->name, "fixed", "descriptor name");
	costs();
	ok(d->select_draft && d->should_exit && d->verify && d->config && !d->calibrate, "hooks present");

	/* --- mask from the section, default draft length --- */
	mock_host_init(&m, L, 8, 100);
	rc = mock_make(d, &m, &s, "attn", "3,5,7-9", "mlp", "10-11", NULL);
	ok(rc == 0, "attn/mlp accepted");
	if (rc == 0) {
		memset(a, 1, L);
		plan.max_draft = 32;
		rc = d->select_draft(s, &plan);
		ok(rc == 0 && plan.max_draft == 4, "default draft length 4");
		is_str(mask_str(a), "3,5,7-9", "attn mask");
		is_str(mask_str(ml), "10-11", "mlp mask");
		plan.max_draft = 2;
		d->select_draft(s, &plan);
		ok(plan.max_draft == 2, "never above the engine cap");
		struct skipper_step st = { .prob = 0.01f };
		ok(d->should_exit(s, &st) == SKIPPER_DRAFT_CONTINUE, "no threshold: never exits early");
		int32_t toks[3] = { 1, 2, 3 }, tt[8], tp[8];
		struct skipper_draft dr = { .n = 3, .tokens = toks };
		struct skipper_tree tree = { .capacity = 8, .tokens = tt, .parent = tp };
		ok(d->verify(s, &dr, &tree) == 0 && tree.n == 0, "chain verification by default");
		struct skipper_needs nd = { 0 };
		ok(d->refine_needs(s, &nd) == 0 && !(nd.flags & SKIPPER_NEED_TOPK), "chain needs no top-k");
		d->destroy(s);
	}

	/* --- threshold exit --- */
	rc = mock_make(d, &m, &s, "threshold", "0.6", "max_draft", "6", NULL);
	ok(rc == 0, "threshold + max_draft");
	if (rc == 0) {
		struct skipper_step hi = { .prob = 0.9f }, lo = { .prob = 0.5f };
		plan.max_draft = 32;
		d->select_draft(s, &plan);
		ok(plan.max_draft == 6, "max_draft caps the round");
		ok(d->should_exit(s, &hi) == SKIPPER_DRAFT_CONTINUE, "confident: continue");
		ok(d->should_exit(s, &lo) == SKIPPER_DRAFT_STOP, "unsure: stop");
		is_str(mask_str(a), "", "no keys: empty mask (draft with the full model)");
		d->destroy(s);
	}

	/* --- tree --- */
	rc = mock_make(d, &m, &s, "tree", "3", "draft_length", "2", NULL);
	ok(rc == 0, "tree = 3");
	if (rc == 0) {
		struct skipper_needs nd = { 0 };
		int32_t toks[2] = { 10, 20 }, ids[2 * 3] = { 10, 11, 12, 21, 20, 22 }, tt[16], tp[16], cn[16];
		struct skipper_draft dr = { .n = 2, .tokens = toks, .top_k = 3, .top_ids = ids };
		struct skipper_tree tree = { .capacity = 16, .tokens = tt, .parent = tp, .chain_node = cn };
		ok(d->refine_needs(s, &nd) == 0 && (nd.flags & SKIPPER_NEED_TOPK) && nd.top_k == 3, "tree asks for top-3");
		rc = d->verify(s, &dr, &tree);
		ok(rc == 0 && tree.n == 6, "spine + 2 siblings per depth");
		ok(tt[0] == 10 && tp[0] == -1 && tt[1] == 11 && tp[1] == -1 && tt[2] == 12 && tp[2] == -1,
		   "depth 1: chain token first, siblings under the root");
		ok(tt[3] == 20 && tp[3] == 0 && tt[4] == 21 && tp[4] == 0 && tt[5] == 22 && tp[5] == 0,
		   "depth 2: under chain node 0");
		ok(cn[0] == 0 && cn[1] == 3, "chain_node maps the chain");
		tree.capacity = 4;
		rc = d->verify(s, &dr, &tree);
		ok(rc == 0 && tree.n == 4, "tree respects capacity");
		d->destroy(s);
	}

	/* --- errors, each with the plugin's message --- */
	rc = mock_make(d, &m, &s, "attn", "3,x", NULL);
	ok(rc < 0 && mock_has(m.error, "'x' is not a layer"), "bad layer list");
	rc = mock_make(d, &m, &s, "attn", "12", NULL);
	ok(rc < 0 && mock_has(m.error, "layer 12 out of range"), "layer past the model");
	rc = mock_make(d, &m, &s, "draft_length", "0", NULL);
	ok(rc < 0 && mock_has(m.error, "expected an integer in [1, 32]"), "draft_length range");
	rc = mock_make(d, &m, &s, "threshold", "1.5", NULL);
	ok(rc < 0 && mock_has(m.error, "[0, 1]"), "threshold range");
	rc = mock_make(d, &m, &s, "threshold", "0.5", "draft_length", "3", NULL);
	ok(rc < 0 && mock_has(m.error, "exclude each other"), "draft_length with threshold");
	rc = mock_make(d, &m, &s, "max_draft", "3", NULL);
	ok(rc < 0 && mock_has(m.error, "max_draft applies with threshold"), "max_draft without threshold");
	rc = mock_make(d, &m, &s, "colour", "red", NULL);
	ok(rc == SKIPPER_POLICY_UNKNOWN_KEY, "unknown key");
	rc = mock_make(d, &m, &s, "profile", "/x.ini", "attn", "1", NULL);
	ok(rc < 0 && mock_has(m.error, "either profile or attn/mlp"), "profile and attn together");

	/* --- configuration check without a model: syntax only --- */
	mock_host_init(&m, 0, 0, 0);
	rc = mock_make(d, &m, &s, "attn", "40-50", "draft_length", "5", NULL);
	ok(rc == 0, "no model: syntax-only check passes");
	if (rc == 0)
		d->destroy(s);
	rc = mock_make(d, &m, &s, "attn", "4-", NULL);
	ok(rc < 0, "no model: syntax still checked");
	mock_host_init(&m, L, 8, 100);
	rc = mock_make(d, &m, &s, "profile_section", "domain.x", "mlp", "1", NULL);
	ok(rc < 0 && mock_has(m.error, "does not apply with attn/mlp"), "profile_section with mlp refused");

	/* --- mask from a profile --- */
	{
		char prof[128], text[512];
		mock_host_init(&m, L, 8, 100);
		snprintf(prof, sizeof prof, "%s/p.ini", dir);
		snprintf(text, sizeof text,
		         "[profile]\nmodel = mock\nmodel_sha256 = %s\nn_layers = %d\nmethod = fixed\n"
		         "[mask]\nattn = 1-2\n[domain.code]\nmlp = 4,6\n",
		         m.sha256, L);
		write_file(prof, text);
		rc = mock_make(d, &m, &s, "profile", prof, NULL);
		ok(rc == 0, "profile = FILE");
		if (rc == 0) {
			plan.max_draft = 8;
			d->select_draft(s, &plan);
			ok(strcmp(mask_str(a), "1-2") == 0 && strcmp(mask_str(ml), "") == 0, "profile mask used");
			d->destroy(s);
		}
		rc = mock_make(d, &m, &s, "profile", prof, "profile_section", "domain.code", NULL);
		if (rc == 0) {
			d->select_draft(s, &plan);
			ok(strcmp(mask_str(a), "") == 0 && strcmp(mask_str(ml), "4,6") == 0, "profile_section");
			d->destroy(s);
		} else {
			ok(0, "profile_section: %s", m.error);
		}
		m.profile_path = prof;
		rc = mock_make(d, &m, &s, NULL);
		ok(rc == 0, "[policy] profile used when the section names no mask");
		if (rc == 0)
			d->destroy(s);
		m.profile_path = NULL;
		rc = mock_make(d, &m, &s, "profile", prof, "profile_section", "domain.nope", NULL);
		ok(rc < 0 && mock_has(m.error, "no attn or mlp key in [domain.nope]"), "missing profile section");
		memset(m.sha256, 'b', 64);
		rc = mock_make(d, &m, &s, "profile", prof, NULL);
		ok(rc < 0 && mock_has(m.error, prof) && mock_has(m.error, "bbbbbbbb"), "profile for another model refused");
	}

	/* --- the real host: errors carry file:line --- */
	{
		char ini[128];
		struct skipper_config *cfg;
		struct skipper_policy_env env = { .n_layer = L, .n_vocab = 100 };
		struct skipper_policy_instance *inst;
		snprintf(ini, sizeof ini, "%s/c.ini", dir);
		write_file(ini, "[fixed]\ndraft_length = 3\nattn = 2,40\n");
		if (skipper_config_new(&cfg, &err) || skipper_config_load_file(cfg, ini, 1, &err))
			return 99;
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		char want[256];
		snprintf(want, sizeof want, "%s:3: [fixed] attn: layer 40 out of range: the model has %d layers", ini, L);
		ok(rc == SKIPPER_ERR_CONFIG && mock_has(err.msg, want), "real host: file:line [fixed] key: message");
		skipper_config_free(cfg);

		/* configuration check before the model: [policy] profile counts */
		write_file(ini, "[policy]\nprofile = elsewhere.ini\n[fixed]\nprofile_section = domain.code\ntree = 2\n");
		if (skipper_config_new(&cfg, &err) || skipper_config_load_file(cfg, ini, 1, &err))
			return 99;
		rc = skipper_policy_check_config(lib, cfg, &err);
		ok(rc == SKIPPER_OK, "check without a model: [policy] profile seen");
		if (rc)
			diag("%s", err.msg);
		skipper_config_free(cfg);
	}

	skipper_policy_unload(lib);
	mock_rmdir(dir);
	return tap_done();
}
