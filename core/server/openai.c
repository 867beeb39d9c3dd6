/* OpenAI's JSON: completion requests checked field by field; answers,
 * stream chunks and errors as the openai clients parse them. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "build-config.h"
#include "internal.h"

#define INVALID "invalid_request_error"
#define FINGERPRINT "skipper-" PACKAGE_VERSION

void oa_utf8_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
		int ok = n > 0 && !(n == 2 && *p < 0xc2) && !(n == 4 && *p > 0xf4);
		for (int i = 1; ok && i < n; i++)
			ok = (p[i] & 0xc0) == 0x80;
		if (ok && n == 3)
			ok = !(*p == 0xe0 && p[1] < 0xa0) && !(*p == 0xed && p[1] >= 0xa0);
		if (ok && n == 4)
			ok = !(*p == 0xf0 && p[1] < 0x90) && !(*p == 0xf4 && p[1] >= 0x90);
		if (!ok) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

int oa_fail(struct oa_error *e, int status, const char *type, const char *code, const char *param, const char *fmt,
            ...)
{
	va_list ap;

	e->status = status;
	e->type = type;
	e->code = code;
	snprintf(e->param, sizeof e->param, "%s", param ? param : "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	return -1;
}

char *oa_error_body(const struct oa_error *e)
{
	char msg[sizeof e->message];
	json_t *o;
	char *s;

	/* a message may quote the client's text, cut anywhere */
	memcpy(msg, e->message, sizeof msg);
	oa_utf8_clean(msg);
	o = json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", msg, "type", e->type, "param",
	              e->param[0] ? json_string(e->param) : json_null(), "code",
	              e->code ? json_string(e->code) : json_null());
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* ---- requests ---- */

static const char *type_name(const json_t *v)
{
	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return v ? "null" : "nothing";
	}
}

static int want(struct oa_error *e, const char *param, const char *what, const json_t *v)
{
	return oa_fail(e, 400, INVALID, "invalid_type", param, "%s: expected %s, got %s", param, what, type_name(v));
}

/* A member, NULL when absent or null (what OpenAI's API reads as not given). */
static json_t *field(const json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return json_is_null(v) ? NULL : v;
}

static int get_int(const json_t *v, const char *param, long long lo, long long hi, long long *out,
                   struct oa_error *e)
{
	long long x;

	if (!json_is_integer(v))
		return want(e, param, "an integer", v);
	x = json_integer_value(v);
	if (x < lo || x > hi)
		return oa_fail(e, 400, INVALID, "invalid_value", param, "%s: %lld is out of range [%lld, %lld]", param, x,
		               lo, hi);
	*out = x;
	return 0;
}

static int get_num(const json_t *v, const char *param, double lo, double hi, double *out, struct oa_error *e)
{
	double x;

	if (!json_is_number(v))
		return want(e, param, "a number", v);
	x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return oa_fail(e, 400, INVALID, "invalid_value", param, "%s: %g is out of range [%g, %g]", param, x, lo, hi);
	*out = x;
	return 0;
}

static int get_bool(const json_t *v, const char *param, int *out, struct oa_error *e)
{
	if (!json_is_boolean(v))
		return want(e, param, "a boolean", v);
	*out = json_is_true(v);
	return 0;
}

/* The client's text in a message, printable and short. */
static const char *quote(const char *s, char *buf, size_t cap)
{
	size_t i = 0;

	for (; s[i] && i + 4 < cap; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (s[i])
		memcpy(buf + i, "...", 4);
	else
		buf[i] = '\0';
	return buf;
}

/* Fields that would change the answer in ways skipper does not do, each
 * with the values that change nothing (clients send some of them anyway). */
static const struct {
	const char *field;
	const char *neutral[2];
	const char *why;
} refused[] = {
	{ "n", { "1" }, "one choice per request" },
	{ "best_of", { "1" }, "one choice per request" },
	{ "logprobs", { "false", "0" }, "log probabilities are not returned" },
	{ "top_logprobs", { "0" }, "log probabilities are not returned" },
	{ "echo", { "false" }, "the prompt is not echoed" },
	{ "suffix", { "\"\"" }, "no text after the insertion point" },
	{ "tools", { "[]" }, "no tool calls" },
	{ "functions", { "[]" }, "no function calls" },
	{ "tool_choice", { "\"none\"" }, "no tool calls" },
	{ "function_call", { "\"none\"" }, "no function calls" },
	{ "response_format", { "{\"type\":\"text\"}" }, "text answers only" },
	{ "logit_bias", { "{}" }, "no logit bias" },
	{ "presence_penalty", { "0" }, "no presence penalty" },
	{ "frequency_penalty", { "0" }, "no frequency penalty" },
	{ "repetition_penalty", { "1" }, "no repetition penalty" },
	{ "min_p", { "0" }, "no min_p sampling" },
	{ "modalities", { "[\"text\"]" }, "text answers only" },
	{ "audio", { NULL }, "text answers only" },
	{ "prediction", { NULL }, "no predicted outputs" },
	{ "web_search_options", { NULL }, "no web search" },
};

static int same(const json_t *v, const char *text)
{
	json_t *w = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	int eq = w && (json_equal(v, w) ||
	               (json_is_number(v) && json_is_number(w) && json_number_value(v) == json_number_value(w)));
	json_decref(w);
	return eq;
}

static int check_refused(const json_t *root, struct oa_error *e)
{
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		const json_t *v = field(root, refused[i].field);
		if (v && !same(v, refused[i].neutral[0]) && !same(v, refused[i].neutral[1]))
			return oa_fail(e, 400, INVALID, "unsupported_parameter", refused[i].field,
			               "Unsupported parameter: '%s' (skipper serve: %s)", refused[i].field, refused[i].why);
	}
	return 0;
}

/* A message's content: a string, or text parts joined by newlines. */
static int message_content(struct oa_request *r, size_t i, const json_t *c, const char **out, struct oa_error *e)
{
	char param[96], *s;
	size_t len = 0, n;

	snprintf(param, sizeof param, "messages[%zu].content", i);
	if (json_is_string(c)) {
		*out = json_string_value(c);
		return 0;
	}
	if (!json_is_array(c))
		return want(e, param, "a string or an array of text parts", c);
	n = json_array_size(c);
	for (size_t k = 0; k < n; k++) {
		const json_t *part = json_array_get(c, k), *type = json_object_get(part, "type"),
		             *text = json_object_get(part, "text");
		char buf[48];
		snprintf(param, sizeof param, "messages[%zu].content[%zu]", i, k);
		if (!json_is_object(part))
			return want(e, param, "an object", part);
		snprintf(param, sizeof param, "messages[%zu].content[%zu].type", i, k);
		if (!json_is_string(type))
			return want(e, param, "a string", type);
		if (strcmp(json_string_value(type), "text") != 0)
			return oa_fail(e, 400, INVALID, "unsupported_value", param,
			               "%s: '%s' parts are not supported (text only)", param,
			               quote(json_string_value(type), buf, sizeof buf));
		snprintf(param, sizeof param, "messages[%zu].content[%zu].text", i, k);
		if (!json_is_string(text))
			return want(e, param, "a string", text);
		len += json_string_length(text) + 1;
	}
	if (!(s = malloc(len + 1)))
		return oa_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	r->joined[r->n_joined++] = s;
	*s = '\0';
	for (size_t k = 0, at = 0; k < n; k++) {
		const json_t *text = json_object_get(json_array_get(c, k), "text");
		size_t tl = json_string_length(text);
		if (k)
			s[at++] = '\n';
		memcpy(s + at, json_string_value(text), tl);
		s[at += tl] = '\0';
	}
	*out = s;
	return 0;
}

static int parse_messages(struct oa_request *r, const json_t *msgs, struct oa_error *e)
{
	size_t n;

	if (!msgs)
		return oa_fail(e, 400, INVALID, "missing_required_parameter", "messages", "messages: required");
	if (!json_is_array(msgs))
		return want(e, "messages", "an array of messages", msgs);
	if (!(n = json_array_size(msgs)))
		return oa_fail(e, 400, INVALID, "invalid_value", "messages", "messages: empty");
	if (!(r->msgs = calloc(n, sizeof *r->msgs)) || !(r->joined = calloc(n, sizeof *r->joined)))
		return oa_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *m = json_array_get(msgs, i), *role = json_object_get(m, "role"), *calls;
		char param[96], buf[48];
		const char *rs;
		snprintf(param, sizeof param, "messages[%zu]", i);
		if (!json_is_object(m))
			return want(e, param, "an object", m);
		snprintf(param, sizeof param, "messages[%zu].role", i);
		if (!json_is_string(role))
			return want(e, param, "a string", role);
		rs = json_string_value(role);
		if (strcmp(rs, "developer") == 0) /* OpenAI's newer name for the system message */
			rs = "system";
		if (strcmp(rs, "system") != 0 && strcmp(rs, "user") != 0 && strcmp(rs, "assistant") != 0)
			return oa_fail(e, 400, INVALID, "unsupported_value", param,
			               "%s: '%s' messages are not supported (system, developer, user, assistant)", param,
			               quote(rs, buf, sizeof buf));
		if ((calls = field(m, "tool_calls")) && !(json_is_array(calls) && json_array_size(calls) == 0)) {
			snprintf(param, sizeof param, "messages[%zu].tool_calls", i);
			return oa_fail(e, 400, INVALID, "unsupported_parameter", param, "%s: no tool calls", param);
		}
		r->msgs[i].role = rs;
		if (message_content(r, i, json_object_get(m, "content"), &r->msgs[i].content, e))
			return -1;
	}
	r->n_msgs = n;
	return 0;
}

/* Token ids of a prompt given as numbers. */
static int prompt_ids(struct oa_request *r, const json_t *a, int n_vocab, struct oa_error *e)
{
	size_t n = json_array_size(a);

	if (!(r->prompt_ids = malloc((n ? n : 1) * sizeof *r->prompt_ids)))
		return oa_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		long long id;
		char param[48];
		snprintf(param, sizeof param, "prompt[%zu]", i);
		if (get_int(json_array_get(a, i), param, 0, n_vocab - 1, &id, e))
			return -1;
		r->prompt_ids[i] = (int32_t)id;
	}
	r->n_prompt_ids = n;
	return 0;
}

/* A string, an array of one string, an array of token ids, or an array of
 * one array of token ids: one prompt. */
static int parse_prompt(struct oa_request *r, const json_t *p, int n_vocab, struct oa_error *e)
{
	const json_t *first;
	const char *what = "a string, or an array of one string or of token ids";

	if (!p)
		return oa_fail(e, 400, INVALID, "missing_required_parameter", "prompt", "prompt: required");
	if (json_is_string(p)) {
		r->prompt = json_string_value(p);
		return 0;
	}
	if (!json_is_array(p) || json_array_size(p) == 0)
		return json_is_array(p) ? oa_fail(e, 400, INVALID, "invalid_value", "prompt", "prompt: empty")
		                        : want(e, "prompt", what, p);
	first = json_array_get(p, 0);
	if (json_is_integer(first))
		return prompt_ids(r, p, n_vocab, e);
	if (json_array_size(p) > 1)
		return oa_fail(e, 400, INVALID, "unsupported_value", "prompt",
		               "prompt: one prompt per request (got %zu)", json_array_size(p));
	if (json_is_string(first)) {
		r->prompt = json_string_value(first);
		return 0;
	}
	if (json_is_array(first) && json_array_size(first) > 0)
		return prompt_ids(r, first, n_vocab, e);
	return want(e, "prompt[0]", what, first);
}

static int parse_stop(struct oa_request *r, const json_t *s, struct oa_error *e)
{
	size_t n;

	if (!s)
		return 0;
	if (!json_is_string(s) && !json_is_array(s))
		return want(e, "stop", "a string or an array of strings", s);
	n = json_is_string(s) ? 1 : json_array_size(s);
	if (n > OA_MAX_STOP)
		return oa_fail(e, 400, INVALID, "invalid_value", "stop", "stop: %zu strings, at most %d", n, OA_MAX_STOP);
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_is_string(s) ? s : json_array_get(s, i);
		char param[32];
		snprintf(param, sizeof param, json_is_string(s) ? "stop" : "stop[%zu]", i);
		if (!json_is_string(v))
			return want(e, param, "a string", v);
		if (json_string_length(v) < 1 || json_string_length(v) > OA_MAX_STOP_LEN)
			return oa_fail(e, 400, INVALID, "invalid_value", param, "%s: %zu bytes, expected 1 to %d", param,
			               json_string_length(v), OA_MAX_STOP_LEN);
		r->stop[r->n_stop++] = json_string_value(v);
	}
	return 0;
}

static int parse_sampling(struct oa_request *r, const json_t *root, struct oa_error *e)
{
	const json_t *v, *mct = field(root, "max_completion_tokens");
	long long i;
	double d;

	/* the newer name wins where a client sends both */
	r->max_tokens_param = mct ? "max_completion_tokens" : "max_tokens";
	if ((v = mct ? mct : field(root, "max_tokens"))) {
		if (get_int(v, r->max_tokens_param, 1, INT_MAX, &i, e))
			return -1;
		r->max_tokens = (int)i;
	}
	if ((v = field(root, "temperature"))) {
		if (get_num(v, "temperature", 0, 2, &d, e))
			return -1;
		r->p.temperature = d;
	}
	if ((v = field(root, "top_p"))) {
		if (get_num(v, "top_p", 0, 1, &d, e))
			return -1;
		r->p.top_p = d;
	}
	if ((v = field(root, "top_k"))) {
		if (get_int(v, "top_k", -1, INT_MAX, &i, e))
			return -1;
		r->p.top_k = i > 0 ? (int)i : 0;
	}
	if ((v = field(root, "seed"))) {
		if (!json_is_integer(v))
			return want(e, "seed", "an integer", v);
		r->p.seed = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int parse_stream(struct oa_request *r, const json_t *root, struct oa_error *e)
{
	const json_t *v, *o;

	if ((v = field(root, "stream")) && get_bool(v, "stream", &r->stream, e))
		return -1;
	if (!(o = field(root, "stream_options")))
		return 0;
	if (!json_is_object(o))
		return want(e, "stream_options", "an object", o);
	if ((v = field(o, "include_usage")) && get_bool(v, "stream_options.include_usage", &r->include_usage, e))
		return -1;
	return 0;
}

/* OpenAI's end-user identifier: whose earlier requests this one may draft
 * from ([lookup] history_scope = key). */
static int parse_user(struct oa_request *r, const json_t *v, struct oa_error *e)
{
	if (!v)
		return 0;
	if (!json_is_string(v))
		return want(e, "user", "a string", v);
	if (json_string_length(v) > OA_MAX_USER)
		return oa_fail(e, 400, INVALID, "invalid_value", "user", "user: %zu bytes, at most %d",
		               json_string_length(v), OA_MAX_USER);
	r->user = json_string_value(v);
	r->user_len = json_string_length(v);
	return 0;
}

int oa_parse(const char *body, size_t len, int chat, const struct skipper_generate_params *defaults, int n_vocab,
             struct oa_request *r, struct oa_error *e)
{
	json_error_t jerr;

	memset(r, 0, sizeof *r);
	r->chat = chat;
	r->p = *defaults;
	if (!(r->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)))
		return oa_fail(e, 400, INVALID, "invalid_json", NULL, "malformed JSON at line %d, column %d: %s", jerr.line,
		               jerr.column, jerr.text);
	if (!json_is_object(r->root))
		return oa_fail(e, 400, INVALID, "invalid_type", NULL, "the body must be a JSON object, got %s",
		               type_name(r->root));
	if (check_refused(r->root, e))
		return -1;
	if (chat ? parse_messages(r, field(r->root, "messages"), e) : parse_prompt(r, field(r->root, "prompt"), n_vocab, e))
		return -1;
	if (parse_sampling(r, r->root, e) || parse_stop(r, field(r->root, "stop"), e) || parse_stream(r, r->root, e) ||
	    parse_user(r, field(r->root, "user"), e))
		return -1;
	return 0;
}

void oa_request_free(struct oa_request *r)
{
	for (size_t i = 0; i < r->n_joined; i++)
		free(r->joined[i]);
	free(r->joined);
	free(r->msgs);
	free(r->prompt_ids);
	json_decref(r->root);
	memset(r, 0, sizeof *r);
}

/* ---- answers ---- */

void oa_answer_init(struct oa_answer *a, int chat, const char *model, const char *policy, int n_prompt,
                    int include_usage)
{
	static atomic_uint count;
	unsigned char r[12];
	int at;

	/* random, so that ids of replicas behind one balancer never meet */
	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		unsigned x = atomic_fetch_add(&count, 1) ^ (unsigned)time(NULL);
		for (size_t i = 0; i < sizeof r; i++)
			r[i] = (unsigned char)(x >> (8 * (i % 4)) ^ i);
	}
	at = snprintf(a->id, sizeof a->id, "%s-", chat ? "chatcmpl" : "cmpl");
	for (size_t i = 0; i < sizeof r; i++)
		at += snprintf(a->id + at, sizeof a->id - (size_t)at, "%02x", r[i]);
	a->chat = chat;
	a->created = (long long)time(NULL);
	a->model = model;
	a->policy = policy;
	a->n_prompt = n_prompt;
	a->include_usage = include_usage;
}

const char *oa_finish_reason(int finish)
{
	switch (finish) {
	case SKIPPER_FINISH_STOP: return "stop";
	case SKIPPER_FINISH_LENGTH: return "length";
	case SKIPPER_FINISH_CANCELLED: return "cancelled";
	default: return "error";
	}
}

static double fin(double x)
{
	return isfinite(x) ? x : 0;
}

static json_t *usage_json(const struct oa_answer *a, const struct skipper_run_stats *st)
{
	/* cached_tokens: OpenAI's name for a prompt's part read from an
	 * earlier request's cache ([generate] prefix_cache) */
	return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", a->n_prompt, "completion_tokens", st->n_generated,
	                 "total_tokens", a->n_prompt + st->n_generated, "prompt_tokens_details", "cached_tokens",
	                 st->n_reused);
}

/* skipper's own statistics, beside usage. Draft sources as in /metrics. */
static json_t *stats_json(const struct oa_answer *a, const struct skipper_run_stats *st)
{
	return json_pack("{s:s, s:i, s:i, s:f, s:f, s:i, s:{s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}, s:{s:i, s:i}}, "
	                 "s:f, s:f, s:f}",
	                 "policy", a->policy, "drafted", st->drafted, "accepted", st->accepted, "alpha", fin(st->alpha),
	                 "mean_accepted", fin(st->mean_accepted), "verify_passes", st->rounds, "sources", "layer_skip",
	                 "drafted", st->drafted - st->lookup_drafted, "accepted", st->accepted - st->lookup_accepted,
	                 "lookup", "drafted", st->lookup_drafted - st->ngram_drafted - st->history_drafted, "accepted",
	                 st->lookup_accepted - st->ngram_accepted - st->history_accepted, "ngram", "drafted",
	                 st->ngram_drafted, "accepted", st->ngram_accepted, "history", "drafted", st->history_drafted,
	                 "accepted", st->history_accepted, "prefill_seconds", fin(st->t_prefill), "seconds", fin(st->t_total),
	                 "tokens_per_s", fin(st->tokens_per_s));
}

static json_t *head(const struct oa_answer *a, const char *object)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:s}", "id", a->id, "object", object, "created", (json_int_t)a->created,
	                 "model", a->model, "system_fingerprint", FINGERPRINT);
}

/* o as a JSON text (NULL if o is NULL or a member could not be set). */
static char *dump(json_t *o, int ok)
{
	char *s = o && ok ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

char *oa_body(const struct oa_answer *a, const char *text, size_t n, int finish, const struct skipper_run_stats *st)
{
	json_t *o = head(a, a->chat ? "chat.completion" : "text_completion"), *choice;
	int ok;

	if (a->chat)
		choice = json_pack("{s:i, s:{s:s, s:s%}, s:n, s:s}", "index", 0, "message", "role", "assistant", "content",
		                   text ? text : "", n, "logprobs", "finish_reason", oa_finish_reason(finish));
	else
		choice = json_pack("{s:s%, s:i, s:n, s:s}", "text", text ? text : "", n, "index", 0, "logprobs",
		                   "finish_reason", oa_finish_reason(finish));
	ok = choice && !json_object_set_new(o, "choices", json_pack("[o]", choice)) &&
	     !json_object_set_new(o, "usage", usage_json(a, st)) && !json_object_set_new(o, "skipper", stats_json(a, st));
	return dump(o, ok);
}

static char *event(json_t *o, int ok)
{
	char *j = dump(o, ok), *s;

	if (!j || asprintf(&s, "data: %s\n\n", j) < 0)
		s = NULL;
	free(j);
	return s;
}

char *oa_chunk(const struct oa_answer *a, int role, const char *text, size_t n, int finish)
{
	json_t *o = head(a, a->chat ? "chat.completion.chunk" : "text_completion"), *choice, *reason, *delta;
	int ok;

	reason = finish >= 0 ? json_string(oa_finish_reason(finish)) : json_null();
	if (!a->chat) {
		choice = json_pack("{s:s%, s:i, s:n, s:o}", "text", text ? text : "", n, "index", 0, "logprobs",
		                   "finish_reason", reason);
	} else {
		if (role)
			delta = json_pack("{s:s, s:s}", "role", "assistant", "content", "");
		else if (finish >= 0)
			delta = json_object();
		else
			delta = json_pack("{s:s%}", "content", text ? text : "", n);
		choice = json_pack("{s:i, s:o, s:n, s:o}", "index", 0, "delta", delta, "logprobs", "finish_reason", reason);
	}
	ok = choice && !json_object_set_new(o, "choices", json_pack("[o]", choice)) &&
	     (!a->include_usage || !json_object_set_new(o, "usage", json_null()));
	return event(o, ok);
}

char *oa_usage_chunk(const struct oa_answer *a, const struct skipper_run_stats *st)
{
	json_t *o = head(a, a->chat ? "chat.completion.chunk" : "text_completion");
	int ok = o && !json_object_set_new(o, "choices", json_array()) &&
	         !json_object_set_new(o, "usage", usage_json(a, st)) && !json_object_set_new(o, "skipper", stats_json(a, st));
	return event(o, ok);
}

char *oa_error_event(const struct oa_error *e)
{
	char *j = oa_error_body(e), *s;

	if (!j || asprintf(&s, "data: %s\n\n", j) < 0)
		s = NULL;
	free(j);
	return s;
}
