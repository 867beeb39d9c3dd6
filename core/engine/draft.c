/* Draft steps: one token at a time through the model with the round's skip
 * mask, writing K/V past the committed length (verification overwrites
 * them), asking the policy after each step whether to stop. A batch runs
 * the steps of several sequences with one mask as one pass each (pass.c);
 * what follows a step's forward is engine_draft_took either way. */
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

int engine_draft_took(struct skipper_engine *e, struct round_ctx *r, int n, int max_draft, int *stop,
                      struct skipper_error *err)
{
	float *lg = r->greedy ? NULL : e->vb.logits;
	int rc;

	*stop = 0;
	if (lg && e->draft.head_n) {
		/* the draft's logits live on the subset: -inf elsewhere */
		for (int i = 0; i < e->n_vocab; i++)
			lg[i] = -INFINITY;
		for (int i = 0; i < e->draft.head_n; i++)
			lg[e->draft.head_ids[i]] = e->draft.sub_logits[i];
	}
	if (r->greedy) {
		e->draft.tok[n] = e->draft.top_ids[n * e->draft.top_k];
		e->draft.prob[n] = e->draft.top_probs[n * e->draft.top_k];
	} else {
		double ts = engine_now();
		float *q = &e->draft.q[(size_t)n * e->n_vocab];
		skipper_process_logits(&r->gp->sampling, lg, e->n_vocab, q, e->vb.scratch);
		e->draft.tok[n] = skipper_sample_probs(q, e->n_vocab, &e->rng);
		e->draft.prob[n] = raw_prob(lg, e->n_vocab, e->draft.tok[n]);
		r->st->t_sample += engine_now() - ts;
	}
	int32_t x = e->draft.tok[n];
	if (e->pol) {
		struct skipper_step step = {
			.index = n, .token = x, .prob = e->draft.prob[n], .top_k = e->draft.top_k,
			.top_ids = &e->draft.top_ids[n * e->draft.top_k], .top_probs = &e->draft.top_probs[n * e->draft.top_k],
			.max_draft = max_draft, .n_committed = r->n_past, .is_eos = skipper_tokenizer_is_eog(e->tok, x),
		};
		double t0 = engine_now();
		rc = skipper_policy_should_exit(e->pol, &step, stop, err);
		r->st->t_policy += engine_now() - t0;
		if (rc)
			return rc;
	}
	/* nothing follows an end-of-generation token: the round ends there */
	if (skipper_tokenizer_is_eog(e->tok, x))
		*stop = 1;
	return SKIPPER_OK;
}

int engine_draft(struct skipper_engine *e, struct round_ctx *r, int max_draft, int *n_out,
                 struct skipper_error *err)
{
	int n = 0, stop = 0, rc;
	while (n < max_draft && !stop) {
		int32_t x = n ? e->draft.tok[n - 1] : r->root, pos = r->n_past + n, row = 0;
		float *lg = r->greedy ? NULL : e->vb.logits;
		struct skipper_forward fw = {
			.n = 1, .tokens = &x, .pos = &pos, .seq = e->seq, .n_past = r->n_past + n, .kv_write = 1,
			.skip_attn = e->draft.skip_attn, .skip_mlp = e->draft.skip_mlp,
			.n_out = 1, .out_rows = &row, .top_k = e->draft.top_k,
			.top_ids = &e->draft.top_ids[n * e->draft.top_k], .top_probs = &e->draft.top_probs[n * e->draft.top_k],
			.logits = lg && e->draft.head_n ? e->draft.sub_logits : lg, .head_subset = e->draft.head_n > 0,
		};
		if ((rc = skipper_backend_forward(e->be, &fw, err)) || (rc = engine_draft_took(e, r, n, max_draft, &stop, err)))
			return rc;
		n++;
	}
	*n_out = n;
	return SKIPPER_OK;
}
