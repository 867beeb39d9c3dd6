/* Fuzz target: skipper serve's OpenAI request parser (core/server/openai.c
 * over jansson) and the stop strings of a generation (core/server/gen.c),
 * on the bytes a client sends. The first byte picks the endpoint ('c'
 * chat completions, anything else completions); the rest is the body.
 *
 * Checked besides ASan/UBSan (abort on violation):
 * - a refusal is a 400 (or a 500: out of memory) whose error body is JSON
 *   with a message, a type, and the param and code members;
 * - an accepted request holds one prompt (messages with a role and
 *   content, a text, or ids below the vocabulary), max_tokens 0 (not
 *   given) or more, temperature, top_p and top_k in range, at most 16 stop
 *   strings of 1 to 256 bytes;
 * - the request's own text (its contents, or its prompt), fed to a
 *   generation with its stop strings in pieces of 1 to 8 bytes, comes out
 *   as a prefix of it that holds no stop string, cut (if it stopped) where
 *   a stop string begins, whole if it did not; the text released before
 *   the end is always a prefix of what comes out at the end.
 * `make check` replays tests/fuzz/seeds/openai-request/ (fuzz-main.c);
 * `make fuzz` runs it under libFuzzer (tests/fuzz/README). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-openai-request: %s failed\n", #c); abort(); } } while (0)
#define N_VOCAB 1000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const struct oa_error *e)
{
	char *body = oa_error_body(e);
	json_t *j = body ? json_loads(body, 0, NULL) : NULL, *err = json_object_get(j, "error");

	CHECK(e->status == 400 || e->status == 500);
	CHECK(j && json_is_string(json_object_get(err, "message")) && json_is_string(json_object_get(err, "type")));
	CHECK(json_object_get(err, "param") && json_object_get(err, "code"));
	json_decref(j);
	free(body);
}

static int holds_stop(const struct oa_request *r, const char *text, size_t n)
{
	for (int i = 0; i < r->n_stop; i++)
		if (memmem(text, n, r->stop[i], strlen(r->stop[i])))
			return 1;
	return 0;
}

/* Everything released so far appended to out (a prefix check on the way). */
static size_t take(struct gen *g, char *out, size_t have, int *done)
{
	struct gen_view v;
	CHECK(gen_wait(g, have, 0, &v) == 0);
	if (v.n)
		memcpy(out + have, v.text, v.n);
	free(v.text);
	*done = v.done;
	return have + v.n;
}

static void check_stops(const struct oa_request *r, const char *text, size_t n, size_t piece)
{
	const char *stops[OA_MAX_STOP];
	struct skipper_run_stats st = { 0 };
	struct gen *g;
	char *out = malloc(n + 1);
	size_t have = 0, fed = 0;
	int stopped = 0, done = 0;

	CHECK(out);
	for (int i = 0; i < r->n_stop; i++)
		stops[i] = r->stop[i];
	g = gen_new(stops, r->n_stop);
	CHECK(g);
	gen_hold(g);
	while (fed < n && !stopped) {
		size_t k = n - fed < piece ? n - fed : piece;
		stopped = gen_on_text(g, text + fed, k, 1);
		fed += k;
		have = take(g, out, have, &done);
		CHECK(!done && have <= fed && memcmp(out, text, have) == 0);
	}
	CHECK(stopped == holds_stop(r, text, fed));
	gen_on_done(g, stopped ? SKIPPER_FINISH_STOP : SKIPPER_FINISH_LENGTH, &st, NULL);
	have = take(g, out, have, &done);
	CHECK(done && memcmp(out, text, have) == 0 && !holds_stop(r, out, have));
	if (stopped) {
		int at_stop = 0;
		for (int i = 0; i < r->n_stop; i++)
			at_stop |= strncmp(text + have, r->stop[i], strlen(r->stop[i])) == 0;
		CHECK(at_stop);
	} else {
		CHECK(have == n);
	}
	gen_release(g);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct skipper_generate_params defaults = { 256, 0.0, 0.95, 40, 0 };
	struct oa_request r;
	struct oa_error e;
	int chat = size > 0 && data[0] == 'c';
	const char *body = size ? (const char *)data + 1 : "";
	char *text = NULL;
	size_t n = 0;

	if (oa_parse(body, size ? size - 1 : 0, chat, &defaults, N_VOCAB, &r, &e)) {
		check_error(&e);
		oa_request_free(&r);
		return 0;
	}
	CHECK(r.max_tokens >= 0 && r.p.temperature >= 0 && r.p.temperature <= 2 && r.p.top_p >= 0 &&
	      r.p.top_p <= 1 && r.p.top_k >= 0 && r.n_stop <= OA_MAX_STOP);
	for (int i = 0; i < r.n_stop; i++)
		CHECK(strlen(r.stop[i]) >= 1 && strlen(r.stop[i]) <= OA_MAX_STOP_LEN);
	if (chat) {
		CHECK(r.n_msgs >= 1);
		for (size_t i = 0; i < r.n_msgs; i++)
			n += strlen(r.msgs[i].content);
		CHECK((text = malloc(n + 1)));
		n = 0;
		for (size_t i = 0; i < r.n_msgs; i++) {
			CHECK(r.msgs[i].role && r.msgs[i].content);
			memcpy(text + n, r.msgs[i].content, strlen(r.msgs[i].content));
			n += strlen(r.msgs[i].content);
		}
		text[n] = '\0'; /* check_stops compares stops at its end */
	} else if (r.prompt) {
		n = strlen(r.prompt);
		CHECK((text = malloc(n + 1)));
		memcpy(text, r.prompt, n + 1);
	} else {
		CHECK(r.n_prompt_ids >= 1);
		for (size_t i = 0; i < r.n_prompt_ids; i++)
			CHECK(r.prompt_ids[i] >= 0 && r.prompt_ids[i] < N_VOCAB);
	}
	if (text)
		check_stops(&r, text, n, 1 + size % 8);
	free(text);
	oa_request_free(&r);
	return 0;
}
