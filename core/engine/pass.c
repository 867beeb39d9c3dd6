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
 * pass more than it costs a sequence alone, and drafting shrinks; layer-
 * skip drafts, whose draft passes come before the pass, are left to a
 * sequence that runs alone. */
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
 * its prompt was read on its own). */
static int prepare(struct skipper_pass *p, struct skipper_engine *e, struct part *pt, int n, int n_out, int n_cap,
                   struct skipper_error *err)
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
	if ((rc = engine_round_prepare(e, err)))
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

int skipper_pass_run(struct skipper_pass *p, struct skipper_engine **engines, int n_engines, int *rc,
                     struct skipper_error *err)
{
	int n = 0, n_out = 0, n_cap = 0, n_part = 0, n_active = 0, sampling = 0, committed = 0;
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
		if (!skipper_engine_running(e))
			continue;
		e->batch.others = n_active - 1;
		e->batch.rate = rate > 0 ? rate : n_active / engine_verify_cost(e, n_active);
		struct part *pt = &p->part[n_part];
		if ((rc[i] = prepare(p, e, pt, n, n_out, n_cap, &err[i])) || !pt->n)
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
			committed += pt->e->r.n_gen - pt->gen0;
		}
	}
	/* the rate a pass yields: tokens committed per step the curve charges */
	p->tok_seen = 0.9 * p->tok_seen + committed;
	p->steps_seen = 0.9 * p->steps_seen + engine_verify_cost(e0, n);
	return n;
}
