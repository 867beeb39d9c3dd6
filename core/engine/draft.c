/* Draft steps: one token at a time through the model with the round's skip
 * mask, writing K/V past the committed length (verification overwrites
 * them), asking the policy after each step whether to stop. */
#include <math.h>
#include <string.h>

#include "engine_impl.h"

/* Softmax probability of token under raw logits (temperature 1). */
static float raw_prob(const float *logits, int n, int32_t tok)
{
	float mx = logits[skipper_argmax(logits, n)];
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += exp((double)logits[i] - mx);
	return (float)(exp((double)logits[tok] - mx) / sum);
}

/* Draft up to plan->max_draft chain tokens with the plan's mask.
 * Returns the number drafted in *n_out. */
int engine_draft(struct skipper_engine *e, struct round_ctx *r, int max_draft, int *n_out,
                 struct skipper_error *err)
{
	int32_t x = r->root;
	int n = 0, rc;
	while (n < max_draft) {
		int32_t pos = r->n_past + n, row = 0;
		float *lg = r->greedy ? NULL : e->logits;
		struct skipper_forward fw = {
			.n = 1, .tokens = &x, .pos = &pos, .n_past = r->n_past + n, .kv_write = 1,
			.skip_attn = e->skip_attn, .skip_mlp = e->skip_mlp,
			.n_out = 1, .out_rows = &row, .top_k = e->top_k,
			.top_ids = &e->d_top_ids[n * e->top_k], .top_probs = &e->d_top_probs[n * e->top_k],
			.logits = lg && e->draft_n ? e->sub_logits : lg, .head_subset = e->draft_n > 0,
		};
		if ((rc = skipper_backend_forward(e->be, &fw, err)))
			return rc;
		if (lg && e->draft_n) {
			/* the draft's logits live on the subset: -inf elsewhere */
			for (int i = 0; i < e->n_vocab; i++)
				lg[i] = -INFINITY;
			for (int i = 0; i < e->draft_n; i++)
				lg[e->draft_ids[i]] = e->sub_logits[i];
		}
		if (r->greedy) {
			e->d_tok[n] = e->d_top_ids[n * e->top_k];
			e->d_prob[n] = e->d_top_probs[n * e->top_k];
		} else {
			double ts = engine_now();
			float *q = &e->d_q[(size_t)n * e->n_vocab];
			skipper_process_logits(&r->gp->sampling, lg, e->n_vocab, q, e->scratch);
			e->d_tok[n] = skipper_sample_probs(q, e->n_vocab, &e->rng);
			e->d_prob[n] = raw_prob(lg, e->n_vocab, e->d_tok[n]);
			r->st->t_sample += engine_now() - ts;
		}
		x = e->d_tok[n];
		n++;
		if (!e->pol && e->fixed_exit.gamma > 0 && e->d_top_probs[(n - 1) * e->top_k] < e->fixed_exit.gamma)
			break;
		if (e->pol) {
			int stop = 0;
			struct skipper_step step = {
				.index = n - 1, .token = x, .prob = e->d_prob[n - 1], .top_k = e->top_k,
				.top_ids = &e->d_top_ids[(n - 1) * e->top_k],
				.top_probs = &e->d_top_probs[(n - 1) * e->top_k],
				.max_draft = max_draft, .n_committed = r->n_past,
				.is_eos = skipper_tokenizer_is_eog(e->tok, x),
			};
			double t0 = engine_now();
			rc = skipper_policy_should_exit(e->pol, &step, &stop, err);
			r->st->t_policy += engine_now() - t0;
			if (rc)
				return rc;
			if (stop)
				break;
		}
		/* nothing follows an end-of-generation token: the round ends there */
		if (skipper_tokenizer_is_eog(e->tok, x))
			break;
	}
	*n_out = n;
	return SKIPPER_OK;
}
