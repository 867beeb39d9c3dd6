/* Several engines' steps as one forward pass (continuous batching, skipper
 * serve): each engine with a request in progress brings its rows, a chunk
 * of its prompt or its round's verification batch, in its own KV sequence
 * of the backend; the backend runs them as one pass, every weight read
 * once for all of them; each engine takes its outputs and goes on. The
 * backend's batch invariance makes every row's result what it would be in
 * a pass of its own, so each request's output is what it would be alone.
 *
 * What a round verifies beside the others' rows is priced at the pass's
 * rate (plan.c, round_value): with many sequences each extra row costs the
 * pass more than it costs a sequence alone, and drafting shrinks. Layer-
 * skip drafts come before the pass: the sequences whose policies chose
 * the same skip mask draft together, each draft step one pass of a row
 * for every one of them still drafting, and each drafts the length that
 * pays at the pass's rate with a share of those steps
 * (engine_batch_draft_len). Policies that choose a mask per prompt
 * (knn-router's clusters) or per request (the searches) are grouped by
 * the mask they chose, so the same cluster's requests draft together. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "engine_impl.h"

/* One engine's part of the pass. */
struct part {
	struct skipper_engine *e;
	int row0, n;          /* its rows */
	int out0, n_out;      /* its output rows */
	int cap0, n_cap;      /* its captured rows */
	int prefill;          /* a prompt chunk (else a round's verification) */
	int gen0;             /* its request's output before the pass */
};

struct skipper_pass {
	struct skipper_backend *be;
	int chunk;            /* prompt rows per pass of a request being read */
	int cap;              /* rows there is room for */
	int32_t *tok, *pos, *parent, *out, *top, *cap_rows;
	float *logits, *caps; /* grown to what a pass needs */
	size_t logits_rows, caps_rows;
	struct skipper_fw_seg *seg;
	struct part *part;
	int n_part_cap;
	/* per engine, while its round's draft steps run: the length it may
	 * draft, drafted so far, whether its chain ended, its draft group */
	int *len, *got, *stop, *group;
	/* the draft steps' outputs: SKIPPER_MAX_TOPK ids and probabilities a
	 * part, the logits with sampling */
	int32_t *dtop;
	float *dprob, *dlogits;
	size_t dlogits_rows;
	uint64_t draft_passes, draft_rows;
	/* tokens committed and decode steps spent (the curve's) by recent
	 * passes, decayed: the rate extra rows are priced at */
	double tok_seen, steps_seen;
};

int skipper_pass_new(struct skipper_backend *be, int prefill_chunk, struct skipper_pass **out,
                     struct skipper_error *err)
{
	struct skipper_pass *p = calloc(1, sizeof *p);
	if (!p)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	p->be = be;
	p->chunk = prefill_chunk > 0 ? prefill_chunk : 512;
	*out = p;
	return SKIPPER_OK;
}

void skipper_pass_free(struct skipper_pass *p)
{
	if (!p)
		return;
	free(p->tok);
	free(p->pos);
	free(p->parent);
	free(p->out);
	free(p->top);
	free(p->cap_rows);
	free(p->logits);
	free(p->caps);
	free(p->seg);
	free(p->part);
	free(p->len);
	free(p->got);
	free(p->stop);
	free(p->group);
	free(p->dtop);
	free(p->dprob);
	free(p->dlogits);
	free(p);
}

/* Room for n rows and n_part parts. */
static int reserve(struct skipper_pass *p, int n, int n_part)
{
	if (n > p->cap) {
		int cap = n > 2 * p->cap ? n : 2 * p->cap;
		int32_t **a[] = { &p->tok, &p->pos, &p->parent, &p->out, &p->top, &p->cap_rows };
		for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
			int32_t *x = realloc(*a[i], sizeof **a[i] * (size_t)cap);
			if (!x)
				return -1;
			*a[i] = x;
		}
		p->cap = cap;
	}
	if (n_part > p->n_part_cap) {
		struct part *x = realloc(p->part, sizeof *x * (size_t)n_part);
		struct skipper_fw_seg *y = realloc(p->seg, sizeof *y * (size_t)n_part);
		if (x)
			p->part = x;
		if (y)
			p->seg = y;
		if (!x || !y)
			return -1;
		int **a[] = { &p->len, &p->got, &p->stop, &p->group };
		for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
			int *z = realloc(*a[i], sizeof **a[i] * (size_t)n_part);
			if (!z)
				return -1;
			*a[i] = z;
		}
		int32_t *t = realloc(p->dtop, sizeof *t * SKIPPER_MAX_TOPK * (size_t)n_part);
		if (t)
			p->dtop = t;
		float *f = realloc(p->dprob, sizeof *f * SKIPPER_MAX_TOPK * (size_t)n_part);
		if (f)
			p->dprob = f;
		if (!t || !f)
			return -1;
		p->n_part_cap = n_part;
	}
	return 0;
}

static int grow_floats(float **buf, size_t *have, size_t rows, size_t width)
{
	if (rows <= *have)
		return 0;
	float *x = realloc(*buf, sizeof *x * rows * width);
	if (!x)
		return -1;
	*buf = x;
	*have = rows;
	return 0;
}

/* A request's prompt can be read in chunks among other sequences' rows
 * unless its policy needs what only engine_prefill captures (the prompt's
 * mean state, its last rows' states). */
static int chunkable(const struct skipper_engine *e)
{
	return !e->pol || !(e->cap.needs & (SKIPPER_NEED_PROMPT_MEAN | SKIPPER_NEED_LAST_LAYER_STATES |
	                                     SKIPPER_NEED_ACCEPTED_STATES));
}

/* This step's rows of e into the pass (after row n), or none (*part->n 0:
 * its prompt was read on its own): a chunk of its prompt, or the
 * verification batch of its round, planned before and n_draft tokens
 * drafted. */
static int prepare(struct skipper_pass *p, struct skipper_engine *e, int n_draft, struct part *pt, int n, int n_out,
                   int n_cap, struct skipper_error *err)
{
	struct round_ctx *r = &e->r;
	int rc;

	*pt = (struct part){ .e = e, .row0 = n, .out0 = n_out, .cap0 = n_cap };
	if (e->prefilled < e->n_prompt) {
		if (!chunkable(e)) { /* the whole prompt, with its captures, on its own */
			e->prefilled = e->n_prompt;
			return engine_request_prefill(e, e->prompt, e->n_prompt, err);
		}
		if (!e->prefilled)
			e->prefilled = engine_reusable(e, e->prompt, e->n_prompt, 1);
		pt->prefill = 1;
		pt->n = e->n_prompt - e->prefilled < p->chunk ? e->n_prompt - e->prefilled : p->chunk;
		if (reserve(p, n + pt->n, 0))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		for (int i = 0; i < pt->n; i++) {
			p->tok[n + i] = e->prompt[e->prefilled + i];
			p->pos[n + i] = e->prefilled + i;
			p->parent[n + i] = i ? n + i - 1 : -1;
		}
		if (e->prefilled + pt->n == e->n_prompt) { /* the last row gives the first token */
			p->out[n_out] = n + pt->n - 1;
			pt->n_out = 1;
		}
		return SKIPPER_OK;
	}
	if ((rc = engine_round_build(e, n_draft, err)))
		return rc;
	pt->n = pt->n_out = r->n_rows;
	if (reserve(p, n + pt->n, 0))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < pt->n; i++) {
		p->tok[n + i] = e->vb.tok[i];
		p->pos[n + i] = e->vb.pos[i];
		p->parent[n + i] = r->chain ? (i ? n + i - 1 : -1) : e->vb.parent[i] < 0 ? -1 : n + e->vb.parent[i];
		p->out[n_out + i] = n + i;
	}
	if (r->capture) {
		pt->n_cap = pt->n;
		for (int i = 0; i < pt->n; i++)
			p->cap_rows[n_cap + i] = n + i;
	}
	return SKIPPER_OK;
}

/* e's outputs from the pass, then its step's end. */
static int take(struct skipper_pass *p, struct part *pt, double seconds, const float *logits, const float *caps,
                size_t cap_width, struct skipper_error *err)
{
	struct skipper_engine *e = pt->e;
	struct round_ctx *r = &e->r;

	for (int i = 0; i < pt->n_out; i++)
		e->vb.top[i] = p->top[pt->out0 + i];
	if (logits && !r->greedy)
		memcpy(e->vb.logits, logits + (size_t)pt->out0 * e->n_vocab, sizeof *logits * (size_t)pt->n_out * e->n_vocab);
	if (pt->n_cap)
		memcpy(e->cap.buf, caps + (size_t)pt->cap0 * cap_width, sizeof *caps * (size_t)pt->n_cap * cap_width);
	if (pt->prefill) {
		e->prefilled += pt->n;
		e->prefill_seconds += seconds;
		return pt->n_out ? engine_prefill_done(e, e->prompt, e->n_prompt, NULL, 0, e->prefill_seconds, err)
		                 : SKIPPER_OK;
	}
	engine_verify_passed(e, r, seconds);
	return engine_round_finish(e, err);
}

/* Whether engines a and b draft with the same mask and outputs. */
static int same_draft(const struct skipper_engine *a, const struct skipper_engine *b)
{
	return a->n_layer == b->n_layer && a->draft.top_k == b->draft.top_k && a->draft.head_n == b->draft.head_n &&
	       !memcmp(a->draft.skip_attn, b->draft.skip_attn, (size_t)a->n_layer) &&
	       !memcmp(a->draft.skip_mlp, b->draft.skip_mlp, (size_t)a->n_layer);
}

/* Whether engine i of group g drafts token `step` (its chain goes on). */
static int drafting(const struct skipper_pass *p, const int *rc, int i, int g, int step)
{
	return p->group[i] == g && !rc[i] && !p->stop[i] && step < p->len[i];
}

/* The draft steps of the engines of group g (p->group), each up to its
 * p->len: step k is one pass of row k of every member still drafting, in
 * its own sequence. Each member is charged its share of a step's time.
 * Returns what the steps cost by the curve, in decode steps. */
static double draft_group(struct skipper_pass *p, struct skipper_engine **engines, int n_engines, int g, int *rc,
                        struct skipper_error *err)
{
	struct skipper_engine *e0 = NULL;
	int sampling = 0, members = 0;
	double cost = 0;

	for (int i = 0; i < n_engines; i++)
		if (p->group[i] == g) {
			e0 = e0 ? e0 : engines[i];
			sampling |= !engines[i]->r.greedy;
			p->stop[i] = 0;
			members++;
		}
	const int top_k = e0->draft.top_k, width = e0->draft.head_n ? e0->draft.head_n : e0->n_vocab;
	if (reserve(p, members, 0) ||
	    (sampling && grow_floats(&p->dlogits, &p->dlogits_rows, (size_t)members, (size_t)width))) {
		for (int i = 0; i < n_engines; i++)
			if (p->group[i] == g)
				rc[i] = skipper_fail(&err[i], SKIPPER_ERR_NOMEM, "out of memory (draft steps of %d sequences)",
				                     members);
		return 0;
	}
	const double step_cost = engine_skip_step_cost(e0);
	for (int step = 0;; step++) {
		int n = 0;
		for (int i = 0; i < n_engines; i++) {
			struct skipper_engine *e = engines[i];
			if (!drafting(p, rc, i, g, step))
				continue;
			p->tok[n] = step ? e->draft.tok[step - 1] : e->r.root;
			p->pos[n] = e->r.n_past + step;
			p->parent[n] = -1;
			p->out[n] = n;
			p->seg[n] = (struct skipper_fw_seg){ .seq = e->seq, .row0 = n, .n = 1, .n_past = e->r.n_past + step };
			n++;
		}
		if (!n)
			return cost;
		struct skipper_forward fw = {
			.n = n, .tokens = p->tok, .pos = p->pos, .parent = p->parent, .kv_write = 1, .n_seg = n, .seg = p->seg,
			.skip_attn = e0->draft.skip_attn, .skip_mlp = e0->draft.skip_mlp,
			.n_out = n, .out_rows = p->out, .top_k = top_k, .top_ids = p->dtop, .top_probs = p->dprob,
			.logits = sampling ? p->dlogits : NULL, .head_subset = e0->draft.head_n > 0,
		};
		struct skipper_error ferr = { 0 };
		double t0 = engine_now();
		int frc = skipper_backend_forward(p->be, &fw, &ferr), row = 0;
		double share = (engine_now() - t0) / n;
		p->draft_passes++;
		p->draft_rows += (uint64_t)n;
		cost += step_cost * engine_verify_cost(e0, n);
		for (int i = 0; i < n_engines; i++) {
			struct skipper_engine *e = engines[i];
			if (!drafting(p, rc, i, g, step))
				continue;
			if (frc) {
				rc[i] = frc;
				err[i] = ferr;
				continue;
			}
			memcpy(&e->draft.top_ids[step * top_k], &p->dtop[row * top_k], sizeof *p->dtop * (size_t)top_k);
			memcpy(&e->draft.top_probs[step * top_k], &p->dprob[row * top_k], sizeof *p->dprob * (size_t)top_k);
			if (!e->r.greedy)
				memcpy(e->draft.head_n ? e->draft.sub_logits : e->vb.logits, p->dlogits + (size_t)row * width,
				       sizeof *p->dlogits * (size_t)width);
			row++;
			e->r.t_draft += share;
			e->r.st->t_draft += share;
			p->got[i] = step + 1;
			rc[i] = engine_draft_took(e, &e->r, step, p->len[i], &p->stop[i], &err[i]);
		}
	}
}

/* The planned draft steps of every engine: the engines that drafted with
 * the same mask form a group; each member's length is what pays with
 * the group's size, recounted while members drop out. Returns what the
 * steps cost by the curve, in decode steps. */
static double draft_steps(struct skipper_pass *p, struct skipper_engine **engines, int n_engines, int *rc,
                          struct skipper_error *err)
{
	int n_groups = 0;
	double cost = 0;

	for (int i = 0; i < n_engines; i++)
		p->group[i] = -1;
	for (int i = 0; i < n_engines; i++) {
		if (rc[i] || p->len[i] <= 0 || p->group[i] >= 0)
			continue;
		int size = 0, left;
		for (int j = i; j < n_engines; j++)
			if (!rc[j] && p->len[j] > 0 && p->group[j] < 0 && same_draft(engines[i], engines[j])) {
				p->group[j] = n_groups;
				size++;
			}
		for (;; size = left) {
			left = 0;
			for (int j = i; j < n_engines; j++)
				if (p->group[j] == n_groups && p->len[j] > 0)
					left += (p->len[j] = engine_batch_draft_len(engines[j], p->len[j], size)) > 0;
			if (left == size)
				break;
		}
		cost += draft_group(p, engines, n_engines, n_groups++, rc, err);
	}
	return cost;
}

void skipper_pass_drafts(const struct skipper_pass *p, uint64_t *passes, uint64_t *rows)
{
	*passes = p->draft_passes;
	*rows = p->draft_rows;
}

int skipper_pass_run(struct skipper_pass *p, struct skipper_engine **engines, int n_engines, int *rc,
                     struct skipper_error *err)
{
	int n = 0, n_out = 0, n_cap = 0, n_part = 0, n_active = 0, sampling = 0, committed = 0, n_round = 0;
	size_t cap_width = 0;

	for (int i = 0; i < n_engines; i++)
		n_active += skipper_engine_running(engines[i]);
	if (reserve(p, 1, n_engines)) {
		for (int i = 0; i < n_engines; i++)
			rc[i] = skipper_fail(&err[i], SKIPPER_ERR_NOMEM, "out of memory");
		return 0;
	}
	/* before any pass: plain steps of every sequence, one pass */
	double rate = p->steps_seen > 0 ? p->tok_seen / p->steps_seen : 0;
	for (int i = 0; i < n_engines; i++) {
		struct skipper_engine *e = engines[i];
		rc[i] = SKIPPER_OK;
		p->len[i] = p->got[i] = 0;
		if (!skipper_engine_running(e))
			continue;
		e->batch.others = n_active - 1;
		e->batch.rate = rate > 0 ? rate : n_active / engine_verify_cost(e, n_active);
		if (e->prefilled == e->n_prompt)
			rc[i] = engine_round_plan(e, &p->len[i], &err[i]);
	}
	double draft_cost = draft_steps(p, engines, n_engines, rc, err);
	for (int i = 0; i < n_engines; i++) {
		struct skipper_engine *e = engines[i];
		struct part *pt = &p->part[n_part];
		if (!skipper_engine_running(e) || rc[i] || (rc[i] = prepare(p, e, p->got[i], pt, n, n_out, n_cap, &err[i])) ||
		    !pt->n)
			continue;
		pt->gen0 = e->r.n_gen;
		p->seg[n_part] = (struct skipper_fw_seg){ .seq = e->seq, .row0 = n, .n = pt->n,
			                                  .n_past = pt->prefill ? e->prefilled : e->r.n_past };
		sampling |= !e->r.greedy && pt->n_out;
		if (pt->n_cap)
			cap_width = (size_t)e->cap.n_points * e->be->model->hp.n_embd;
		n += pt->n;
		n_out += pt->n_out;
		n_cap += pt->n_cap;
		n_part++;
	}
	if (!n_part)
		return 0;
	if ((sampling && grow_floats(&p->logits, &p->logits_rows, (size_t)n_out, (size_t)p->be->model->hp.n_vocab)) ||
	    (n_cap && grow_floats(&p->caps, &p->caps_rows, (size_t)n_cap, cap_width))) {
		for (int k = 0; k < n_part; k++)
			for (int i = 0; i < n_engines; i++)
				if (engines[i] == p->part[k].e)
					rc[i] = skipper_fail(&err[i], SKIPPER_ERR_NOMEM, "out of memory (a pass of %d rows)", n);
		return 0;
	}
	const struct skipper_engine *e0 = p->part[0].e; /* captures: the same policy everywhere */
	struct skipper_forward fw = {
		.n = n, .tokens = p->tok, .pos = p->pos, .parent = p->parent, .kv_write = 1,
		.n_seg = n_part, .seg = p->seg,
		.n_out = n_out, .out_rows = p->out, .top_k = 1, .top_ids = p->top, .logits = sampling ? p->logits : NULL,
		.n_cap_layers = n_cap ? e0->cap.n_points : 0, .cap_layers = e0->cap.layers, .cap_sublayers = e0->cap.sub,
		.n_cap_rows = n_cap, .cap_rows = p->cap_rows, .captures = n_cap ? p->caps : NULL,
	};
	struct skipper_error ferr = { 0 };
	double t0 = engine_now();
	int frc = skipper_backend_forward(p->be, &fw, &ferr);
	double seconds = engine_now() - t0;
	for (int k = 0; k < n_part; k++) {
		struct part *pt = &p->part[k];
		int i = 0;
		while (engines[i] != pt->e)
			i++;
		if (frc) {
			rc[i] = frc;
			err[i] = ferr;
		} else {
			rc[i] = take(p, pt, seconds, sampling ? p->logits : NULL, p->caps, cap_width, &err[i]);
			if (!pt->prefill) {
				committed += pt->e->r.n_gen - pt->gen0;
				n_round += pt->n;
			}
		}
	}
	/* the rate rounds yield: tokens committed per step the curve charges
	 * for their rows and draft steps (a prompt's rows are no round's) */
	if (n_round) {
		p->tok_seen = 0.9 * p->tok_seen + committed;
		p->steps_seen = 0.9 * p->steps_seen + engine_verify_cost(e0, n_round) + draft_cost;
	}
	return n;
}
