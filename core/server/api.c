/* POST /v1/chat/completions and /v1/completions: parse, validate,
 * tokenize, submit, then answer once the generation ends or stream it as
 * it comes. The connection's thread waits here; the batch's thread only
 * hands text over (gen.c). */
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

#include "internal.h"

struct api_call {
	struct call *c;
	struct oa_request req;
	struct oa_answer ans;
	struct gen *g;         /* once submitted */
	uint64_t id;
	int n_prompt;
	int done, finish;      /* the end was seen, and how it came */
	int n_tokens;          /* generated so far, for the log of a request cut short */
	int heartbeat_ms;      /* longest wait between two writes of a stream */
	/* the stream: events made, not yet handed to the connection */
	char *out;
	size_t out_len, out_off, out_cap;
	size_t sent;           /* bytes of the text sent */
	int started, ended;
};

/* How often a waiting thread looks whether its client is still there. */
#define POLL_MS 100

static int out_add(struct api_call *ac, char *ev)
{
	size_t n;

	if (!ev)
		return -1;
	n = strlen(ev);
	if (ac->out_len + n > ac->out_cap) {
		size_t cap = (ac->out_len + n) * 2;
		char *o = realloc(ac->out, cap);
		if (!o) {
			free(ev);
			return -1;
		}
		ac->out = o;
		ac->out_cap = cap;
	}
	memcpy(ac->out + ac->out_len, ev, n);
	ac->out_len += n;
	free(ev);
	return 0;
}

static void see(struct api_call *ac, const struct gen_view *v)
{
	ac->n_tokens = v->n_tokens;
	if (v->done) {
		ac->done = 1;
		ac->finish = v->finish;
	}
}

/* How a generation that did not end well is told to the client. */
static void end_error(struct api_call *ac, struct oa_error *e)
{
	if (ac->finish == SKIPPER_FINISH_CANCELLED)
		oa_fail(e, 503, "server_error", "cancelled", NULL, "the request was cancelled: the server is stopping");
	else
		oa_fail(e, 500, "server_error", NULL, NULL, "generation failed: %s",
		        gen_error(ac->g) ? gen_error(ac->g) : "unknown error");
}

static int ended_well(const struct api_call *ac)
{
	return (ac->finish == SKIPPER_FINISH_STOP || ac->finish == SKIPPER_FINISH_LENGTH) && !gen_error(ac->g);
}

/* The next events of a stream into ac->out: the role first (chat), then
 * text as it may be sent, then the end. Waits for them, sending an SSE
 * comment now and then so that the connection's timeout measures the
 * client, not the queue. -1: the client is gone or memory ran out. */
static int next_events(struct api_call *ac)
{
	int waited = 0;

	ac->out_len = ac->out_off = 0;
	if (!ac->started) {
		ac->started = 1;
		if (ac->ans.chat)
			return out_add(ac, oa_chunk(&ac->ans, 1, NULL, 0, -1));
	}
	for (;;) {
		struct gen_view v;
		int rc = gen_wait(ac->g, ac->sent, POLL_MS, &v);
		if (rc)
			return -1;
		see(ac, &v);
		if (v.n) {
			rc = out_add(ac, oa_chunk(&ac->ans, 0, v.text, v.n, -1));
			ac->sent += v.n;
		}
		free(v.text);
		if (!rc && v.done) {
			ac->ended = 1;
			if (ended_well(ac)) {
				rc = out_add(ac, oa_chunk(&ac->ans, 0, NULL, 0, ac->finish));
				if (!rc && ac->ans.include_usage)
					rc = out_add(ac, oa_usage_chunk(&ac->ans, gen_stats(ac->g)));
				if (!rc)
					rc = out_add(ac, strdup(OA_DONE));
			} else {
				struct oa_error e;
				end_error(ac, &e);
				rc = out_add(ac, oa_error_event(&e));
			}
		}
		if (rc || ac->out_len)
			return rc;
		if (http_client_gone(ac->c))
			return -1;
		if ((waited += POLL_MS) >= ac->heartbeat_ms)
			return out_add(ac, strdup(":\n\n"));
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct api_call *ac = cls;
	size_t n;

	while (ac->out_off == ac->out_len) {
		if (ac->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (next_events(ac))
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = ac->out_len - ac->out_off < max ? ac->out_len - ac->out_off : max;
	memcpy(buf, ac->out + ac->out_off, n);
	ac->out_off += n;
	return (ssize_t)n;
}

static enum MHD_Result stream(struct api_call *ac)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, ac, NULL);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* nginx: pass each event on at once */
	ok = http_queue(ac->c, 200, r);
	MHD_destroy_response(r);
	return ok;
}

/* Wait for the whole text, then answer. */
static enum MHD_Result answer(struct api_call *ac)
{
	char *text = NULL, *body;
	size_t len = 0;
	struct oa_error e;

	/* the connection's idle timeout is for the client: off while we work */
	http_timeout(ac->c, 0);
	while (!ac->done) {
		struct gen_view v;
		if (gen_wait(ac->g, len, POLL_MS, &v)) {
			free(text);
			return MHD_NO;
		}
		see(ac, &v);
		if (v.n) {
			char *t = realloc(text, len + v.n);
			if (!t) {
				free(v.text);
				free(text);
				return MHD_NO;
			}
			memcpy((text = t) + len, v.text, v.n);
			len += v.n;
		}
		free(v.text);
		if (!ac->done && http_client_gone(ac->c)) {
			free(text);
			return MHD_NO;
		}
	}
	http_timeout(ac->c, 1);
	if (!ended_well(ac)) {
		free(text);
		end_error(ac, &e);
		return http_error(ac->c, &e);
	}
	body = oa_body(&ac->ans, text, len, ac->finish, gen_stats(ac->g));
	free(text);
	return http_json(ac->c, 200, body); /* NULL: answered 500, out of memory */
}

/* The prompt's token ids: the chat template over the messages, or the
 * text, or the ids given. *ids malloc'ed. */
static int prompt_tokens(struct api_call *ac, struct server *srv, int32_t **ids, size_t *n, struct oa_error *e)
{
	const struct oa_request *r = &ac->req;
	struct skipper_error err = { 0 };
	int rc;

	if (r->prompt_ids) {
		if (!(*ids = malloc(r->n_prompt_ids * sizeof **ids)))
			return oa_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
		*n = r->n_prompt_ids;
		return 0;
	}
	if (r->chat)
		rc = skipper_session_chat_tokens(srv->s, r->msgs, r->n_msgs, ids, n, &err);
	else
		rc = skipper_session_text_tokens(srv->s, r->prompt, ids, n, &err);
	if (rc == SKIPPER_ERR_NOMEM || rc == SKIPPER_ERR_INTERNAL)
		return oa_fail(e, 500, "server_error", NULL, NULL, "%s", err.msg);
	if (rc) /* a conversation the template cannot hold */
		return oa_fail(e, 400, "invalid_request_error", "invalid_value", r->chat ? "messages" : "prompt", "%s",
		               err.msg);
	return 0;
}

/* The prompt and max_tokens against the context; the length to ask for. */
static int fit(struct api_call *ac, struct server *srv, size_t n, int *max_tokens, struct oa_error *e)
{
	const struct oa_request *r = &ac->req;
	const char *what = r->chat ? "messages" : "prompt";
	long room = (long)srv->n_ctx - (long)n;

	if (n == 0)
		return oa_fail(e, 400, "invalid_request_error", "invalid_value", what, "%s: no tokens to start from", what);
	if (room < 1)
		return oa_fail(e, 400, "invalid_request_error", "context_length_exceeded", what,
		               "the prompt is %zu tokens, over the context of %d tokens ([model] ctx) with one left to "
		               "generate", n, srv->n_ctx);
	if (r->max_tokens > room)
		return oa_fail(e, 400, "invalid_request_error", "context_length_exceeded", r->max_tokens_param,
		               "%s = %d: with the prompt's %zu tokens that is %ld, over the context of %d tokens ([model] ctx)",
		               r->max_tokens_param, r->max_tokens, n, (long)r->max_tokens + (long)n, srv->n_ctx);
	*max_tokens = r->max_tokens ? r->max_tokens : r->p.max_tokens < room ? r->p.max_tokens : (int)room;
	return 0;
}

static int submit(struct api_call *ac, struct server *srv, const int32_t *ids, size_t n, int max_tokens,
                  struct oa_error *e)
{
	struct skipper_batch_request br = { .prompt = ids, .n_prompt = n, .params = ac->req.p, .on_text = gen_on_text,
		                            .on_done = gen_on_done };
	struct skipper_error err = { 0 };
	char user_key[65];
	int rc;

	/* a digest: the batch keeps a key of 64 bytes, and no user's name is
	 * kept in memory longer than its request */
	if (ac->req.user) {
		unsigned char md[32];
		if (skipper_sha256(ac->req.user, ac->req.user_len, NULL, 0, md))
			return oa_fail(e, 500, "server_error", NULL, NULL, "cannot hash \"user\"");
		skipper_hex(md, 32, user_key);
		br.history_key = user_key;
	}
	if (!(ac->g = gen_new(ac->req.stop, ac->req.n_stop)))
		return oa_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	br.params.max_tokens = max_tokens;
	br.ctx = ac->g;
	gen_hold(ac->g); /* the batch's, dropped by gen_on_done */
	if (!(rc = skipper_batch_submit(srv->b, &br, &ac->id, &err)))
		return 0;
	gen_release(ac->g);  /* no callback will come */
	gen_release(ac->g);
	ac->g = NULL;
	switch (rc) {
	case SKIPPER_ERR_BUSY:
		return oa_fail(e, 503, "server_error", "overloaded", NULL, "the server is busy: %s; try again later",
		               err.msg);
	case SKIPPER_ERR_RANGE:
		return oa_fail(e, 400, "invalid_request_error", "context_length_exceeded",
		               ac->req.chat ? "messages" : "prompt", "%s", err.msg);
	case SKIPPER_ERR_INTERRUPTED:
		return oa_fail(e, 503, "server_error", "stopping", NULL, "the server is stopping");
	default:
		return oa_fail(e, 500, "server_error", NULL, NULL, "%s", err.msg);
	}
}

enum MHD_Result api_completion(struct call *c, struct server *srv, const char *body, size_t len, int chat,
                               struct api_call **out)
{
	struct api_call *ac = calloc(1, sizeof *ac);
	struct oa_error e;
	int32_t *ids = NULL;
	size_t n = 0;
	int max_tokens = 0, rc;

	if (!(*out = ac))
		return MHD_NO;
	ac->c = c;
	ac->heartbeat_ms = srv->lim.read_timeout * 1000 / 3 > 250 ? srv->lim.read_timeout * 1000 / 3 : 250;
	rc = oa_parse(body, len, chat, &srv->defaults, srv->n_vocab, &ac->req, &e) ||
	     prompt_tokens(ac, srv, &ids, &n, &e) || fit(ac, srv, n, &max_tokens, &e);
	if (!rc) {
		ac->n_prompt = (int)n;
		oa_answer_init(&ac->ans, chat, srv->model_name, srv->policy, (int)n, ac->req.include_usage);
		rc = submit(ac, srv, ids, n, max_tokens, &e);
	}
	free(ids);
	if (rc)
		return http_error(c, &e);
	return ac->req.stream ? stream(ac) : answer(ac);
}

void api_end(struct api_call *ac, struct server *srv, struct access_entry *e)
{
	if (!ac)
		return;
	e->prompt_tokens = ac->n_prompt;
	if (ac->g) {
		/* the client left before the end: free its sequence at the next pass */
		if (!ac->done)
			skipper_batch_cancel(srv->b, ac->id);
		e->finish = ac->done ? oa_finish_reason(ac->finish) : "cancelled";
		e->completion_tokens = ac->done ? gen_stats(ac->g)->n_generated : ac->n_tokens;
		gen_release(ac->g);
	}
	oa_request_free(&ac->req);
	free(ac->out);
	free(ac);
}
