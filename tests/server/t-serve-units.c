/* skipper serve's parts that need no model: stop strings and held-back
 * text between the two threads (gen.c), OpenAI requests checked field by
 * field and the answers' JSON (openai.c), the API key (auth.c), the
 * metrics text (metrics.c), the access log (access_log.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/internal.h"
#include "tap.h"

static struct skipper_generate_params defaults = { 256, 0.0, 0.95, 40, 0 };

/* ---- gen.c ---- */

/* Everything gen_wait hands out now (without waiting) appended to out. */
static size_t take(struct gen *g, char *out, size_t have, int *done)
{
	struct gen_view v;
	gen_wait(g, have, 0, &v);
	memcpy(out + have, v.text ? v.text : "", v.n);
	out[have + v.n] = '\0';
	*done = v.done;
	free(v.text);
	return have + v.n;
}

static void test_gen(void)
{
	const char *stops[] = { "</s>", "END" };
	struct skipper_run_stats st = { .n_generated = 5 };
	char out[256];
	size_t have = 0;
	int done, r;
	struct gen *g = gen_new(NULL, 0);

	gen_hold(g);
	r = gen_on_text(g, "Hello", 5, 1);
	have = take(g, out, have, &done);
	ok(r == 0 && strcmp(out, "Hello") == 0 && !done, "no stop strings: text passes at once");
	gen_on_text(g, " world", 6, 2);
	gen_on_text(g, "!", 1, -1);
	gen_on_done(g, SKIPPER_FINISH_LENGTH, &st, NULL);
	have = take(g, out, have, &done);
	is_str(out, "Hello world!", "the rest, then the end");
	ok(done && gen_stats(g)->n_generated == 5 && !gen_error(g), "the end carries the statistics, no error");
	gen_release(g);

	g = gen_new(stops, 2);
	gen_hold(g);
	have = 0;
	gen_on_text(g, "ab", 2, 1);
	have = take(g, out, have, &done);
	is_str(out, "ab", "text that starts no stop string is sent");
	gen_on_text(g, "c<", 2, 2);
	have = take(g, out, have, &done);
	is_str(out, "abc", "'<' held back: it may start </s>");
	gen_on_text(g, "/s", 2, 3);
	have = take(g, out, have, &done);
	is_str(out, "abc", "'</s' held back");
	r = gen_on_text(g, ">x", 2, 4);
	ok(r == 1, "a stop string across three pieces stops the generation");
	gen_on_done(g, SKIPPER_FINISH_STOP, &st, NULL);
	have = take(g, out, have, &done);
	ok(done && strcmp(out, "abc") == 0, "the text is cut before it: '%s'", out);
	gen_release(g);

	g = gen_new(stops, 2);
	gen_hold(g);
	have = 0;
	gen_on_text(g, "a<", 2, 1);
	gen_on_text(g, "b E", 3, 2);
	have = take(g, out, have, &done);
	is_str(out, "a<b ", "held-back text that turns out no stop string is released");
	r = gen_on_text(g, "NDless", 6, 3);
	gen_on_done(g, SKIPPER_FINISH_STOP, &st, NULL);
	have = take(g, out, have, &done);
	ok(r == 1 && strcmp(out, "a<b ") == 0, "the second stop string, across pieces: '%s'", out);
	gen_release(g);

	g = gen_new(stops, 2);
	gen_hold(g);
	r = gen_on_text(g, "xEND</s>", 8, 1);
	gen_on_done(g, SKIPPER_FINISH_STOP, &st, NULL);
	have = take(g, out, 0, &done);
	ok(r == 1 && strcmp(out, "x") == 0, "the earliest of two stop strings in one piece wins");
	gen_release(g);

	g = gen_new(stops, 2);
	gen_hold(g);
	gen_on_text(g, "<", 1, 1);
	have = take(g, out, 0, &done);
	ok(have == 0 && !done, "nothing to send, not ended: the wait times out empty");
	gen_on_done(g, SKIPPER_FINISH_ERROR, &st, "backend failed");
	have = take(g, out, 0, &done);
	ok(done && strcmp(out, "<") == 0, "the end releases held-back text");
	is_str(gen_error(g), "backend failed", "the error's message is kept");
	gen_release(g);
}

/* ---- openai.c: requests ---- */

static int parse(const char *body, int chat, struct oa_request *r, struct oa_error *e)
{
	memset(e, 0, sizeof *e);
	return oa_parse(body, strlen(body), chat, &defaults, 1000, r, e);
}

/* body must be refused with status 400, param and code as given. */
static void refused(const char *body, int chat, const char *param, const char *code)
{
	struct oa_request r;
	struct oa_error e;
	int rc = parse(body, chat, &r, &e);
	ok(rc < 0 && e.status == 400 && strcmp(e.param, param) == 0 && e.code && strcmp(e.code, code) == 0,
	   "refused %s: param '%s', code %s (%s)", body, e.param, e.code ? e.code : "null", e.message);
	oa_request_free(&r);
}

static void accepted(const char *body, int chat, const char *what)
{
	struct oa_request r;
	struct oa_error e;
	int rc = parse(body, chat, &r, &e);
	ok(rc == 0, "accepted: %s%s%s", what, rc ? ": " : "", rc ? e.message : "");
	oa_request_free(&r);
}

static void test_parse(void)
{
	struct oa_request r;
	struct oa_error e;
	int rc;

	rc = parse("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"}],"
	           "\"model\":\"x\",\"unknown_field\":{\"a\":1}}", 1, &r, &e);
	ok(rc == 0 && r.n_msgs == 2 && strcmp(r.msgs[0].role, "system") == 0 && strcmp(r.msgs[1].content, "Hi") == 0,
	   "chat: two messages, unknown fields ignored");
	ok(r.max_tokens == 0 && r.p.temperature == 0.0 && r.p.top_k == 40 && r.p.top_p == 0.95 && !r.stream,
	   "fields not given keep [generate]'s values");
	oa_request_free(&r);

	rc = parse("{\"messages\":[{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
	           "{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"user\",\"content\":\"c\"}],\"max_tokens\":5,"
	           "\"max_completion_tokens\":7,\"temperature\":1,\"top_p\":0.5,\"top_k\":-1,\"seed\":42,"
	           "\"stop\":[\"x\",\"yy\"],\"stream\":true,\"stream_options\":{\"include_usage\":true},\"n\":1,"
	           "\"logprobs\":false,\"presence_penalty\":0.0,\"tools\":[],\"response_format\":{\"type\":\"text\"},"
	           "\"user\":\"u\"}", 1, &r, &e);
	ok(rc == 0, "chat: every supported field, and unsupported ones at their neutral values (%s)", e.message);
	ok(strcmp(r.msgs[0].role, "system") == 0 && strcmp(r.msgs[0].content, "a\nb") == 0,
	   "developer is system; text parts joined by newlines");
	ok(r.max_tokens == 7 && strcmp(r.max_tokens_param, "max_completion_tokens") == 0,
	   "max_completion_tokens wins over max_tokens");
	ok(r.p.temperature == 1.0 && r.p.top_p == 0.5 && r.p.top_k == 0 && r.p.seed == 42,
	   "temperature, top_p, top_k -1 (off), seed");
	ok(r.n_stop == 2 && strcmp(r.stop[1], "yy") == 0 && r.stream && r.include_usage,
	   "stop strings, stream, include_usage");
	ok(r.user && r.user_len == 1 && r.user[0] == 'u', "user (whose history a request drafts from)");
	oa_request_free(&r);

	rc = parse("{\"prompt\":\"Once\",\"stop\":\"\\n\"}", 0, &r, &e);
	ok(rc == 0 && strcmp(r.prompt, "Once") == 0 && r.n_stop == 1 && strcmp(r.stop[0], "\n") == 0,
	   "completions: a prompt, one stop string");
	oa_request_free(&r);
	rc = parse("{\"prompt\":[\"Once\"]}", 0, &r, &e);
	ok(rc == 0 && strcmp(r.prompt, "Once") == 0, "an array of one prompt");
	oa_request_free(&r);
	rc = parse("{\"prompt\":[1,2,999]}", 0, &r, &e);
	ok(rc == 0 && r.n_prompt_ids == 3 && r.prompt_ids[2] == 999 && !r.prompt, "token ids");
	oa_request_free(&r);
	rc = parse("{\"prompt\":[[5,6]]}", 0, &r, &e);
	ok(rc == 0 && r.n_prompt_ids == 2 && r.prompt_ids[0] == 5, "one array of token ids");
	oa_request_free(&r);

	refused("{\"messages\":", 1, "", "invalid_json");
	refused("{\"a\":1,\"a\":2}", 1, "", "invalid_json");
	refused("[1]", 1, "", "invalid_type");
	refused("{}", 1, "messages", "missing_required_parameter");
	refused("{}", 0, "prompt", "missing_required_parameter");
	refused("{\"messages\":\"Hi\"}", 1, "messages", "invalid_type");
	refused("{\"messages\":[]}", 1, "messages", "invalid_value");
	refused("{\"messages\":[3]}", 1, "messages[0]", "invalid_type");
	refused("{\"messages\":[{\"content\":\"x\"}]}", 1, "messages[0].role", "invalid_type");
	refused("{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", 1, "messages[0].role", "unsupported_value");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":null}]}", 1, "messages[0].content", "invalid_type");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 1,
	        "messages[0].content[0].type", "unsupported_value");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]}", 1,
	        "messages[0].content[0].text", "invalid_type");
	refused("{\"messages\":[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":[{}]}]}", 1,
	        "messages[0].tool_calls", "unsupported_parameter");
	refused("{\"prompt\":[\"a\",\"b\"]}", 0, "prompt", "unsupported_value");
	refused("{\"prompt\":[]}", 0, "prompt", "invalid_value");
	refused("{\"prompt\":[1,1000]}", 0, "prompt[1]", "invalid_value");
	refused("{\"prompt\":[1,\"a\"]}", 0, "prompt[1]", "invalid_type");
	refused("{\"prompt\":3}", 0, "prompt", "invalid_type");
	refused("{\"prompt\":\"a\",\"max_tokens\":\"5\"}", 0, "max_tokens", "invalid_type");
	refused("{\"prompt\":\"a\",\"max_tokens\":0}", 0, "max_tokens", "invalid_value");
	refused("{\"prompt\":\"a\",\"max_tokens\":2.5}", 0, "max_tokens", "invalid_type");
	refused("{\"prompt\":\"a\",\"max_completion_tokens\":-1}", 0, "max_completion_tokens", "invalid_value");
	refused("{\"prompt\":\"a\",\"temperature\":2.5}", 0, "temperature", "invalid_value");
	refused("{\"prompt\":\"a\",\"temperature\":\"hot\"}", 0, "temperature", "invalid_type");
	refused("{\"prompt\":\"a\",\"top_p\":1.5}", 0, "top_p", "invalid_value");
	refused("{\"prompt\":\"a\",\"top_k\":-2}", 0, "top_k", "invalid_value");
	refused("{\"prompt\":\"a\",\"seed\":1.5}", 0, "seed", "invalid_type");
	refused("{\"prompt\":\"a\",\"stream\":1}", 0, "stream", "invalid_type");
	refused("{\"prompt\":\"a\",\"stream_options\":{\"include_usage\":\"yes\"}}", 0, "stream_options.include_usage",
	        "invalid_type");
	refused("{\"prompt\":\"a\",\"stop\":\"\"}", 0, "stop", "invalid_value");
	refused("{\"prompt\":\"a\",\"stop\":[\"x\",2]}", 0, "stop[1]", "invalid_type");
	refused("{\"prompt\":\"a\",\"stop\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\","
	        "\"13\",\"14\",\"15\",\"16\",\"17\"]}", 0, "stop", "invalid_value");
	refused("{\"prompt\":\"a\",\"user\":7}", 0, "user", "invalid_type");
	{
		char body[400];
		snprintf(body, sizeof body, "{\"prompt\":\"a\",\"user\":\"%0257d\"}", 0);
		refused(body, 0, "user", "invalid_value");
	}
	refused("{\"prompt\":\"a\",\"n\":2}", 0, "n", "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"best_of\":3}", 0, "best_of", "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"logprobs\":5}", 0, "logprobs", "unsupported_parameter");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}", 1, "logprobs",
	        "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"echo\":true}", 0, "echo", "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"suffix\":\"b\"}", 0, "suffix", "unsupported_parameter");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}]}", 1, "tools",
	        "unsupported_parameter");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"auto\"}", 1, "tool_choice",
	        "unsupported_parameter");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_object\"}}",
	        1, "response_format", "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"logit_bias\":{\"1\":5}}", 0, "logit_bias", "unsupported_parameter");
	refused("{\"prompt\":\"a\",\"frequency_penalty\":0.5}", 0, "frequency_penalty", "unsupported_parameter");
	accepted("{\"prompt\":\"a\",\"n\":null,\"logprobs\":null,\"stop\":null,\"max_tokens\":null}", 0,
	         "null is a field not given");
	accepted("{\"prompt\":\"a\",\"stream_options\":{\"include_usage\":false,\"other\":1}}", 0,
	         "stream_options' unknown members ignored");
}

/* ---- openai.c: answers ---- */

static json_t *event_json(const char *ev)
{
	size_t n = ev ? strlen(ev) : 0;
	if (n < 8 || strncmp(ev, "data: ", 6) != 0 || strcmp(ev + n - 2, "\n\n") != 0)
		return NULL;
	return json_loadb(ev + 6, n - 8, 0, NULL);
}

static void test_answers(void)
{
	struct skipper_run_stats st = { .n_generated = 3, .drafted = 10, .accepted = 6, .lookup_drafted = 7,
		                        .lookup_accepted = 5, .ngram_drafted = 2, .ngram_accepted = 1,
		                        .alpha = 0.6, .mean_accepted = 2.5 };
	struct oa_answer a;
	struct oa_error e;
	char *s, *ev;
	json_t *j;

	oa_answer_init(&a, 1, "model.gguf", "lookup", 7, 1);
	ok(strncmp(a.id, "chatcmpl-", 9) == 0 && strlen(a.id) == 9 + 24, "chat ids: chatcmpl- and 24 hex digits");
	s = oa_body(&a, "Hi \xc3\xa9", 5, SKIPPER_FINISH_STOP, &st);
	j = s ? json_loads(s, 0, NULL) : NULL;
	ok(j && strcmp(json_string_value(json_object_get(j, "object")), "chat.completion") == 0,
	   "chat answer: object chat.completion");
	ok(j && strcmp(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0),
	                                                                 "message"), "content")), "Hi \xc3\xa9") == 0,
	   "the message's content");
	ok(j && json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")) == 10,
	   "usage: 7 + 3 tokens");
	ok(j && json_integer_value(json_object_get(json_object_get(json_object_get(json_object_get(j, "skipper"),
	                                                                           "sources"), "layer_skip"),
	                                           "drafted")) == 3 &&
	           json_integer_value(json_object_get(json_object_get(json_object_get(json_object_get(j, "skipper"),
	                                                                              "sources"), "lookup"),
	                                              "accepted")) == 4,
	   "skipper's statistics by draft source (layer skip 10 - 7, lookup 5 - 1)");
	json_decref(j);
	free(s);

	ev = oa_chunk(&a, 1, NULL, 0, -1);
	j = event_json(ev);
	ok(j && strcmp(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0),
	                                                                 "delta"), "role")), "assistant") == 0 &&
	           json_is_null(json_object_get(j, "usage")),
	   "first chunk: the role, usage null (include_usage)");
	json_decref(j);
	free(ev);
	ev = oa_chunk(&a, 0, NULL, 0, SKIPPER_FINISH_LENGTH);
	j = event_json(ev);
	ok(j && strcmp(json_string_value(json_object_get(json_array_get(json_object_get(j, "choices"), 0),
	                                                 "finish_reason")), "length") == 0,
	   "finish chunk: finish_reason length");
	json_decref(j);
	free(ev);
	ev = oa_usage_chunk(&a, &st);
	j = event_json(ev);
	ok(j && json_array_size(json_object_get(j, "choices")) == 0 &&
	           json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")) == 3,
	   "usage chunk: no choices, the usage");
	json_decref(j);
	free(ev);

	oa_answer_init(&a, 0, "m", "none", 2, 0);
	ev = oa_chunk(&a, 0, "abc", 3, -1);
	j = event_json(ev);
	ok(j && strncmp(a.id, "cmpl-", 5) == 0 && strcmp(json_string_value(json_object_get(j, "object")), "text_completion") == 0 &&
	           strcmp(json_string_value(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "text")), "abc") == 0 &&
	           !json_object_get(j, "usage"),
	   "completion chunk: text_completion with the text, no usage member");
	json_decref(j);
	free(ev);

	oa_fail(&e, 400, "invalid_request_error", "invalid_value", "prompt", "bad \xff\xfe text %d", 3);
	s = oa_error_body(&e);
	j = s ? json_loads(s, 0, NULL) : NULL;
	ok(j && strcmp(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "bad ?? text 3") == 0 &&
	           strcmp(json_string_value(json_object_get(json_object_get(j, "error"), "param")), "prompt") == 0,
	   "error body: bytes that are not UTF-8 replaced; param");
	json_decref(j);
	free(s);
}

/* ---- auth.c, metrics.c, access_log.c ---- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void test_auth(const char *dir)
{
	char path[512];
	struct server_auth *a = NULL;
	struct skipper_error err = { 0 };

	snprintf(path, sizeof path, "%s/key", dir);
	write_file(path, "  sk-test-123\n\n");
	ok(auth_load(path, &a, &err) == 0, "key file with white space around the key");
	ok(auth_check(a, "Bearer sk-test-123") && auth_check(a, "bearer  sk-test-123 "), "the key, Bearer in any case");
	ok(!auth_check(a, "Bearer sk-test-12") && !auth_check(a, "Bearer sk-test-1234") && !auth_check(a, "Bearer x") &&
	           !auth_check(a, NULL) && !auth_check(a, "Basic sk-test-123") && !auth_check(a, "Bearer "),
	   "short, long, wrong, missing, other schemes: refused");
	auth_free(a);
	write_file(path, "two words\n");
	ok(auth_load(path, &a, &err) == SKIPPER_ERR_CONFIG && strstr(err.msg, "white space"), "a key with a space: %s",
	   err.msg);
	write_file(path, "\n");
	ok(auth_load(path, &a, &err) == SKIPPER_ERR_CONFIG && strstr(err.msg, "no key"), "an empty file: %s", err.msg);
	snprintf(path, sizeof path, "%s/none", dir);
	ok(auth_load(path, &a, &err) != 0 && strstr(err.msg, path), "a missing file: %s", err.msg);
}

static void test_metrics_log(const char *dir)
{
	struct skipper_batch_metrics m = { .requests = 5, .requests_cancelled = 1, .running = 2, .queued = 3,
		                           .n_seq = 4, .drafted = { 10, 20, 30, 0 }, .accepted = { 1, 2, 3, 0 } };
	static atomic_ullong codes[HTTP_CODES];
	struct access_log *l;
	struct skipper_error err = { 0 };
	char path[512], line[512] = "";
	char *t;
	FILE *f;

	atomic_store(&codes[200], 7);
	atomic_store(&codes[503], 2);
	t = metrics_text(&m, codes);
	ok(t && strstr(t, "# TYPE skipper:requests_total counter\nskipper:requests_total 5\n"), "requests counter");
	ok(t && strstr(t, "skipper:num_requests_running 2\n") && strstr(t, "skipper:num_requests_waiting 3\n"),
	   "running and waiting gauges");
	ok(t && strstr(t, "skipper:spec_decode_num_draft_tokens_total{source=\"lookup\"} 20\n") &&
	           strstr(t, "skipper:spec_decode_num_accepted_tokens_total{source=\"ngram\"} 3\n") &&
	           strstr(t, "skipper:spec_decode_num_drafts_total{source=\"layer_skip\"} 0\n"),
	   "speculation counters by source");
	ok(t && strstr(t, "skipper:http_requests_total{code=\"503\"} 2\n") && !strstr(t, "code=\"404\""),
	   "answers by status, those seen only");
	free(t);

	snprintf(path, sizeof path, "%s/access.log", dir);
	ok(access_log_open(path, &l, &err) == 0, "access log file");
	access_log_write(l, &(struct access_entry){ "127.0.0.1", "POST", "/v1/x\"\n y", 200, 12, 34, 1.5, "stop" });
	access_log_close(l);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = '\0';
		fclose(f);
	}
	ok(strstr(line, " 127.0.0.1 \"POST /v1/x???y\" 200 12 34 1.500 stop\n") != NULL,
	   "one line; quotes, newlines and spaces of the path cannot split it: %s", line);
	ok(access_log_open("off", &l, &err) == 0 && l == NULL, "off: no log");
	ok(access_log_open("/nonexistent/dir/log", &l, &err) != 0 && strstr(err.msg, "/nonexistent/dir/log"),
	   "a log that cannot be opened: %s", err.msg);
}

int main(void)
{
	char dir[] = "/tmp/skipper-serve-units-XXXXXX";

	if (!mkdtemp(dir))
		BAIL("mkdtemp");
	test_gen();
	test_parse();
	test_answers();
	test_auth(dir);
	test_metrics_log(dir);
	{
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd))
			diag("could not remove %s", dir);
	}
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
