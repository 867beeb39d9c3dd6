/* Requests from many threads, decoded by one: the queue, cancellation,
 * stopping, metrics (skipper_batch_*, skipper/skipper.h).
 *
 * STAGE 1 (a stand-in while the lead builds continuous batching behind the
 * same API): requests run one after the other on the session's engine. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "session.h"

struct job {
	uint64_t id;
	int32_t *prompt;
	size_t n_prompt;
	struct skipper_batch_request r;
	int cancel;               /* under the batch's lock */
	struct job *next;
};

struct skipper_batch {
	struct skipper_session *s;
	struct skipper_batch_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;  /* the queue */
	struct job *running;
	int stopping, drain;
	uint64_t next_id;
	struct skipper_batch_metrics m;
};

int skipper_batch_new(struct skipper_session *s, const struct skipper_batch_opts *o, struct skipper_batch **out,
                      struct skipper_error *err)
{
	struct skipper_batch *b;

	if (o->n_seq < 1 || o->max_queue < 0 || o->prefill_chunk < 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "batch: %d sequences, a queue of %d, chunks of %d", o->n_seq,
		                    o->max_queue, o->prefill_chunk);
	if (!(b = calloc(1, sizeof *b)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	b->s = s;
	b->o = *o;
	b->next_id = 1;
	b->m.n_seq = o->n_seq;
	b->m.max_queue = o->max_queue;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	*out = b;
	return SKIPPER_OK;
}

static void job_free(struct job *j)
{
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
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
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
	pthread_mutex_lock(&b->mu);
	if (b->stopping)
		rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "the server is stopping");
	else if (b->m.queued + b->m.running >= b->o.max_queue + b->o.n_seq)
		rc = skipper_fail(err, SKIPPER_ERR_BUSY, "%d requests are running and %d waiting (the limit)", b->m.running,
		                  b->m.queued);
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
	if (b->running && b->running->id == id)
		b->running->cancel = 1;
	pthread_mutex_unlock(&b->mu);
}

void skipper_batch_stop(struct skipper_batch *b, int drain)
{
	pthread_mutex_lock(&b->mu);
	b->stopping = 1;
	b->drain = drain;
	if (!drain && b->running)
		b->running->cancel = 1;
	for (struct job *j = b->head; j; j = j->next)
		j->cancel = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void skipper_batch_metrics(struct skipper_batch *b, struct skipper_batch_metrics *m)
{
	pthread_mutex_lock(&b->mu);
	*m = b->m;
	pthread_mutex_unlock(&b->mu);
}

struct run_ctx {
	struct skipper_batch *b;
	struct job *j;
	struct skipper_detok dt;
	int stopped, cancelled;
};

static int on_token(void *user, int32_t tok)
{
	struct run_ctx *c = user;
	char buf[512];
	size_t n;

	pthread_mutex_lock(&c->b->mu);
	c->cancelled = c->j->cancel;
	pthread_mutex_unlock(&c->b->mu);
	if (c->cancelled)
		return 1;
	if (skipper_tokenizer_is_eog(c->b->s->tok, tok))
		return 0;
	n = skipper_detok_push(&c->dt, tok, buf, sizeof buf);
	if (c->j->r.on_text && c->j->r.on_text(c->j->r.ctx, buf, n, tok))
		c->stopped = 1;
	return c->stopped;
}

/* One request from prefill to its on_done. */
static void run_one(struct skipper_batch *b, struct job *j)
{
	struct skipper_session *s = b->s;
	struct skipper_gen_params gp = s->gen;
	const struct skipper_generate_params *p = &j->r.params;
	struct run_ctx c = { .b = b, .j = j };
	struct skipper_run_stats st = { 0 };
	struct skipper_error err = { 0 };
	int finish, rc, room = s->be->n_ctx - (int)j->n_prompt;
	char buf[64];

	gp.max_tokens = p->max_tokens < room ? p->max_tokens : room;
	gp.sampling.temperature = (float)p->temperature;
	gp.sampling.top_p = (float)p->top_p;
	gp.sampling.top_k = p->top_k;
	gp.seed = p->seed ? p->seed : s->gen.seed + j->id;
	skipper_detok_init(&c.dt, s->tok, 0);
	rc = skipper_engine_generate(s->engine, j->prompt, (int)j->n_prompt, &gp, on_token, &c, &st, &err);
	if (!rc && !c.cancelled) {
		size_t n = skipper_detok_flush(&c.dt, buf, sizeof buf);
		if (n && j->r.on_text)
			j->r.on_text(j->r.ctx, buf, n, -1);
	}
	finish = rc ? SKIPPER_FINISH_ERROR : c.cancelled ? SKIPPER_FINISH_CANCELLED : c.stopped ? SKIPPER_FINISH_STOP :
	         st.n_generated >= gp.max_tokens ? SKIPPER_FINISH_LENGTH : SKIPPER_FINISH_STOP;
	pthread_mutex_lock(&b->mu);
	b->m.requests++;
	b->m.requests_failed += finish == SKIPPER_FINISH_ERROR;
	b->m.requests_cancelled += finish == SKIPPER_FINISH_CANCELLED;
	b->m.prompt_tokens += j->n_prompt;
	b->m.generated_tokens += (uint64_t)st.n_generated;
	b->m.passes += (uint64_t)st.rounds;
	b->m.pass_rows += (uint64_t)(st.rounds + st.drafted);
	b->m.drafted[0] += (uint64_t)(st.drafted - st.lookup_drafted);
	b->m.accepted[0] += (uint64_t)(st.accepted - st.lookup_accepted);
	b->m.drafted[1] += (uint64_t)(st.lookup_drafted - st.ngram_drafted);
	b->m.accepted[1] += (uint64_t)(st.lookup_accepted - st.ngram_accepted);
	b->m.drafted[2] += (uint64_t)st.ngram_drafted;
	b->m.accepted[2] += (uint64_t)st.ngram_accepted;
	b->m.busy_seconds += st.t_total;
	b->running = NULL;
	b->m.running = 0;
	pthread_mutex_unlock(&b->mu);
	if (j->r.on_done)
		j->r.on_done(j->r.ctx, finish, &st, rc ? err.msg : NULL);
}

int skipper_batch_run(struct skipper_batch *b)
{
	for (;;) {
		struct job *j;
		pthread_mutex_lock(&b->mu);
		while (!b->head && !b->stopping)
			pthread_cond_wait(&b->cv, &b->mu);
		if (!(j = b->head)) {
			pthread_mutex_unlock(&b->mu);
			return SKIPPER_OK;
		}
		if (!(b->head = j->next))
			b->tail = NULL;
		b->m.queued--;
		if (!j->cancel) {
			b->running = j;
			b->m.running = 1;
		}
		pthread_mutex_unlock(&b->mu);
		if (j->cancel) {
			struct skipper_run_stats st = { .n_prompt = (int)j->n_prompt };
			pthread_mutex_lock(&b->mu);
			b->m.requests++;
			b->m.requests_cancelled++;
			pthread_mutex_unlock(&b->mu);
			if (j->r.on_done)
				j->r.on_done(j->r.ctx, SKIPPER_FINISH_CANCELLED, &st, NULL);
		} else {
			run_one(b, j);
		}
		job_free(j);
	}
}
