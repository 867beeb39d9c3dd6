/* The calls into a backend that carry caller input: each is checked here,
 * once for every backend, against the model and the context, and only
 * then handed to the backend's op (which takes its arguments as valid).
 * Messages name the backend ("cpu backend: ...", "cuda backend: ..."). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/error.h"

/* The batch's rows by sequence: each segment's sequence in range and used
 * once, the segments in order covering [0, n), each fitting its sequence's
 * context, each parent within its row's segment. */
static int check_segments(const struct skipper_backend *be, const struct skipper_forward *fw, struct skipper_error *err)
{
	const char *name = be->ops->name;
	int row = 0;

	if (!fw->seg || fw->n_seg > be->n_seq)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: %d segments for %d sequences", name, fw->n_seg,
		                    be->n_seq);
	for (int k = 0; k < fw->n_seg; k++) {
		const struct skipper_fw_seg *g = &fw->seg[k];
		if (g->seq < 0 || g->seq >= be->n_seq)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: sequence %d of %d", name, g->seq, be->n_seq);
		for (int j = 0; j < k; j++)
			if (fw->seg[j].seq == g->seq)
				return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: sequence %d twice in a batch", name,
				                    g->seq);
		if (g->row0 != row || g->n < 1 || g->n_past < 0)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: segment %d: rows %d..%d after %d", name, k,
			                    g->row0, g->row0 + g->n, row);
		if (g->n_past + g->n > be->n_ctx)
			return skipper_fail(err, SKIPPER_ERR_RANGE,
			                    "%s backend: batch of %d rows after %d committed does not fit %d context slots",
			                    name, g->n, g->n_past, be->n_ctx);
		for (int i = g->row0; fw->parent && i < g->row0 + g->n; i++)
			if (fw->parent[i] != -1 && fw->parent[i] < g->row0)
				return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: parent[%d] = %d is not in its sequence's rows",
				                    name, i, fw->parent[i]);
		row += g->n;
	}
	if (row != fw->n)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: segments cover %d of %d rows", name, row, fw->n);
	return 0;
}

static int check_forward(const struct skipper_backend *be, const struct skipper_forward *fw,
                         struct skipper_error *err)
{
	const char *name = be->ops->name;
	int n_ctx = be->n_ctx, n_vocab = be->model->hp.n_vocab, n_layer = be->model->hp.n_layer, rc;

	if (fw->n < 1 || !fw->tokens)
		return skipper_fail(err, SKIPPER_ERR_ARG,
		                    "%s backend: batch of %d rows after %d committed does not fit %d context slots", name,
		                    fw->n, fw->n_past, n_ctx);
	if (fw->n_seg > 0 && (rc = check_segments(be, fw, err)))
		return rc;
	if (!fw->n_seg && (fw->seq < 0 || fw->seq >= be->n_seq))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: sequence %d of %d", name, fw->seq, be->n_seq);
	if (!fw->n_seg && (fw->n_past < 0 || fw->n_past + fw->n > n_ctx))
		return skipper_fail(err, fw->n_past >= 0 ? SKIPPER_ERR_RANGE : SKIPPER_ERR_ARG,
		                    "%s backend: batch of %d rows after %d committed does not fit %d context slots", name,
		                    fw->n, fw->n_past, n_ctx);
	for (int i = 0; i < fw->n; i++) {
		if (fw->tokens[i] < 0 || fw->tokens[i] >= n_vocab)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: token %d out of range", name, fw->tokens[i]);
		if (fw->parent && (fw->parent[i] < -1 || fw->parent[i] >= i))
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: parent[%d] = %d must be in [-1, %d)", name, i,
			                    fw->parent[i], i);
		if (fw->pos && fw->pos[i] < 0)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: negative position", name);
	}
	if (fw->n_out < 0 || (fw->n_out > 0 && !fw->out_rows) || fw->top_k < 0 || fw->top_k > SKIPPER_MAX_TOPK ||
	    fw->top_k > n_vocab || (fw->n_out > 0 && fw->top_k > 0 && !fw->top_ids))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: bad head request (top_k %d)", name, fw->top_k);
	for (int i = 0; i < fw->n_out; i++)
		if (fw->out_rows[i] < 0 || fw->out_rows[i] >= fw->n)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: out row %d out of range", name, fw->out_rows[i]);
	if (fw->n_cap_layers < 0 || fw->n_cap_rows < 0 ||
	    (fw->n_cap_layers > 0 && fw->n_cap_rows > 0 && (!fw->cap_layers || !fw->cap_rows || !fw->captures)))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: bad capture request", name);
	/* sub-layer boundaries number 2L - 1 points after the embeddings */
	int cap_max = fw->cap_sublayers ? 2 * n_layer - 1 : n_layer - 1;
	for (int i = 0; fw->n_cap_rows > 0 && i < fw->n_cap_layers; i++)
		if (fw->cap_layers[i] < -1 || fw->cap_layers[i] > cap_max)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: capture %s %d out of range [-1, %d]", name,
			                    fw->cap_sublayers ? "sub-layer boundary" : "layer", fw->cap_layers[i], cap_max);
	for (int i = 0; fw->n_cap_layers > 0 && i < fw->n_cap_rows; i++)
		if (fw->cap_rows[i] < 0 || fw->cap_rows[i] >= fw->n)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: capture row %d out of range", name,
			                    fw->cap_rows[i]);
	return 0;
}

/* The prefix record (kv_rec): per sequence the number of leading slots
 * known, then each sequence's tokens (n_ctx a sequence). */
struct kv_record {
	int n_seq, n_ctx;
	int known[];
};

static int32_t *rec_tokens(struct kv_record *r, int seq)
{
	return (int32_t *)(void *)(r->known + r->n_seq) + (size_t)seq * (size_t)r->n_ctx;
}

static void kv_forget_all(struct skipper_backend *be)
{
	free(be->kv_rec);
	be->kv_rec = NULL;
}

/* The record, if it is for the backend's sequences as they are now (one
 * made before a caller resized them behind this file's back says
 * nothing). */
static struct kv_record *record(const struct skipper_backend *be)
{
	struct kv_record *r = be->kv_rec;
	return r && r->n_seq == be->n_seq && r->n_ctx == be->n_ctx ? r : NULL;
}

/* Slots from `from` on no longer hold what was noted. */
static void kv_forget(struct skipper_backend *be, int seq, int from)
{
	struct kv_record *r = record(be);
	if (r && seq >= 0 && seq < r->n_seq && r->known[seq] > from)
		r->known[seq] = from > 0 ? from : 0;
}

int skipper_backend_kv_note(struct skipper_backend *be, int seq, const int32_t *tokens, int n,
                            struct skipper_error *err)
{
	struct kv_record *r = record(be);
	if (seq < 0 || seq >= be->n_seq || n < 0 || n > be->n_ctx || (n && !tokens))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: kv_note of %d tokens in sequence %d", be->ops->name,
		                    n, seq);
	if (!r) {
		kv_forget_all(be);
		size_t sz = sizeof *r + (size_t)be->n_seq * sizeof(int) + (size_t)be->n_seq * be->n_ctx * sizeof(int32_t);
		if (!(r = calloc(1, sz)))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (prefix record)");
		r->n_seq = be->n_seq;
		r->n_ctx = be->n_ctx;
		be->kv_rec = r;
	}
	memcpy(rec_tokens(r, seq), tokens, (size_t)n * sizeof *tokens);
	r->known[seq] = n;
	return 0;
}

int skipper_backend_kv_prefix(const struct skipper_backend *be, int seq, const int32_t *tokens, int n)
{
	struct kv_record *r = record(be);
	int k = 0;
	if (!r || seq < 0 || seq >= r->n_seq)
		return 0;
	const int32_t *t = rec_tokens(r, seq);
	while (k < n && k < r->known[seq] && t[k] == tokens[k])
		k++;
	return k;
}

int skipper_backend_forward(struct skipper_backend *be, const struct skipper_forward *fw, struct skipper_error *err)
{
	int rc = check_forward(be, fw, err);
	if (rc)
		return rc;
	/* a batch of one sequence is its one segment */
	struct skipper_fw_seg one = { .seq = fw->seq, .row0 = 0, .n = fw->n, .n_past = fw->n_past };
	struct skipper_forward f = *fw;
	if (!f.n_seg) {
		f.n_seg = 1;
		f.seg = &one;
	}
	for (int i = 0; f.kv_write && i < f.n_seg; i++)
		kv_forget(be, f.seg[i].seq, f.seg[i].n_past);
	return be->ops->forward(be, &f, err);
}

static int check_seq(const struct skipper_backend *be, int seq, const char *what, struct skipper_error *err)
{
	if (seq < 0 || seq >= be->n_seq)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: %s in sequence %d of %d", be->ops->name, what, seq,
		                    be->n_seq);
	return 0;
}

int skipper_backend_kv_move(struct skipper_backend *be, int seq, const int32_t *src, const int32_t *dst, int n,
                            struct skipper_error *err)
{
	if (n <= 0)
		return 0;
	if (check_seq(be, seq, "kv_move", err))
		return err->status;
	if (!src || !dst)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: kv_move without slots", be->ops->name);
	for (int i = 0; i < n; i++)
		if (src[i] < 0 || src[i] >= be->n_ctx || dst[i] < 0 || dst[i] >= be->n_ctx)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: kv_move %d -> %d out of range", be->ops->name,
			                    src[i], dst[i]);
	for (int i = 0; i < n; i++)
		kv_forget(be, seq, dst[i]);
	return be->ops->kv_move(be, seq, src, dst, n, err);
}

int skipper_backend_kv_read(struct skipper_backend *be, int seq, int layer, int slot, float *k, float *v,
                            struct skipper_error *err)
{
	if (check_seq(be, seq, "kv_read", err))
		return err->status;
	if (layer < 0 || layer >= be->model->hp.n_layer || slot < 0 || slot >= be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: kv_read layer %d slot %d", be->ops->name, layer,
		                    slot);
	return be->ops->kv_read(be, seq, layer, slot, k, v, err);
}

int skipper_backend_sublayer(struct skipper_backend *be, int seq, int kind, int layer, int n, float *states,
                             const int32_t *pos, int n_past, struct skipper_error *err)
{
	if (check_seq(be, seq, "sublayer", err))
		return err->status;
	if ((kind != SKIPPER_ATTN && kind != SKIPPER_MLP) || layer < 0 || layer >= be->model->hp.n_layer || n < 1 ||
	    !states || n_past < 0 || n_past + n > be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: sublayer kind %d layer %d n %d n_past %d",
		                    be->ops->name, kind, layer, n, n_past);
	for (int i = 0; pos && i < n; i++)
		if (pos[i] < 0)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: negative position", be->ops->name);
	kv_forget(be, seq, n_past);
	return be->ops->sublayer(be, seq, kind, layer, n, states, pos, n_past, err);
}

int skipper_backend_head_argmax(struct skipper_backend *be, int n, const float *states, int32_t *ids,
                                struct skipper_error *err)
{
	if (n < 0 || (n > 0 && (!states || !ids)))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: head_argmax bad arguments", be->ops->name);
	return be->ops->head_argmax(be, n, states, ids, err);
}

int skipper_backend_time_sublayer(struct skipper_backend *be, int kind, int layer, int ctx_len, double *seconds,
                                  struct skipper_error *err)
{
	if ((kind != SKIPPER_ATTN && kind != SKIPPER_MLP) || layer < 0 || layer >= be->model->hp.n_layer ||
	    ctx_len < 0 || !seconds)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: time_sublayer bad arguments", be->ops->name);
	if (ctx_len > be->n_ctx - 1)
		ctx_len = be->n_ctx - 1;
	kv_forget_all(be);
	return be->ops->time_sublayer(be, kind, layer, ctx_len, seconds, err);
}

int skipper_backend_set_head_subset(struct skipper_backend *be, const int32_t *ids, int n,
                                    struct skipper_error *err)
{
	int n_vocab = be->model->hp.n_vocab;
	if (!be->ops->set_head_subset)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s backend: no head subset", be->ops->name);
	if (n < 0 || n > n_vocab || (n > 0 && !ids))
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: head subset of %d ids", be->ops->name, n);
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= n_vocab)
			return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: head subset id %d out of range", be->ops->name,
			                    ids[i]);
	return be->ops->set_head_subset(be, ids, n, err);
}

void skipper_backend_identity(struct skipper_backend *be, char *buf, size_t n)
{
	if (!n)
		return;
	if (be->ops->identity)
		be->ops->identity(be, buf, n);
	else
		snprintf(buf, n, "%s|%s", be->ops->name, be->device ? be->device : "");
}

int skipper_backend_set_sequences(struct skipper_backend *be, int n, struct skipper_error *err)
{
	if (n < 1)
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s backend: %d sequences", be->ops->name, n);
	if (n == be->n_seq)
		return 0;
	if (!be->ops->set_sequences)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "the %s backend decodes one sequence at a time (asked for %d together)", be->ops->name, n);
	kv_forget_all(be);
	return be->ops->set_sequences(be, n, err);
}
