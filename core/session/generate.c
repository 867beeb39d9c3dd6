/* The public generate calls: token ids through the session's engine, the
 * committed tokens turned into text (whole UTF-8 characters, end of
 * generation not rendered) for the caller's callback. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "session.h"

void skipper_session_defaults(const struct skipper_session *s, struct skipper_generate_params *p)
{
	p->max_tokens = s->gen.max_tokens;
	p->temperature = s->gen.sampling.temperature;
	p->top_p = s->gen.sampling.top_p;
	p->top_k = s->gen.sampling.top_k;
	p->seed = s->gen.seed;
}

struct text_out {
	struct skipper_detok dt;
	const struct skipper_tokenizer *tok;
	skipper_text_cb cb;
	void *ctx;
};

static int on_token(void *user, int32_t tok)
{
	struct text_out *o = user;
	char buf[512];
	size_t n;
	if (skipper_tokenizer_is_eog(o->tok, tok))
		return 0;
	n = skipper_detok_push(&o->dt, tok, buf, sizeof buf);
	return o->cb ? o->cb(o->ctx, buf, n, tok) : 0;
}

/* A long prompt's prefill to the hooks' progress, as "prompt" in tokens */
static int tell_prompt(void *ctx, int done, int total)
{
	const struct skipper_session *s = ctx;
	return s->hooks.progress(s->hooks.ctx, "prompt", done, total, done >= total);
}

int skipper_session_generate_ids(struct skipper_session *s, const int32_t *prompt, size_t n_prompt,
                                 const struct skipper_generate_params *params, skipper_text_cb cb, void *ctx,
                                 struct skipper_error *err)
{
	struct skipper_gen_params gp = s->gen;
	struct text_out o = { .tok = s->tok, .cb = cb, .ctx = ctx };
	char buf[64];
	int rc;

	if (params) {
		gp.max_tokens = params->max_tokens;
		gp.sampling.temperature = (float)params->temperature;
		gp.sampling.top_p = (float)params->top_p;
		gp.sampling.top_k = params->top_k;
		gp.seed = params->seed ? params->seed : s->gen.seed;
	}
	if (n_prompt > (size_t)s->be->n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "prompt of %zu tokens does not fit the context of %d", n_prompt,
		                    s->be->n_ctx);
	skipper_detok_init(&o.dt, s->tok, 0);
	skipper_engine_set_progress(s->engine, s->hooks.progress ? tell_prompt : NULL, s);
	rc = skipper_engine_generate(s->engine, prompt, (int)n_prompt, &gp, on_token, &o, &s->last, err);
	size_t n = skipper_detok_flush(&o.dt, buf, sizeof buf);
	if (!rc && n && cb)
		cb(ctx, buf, n, -1);
	return rc;
}

int skipper_session_generate(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                             const struct skipper_generate_params *params, skipper_text_cb cb, void *ctx,
                             struct skipper_error *err)
{
	int32_t *ids = NULL;
	size_t n = 0;
	int rc = skipper_session_chat_tokens(s, msgs, n_msgs, &ids, &n, err);
	if (!rc)
		rc = skipper_session_generate_ids(s, ids, n, params, cb, ctx, err);
	free(ids);
	return rc;
}
