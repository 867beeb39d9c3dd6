/* policy-probe: load one policy plugin through the real loader and run it
 * against the mock host (no model): create, config, config_complete,
 * refine_needs, begin, a few rounds of select_draft / should_exit / verify /
 * on_accept, end, destroy. Prints what the policy did; exit 0 on success,
 * 1 with the loader's or plugin's message on stderr.
 *
 *   policy-probe [-d PLUGIN_DIR] [-l N_LAYER] NAME|PATH [key=value ...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock-host.h"
#include "policy/policy_host.h"
#include "policy/profile.h"

#define ROUNDS 3
#define TOPK 4

static int run(const struct skipper_policy *d, struct mock_host *m, void *s)
{
	const int L = m->host.n_layer;
	int32_t prompt[5] = { 1, 2, 3, 4, 5 }, gen[64];
	uint8_t *attn = calloc((size_t)L, 1), *mlp = calloc((size_t)L, 1);
	struct skipper_request req = { .id = 1, .prompt = prompt, .n_prompt = 5, .n_layer = L, .max_tokens = 32, .greedy = 1 };
	int n_gen = 0, committed = 5, drafted = 0, accepted = 0, rc = 0;
	int32_t last = prompt[4];

	if (!attn || !mlp)
		return SKIPPER_POLICY_NOMEM;
	if (d->begin && (rc = d->begin(s, &req)) < 0)
		goto out;
	for (int r = 0; r < ROUNDS; r++) {
		struct skipper_plan plan = { .n_layer = L, .skip_attn = attn, .skip_mlp = mlp, .max_draft = 8,
			                     .round = r, .n_committed = committed, .n_generated = n_gen };
		int32_t toks[8], ids[8 * TOPK], tt[64], tp[64], cn[64];
		float probs[8], tprobs[8 * TOPK];
		int n = 0, n_skip = 0;
		char mask[256];

		memset(attn, 0, (size_t)L);
		memset(mlp, 0, (size_t)L);
		if (d->select_draft && (rc = d->select_draft(s, &plan)) < 0)
			goto out;
		if (!d->select_draft)
			plan.max_draft = 0;
		if (plan.max_draft > 8)
			plan.max_draft = 8;
		for (int l = 0; l < L; l++)
			n_skip += (attn[l] != 0) + (mlp[l] != 0);
		skipper_layers_format(attn, L, mask, sizeof mask);
		printf("round %d: max_draft %d attn [%s]", r, plan.max_draft, mask);
		skipper_layers_format(mlp, L, mask, sizeof mask);
		printf(" mlp [%s]\n", mask);
		/* mock draft: the mock model's next token, confidence falling with depth and skipping */
		for (int j = 0; j < plan.max_draft; j++) {
			int32_t prev = j ? toks[j - 1] : last;
			toks[j] = mock_next_token(m, prev);
			probs[j] = 0.95f - 0.15f * (float)j - 0.01f * (float)n_skip;
			for (int k = 0; k < TOPK; k++) {
				ids[j * TOPK + k] = (toks[j] + k) % m->host.n_vocab;
				tprobs[j * TOPK + k] = k ? (1.0f - probs[j]) / (float)(TOPK - 1) : probs[j];
			}
			n++;
			struct skipper_step st = { .index = j, .token = toks[j], .prob = probs[j], .top_k = TOPK,
				                   .top_ids = &ids[j * TOPK], .top_probs = &tprobs[j * TOPK],
				                   .max_draft = plan.max_draft, .n_committed = committed };
			if (d->should_exit && (rc = d->should_exit(s, &st)) != 0) {
				if (rc < 0)
					goto out;
				rc = 0;
				break;
			}
		}
		struct skipper_tree tree = { .capacity = 64, .tokens = tt, .parent = tp, .chain_node = cn };
		for (int i = 0; i < 64; i++)
			cn[i] = -1;
		if (n > 0 && d->verify) {
			struct skipper_draft dr = { .root = last, .n = n, .tokens = toks, .probs = probs, .top_k = TOPK,
				                    .top_ids = ids, .top_probs = tprobs, .n_committed = committed };
			if ((rc = d->verify(s, &dr, &tree)) < 0)
				goto out;
		}
		printf("round %d: drafted %d, verify %s of %d nodes\n", r, n, tree.n ? "tree" : "chain",
		       tree.n ? tree.n : n);
		/* mock verification: everything the mock draft made is right */
		int32_t nodes[8];
		for (int j = 0; j < n; j++) {
			nodes[j] = j;
			if (n_gen < 60)
				gen[n_gen++] = toks[j];
		}
		int32_t bonus = mock_next_token(m, n ? toks[n - 1] : last);
		gen[n_gen++] = bonus;
		committed += n + 1;
		drafted += n;
		accepted += n;
		last = bonus;
		struct skipper_verdict v = { .round = r, .n_drafted = n, .n_verified = tree.n ? tree.n : n,
			                     .n_accepted = n, .accepted = toks, .accepted_nodes = nodes, .bonus = bonus,
			                     .n_committed = committed - 1, .generated = gen, .n_generated = n_gen };
		if (d->on_accept && (rc = d->on_accept(s, &v)) < 0)
			goto out;
	}
	struct skipper_stats st = { .n_prompt = 5, .n_generated = n_gen, .rounds = ROUNDS, .verify_passes = ROUNDS,
		                    .drafted = drafted, .accepted = accepted };
	if (d->end && (rc = d->end(s, &st)) < 0)
		goto out;
	printf("generated %d tokens, drafted %d, accepted %d\n", n_gen, drafted, accepted);
out:
	free(attn);
	free(mlp);
	return rc;
}

int main(int argc, char **argv)
{
	struct skipper_policy_search search = { 0 };
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	const struct skipper_policy *d;
	struct mock_host m;
	int n_layer = 12, opt, rc, status = 1;
	void *s = NULL;

	while ((opt = getopt(argc, argv, "d:l:")) != -1) {
		if (opt == 'd')
			search.plugin_dir = optarg;
		else if (opt == 'l')
			n_layer = atoi(optarg);
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	if (skipper_policy_load(argv[optind], &search, &lib, &err)) {
		fprintf(stderr, "policy-probe: %s\n", err.msg);
		return 1;
	}
	d = skipper_policy_lib_desc(lib);
	printf("policy %s %s (%s): %s\n", d->name, d->version, skipper_policy_lib_path(lib), d->description);
	printf("abi %u.%u, thread model %d\n", d->abi_major, d->abi_minor, d->thread_model);
	mock_host_init(&m, n_layer, 16, 1000);
	if ((rc = d->create(&m.host, &m, &s)) < 0) {
		s = NULL;
		fprintf(stderr, "policy-probe: create: %s\n", m.error);
		goto done;
	}
	for (int i = optind + 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "policy-probe: expected key=value, got '%s'\n", argv[i]);
			goto done;
		}
		*eq = '\0';
		rc = d->config ? d->config(s, argv[i], eq + 1) : SKIPPER_POLICY_UNKNOWN_KEY;
		if (rc == SKIPPER_POLICY_UNKNOWN_KEY) {
			fprintf(stderr, "policy-probe: [%s] %s: unknown key\n", d->name, argv[i]);
			goto done;
		}
		if (rc < 0) {
			fprintf(stderr, "policy-probe: [%s] %s: %s\n", d->name, argv[i], m.error);
			goto done;
		}
	}
	if (d->config_complete && d->config_complete(s) < 0) {
		fprintf(stderr, "policy-probe: [%s]: %s\n", d->name, m.error);
		goto done;
	}
	if (d->refine_needs) {
		struct skipper_needs nd = { d->needs, d->top_k, d->prompt_rows };
		if (d->refine_needs(s, &nd) < 0) {
			fprintf(stderr, "policy-probe: refine_needs: %s\n", m.error);
			goto done;
		}
	}
	if (run(d, &m, s) < 0) {
		fprintf(stderr, "policy-probe: %s\n", m.error[0] ? m.error : "a hook failed without a message");
		goto done;
	}
	if (m.n_logs)
		printf("log:\n%s", m.log);
	status = 0;
done:
	if (s)
		d->destroy(s);
	skipper_policy_unload(lib);
	return status;
usage:
	fprintf(stderr, "usage: policy-probe [-d PLUGIN_DIR] [-l N_LAYER] NAME|PATH [key=value ...]\n");
	return 2;
}
