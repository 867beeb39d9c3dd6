/* The engine's lifecycle (made with its policy instance, freed with it)
 * and the request loop (DESIGN §2): prefill, then rounds of plan (plan.c)
 * -> draft (draft.c) -> verify and accept (verify.c) -> account
 * (pacing.c) until EOS or max_tokens. Acceptance is decided in verify.c
 * and only there. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"

struct skipper_backend *skipper_engine_backend(struct skipper_engine *e) { return e->be; }

int skipper_engine_committed(const struct skipper_engine *e) { return e->out.committed; }

struct skipper_policy_instance *skipper_engine_policy(const struct skipper_engine *e) { return e->pol; }

void skipper_engine_set_history(struct skipper_engine *e, struct skipper_history *h) { e->lk.history = h; }

void skipper_engine_set_clock(struct skipper_engine *e, double (*now)(void *ctx), void *ctx)
{
	e->pace.clock = now;
	e->pace.clock_ctx = ctx;
}

void skipper_engine_set_progress(struct skipper_engine *e, int (*tell)(void *ctx, int done, int total), void *ctx)
{
	e->progress = tell;
	e->progress_ctx = ctx;
}

void skipper_engine_free(struct skipper_engine *e)
{
	if (!e)
		return;
	/* the instance first: its destroy may still call the host */
	skipper_policy_instance_free(e->pol);
	skipper_policy_unload(e->lib);
	free(e->draft.skip_attn);
	free(e->draft.skip_mlp);
	free(e->draft.top_ids);
	free(e->draft.top_probs);
	free(e->draft.q);
	free(e->draft.head_ids);
	free(e->draft.sub_logits);
	free(e->vb.logits);
	free(e->vb.p);
	free(e->vb.q);
	free(e->vb.scratch);
	free(e->cap.buf);
	free(e->cap.sel);
	free(e->lk.hist);
	ngram_table_free(&e->lk.ngrams);
	free(e->pace.cost_cache);
	free(e->out.gen);
	free(e);
}

/* The draft head: ids[0..n) only in draft passes (n = 0: the full head). */
static int set_draft_vocab(struct skipper_engine *e, const int32_t *ids, int n, struct skipper_error *err)
{
	int rc;
	if (n < 0 || n > e->n_vocab)
		return skipper_fail(err, SKIPPER_ERR_ARG, "draft vocabulary of %d tokens (the model has %d)", n, e->n_vocab);
	if (n == e->n_vocab || n == 0 || !e->be->ops->set_head_subset)
		return SKIPPER_OK; /* the whole vocabulary: the full head */
	if ((rc = skipper_backend_set_head_subset(e->be, ids, n, err)))
		return rc;
	e->draft.head_ids = malloc(sizeof *e->draft.head_ids * (size_t)n);
	e->draft.sub_logits = malloc(sizeof *e->draft.sub_logits * (size_t)n);
	if (!e->draft.head_ids || !e->draft.sub_logits) {
		skipper_backend_set_head_subset(e->be, NULL, 0, err);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	memcpy(e->draft.head_ids, ids, sizeof *ids * (size_t)n);
	e->draft.head_n = n;
	return SKIPPER_OK;
}

static void set_lookup(struct skipper_engine *e, const struct skipper_lookup_opts *o)
{
	e->lk.opts = *o;
	if (e->lk.opts.max_ngram > LOOKUP_MAX_NGRAM)
		e->lk.opts.max_ngram = LOOKUP_MAX_NGRAM;
	if (e->lk.opts.min_ngram < 1)
		e->lk.opts.min_ngram = 1;
	if (e->lk.opts.max_draft > MAX_DRAFT)
		e->lk.opts.max_draft = MAX_DRAFT;
	if (e->lk.opts.branches < 1)
		e->lk.opts.branches = 1;
	if (e->lk.opts.branches > LOOKUP_BRANCHES)
		e->lk.opts.branches = LOOKUP_BRANCHES;
}

static int set_ngrams(struct skipper_engine *e, const struct skipper_ngram_set *g, struct skipper_error *err)
{
	for (int i = 0; i < g->n; i++)
		if (g->ctx_n[i] < 1 || g->ctx_n[i] > NGRAM_MAX_CTX || g->next[i] < 0 || g->next[i] >= e->n_vocab ||
		    !(g->p[i] > 0) || g->p[i] > 1)
			return skipper_fail(err, SKIPPER_ERR_ARG, "n-gram %d: context of %d tokens, next %d, p %g", i,
			                    g->ctx_n[i], g->next[i], g->p[i]);
	if (g->n <= 0)
		return SKIPPER_OK;
	if (ngram_table_init(&e->lk.ngrams, (size_t)g->n))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (%d n-grams)", g->n);
	for (int i = 0; i < g->n; i++)
		ngram_table_put(&e->lk.ngrams, g->ctx + NGRAM_MAX_CTX * (size_t)i, g->ctx_n[i], g->next[i], g->p[i]);
	return SKIPPER_OK;
}

/* The policy instance, made from the engine's copy of the env: the
 * compute services run on this engine. Then the buffers its needs ask
 * for (top-k per draft step, state captures). */
static int make_policy(struct skipper_engine *e, const struct skipper_engine_opts *o, struct skipper_error *err)
{
	const struct skipper_model_view *m = e->be->model;
	int rc;

	if (o->env)
		e->env = *o->env;
	if (!e->env.n_layer) {
		e->env.n_layer = m->hp.n_layer;
		e->env.n_embd = m->hp.n_embd;
		e->env.n_vocab = m->hp.n_vocab;
		e->env.n_ctx = e->be->n_ctx;
		e->env.model_name = m->name;
	}
	engine_bind_services(e);
	if ((rc = skipper_policy_instance_new(e->lib, &e->env, o->cfg, &e->pol, err)))
		return rc;
	const struct skipper_needs *nd = skipper_policy_instance_needs(e->pol);
	if (nd->flags & SKIPPER_NEED_TOPK)
		e->draft.top_k = nd->top_k > 0 ? nd->top_k : 10;
	if (e->draft.top_k > SKIPPER_TOPK_MAX)
		e->draft.top_k = SKIPPER_TOPK_MAX;
	e->cap.needs = nd->flags;
	e->cap.prompt_rows = nd->prompt_rows > 0 ? nd->prompt_rows : 1;
	if (e->cap.prompt_rows > MAX_NODES + 1)
		e->cap.prompt_rows = MAX_NODES + 1;
	/* SUBLAYER_STATES only modifies the *_STATES captures */
	e->cap.sub = (e->cap.needs & SKIPPER_NEED_SUBLAYER_STATES) != 0;
	e->cap.n_points = e->cap.sub ? 2 * e->n_layer + 1 : e->n_layer + 1;
	if (!(e->cap.needs & (SKIPPER_NEED_LAST_LAYER_STATES | SKIPPER_NEED_ACCEPTED_STATES)))
		return SKIPPER_OK;
	size_t per = (size_t)e->cap.n_points * m->hp.n_embd;
	if (e->cap.n_points > (int)(sizeof e->cap.layers / sizeof e->cap.layers[0]))
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "state captures: %d layers is too many", e->n_layer);
	for (int l = 0; l < e->cap.n_points; l++)
		e->cap.layers[l] = l - 1;
	e->cap.buf = malloc((MAX_NODES + 1) * per * sizeof *e->cap.buf);
	e->cap.sel = malloc((MAX_NODES + 1) * per * sizeof *e->cap.sel);
	if (!e->cap.buf || !e->cap.sel)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (state captures)");
	return SKIPPER_OK;
}

int skipper_engine_new(struct skipper_backend *be, const struct skipper_tokenizer *tok,
                       const struct skipper_engine_opts *o, struct skipper_engine **out, struct skipper_error *err)
{
	static const struct skipper_engine_opts plain = { 0 };
	struct skipper_engine *e = calloc(1, sizeof *e);
	size_t nv;
	int rc = SKIPPER_OK;

	if (!o)
		o = &plain;
	if (!e) {
		skipper_policy_unload(o->lib);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	e->be = be;
	e->tok = tok;
	e->lib = o->lib;
	e->n_vocab = be->model->hp.n_vocab;
	e->n_layer = be->model->hp.n_layer;
	e->draft.top_k = 1;
	e->pace.no_guard = o->no_guard;
	e->seq = o->seq;
	e->prefix_cache = o->prefix_cache;
	e->lk.history = o->history;
	e->pace.note = o->note;
	e->pace.note_ctx = o->note_ctx;
	set_lookup(e, &o->lookup);
	/* a row of the head per token: an id the model writes must be text */
	if (tok && skipper_tokenizer_n_vocab(tok) != e->n_vocab) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: the vocabulary has %d tokens, the embedding %d rows",
		                  be->model->path ? be->model->path : be->model->name,
		                  skipper_tokenizer_n_vocab(tok), be->model->hp.n_vocab);
		goto fail;
	}
	if ((o->cost_cache && !(e->pace.cost_cache = strdup(o->cost_cache))) ||
	    (o->ngrams && (rc = set_ngrams(e, o->ngrams, err))) ||
	    (rc = set_draft_vocab(e, o->draft_vocab, o->n_draft_vocab, err)) ||
	    (e->lib && (rc = make_policy(e, o, err))))
		goto fail_rc;
	nv = (size_t)e->n_vocab;
	e->draft.skip_attn = calloc((size_t)e->n_layer, 1);
	e->draft.skip_mlp = calloc((size_t)e->n_layer, 1);
	e->draft.top_ids = calloc((size_t)MAX_DRAFT * e->draft.top_k, sizeof *e->draft.top_ids);
	e->draft.top_probs = calloc((size_t)MAX_DRAFT * e->draft.top_k, sizeof *e->draft.top_probs);
	e->vb.p = malloc(nv * sizeof *e->vb.p);
	e->vb.q = malloc(nv * sizeof *e->vb.q);
	e->vb.scratch = malloc(nv * sizeof *e->vb.scratch);
	if (!e->draft.skip_attn || !e->draft.skip_mlp || !e->draft.top_ids || !e->draft.top_probs || !e->vb.p ||
	    !e->vb.q || !e->vb.scratch) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto fail;
	}
	*out = e;
	return SKIPPER_OK;
fail_rc:
	if (!rc)
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
fail:
	skipper_engine_free(e);
	return rc;
}

/* What to do about a full context: a larger [model] ctx, unless the model
 * file's own context length is what capped it. */
const char *engine_ctx_advice(const struct skipper_engine *e)
{
	int train = e->be->model->hp.n_ctx_train;
	return train > 0 && e->be->n_ctx >= train ? "the model file's context_length, the most it allows"
	                                          : "raise [model] ctx";
}

/* Buffers only sampling needs, allocated on first use. */
static int need_sampling_buffers(struct skipper_engine *e, struct skipper_error *err)
{
	size_t nv = (size_t)e->n_vocab;
	if (!e->vb.logits)
		e->vb.logits = malloc((MAX_NODES + 1) * nv * sizeof *e->vb.logits);
	if (!e->draft.q)
		e->draft.q = malloc(MAX_DRAFT * nv * sizeof *e->draft.q);
	if (!e->vb.logits || !e->draft.q)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (sampling buffers)");
	return SKIPPER_OK;
}

static int push_generated(struct skipper_engine *e, int n, int32_t tok)
{
	if (n == e->out.cap) {
		int cap = e->out.cap ? e->out.cap * 2 : 256;
		int32_t *g = realloc(e->out.gen, (size_t)cap * sizeof *g);
		if (!g)
			return SKIPPER_ERR_NOMEM;
		e->out.gen = g;
		e->out.cap = cap;
	}
	e->out.gen[n] = tok;
	return SKIPPER_OK;
}

/* Append to the lookup history (prompt, then committed output). */
static int hist_push(struct skipper_engine *e, const int32_t *t, int n)
{
	if (e->lk.hist_n + n > e->lk.hist_cap) {
		int cap = e->lk.hist_cap ? e->lk.hist_cap : 1024;
		while (cap < e->lk.hist_n + n)
			cap *= 2;
		int32_t *h = realloc(e->lk.hist, (size_t)cap * sizeof *h);
		if (!h)
			return SKIPPER_ERR_NOMEM;
		e->lk.hist = h;
		e->lk.hist_cap = cap;
	}
	memcpy(e->lk.hist + e->lk.hist_n, t, (size_t)n * sizeof *t);
	e->lk.hist_n += n;
	return SKIPPER_OK;
}

/* Commit one output token: record, report, check EOS / max / callback. */
int engine_emit(struct skipper_engine *e, struct round_ctx *r, int32_t tok)
{
	if (r->done)
		return SKIPPER_OK;
	if (push_generated(e, r->n_gen, tok) || hist_push(e, &tok, 1))
		return SKIPPER_ERR_NOMEM;
	r->n_gen++;
	if (r->cb && r->cb(r->user, tok))
		r->done = 1;
	if (skipper_tokenizer_is_eog(e->tok, tok) || r->n_gen >= r->gp->max_tokens)
		r->done = 1;
	return SKIPPER_OK;
}

/* After the prompt's last row went through the model (its top-1 in
 * e->vb.top[0], its logits in e->vb.logits when sampling; n_rows captured
 * prompt rows in cap.sel, their positions in vb.rows): the first token,
 * the policy's begin hook, the first token committed. */
int engine_prefill_done(struct skipper_engine *e, const int32_t *prompt, int n_prompt, const float *mean, int n_rows,
                        double t_prefill, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	struct skipper_states prompt_states;
	int rc = SKIPPER_OK;
	int32_t first;

	if (e->cap.buf) {
		for (int i = 0; i < n_rows; i++) {
			e->cap.pos[i] = e->vb.rows[i];
			e->cap.tok[i] = prompt[e->vb.rows[i]];
		}
		prompt_states = (struct skipper_states){ .n_rows = n_rows, .n_points = e->cap.n_points,
		                                         .n_embd = e->be->model->hp.n_embd, .pos = e->cap.pos,
		                                         .token = e->cap.tok, .data = e->cap.sel };
	}
	if (r->greedy) {
		first = e->vb.top[0];
	} else {
		skipper_process_logits(&r->gp->sampling, e->vb.logits, e->n_vocab, e->vb.p, e->vb.scratch);
		first = skipper_sample_probs(e->vb.p, e->n_vocab, &e->rng);
	}
	r->st->t_prefill = t_prefill;
	r->n_past = n_prompt;
	e->out.committed = r->n_past;
	r->root = first;
	engine_costs_price(e, r->n_past);

	/* the policy starts before the first token is shown: a policy that
	 * cannot run (no profile, say) fails with nothing printed */
	if (e->pol) {
		struct skipper_request req = { .id = e->request_id, .prompt = prompt, .n_prompt = n_prompt,
		                               .n_layer = e->n_layer, .max_tokens = r->gp->max_tokens, .greedy = r->greedy,
		                               .prompt_mean = mean, .states = e->cap.buf ? &prompt_states : NULL };
		double t0 = engine_now();
		rc = skipper_policy_begin(e->pol, &req, err);
		r->st->t_policy += engine_now() - t0;
		e->began = rc == SKIPPER_OK;
	}
	if (rc == SKIPPER_OK && (rc = engine_emit(e, r, first)))
		return skipper_fail(err, rc, "out of memory");
	return rc;
}

/* Prefill in one go (engine_prefill, with the captures the policy needs),
 * then engine_prefill_done. */
static int start_request(struct skipper_engine *e, const int32_t *prompt, int n_prompt, struct skipper_error *err)
{
	float *mean = NULL;
	double t0 = engine_now();
	int n_rows = 0, rc;

	if ((e->cap.needs & SKIPPER_NEED_PROMPT_MEAN) && e->pol &&
	    !(mean = malloc((size_t)e->be->model->hp.n_embd * sizeof *mean)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	rc = engine_prefill(e, prompt, n_prompt, e->r.greedy, mean, &n_rows, err);
	if (!rc)
		rc = engine_prefill_done(e, prompt, n_prompt, mean, n_rows, engine_now() - t0, err);
	free(mean);
	return rc;
}

/* Fill the run's totals and end the policy (end hook), keeping the first error. */
static int finish_request(struct skipper_engine *e, struct round_ctx *r, int n_prompt, double t_start, int began,
                          int rc, struct skipper_error *err)
{
	struct skipper_run_stats *st = r->st;

	st->n_generated = r->n_gen;
	st->t_total = engine_now() - t_start;
	st->alpha = st->drafted ? (double)st->accepted / st->drafted : 0;
	st->mean_accepted = st->rounds ? (double)(r->n_gen - 1) / st->rounds : 1.0;
	/* the first token comes out of the prefill; the rest out of decoding */
	if (r->n_gen > 1 && st->t_total - st->t_prefill > 0)
		st->tokens_per_s = (r->n_gen - 1) / (st->t_total - st->t_prefill);
	/* what the sequence's cache now holds, for the next request's prompt
	 * (without memory for the record the next one reads its whole prompt) */
	if (!rc && e->prefix_cache && r->n_past <= e->lk.hist_n) {
		struct skipper_error ne = { 0 };
		skipper_backend_kv_note(e->be, e->seq, e->lk.hist, r->n_past, &ne);
	}
	/* what was written is history for the next requests (lookup's, so
	 * only where lookup runs) */
	if (e->lk.history && e->lk.opts.enable && r->n_gen > 0)
		skipper_history_add(e->lk.history, e->lk.hist, e->lk.hist_n);
	if (began) {
		struct skipper_stats ps = { .n_prompt = n_prompt, .n_generated = r->n_gen, .rounds = st->rounds,
		                            .verify_passes = st->rounds, .drafted = st->drafted, .accepted = st->accepted,
		                            .seconds = st->t_total, .prefill_seconds = st->t_prefill,
		                            .draft_seconds = st->t_draft, .verify_seconds = st->t_verify,
		                            .policy_seconds = st->t_policy };
		struct skipper_error e2 = { 0 };
		int rc2 = skipper_policy_end(e->pol, &ps, rc ? &e2 : err);
		if (rc2 && !rc)
			rc = rc2;
	}
	return rc;
}

int engine_request_start(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                         const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                         struct skipper_run_stats *st, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	int rc;

	*r = (struct round_ctx){ .gp = &e->gp, .greedy = gp->sampling.temperature <= 0, .cb = cb, .user = user, .st = st };
	e->gp = *gp;
	e->t_start = engine_now();
	e->began = 0;
	memset(st, 0, sizeof *st);
	st->n_prompt = n_prompt;
	st->draft_head = e->draft.head_n;
	if (n_prompt <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "empty prompt");
	if (gp->max_tokens <= 0) {
		r->done = 1;
		return SKIPPER_OK;
	}
	if (n_prompt + 1 > e->be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %d tokens does not fit the context of %d (%s)",
		                    n_prompt, e->be->n_ctx, engine_ctx_advice(e));
	if (!r->greedy && (rc = need_sampling_buffers(e, err)))
		return rc;
	skipper_rng_seed(&e->rng, gp->seed);
	e->request_id++;
	e->lk.hist_n = 0;
	if (hist_push(e, prompt, n_prompt))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	return SKIPPER_OK;
}

int engine_request_prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, struct skipper_error *err)
{
	return start_request(e, prompt, n_prompt, err);
}

int engine_round_plan(struct skipper_engine *e, int *n_draft, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;

	r->n_gen0 = r->n_gen;
	r->drafted0 = r->st->drafted;
	r->t_round = engine_clock(e);
	r->p_round = r->st->t_policy;
	r->t_draft = 0;
	return engine_plan_round(e, r, n_draft, err);
}

int engine_round_build(struct skipper_engine *e, int n_draft, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	if (r->lookup_only)
		n_draft = e->lk.tree_n ? 0 : engine_lookup_as_chain(e, r);
	return engine_verify_build(e, r, n_draft, err);
}

int engine_round_prepare(struct skipper_engine *e, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	struct skipper_run_stats *st = r->st;
	int n_draft, rc;

	if ((rc = engine_round_plan(e, &n_draft, err)))
		return rc;
	if (n_draft > 0) {
		double p0 = st->t_policy, t0 = engine_now(); /* should_exit time is the policy's */
		rc = engine_draft(e, r, n_draft, &n_draft, err);
		r->t_draft = engine_now() - t0 - (st->t_policy - p0);
		st->t_draft += r->t_draft;
		if (rc)
			return rc;
	}
	return engine_round_build(e, n_draft, err);
}

int engine_round_finish(struct skipper_engine *e, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	int rc = engine_verify_accept(e, r, err);
	/* the guards time this sequence's rounds against its plain ones: a
	 * pass shared with others times them all */
	if (!rc && !e->batch.others)
		engine_account_round(e, r, r->st->drafted - r->drafted0, r->n_gen0);
	return rc;
}

int engine_request_finish(struct skipper_engine *e, int rc, struct skipper_error *err)
{
	return finish_request(e, &e->r, e->r.st->n_prompt, e->t_start, e->began, rc, err);
}

int skipper_engine_begin(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                         const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                         struct skipper_run_stats *st, struct skipper_error *err)
{
	int rc = engine_request_start(e, prompt, n_prompt, gp, cb, user, st, err);
	e->in_request = 1;
	e->prompt = prompt;
	e->n_prompt = n_prompt;
	e->prefilled = 0;
	e->prefill_seconds = 0;
	if (rc)
		e->r.done = 1;
	return rc;
}

int skipper_engine_running(const struct skipper_engine *e) { return e->in_request && !e->r.done; }

int skipper_engine_end(struct skipper_engine *e, int rc, struct skipper_error *err)
{
	e->in_request = 0;
	e->batch.others = 0;
	return engine_request_finish(e, rc, err);
}

int skipper_engine_generate(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                            const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                            struct skipper_run_stats *st, struct skipper_error *err)
{
	int rc = engine_request_start(e, prompt, n_prompt, gp, cb, user, st, err);

	if (rc || e->r.done)
		return rc;
	rc = engine_request_prefill(e, prompt, n_prompt, err);
	while (!rc && !e->r.done) {
		if (!(rc = engine_round_prepare(e, err)) && !(rc = engine_verify_pass(e, &e->r, err)))
			rc = engine_round_finish(e, err);
	}
	return engine_request_finish(e, rc, err);
}
