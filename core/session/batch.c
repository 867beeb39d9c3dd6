/* Requests from many threads, decoded together by one (skipper_batch_*,
 * skipper/skipper.h): a bounded queue, n_seq slots, each an engine with
 * its own policy instance in its own KV sequence of the session's
 * backend, and one forward pass per step over every running slot
 * (skipper_pass_run, core/engine/pass.c). A request joins a free slot at
 * the next step; its prompt is read in chunks between the others' rows. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "engine/history.h"
#include "session.h"

struct job {
	uint64_t id;
	int32_t *prompt;
	size_t n_prompt;
	struct skipper_batch_request r;
	char key[65];             /* its history's key ("": the shared one) */
	int cancel;               /* under the batch's lock */
	struct job *next;
};

/* A sequence of the backend and the engine that decodes in it. */
struct slot {
	struct skipper_engine *e;
	struct job *j;            /* NULL: free */
	struct skipper_batch *b;
	struct skipper_run_stats st;
	struct skipper_detok dt;
	int stopped;              /* the text callback asked to stop */
	int admit;                /* taken from the queue, its request not begun yet */
	struct scope *scope;      /* its key's history, or NULL */
	int cancel;               /* seen cancelled at this step */
	struct skipper_gen_params gp;
};

/* A history of requests with one key ([lookup] history_scope = key). */
struct scope {
	char key[65];
	struct skipper_history *h;
	uint64_t used;            /* the pass that last used it (the oldest goes first) */
	int users;                /* requests running with it: never dropped while > 0 */
};
#define MAX_SCOPES 16

struct skipper_batch {
	struct skipper_session *s;
	struct scope scope[MAX_SCOPES];
	int per_key;              /* history_scope = key */
	uint64_t n_passes;
	struct skipper_batch_opts o;
	struct slot *slot;        /* [n_seq] */
	struct skipper_engine **engines;
	struct skipper_pass *pass;
	int *rc;
	struct skipper_error *err;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;  /* the queue */
	int stopping, drain;
	uint64_t next_id;
	struct skipper_batch_metrics m;
};

static void job_free(struct job *j)
{
	if (j)
		free(j->prompt);
	free(j);
}

void skipper_batch_free(struct skipper_batch *b)
{
	if (!b)
		return;
	while (b->head) {
		struct job *j = b->head;
		b->head = j->next;
		job_free(j);
	}
	for (int i = 0; b->slot && i < b->o.n_seq; i++) {
		skipper_engine_free(b->slot[i].e);
		job_free(b->slot[i].j);
	}
	for (int i = 0; i < MAX_SCOPES; i++)
		skipper_history_free(b->scope[i].h);
	free(b->slot);
	free(b->engines);
	free(b->rc);
	free(b->err);
	skipper_pass_free(b->pass);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
}

int skipper_batch_new(struct skipper_session *s, const struct skipper_batch_opts *o, struct skipper_batch **out,
                      struct skipper_error *err)
{
	struct skipper_batch *b;
	int rc;

	*out = NULL;
	if (o->n_seq < 1 || o->max_queue < 0 || o->prefill_chunk < 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "batch: %d sequences, a queue of %d, chunks of %d", o->n_seq,
		                    o->max_queue, o->prefill_chunk);
	if (!(b = calloc(1, sizeof *b)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->s = s;
	b->o = *o;
	b->next_id = 1;
	b->m.n_seq = o->n_seq;
	b->m.max_queue = o->max_queue;
	b->per_key = s->history && !strcmp(skipper_config_get(s->cfg, "lookup", "history_scope"), "key");
	b->slot = calloc((size_t)o->n_seq, sizeof *b->slot);
	b->engines = calloc((size_t)o->n_seq, sizeof *b->engines);
	b->rc = calloc((size_t)o->n_seq, sizeof *b->rc);
	b->err = calloc((size_t)o->n_seq, sizeof *b->err);
	if (!b->slot || !b->engines || !b->rc || !b->err) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if ((rc = skipper_session_sequences(s, o->n_seq, err)) ||
	    (rc = skipper_pass_new(s->be, o->prefill_chunk, &b->pass, err)))
		goto fail;
	for (int i = 0; i < o->n_seq; i++) {
		if ((rc = skipper_session_engine_seq(s, s->cfg, i, &b->slot[i].e, err)))
			goto fail;
		b->slot[i].b = b;
		b->engines[i] = b->slot[i].e;
	}
	*out = b;
	return SKIPPER_OK;
fail:
	skipper_batch_free(b);
	return rc;
}

int skipper_batch_submit(struct skipper_batch *b, const struct skipper_batch_request *r, uint64_t *id,
                         struct skipper_error *err)
{
	int n_ctx = b->s->be->n_ctx, rc = SKIPPER_OK;
	struct job *j;

	if (r->n_prompt < 1 || r->n_prompt + 1 > (size_t)n_ctx)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "a prompt of %zu tokens does not fit the context of %d tokens",
		                    r->n_prompt, n_ctx);
	if (!(j = calloc(1, sizeof *j)) || !(j->prompt = malloc(sizeof *j->prompt * r->n_prompt))) {
		free(j);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	memcpy(j->prompt, r->prompt, sizeof *j->prompt * r->n_prompt);
	j->n_prompt = r->n_prompt;
	j->r = *r;
	j->r.prompt = j->prompt;
	snprintf(j->key, sizeof j->key, "%s", r->history_key ? r->history_key : "");
	j->r.history_key = NULL;
	pthread_mutex_lock(&b->mu);
	if (b->stopping)
		rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "the server is stopping");
	else if (b->m.queued + b->m.running >= b->o.max_queue + b->o.n_seq)
		rc = skipper_fail(err, SKIPPER_ERR_BUSY, "%d requests are running and %d waiting (the limit)",
		                  b->m.running, b->m.queued);
	if (!rc) {
		j->id = *id = b->next_id++;
		if (b->tail)
			b->tail->next = j;
		else
			b->head = j;
		b->tail = j;
		b->m.queued++;
		pthread_cond_signal(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	if (rc)
		job_free(j);
	return rc;
}

void skipper_batch_cancel(struct skipper_batch *b, uint64_t id)
{
	pthread_mutex_lock(&b->mu);
	for (struct job *j = b->head; j; j = j->next)
		j->cancel |= j->id == id;
	for (int i = 0; i < b->o.n_seq; i++)
		if (b->slot[i].j && b->slot[i].j->id == id)
			b->slot[i].j->cancel = 1;
	pthread_mutex_unlock(&b->mu);
}

void skipper_batch_stop(struct skipper_batch *b, int drain)
{
	pthread_mutex_lock(&b->mu);
	b->stopping = 1;
	b->drain = drain;
	for (struct job *j = b->head; j; j = j->next)
		j->cancel = 1;
	for (int i = 0; !drain && i < b->o.n_seq; i++)
		if (b->slot[i].j)
			b->slot[i].j->cancel = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void skipper_batch_metrics(struct skipper_batch *b, struct skipper_batch_metrics *m)
{
	pthread_mutex_lock(&b->mu);
	*m = b->m;
	pthread_mutex_unlock(&b->mu);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The engine's token callback: text for the request's callback. */
static int on_token(void *user, int32_t tok)
{
	struct slot *sl = user;
	char buf[512];
	size_t n;

	if (skipper_tokenizer_is_eog(sl->b->s->tok, tok))
		return 0;
	n = skipper_detok_push(&sl->dt, tok, buf, sizeof buf);
	if (sl->j->r.on_text && sl->j->r.on_text(sl->j->r.ctx, buf, n, tok))
		sl->stopped = 1;
	return sl->stopped;
}

/* The history a request with key drafts from: the session's shared one,
 * or its key's own (made when first seen; past MAX_SCOPES keys the one
 * used longest ago that no running request holds is dropped). NULL: no
 * history, every scope busy, or no memory for one. */
static struct skipper_history *history_for(struct skipper_batch *b, struct slot *sl, const char *key)
{
	struct scope *sc = NULL;
	struct skipper_error err = { 0 };

	sl->scope = NULL;
	if (!b->per_key || !*key)
		return b->s->history;
	for (int i = 0; i < MAX_SCOPES && !sc; i++)
		if (b->scope[i].h && !strcmp(b->scope[i].key, key))
			sc = &b->scope[i];
	for (int i = 0; i < MAX_SCOPES && !sc; i++)
		if (!b->scope[i].h)
			sc = &b->scope[i];
	if (!sc) {
		for (int i = 0; i < MAX_SCOPES; i++)
			if (!b->scope[i].users && (!sc || b->scope[i].used < sc->used))
				sc = &b->scope[i];
		if (!sc)
			return NULL;
		skipper_history_free(sc->h);
		sc->h = NULL;
	}
	if (!sc->h) {
		snprintf(sc->key, sizeof sc->key, "%s", key);
		if (session_history_new(b->s, &sc->h, &err)) {
			session_log(b->s, SKIPPER_LOG_WARN, "warning: no history for a client: %s", err.msg);
			return NULL;
		}
	}
	sc->used = b->n_passes;
	sc->users++;
	sl->scope = sc;
	return sc->h;
}

/* A queued job into a free slot: its request begins (its prompt is read
 * in the next passes). */
static void admit(struct skipper_batch *b, struct slot *sl, struct job *j)
{
	struct skipper_session *s = b->s;
	const struct skipper_generate_params *p = &j->r.params;
	int room = s->be->n_ctx - (int)j->n_prompt;

	sl->j = j;
	sl->stopped = 0;
	sl->gp = s->gen;
	sl->gp.max_tokens = p->max_tokens < room ? p->max_tokens : room;
	sl->gp.sampling.temperature = (float)p->temperature;
	sl->gp.sampling.top_p = (float)p->top_p;
	sl->gp.sampling.top_k = p->top_k;
	sl->gp.seed = p->seed ? p->seed : s->gen.seed + j->id;
	skipper_detok_init(&sl->dt, s->tok, 0);
	skipper_engine_set_history(sl->e, history_for(b, sl, j->key));
	b->rc[sl - b->slot] = skipper_engine_begin(sl->e, j->prompt, (int)j->n_prompt, &sl->gp, on_token, sl, &sl->st,
	                                          &b->err[sl - b->slot]);
}

/* The slot's request ends: its statistics, the metrics, on_done. */
static void finish(struct skipper_batch *b, struct slot *sl, int rc, int cancelled)
{
	struct job *j = sl->j;
	struct skipper_error *err = &b->err[sl - b->slot];
	char buf[64];
	int finish;

	rc = skipper_engine_end(sl->e, rc, err);
	if (!rc && !cancelled) {
		size_t n = skipper_detok_flush(&sl->dt, buf, sizeof buf);
		if (n && j->r.on_text)
			j->r.on_text(j->r.ctx, buf, n, -1);
	}
	finish = rc ? SKIPPER_FINISH_ERROR : cancelled ? SKIPPER_FINISH_CANCELLED : sl->stopped ? SKIPPER_FINISH_STOP :
	         sl->st.n_generated >= sl->gp.max_tokens ? SKIPPER_FINISH_LENGTH : SKIPPER_FINISH_STOP;
	pthread_mutex_lock(&b->mu);
	b->m.requests++;
	b->m.requests_failed += finish == SKIPPER_FINISH_ERROR;
	b->m.requests_cancelled += finish == SKIPPER_FINISH_CANCELLED;
	b->m.prompt_tokens += j->n_prompt;
	b->m.generated_tokens += (uint64_t)sl->st.n_generated;
	int src[SKIPPER_DRAFT_SOURCES][3] = {
		{ sl->st.drafts, sl->st.drafted - sl->st.lookup_drafted, sl->st.accepted - sl->st.lookup_accepted },
		{ sl->st.lookup_drafts - sl->st.ngram_drafts - sl->st.history_drafts,
		  sl->st.lookup_drafted - sl->st.ngram_drafted - sl->st.history_drafted,
		  sl->st.lookup_accepted - sl->st.ngram_accepted - sl->st.history_accepted },
		{ sl->st.ngram_drafts, sl->st.ngram_drafted, sl->st.ngram_accepted },
		{ sl->st.history_drafts, sl->st.history_drafted, sl->st.history_accepted },
	};
	for (int k = 0; k < SKIPPER_DRAFT_SOURCES; k++) {
		b->m.drafts[k] += (uint64_t)src[k][0];
		b->m.drafted[k] += (uint64_t)src[k][1];
		b->m.accepted[k] += (uint64_t)src[k][2];
	}
	b->m.running--;
	sl->j = NULL;
	if (sl->scope)
		sl->scope->users--;
	sl->scope = NULL;
	pthread_mutex_unlock(&b->mu);
	if (j->r.on_done)
		j->r.on_done(j->r.ctx, finish, &sl->st, rc ? err->msg : NULL);
	job_free(j);
}

/* The free slot for job j: the one whose sequence holds the longest
 * prefix of its prompt ([generate] prefix_cache: a conversation's next
 * turn goes where its last one left its cache), the first at a tie; -1:
 * none free. */
static int free_slot(struct skipper_batch *b, const struct job *j)
{
	int best = -1, best_n = -1;
	for (int i = 0; i < b->o.n_seq; i++) {
		if (b->slot[i].j)
			continue;
		int n = skipper_backend_kv_prefix(b->s->be, i, j->prompt, (int)j->n_prompt);
		if (n > best_n) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

/* Under the lock: queued jobs into free slots (cancelled ones end at once),
 * running ones that were cancelled marked. Returns how many slots run. */
static int schedule(struct skipper_batch *b, struct job **dropped)
{
	int running = 0, i = -1;
	while (b->head && (b->head->cancel || (i = free_slot(b, b->head)) >= 0)) {
		struct job *j = b->head;
		if (!(b->head = j->next))
			b->tail = NULL;
		b->m.queued--;
		if (j->cancel) {
			j->next = *dropped;
			*dropped = j;
			continue;
		}
		b->slot[i].j = j;
		b->slot[i].admit = 1; /* its request begins outside the lock */
		b->m.running++;
	}
	for (i = 0; i < b->o.n_seq; i++) {
		struct slot *sl = &b->slot[i];
		sl->cancel = sl->j && sl->j->cancel;
		running += sl->j != NULL;
	}
	return running;
}

int skipper_batch_run(struct skipper_batch *b)
{
	for (;;) {
		struct job *dropped = NULL;
		int running;

		pthread_mutex_lock(&b->mu);
		while (!(running = schedule(b, &dropped)) && !b->stopping && !dropped)
			pthread_cond_wait(&b->cv, &b->mu);
		int stop = b->stopping && !running && !b->head;
		pthread_mutex_unlock(&b->mu);
		for (struct job *j = dropped, *next; j; j = next) {
			struct skipper_run_stats st = { .n_prompt = (int)j->n_prompt };
			next = j->next;
			pthread_mutex_lock(&b->mu);
			b->m.requests++;
			b->m.requests_cancelled++;
			pthread_mutex_unlock(&b->mu);
			if (j->r.on_done)
				j->r.on_done(j->r.ctx, SKIPPER_FINISH_CANCELLED, &st, NULL);
			job_free(j);
		}
		if (stop)
			return SKIPPER_OK;
		for (int i = 0; i < b->o.n_seq; i++) {
			struct slot *sl = &b->slot[i];
			b->rc[i] = SKIPPER_OK;
			if (sl->j && sl->admit) {
				sl->admit = 0;
				admit(b, sl, sl->j);
			}
			if (sl->j && (sl->cancel || b->rc[i]))
				finish(b, sl, sl->cancel ? SKIPPER_OK : b->rc[i], sl->cancel);
		}
		double t0 = now();
		int rows = skipper_pass_run(b->pass, b->engines, b->o.n_seq, b->rc, b->err);
		pthread_mutex_lock(&b->mu);
		b->m.busy_seconds += now() - t0;
		b->m.passes += rows > 0;
		b->n_passes++;
		b->m.pass_rows += (uint64_t)rows;
		skipper_pass_drafts(b->pass, &b->m.draft_passes, &b->m.draft_rows);
		pthread_mutex_unlock(&b->mu);
		for (int i = 0; i < b->o.n_seq; i++) {
			struct slot *sl = &b->slot[i];
			if (sl->j && (b->rc[i] || !skipper_engine_running(sl->e)))
				finish(b, sl, b->rc[i], 0);
		}
	}
}
