/* Full-model prompt passes: the prefill of a request (with the captures a
 * policy asks for) and the prompt embedding of knn-router's calibration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"
#include "model/quant.h"

/* out += sum over n rows (stride floats apart) of rmsnorm(row) * w / n_total:
 * the model's final norm applied on the host to last-layer captures, since
 * the backend captures the residual stream before it. Rows are added in
 * order, so a mean built in pieces equals one built at once. */
static int add_final_norm_mean(const struct skipper_model_view *m, const float *rows, size_t stride, int n, int n_total,
                               float *out)
{
	int d = m->hp.n_embd;
	float *w = malloc(2 * (size_t)d * sizeof *w), *tmp;
	if (!w)
		return SKIPPER_ERR_NOMEM;
	tmp = w + d;
	skipper_dequant_row(m->out_norm.type, m->out_norm.data, w, d);
	for (int i = 0; i < n; i++) {
		const float *x = rows + (size_t)i * stride;
		double ss = 0;
		for (int k = 0; k < d; k++)
			ss += (double)x[k] * x[k];
		float scale = (float)(1.0 / sqrt(ss / d + m->hp.rms_eps));
		for (int k = 0; k < d; k++)
			tmp[k] = x[k] * scale * w[k];
		for (int k = 0; k < d; k++)
			out[k] += tmp[k] / n_total;
	}
	free(w);
	return SKIPPER_OK;
}

/* Full-model forward of tokens[0..n) after n_past committed slots (KV
 * written) capturing the last layer of every row into cap[n][n_embd]. */
static int forward_last_layer(struct skipper_engine *e, const int32_t *tokens, int n, int n_past, float *cap,
                              struct skipper_error *err)
{
	int32_t last = e->n_layer - 1, *rows = malloc((size_t)n * sizeof *rows);
	int rc;
	if (!rows)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		rows[i] = i;
	struct skipper_forward fw = { .n = n, .tokens = tokens, .seq = e->seq, .n_past = n_past, .kv_write = 1, .n_cap_layers = 1,
	                              .cap_layers = &last, .n_cap_rows = n, .cap_rows = rows, .captures = cap };
	rc = skipper_backend_forward(e->be, &fw, err);
	free(rows);
	return rc;
}

int skipper_engine_prompt_mean(struct skipper_engine *e, const int32_t *prompt, int n, float *out,
                               struct skipper_error *err)
{
	const struct skipper_model_view *m = e->be->model;
	size_t d = (size_t)m->hp.n_embd;
	float *cap;
	int rc;

	if (n <= 0 || n > e->be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %d tokens for a context of %d", n, e->be->n_ctx);
	if (!(cap = malloc((size_t)n * d * sizeof *cap)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	memset(out, 0, d * sizeof *out);
	if (!(rc = forward_last_layer(e, prompt, n, 0, cap, err)) && add_final_norm_mean(m, cap, d, n, n, out))
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	free(cap);
	return rc;
}

int engine_reusable(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int keep)
{
	int n = e->prefix_cache ? skipper_backend_kv_prefix(e->be, e->seq, prompt, n_prompt) : 0;
	if (keep < 1)
		keep = 1;
	if (n > n_prompt - keep)
		n = n_prompt - keep > 0 ? n_prompt - keep : 0;
	e->r.st->n_reused = n;
	return n;
}

/* e->progress told that `done` of the prompt's total tokens are read:
 * SKIPPER_ERR_INTERRUPTED where it answers stop. */
static int tell(struct skipper_engine *e, int done, int total, struct skipper_error *err)
{
	if (!e->progress(e->progress_ctx, done, total))
		return SKIPPER_OK;
	return skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "interrupted while reading the prompt (%d of %d tokens)", done,
	                    total);
}

/* Slots [from, to) of the prompt written in pieces of
 * SKIPPER_PREFILL_PIECE tokens (KV only, nothing read out), told before
 * the first and after each; total: the prompt's length. */
static int prefill_pieces(struct skipper_engine *e, const int32_t *prompt, int from, int to, int total,
                          struct skipper_error *err)
{
	int rc = tell(e, from, total, err);
	for (int at = from; at < to && !rc; at += SKIPPER_PREFILL_PIECE) {
		int n = to - at < SKIPPER_PREFILL_PIECE ? to - at : SKIPPER_PREFILL_PIECE;
		struct skipper_forward fw = { .n = n, .tokens = prompt + at, .seq = e->seq, .n_past = at, .kv_write = 1 };
		if (!(rc = skipper_backend_forward(e->be, &fw, err)))
			rc = tell(e, at + n, total, err);
	}
	return rc;
}

/* The one full-model prefill of a request. Its last row gives the first
 * token (top-1 in e->vb.top[0], logits in e->vb.logits when sampling). Captures
 * what the policy needs from this pass: the last *st_rows prompt rows at
 * every state point into cap_sel (*_STATES), and with mean != NULL the mean
 * post-final-norm state of all rows (PROMPT_MEAN). With both, the rows
 * before the captured ones go in a first call that captures only their last
 * layer: batch invariance makes the split prefill equal to one call. */
int engine_prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int greedy, float *mean,
                   int *st_rows, struct skipper_error *err)
{
	const struct skipper_model_view *m = e->be->model;
	size_t d = (size_t)m->hp.n_embd;
	int n_rows = e->cap.buf ? (n_prompt < e->cap.prompt_rows ? n_prompt : e->cap.prompt_rows) : 0;
	/* the rows before split are not in the main pass: with the mean they
	 * go in one of their own, else the sequence holds them already */
	int split = mean ? (e->cap.buf ? n_prompt - n_rows : 0) : engine_reusable(e, prompt, n_prompt, n_rows),
	    rc = SKIPPER_OK;
	float *lastcap = NULL; /* last-layer rows for the mean not in cap_sel */
	int n_last = mean ? (e->cap.buf ? split : n_prompt) : 0;

	if (n_last > 0 && !(lastcap = malloc((size_t)n_last * d * sizeof *lastcap)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (mean && split > 0)
		rc = forward_last_layer(e, prompt, split, 0, lastcap, err);
	/* a long prompt told as it goes: all but its last piece (and the rows
	 * the policy captures) in pieces ahead of the main pass; not where the
	 * mean wants every row's last layer */
	int ahead = n_prompt - (n_rows > SKIPPER_PREFILL_PIECE ? n_rows : SKIPPER_PREFILL_PIECE),
	    told = !rc && e->progress && !mean && ahead - split >= SKIPPER_PREFILL_PIECE;
	if (told) {
		rc = prefill_pieces(e, prompt, split, ahead, n_prompt, err);
		split = ahead;
	}
	if (!rc) {
		int32_t last = n_prompt - 1 - split, n = n_prompt - split, lastl = e->n_layer - 1, *rows = e->vb.rows;
		struct skipper_forward fw = {
			.n = n, .tokens = prompt + split, .seq = e->seq, .n_past = split, .kv_write = 1, .n_out = 1,
			.out_rows = &last,
			.top_k = 1, .top_ids = &e->vb.top[0], .logits = greedy ? NULL : e->vb.logits,
		};
		if (e->cap.buf) {
			for (int i = 0; i < n_rows; i++)
				e->vb.rows[i] = n - n_rows + i;
			fw.n_cap_layers = e->cap.n_points;
			fw.cap_layers = e->cap.layers;
			fw.cap_sublayers = e->cap.sub;
			fw.n_cap_rows = n_rows;
			fw.captures = e->cap.sel;
		} else if (mean) {
			if (!(rows = malloc((size_t)n * sizeof *rows)))
				rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			for (int i = 0; !rc && i < n; i++)
				rows[i] = i;
			fw.n_cap_layers = 1;
			fw.cap_layers = &lastl;
			fw.n_cap_rows = n;
			fw.captures = lastcap;
		}
		fw.cap_rows = rows;
		if (!rc)
			rc = skipper_backend_forward(e->be, &fw, err);
		if (rows != e->vb.rows)
			free(rows);
		for (int i = 0; e->cap.buf && i < n_rows; i++)
			e->vb.rows[i] += split;
	}
	if (!rc && mean) {
		memset(mean, 0, d * sizeof *mean);
		if (add_final_norm_mean(m, lastcap, d, n_last, n_prompt, mean) ||
		    (e->cap.buf && add_final_norm_mean(m, e->cap.sel + (size_t)(e->cap.n_points - 1) * d, (size_t)e->cap.n_points * d,
		                                   n_rows, n_prompt, mean)))
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	free(lastcap);
	*st_rows = n_rows;
	if (!rc && told)
		rc = tell(e, n_prompt, n_prompt, err);
	return rc;
}
