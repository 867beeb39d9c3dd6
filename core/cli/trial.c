/* host->trial and host->embed_prompt: calibration services that run whole
 * prompts, so they need the session's chat template and tokenizer. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_policy.h"
#include "base/error.h"

/* The session behind a policy context (cli_policy.c). */
struct cli_session *cli_policy_session(void *ctx);

int cli_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r, struct skipper_error *err)
{
	struct cli_session *s = cli_policy_session(ctx);
	struct skipper_engine *e = NULL;
	struct skipper_gen_params gp = s->gen;
	int rc;

	memset(r, 0, sizeof *r);
	gp.sampling.temperature = 0; /* calibration measures greedy decoding */
	if (t->max_tokens > 0)
		gp.max_tokens = t->max_tokens;
	if ((rc = skipper_engine_new(s->be, s->tok, NULL, &e, err)))
		return rc;
	/* a trial measures the mask itself: a guard that paused a slow mask
	 * would hide how slow it is, and would make the drafted and accepted
	 * counts (the expected objective) depend on the machine's load */
	skipper_engine_set_guard(e, 0);
	if (!t->autoregressive)
		skipper_engine_set_fixed_plan(e, t->skip_attn, t->skip_mlp, t->max_draft > 0 ? t->max_draft : 4,
		                              t->threshold);
	if (!t->autoregressive && t->adaptive)
		skipper_engine_set_fixed_adaptive(e, t->target_alpha > 0 ? t->target_alpha : 0.9,
		                                  t->epsilon > 0 ? t->epsilon : 0.01, t->beta1 > 0 ? t->beta1 : 0.5,
		                                  t->beta2 > 0 ? t->beta2 : 0.9);
	for (int i = 0; i < t->n_prompts && !rc; i++) {
		struct skipper_run_stats st;
		int32_t *ids = NULL;
		size_t n = 0;
		if (cli_prompt_tokens(s, t->prompts[i], &ids, &n)) {
			rc = skipper_fail(err, SKIPPER_ERR_ARG, "trial: cannot tokenize prompt %d", i);
			break;
		}
		rc = skipper_engine_generate(e, ids, (int)n, &gp, NULL, NULL, &st, err);
		free(ids);
		r->n_generated += st.n_generated;
		r->seconds += st.t_total - st.t_prefill;
		r->rounds += st.rounds;
		r->drafted += st.drafted;
		r->accepted += st.accepted;
		if (cli_interrupted)
			rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "interrupted");
	}
	skipper_engine_free(e);
	/* decode speed as everywhere: each prompt's first token is the prefill's */
	if (r->seconds > 0 && r->n_generated > t->n_prompts)
		r->tokens_per_s = (r->n_generated - t->n_prompts) / r->seconds;
	r->alpha = r->drafted ? (double)r->accepted / r->drafted : 0;
	r->mean_accepted = r->rounds ? (double)(r->n_generated - t->n_prompts) / r->rounds : 1.0;
	return rc;
}

int cli_embed_prompt(void *ctx, const char *text, float *out, struct skipper_error *err)
{
	struct cli_session *s = cli_policy_session(ctx);
	struct skipper_engine *e = NULL;
	int32_t *ids = NULL;
	size_t n = 0;
	int rc;

	if (cli_prompt_tokens(s, text, &ids, &n))
		return skipper_fail(err, SKIPPER_ERR_ARG, "embed_prompt: cannot tokenize the text");
	if (!(rc = skipper_engine_new(s->be, s->tok, NULL, &e, err)))
		rc = skipper_engine_prompt_mean(e, ids, (int)n, out, err);
	skipper_engine_free(e);
	free(ids);
	return rc;
}
