/* The compute services a policy reaches through its host
 * (skipper-policy(3)): they run on the engine's backend against its
 * committed KV cache and never change it. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"

int skipper_engine_score_mask(void *engine, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                              const int32_t *tokens, int n, int start_pos, int32_t *argmax_out,
                              struct skipper_error *err)
{
	struct skipper_engine *e = engine;
	struct skipper_backend *be = e->be;
	int32_t *rows;
	int rc;

	if (n <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "score_mask: n = %d", n);
	if (start_pos < 0 || start_pos > skipper_engine_committed(engine) || start_pos + n > be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_ARG, "score_mask: start_pos %d outside the committed prefix (%d)",
		                    start_pos, skipper_engine_committed(engine));
	rows = malloc((size_t)n * sizeof *rows);
	if (!rows)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		rows[i] = i;
	{
		struct skipper_forward fw = { .n = n, .tokens = tokens, .seq = e->seq, .n_past = start_pos, .kv_write = 0,
		                              .skip_attn = skip_attn, .skip_mlp = skip_mlp, .n_out = n,
		                              .out_rows = rows, .top_k = 1, .top_ids = argmax_out };
		rc = skipper_backend_forward(be, &fw, err);
	}
	free(rows);
	return rc;
}

int skipper_engine_sublayer_forward(void *engine, int kind, int layer, int n_seq, int seq_len, float *states,
                                    const int32_t *pos, int n_past, struct skipper_error *err)
{
	struct skipper_engine *e = engine;
	struct skipper_backend *be = e->be;
	size_t stride = (size_t)seq_len * be->model->hp.n_embd;

	if (kind != SKIPPER_ATTN && kind != SKIPPER_MLP)
		return skipper_fail(err, SKIPPER_ERR_ARG, "sublayer_forward: kind %d", kind);
	if (layer < 0 || layer >= be->model->hp.n_layer)
		return skipper_fail(err, SKIPPER_ERR_ARG, "sublayer_forward: layer %d of %d", layer, be->model->hp.n_layer);
	if (n_past < 0 || n_past > skipper_engine_committed(engine))
		return skipper_fail(err, SKIPPER_ERR_ARG, "sublayer_forward: n_past %d beyond the committed prefix (%d)",
		                    n_past, skipper_engine_committed(engine));
	if (kind == SKIPPER_MLP) {
		/* The MLP is row-wise: all sequences go through as one batch, so each
		 * weight is streamed once per chunk instead of once per sequence
		 * (bit-identical, the backend being batch-invariant). n_past does not
		 * matter to an MLP; 0 keeps the backend's slot bound out of the way. */
		size_t rows = (size_t)n_seq * (size_t)seq_len, ne = (size_t)be->model->hp.n_embd;
		size_t chunk = (size_t)be->n_ctx;
		for (size_t r0 = 0; r0 < rows; r0 += chunk) {
			int nr = (int)(rows - r0 < chunk ? rows - r0 : chunk);
			int rc = skipper_backend_sublayer(be, e->seq, kind, layer, nr, states + r0 * ne, NULL, 0, err);
			if (rc)
				return rc;
		}
		return SKIPPER_OK;
	}
	for (int s = 0; s < n_seq; s++) {
		int rc = skipper_backend_sublayer(be, e->seq, kind, layer, seq_len, states + s * stride, pos, n_past, err);
		if (rc)
			return rc;
	}
	return SKIPPER_OK;
}

int skipper_engine_head_argmax(void *engine, int n, const float *states, int32_t *ids, struct skipper_error *err)
{
	struct skipper_backend *be = skipper_engine_backend(engine);
	return skipper_backend_head_argmax(be, n, states, ids, err);
}

int skipper_engine_time_sublayer(void *engine, int kind, int layer, int ctx_len, double *seconds,
                                 struct skipper_error *err)
{
	struct skipper_backend *be = skipper_engine_backend(engine);
	if (ctx_len < 0 || ctx_len >= be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_ARG, "time_sublayer: ctx_len %d outside [0, %d)", ctx_len, be->n_ctx);
	return skipper_backend_time_sublayer(be, kind, layer, ctx_len, seconds, err);
}

static int svc_costs(void *engine, const struct skipper_costs **out, struct skipper_error *err)
{
	return skipper_engine_costs(engine, out, err);
}

void engine_bind_services(struct skipper_engine *e)
{
	e->env.engine = e;
	e->env.score_mask = skipper_engine_score_mask;
	e->env.sublayer_forward = skipper_engine_sublayer_forward;
	e->env.head_argmax = skipper_engine_head_argmax;
	e->env.time_sublayer = skipper_engine_time_sublayer;
	e->env.costs = svc_costs;
}
