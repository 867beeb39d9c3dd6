/* Several requests decoded together (skipper_batch_*, core/session/batch.c
 * over core/engine/pass.c), on a generated model: each greedy output is
 * what the request gives alone, with lookup drafting among the others'
 * rows; requests queue past the sequences and are refused past the queue;
 * a cancelled request ends at the next pass; stop drains or cancels; the
 * metrics count what happened. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"
#include "tap.h"
#include "testmodel.h"

#define N_REQ 8
#define MAX_TOK 40

static struct skipper_error err;

struct result {
	char text[4096];
	size_t len;
	int finish, done, n_generated;
	int stop_after;           /* > 0: on_text asks to stop after this many pieces */
	int pieces;
	/* cancel_after > 0: on_text cancels the request (cancel_id of cancel_b)
	 * at that piece, from the batch's own thread, so that it is still
	 * running whatever the machine's load */
	struct skipper_batch *cancel_b;
	uint64_t cancel_id;
	int cancel_after, seen;
	int hold;                 /* on_text waits (under *mu) while it is set */
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	struct skipper_run_stats st;
};

static int on_text(void *ctx, const char *text, size_t len, int32_t tok)
{
	struct result *r = ctx;
	if (r->len + len < sizeof r->text) {
		memcpy(r->text + r->len, text, len);
		r->len += len;
	}
	if (r->cancel_after && ++r->seen == r->cancel_after)
		skipper_batch_cancel(r->cancel_b, r->cancel_id);
	if (r->mu) {
		pthread_mutex_lock(r->mu);
		while (r->hold)
			pthread_cond_wait(r->cv, r->mu);
		pthread_mutex_unlock(r->mu);
	}
	return r->stop_after && ++r->pieces >= r->stop_after;
}

static void on_done(void *ctx, int finish, const struct skipper_run_stats *st, const char *error)
{
	struct result *r = ctx;
	pthread_mutex_lock(r->mu);
	r->finish = finish;
	r->st = *st;
	r->n_generated = st->n_generated;
	r->done = 1;
	pthread_cond_broadcast(r->cv);
	pthread_mutex_unlock(r->mu);
	if (error)
		diag("request failed: %s", error);
}

static void *run(void *b)
{
	skipper_batch_run(b);
	return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void wait_done(struct result *r)
{
	pthread_mutex_lock(&mu);
	while (!r->done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

/* Prompts whose answers repeat: lookup has something to draft. */
static const char *prompts[N_REQ] = {
	"abcabcabcabc", "hello hello hello", "the cat the cat", "xyz xyz xyz xyz",
	"one two one two one", "aaaa bbbb aaaa", "lorem ipsum lorem", "qwerty qwerty",
};

/* policy, and each of more[] up to a NULL: --set settings; hooks may be NULL */
static struct skipper_session *open_session_with(const char *model, const char *policy, const char *const *more,
                                                 const struct skipper_session_hooks *hooks)
{
	struct skipper_config *cfg;
	struct skipper_session *s;
	char set[700];
	snprintf(set, sizeof set, "model.path=%s", model);
	if (skipper_config_new(&cfg, &err) || skipper_config_set(cfg, set, &err) ||
	    skipper_config_set(cfg, "model.threads=2", &err) || skipper_config_set(cfg, "model.ctx=256", &err) ||
	    skipper_config_set(cfg, "generate.chat_template=none", &err) ||
	    skipper_config_set(cfg, policy, &err))
		BAIL(err.msg);
	for (; more && *more; more++)
		if (skipper_config_set(cfg, *more, &err))
			BAIL(err.msg);
	if (skipper_session_open(cfg, hooks, &s, &err))
		BAIL(err.msg);
	skipper_config_free(cfg);
	return s;
}

static struct skipper_session *open_session(const char *model, const char *policy, const char *const *more)
{
	return open_session_with(model, policy, more, NULL);
}

/* the next request submitted is held at its first text (struct result) */
static int hold_next;

/* key: the request's history key (NULL: none); stop_after: see struct
 * result; temperature > 0: sampled, with a fixed seed */
static void submit_with(struct skipper_batch *b, struct skipper_session *s, const char *text, struct result *r,
                        uint64_t *id, int max_tokens, const char *key, int stop_after, double temperature)
{
	int32_t *ids;
	size_t n;
	struct skipper_batch_request q = { .on_text = on_text, .on_done = on_done, .ctx = r, .history_key = key };
	memset(r, 0, sizeof *r);
	r->hold = hold_next;
	hold_next = 0;
	r->stop_after = stop_after;
	r->mu = &mu;
	r->cv = &cv;
	skipper_session_defaults(s, &q.params);
	q.params.max_tokens = max_tokens;
	q.params.temperature = (float)temperature;
	q.params.seed = 7;
	if (skipper_session_text_tokens(s, text, &ids, &n, &err))
		BAIL(err.msg);
	q.prompt = ids;
	q.n_prompt = n;
	if (skipper_batch_submit(b, &q, id, &err))
		BAIL(err.msg);
	free(ids);
}

static void submit(struct skipper_batch *b, struct skipper_session *s, const char *text, struct result *r,
                   uint64_t *id, int max_tokens)
{
	submit_with(b, s, text, r, id, max_tokens, NULL, 0, 0);
}

static void alone(struct skipper_session *s, const char *text, struct result *r)
{
	struct skipper_generate_params p;
	int32_t *ids;
	size_t n;
	memset(r, 0, sizeof *r);
	skipper_session_defaults(s, &p);
	p.max_tokens = MAX_TOK;
	p.temperature = 0;
	if (skipper_session_text_tokens(s, text, &ids, &n, &err) ||
	    skipper_session_generate_ids(s, ids, n, &p, on_text, r, &err))
		BAIL(err.msg);
	free(ids);
}

/* 8 requests, 4 at a time (what: the policy and the curve, for the
 * messages): greedy, each output must be what it is alone; sampling,
 * each must be answered. Returns the batch's metrics. */
static struct skipper_batch_metrics drafts_together(const char *model, const char *policy, const char *const *more,
                                                   const char *what, double temperature)
{
	struct skipper_session *s = open_session(model, policy, more);
	struct skipper_batch_opts o = { .n_seq = 4, .max_queue = 8, .prefill_chunk = 5 };
	struct skipper_batch *b;
	struct skipper_batch_metrics m;
	struct result want[N_REQ], got[N_REQ];
	uint64_t id[N_REQ];
	pthread_t t;
	int same = 0, ended = 0;

	if (temperature == 0)
		for (int i = 0; i < N_REQ; i++)
			alone(s, prompts[i], &want[i]);
	if (skipper_batch_new(s, &o, &b, &err))
		BAIL(err.msg);
	if (pthread_create(&t, NULL, run, b))
		BAIL("pthread_create");
	for (int i = 0; i < N_REQ; i++)
		submit_with(b, s, prompts[i], &got[i], &id[i], MAX_TOK, NULL, 0, temperature);
	for (int i = 0; i < N_REQ; i++) {
		wait_done(&got[i]);
		same += temperature == 0 && got[i].len == want[i].len && !memcmp(got[i].text, want[i].text, got[i].len);
		ended += got[i].finish != SKIPPER_FINISH_ERROR && got[i].n_generated > 0;
	}
	skipper_batch_metrics(b, &m);
	if (temperature == 0)
		is_int(same, N_REQ, "%s: 8 requests, 4 at a time, each the text it gives alone", what);
	else
		is_int(ended, N_REQ, "%s, sampling: 8 requests, 4 at a time, each answered", what);
	diag("%s, temperature %.1f: draft tokens by source %llu %llu, accepted %llu %llu, draft passes %llu of %llu rows",
	     what, temperature, (unsigned long long)m.drafted[0], (unsigned long long)m.drafted[1],
	     (unsigned long long)m.accepted[0], (unsigned long long)m.accepted[1], (unsigned long long)m.draft_passes,
	     (unsigned long long)m.draft_rows);
	skipper_batch_stop(b, 1);
	pthread_join(t, NULL);
	skipper_batch_free(b);
	skipper_session_close(s);
	return m;
}

static void together(const char *model, const char *policy)
{
	/* the guard off: what is tested is what may be drafted beside the
	 * others, not how fast this machine's rounds are (under sanitizers a
	 * lookup row costs several times the curve's, which the guard learns) */
	const char *const more[] = { "policy.guard=no", NULL };
	struct skipper_batch_metrics m = drafts_together(model, policy, more, policy, 0);
	unsigned long long lookup = m.accepted[1] + m.accepted[2] + m.accepted[3];
	if (strstr(policy, "lookup"))
		ok(lookup > 0, "%s: lookup drafts accepted among the others' rows (%llu)", policy, lookup);
	ok(m.requests == N_REQ && m.running == 0 && m.queued == 0 && m.passes > 0 &&
	       m.pass_rows >= m.generated_tokens - N_REQ,
	   "%s: metrics: %llu requests, %llu tokens in %llu passes of %llu rows", policy, (unsigned long long)m.requests,
	   (unsigned long long)m.generated_tokens, (unsigned long long)m.passes, (unsigned long long)m.pass_rows);
	ok(m.pass_rows > m.passes, "%s: passes carried several rows", policy);
}

static void limits(const char *model)
{
	struct skipper_session *s = open_session(model, "policy.name=lookup", NULL);
	struct skipper_batch_opts o = { .n_seq = 2, .max_queue = 1 };
	struct skipper_batch *b;
	struct result r[4], stopper;
	uint64_t id[4];
	pthread_t t;
	int32_t big[300];

	if (skipper_batch_new(s, &o, &b, &err))
		BAIL(err.msg);
	/* the loop not running yet: 2 sequences + 1 queued, then full */
	for (int i = 0; i < 3; i++)
		submit(b, s, prompts[i], &r[i], &id[i], 200);
	{
		struct skipper_batch_request q = { .prompt = big, .n_prompt = 10, .on_done = on_done, .ctx = &r[3] };
		memset(big, 0, sizeof big);
		skipper_session_defaults(s, &q.params);
		uint64_t x;
		is_int(skipper_batch_submit(b, &q, &x, &err), SKIPPER_ERR_BUSY, "past the queue: busy (%s)", err.msg);
		q.n_prompt = 300;
		is_int(skipper_batch_submit(b, &q, &x, &err), SKIPPER_ERR_RANGE, "a prompt past the context: %s", err.msg);
	}
	r[0].cancel_b = b;
	r[0].cancel_id = id[0];
	r[0].cancel_after = 2; /* running */
	skipper_batch_cancel(b, id[2]); /* still queued */
	skipper_batch_cancel(b, 12345); /* no such request: ignored */
	if (pthread_create(&t, NULL, run, b))
		BAIL("pthread_create");
	wait_done(&r[2]);
	is_int(r[2].finish, SKIPPER_FINISH_CANCELLED, "a queued request cancelled ends cancelled");
	wait_done(&r[0]);
	ok(r[0].finish == SKIPPER_FINISH_CANCELLED && r[0].n_generated < 200,
	   "a running request cancelled ends at the next pass (%d tokens)", r[0].n_generated);
	wait_done(&r[1]);
	ok(r[1].finish == SKIPPER_FINISH_LENGTH || r[1].finish == SKIPPER_FINISH_STOP, "the other one runs to its end");
	/* a text callback that stops the request */
	submit_with(b, s, prompts[3], &stopper, &id[3], 200, NULL, 3, 0);
	wait_done(&stopper);
	ok(stopper.finish == SKIPPER_FINISH_STOP && stopper.pieces == 3, "on_text asking to stop ends it (finish stop)");
	/* stop without draining: a long request is cancelled (held at its
	 * first text until the stop, else this tiny model may finish it first) */
	hold_next = 1;
	submit(b, s, prompts[4], &r[0], &id[0], 200);
	skipper_batch_stop(b, 0);
	pthread_mutex_lock(&mu);
	r[0].hold = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	ok(r[0].done && r[0].finish == SKIPPER_FINISH_CANCELLED, "stop without draining cancels what runs");
	{
		uint64_t x;
		struct skipper_batch_request q = { .prompt = big, .n_prompt = 4 };
		skipper_session_defaults(s, &q.params);
		is_int(skipper_batch_submit(b, &q, &x, &err), SKIPPER_ERR_INTERRUPTED, "a stopped batch takes nothing");
	}
	struct skipper_batch_metrics m;
	skipper_batch_metrics(b, &m);
	ok(m.requests_cancelled == 3 && m.requests == 5, "metrics: %llu requests, %llu cancelled",
	   (unsigned long long)m.requests, (unsigned long long)m.requests_cancelled);
	skipper_batch_free(b);
	skipper_session_close(s);
}

/* One request after another, with history keys: a key drafts from its own
 * earlier requests and never from another key's ([lookup] history_scope =
 * key); with global scope every request drafts from all. The same prompt
 * again gives the same answer, which its history then proposes. */
static void history_scopes(const char *model)
{
	static const char *prompt = "a history test of several words";
	for (int global = 0; global < 2; global++) {
		/* guard off: on a loaded machine the guard may pause drafting
		 * (its state carries over from one request to the next in a
		 * slot), and what is tested here is what may be drafted */
		const char *const more[] = { "lookup.history=memory", "policy.guard=no",
		                             global ? "lookup.history_scope=global" : "lookup.history_scope=key", NULL };
		struct skipper_session *s = open_session(model, "policy.name=lookup", more);
		struct skipper_batch_opts o = { .n_seq = 1 };
		struct skipper_batch *b;
		struct result first, same, other;
		uint64_t id;
		pthread_t t;

		if (skipper_batch_new(s, &o, &b, &err))
			BAIL(err.msg);
		if (pthread_create(&t, NULL, run, b))
			BAIL("pthread_create");
		submit_with(b, s, prompt, &first, &id, MAX_TOK, "alice", 0, 0);
		wait_done(&first);
		submit_with(b, s, prompt, &other, &id, MAX_TOK, "bob", 0, 0);
		wait_done(&other);
		submit_with(b, s, prompt, &same, &id, MAX_TOK, "alice", 0, 0);
		wait_done(&same);
		ok(first.len == same.len && !memcmp(first.text, same.text, same.len) && first.len == other.len &&
		       !memcmp(first.text, other.text, other.len),
		   "%s scope: the same prompt, the same answer", global ? "global" : "key");
		ok(first.st.history_accepted == 0 && same.st.history_accepted > 0,
		   "%s scope: a key's second request drafts from its first (%d accepted)", global ? "global" : "key",
		   same.st.history_accepted);
		if (global)
			ok(other.st.history_accepted > 0, "global scope: another key drafts from it too (%d accepted)",
			   other.st.history_accepted);
		else
			is_int(other.st.history_drafts, 0, "key scope: another key never drafts from it");
		skipper_batch_stop(b, 1);
		pthread_join(t, NULL);
		skipper_batch_free(b);
		skipper_session_close(s);
	}
}

/* The cost curves measured so far in dir/costs rewritten: a pass of n
 * rows costs 1 + (n - 1) x extra steps at any context, the head a tenth
 * of a step and each of the model's 2 layers' sub-layers the same share
 * of the rest.
 * Gentle (extra 1/20): what the history tests check is which history a
 * request may draft from, and a curve measured on a busy machine for a
 * model whose passes take microseconds can say that no draft ever pays. */
static void set_curves(const char *dir, double extra)
{
	char costs[600], file[900], line[256];
	struct dirent *d;
	DIR *dd;

	snprintf(costs, sizeof costs, "%s/costs", dir);
	if (!(dd = opendir(costs)))
		BAIL("no cost curve was cached");
	int files = 0;
	while ((d = readdir(dd))) {
		FILE *in, *out;
		char tmp[920];
		if (!strstr(d->d_name, ".costs"))
			continue;
		files++;
		snprintf(file, sizeof file, "%s/%s", costs, d->d_name);
		snprintf(tmp, sizeof tmp, "%s.new", file);
		if (!(in = fopen(file, "r")) || !(out = fopen(tmp, "w")))
			BAIL("cannot rewrite a cost curve");
		while (fgets(line, sizeof line, in)) {
			int rows;
			if (sscanf(line, "verify %d", &rows) == 1)
				fprintf(out, "verify %d %.6f\n", rows, 1.0 + (rows - 1) * extra);
			else if (!strncmp(line, "head ", 5) || !strncmp(line, "draft_head ", 11))
				fprintf(out, "%.*s 0.1\n", (int)strcspn(line, " "), line);
			else if (!strncmp(line, "attn ", 5) || !strncmp(line, "mlp ", 4))
				fprintf(out, "%.*s 0.225\n", (int)strcspn(line, " "), line);
			else if (!strncmp(line, "context_row ", 12) || !strncmp(line, "context_extra_row ", 18))
				fprintf(out, "%.*s 0\n", (int)strcspn(line, " "), line);
			else
				fputs(line, out);
		}
		fclose(in);
		if (fclose(out) || rename(tmp, file))
			BAIL("cannot rewrite a cost curve");
	}
	closedir(dd);
	if (!files)
		BAIL("no cost curve was cached");
}

/* Layer-skip drafts beside other sequences (a fixed mask of a third of a
 * step, 3 tokens a round): where rows cost little the sequences draft
 * together, a step one pass of all their rows; where every extra row
 * costs a step, a draft token never pays beside 3 others and nothing is
 * drafted, not even to learn the acceptance. */
static void skip_drafts(const char *model, const char *cache)
{
	const char *const more[] = { "fixed.attn=0,1", "fixed.mlp=1", "fixed.draft_length=3", "fixed.costs=no",
		                     "policy.guard=no", NULL };
	set_curves(cache, 1.0 / 20);
	for (int sampling = 0; sampling < 2; sampling++) {
		struct skipper_batch_metrics m = drafts_together(model, "policy.name=fixed", more, "skip drafts, gentle curve",
		                                                 sampling ? 0.8 : 0);
		ok(m.drafted[0] > 0 && m.accepted[0] > 0, "skip drafts, gentle curve: drafted and accepted beside the others");
		ok(m.draft_rows > m.draft_passes, "skip drafts, gentle curve: draft passes carried several sequences");
	}
	set_curves(cache, 1.0);
	struct skipper_batch_metrics m = drafts_together(model, "policy.name=fixed", more, "skip drafts, steep curve", 0);
	is_int((int)m.draft_passes, 0, "skip drafts, steep curve: no draft step beside the others");
}

/* Lookup beside other sequences where an extra row costs 0.4 steps: the
 * prior's acceptance (1/2) does not pay for one at the pass's rate, so
 * nothing would be verified and the acceptance never learnt, but for the
 * probes while a sequence has no lookup evidence; learnt, the copies of
 * these answers pay. */
static void lookup_learns(const char *model, const char *cache)
{
	const char *const more[] = { "policy.guard=no", NULL };
	set_curves(cache, 0.4);
	struct skipper_batch_metrics m = drafts_together(model, "policy.name=lookup", more, "lookup, rows at 0.4 steps", 0);
	ok(m.accepted[1] > 0, "lookup, rows at 0.4 steps: %llu tokens accepted from lookup beside the others",
	   (unsigned long long)m.accepted[1]);
}

/* The public generate call tells a long prompt's reading to the session's
 * progress hook as "prompt" in tokens (skipper(3)): from 0 to the whole,
 * in order, finished on the last call, with the text of a session without
 * the hook; a stop from the hook fails the call with
 * SKIPPER_ERR_INTERRUPTED. */
static struct {
	int calls, last, total, in_order, finished, other, stop;
} heard;

static int hear(void *ctx, const char *what, long long done, long long total, int finished)
{
	(void)ctx;
	if (!what || strcmp(what, "prompt")) {
		heard.other++;
		return 0;
	}
	heard.in_order &= done > heard.last;
	heard.calls++;
	heard.last = (int)done;
	heard.total = (int)total;
	heard.finished += finished;
	return heard.stop;
}

static void prompt_progress(const char *dir)
{
	enum { N = 1300 };
	static const char *const ctx[] = { "model.ctx=2048", NULL };
	char path[600];
	struct skipper_test_model_opts o;
	struct skipper_session_hooks hooks = { .progress = hear };
	struct skipper_session *s[2];
	struct skipper_generate_params p;
	struct result r[2];
	int32_t prompt[N];
	int rc;

	snprintf(path, sizeof path, "%s/long-model.gguf", dir);
	skipper_test_model_defaults(&o);
	o.n_layer = 2;
	o.seed = 5;
	o.n_ctx = 2048;
	if (skipper_test_model_write(path, &o))
		BAIL("cannot write the test model");
	for (int k = 0; k < 2; k++)
		s[k] = open_session_with(path, "policy.name=none", ctx, k ? &hooks : NULL);
	for (int i = 0; i < N; i++)
		prompt[i] = (int32_t)(3 + (i * 7919) % 200);
	skipper_session_defaults(s[0], &p);
	p.max_tokens = 6;
	p.temperature = 0;
	heard = (__typeof__(heard)){ .last = -1, .in_order = 1 };
	for (int k = 0; k < 2; k++) {
		memset(&r[k], 0, sizeof r[k]);
		if (skipper_session_generate_ids(s[k], prompt, N, &p, on_text, &r[k], &err))
			BAIL(err.msg);
	}
	ok(heard.calls == 4 && heard.last == N && heard.total == N && heard.in_order && heard.finished == 1 &&
	   !heard.other, "a %d-token prompt told to the progress hook as \"prompt\": %d calls, last %d of %d, finished once",
	   N, heard.calls, heard.last, heard.total);
	ok(r[0].len > 0 && r[0].len == r[1].len && !memcmp(r[0].text, r[1].text, r[0].len),
	   "the same text as without the hook (%zu bytes)", r[0].len);
	/* another prompt: the session holds this one's K/V now (prefix cache) */
	for (int i = 0; i < N; i++)
		prompt[i] = (int32_t)(3 + (i * 7907) % 200);
	heard = (__typeof__(heard)){ .last = -1, .in_order = 1, .stop = 1 };
	memset(&r[1], 0, sizeof r[1]);
	rc = skipper_session_generate_ids(s[1], prompt, N, &p, on_text, &r[1], &err);
	ok(rc == SKIPPER_ERR_INTERRUPTED && r[1].len == 0 && heard.calls == 1,
	   "a stop from the hook: SKIPPER_ERR_INTERRUPTED, no text (%s)", err.msg);
	for (int k = 0; k < 2; k++)
		skipper_session_close(s[k]);
	unlink(path);
}

int main(void)
{
	char path[] = "/tmp/t-batch-XXXXXX", cache[] = "/tmp/t-batch-cache-XXXXXX";
	struct skipper_test_model_opts o;
	int fd = mkstemp(path);

	if (fd < 0 || !mkdtemp(cache))
		BAIL("mkstemp");
	close(fd);
	setenv("SKIPPER_CACHE_DIR", cache, 1);
	skipper_test_model_defaults(&o);
	o.n_layer = 2;
	o.seed = 5;
	o.n_ctx = 256;
	o.redundant[0] = o.redundant[1] = 1;
	if (skipper_test_model_write(path, &o))
		BAIL("cannot write the test model");
	together(path, "policy.name=none");
	/* the curve, measured by a session that drafts, made gentle: on a
	 * slow build (sanitizers) or a busy machine it can price every lookup
	 * row out of a batch */
	skipper_session_close(open_session(path, "policy.name=lookup", NULL));
	set_curves(cache, 1.0 / 20);
	together(path, "policy.name=lookup");
	limits(path);
	history_scopes(path);
	skip_drafts(path, cache);
	lookup_learns(path, cache);
	prompt_progress(cache);
	unlink(path);
	{
		char cmd[100];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
		if (system(cmd) != 0)
			diag("cannot remove %s", cache);
	}
	return tap_done();
}
