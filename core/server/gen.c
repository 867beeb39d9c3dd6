/* One generation between two threads: the batch's appends text and ends
 * it, the connection's takes the text it may send. Stop strings are found
 * here, where all the text is. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct gen {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	char *stop[OA_MAX_STOP];
	size_t stop_len[OA_MAX_STOP];
	int n_stop;
	char *text;         /* all text so far, cut before a stop string */
	size_t len, cap;
	size_t safe;        /* text[0, safe) is no stop string's start: it may be sent */
	int n_tokens;
	int done, finish, nomem;
	struct skipper_run_stats st;
	char *error;
};

struct gen *gen_new(const char *const *stop, int n_stop)
{
	struct gen *g = calloc(1, sizeof *g);
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->refs = 1;
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < n_stop && i < OA_MAX_STOP; i++) {
		if (!(g->stop[i] = strdup(stop[i]))) {
			gen_release(g);
			return NULL;
		}
		g->stop_len[i] = strlen(stop[i]);
		g->n_stop = i + 1;
	}
	return g;
}

void gen_hold(struct gen *g)
{
	pthread_mutex_lock(&g->mu);
	g->refs++;
	pthread_mutex_unlock(&g->mu);
}

void gen_release(struct gen *g)
{
	int last;

	pthread_mutex_lock(&g->mu);
	last = --g->refs == 0;
	pthread_mutex_unlock(&g->mu);
	if (!last)
		return;
	for (int i = 0; i < g->n_stop; i++)
		free(g->stop[i]);
	free(g->text);
	free(g->error);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	free(g);
}

/* The earliest stop string in the text that ends past `from` (the text
 * before `from` was searched already): where it starts, or -1. */
static long find_stop(const struct gen *g, size_t from)
{
	long best = -1;

	for (int i = 0; i < g->n_stop; i++) {
		size_t n = g->stop_len[i], at = from + 1 > n ? from + 1 - n : 0;
		const char *p = at < g->len ? memmem(g->text + at, g->len - at, g->stop[i], n) : NULL;
		if (p && (best < 0 || p - g->text < best))
			best = p - g->text;
	}
	return best;
}

/* The longest end of the text that is the start of a stop string: it is
 * held back until the next text shows whether the stop string follows. */
static size_t held_back(const struct gen *g)
{
	size_t hold = 0;

	for (int i = 0; i < g->n_stop; i++)
		for (size_t k = g->stop_len[i] - 1; k > hold; k--)
			if (k <= g->len && memcmp(g->text + g->len - k, g->stop[i], k) == 0) {
				hold = k;
				break;
			}
	return hold;
}

int gen_on_text(void *ctx, const char *text, size_t len, int32_t token)
{
	struct gen *g = ctx;
	size_t from;
	long at;
	int stop = 0;

	pthread_mutex_lock(&g->mu);
	g->n_tokens += token >= 0;
	if (g->len + len + 1 > g->cap) {
		size_t cap = (g->len + len + 1) * 2;
		char *t = realloc(g->text, cap);
		if (!t) {
			g->nomem = 1;
			pthread_mutex_unlock(&g->mu);
			return 1;
		}
		g->text = t;
		g->cap = cap;
	}
	memcpy(g->text + g->len, text, len);
	from = g->len;
	g->len += len;
	if ((at = find_stop(g, from)) >= 0) {
		g->len = g->safe = (size_t)at;
		stop = 1;
	} else {
		g->safe = g->len - held_back(g);
	}
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return stop;
}

void gen_on_done(void *ctx, int finish, const struct skipper_run_stats *st, const char *error)
{
	struct gen *g = ctx;

	pthread_mutex_lock(&g->mu);
	g->done = 1;
	g->finish = finish;
	g->st = *st;
	g->safe = g->len;
	if (error || g->nomem)
		g->error = strdup(error ? error : "out of memory");
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	gen_release(g);
}

int gen_wait(struct gen *g, size_t from, int ms, struct gen_view *v)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	memset(v, 0, sizeof *v);
	pthread_mutex_lock(&g->mu);
	while (g->safe <= from && !g->done)
		if (pthread_cond_timedwait(&g->cv, &g->mu, &until))
			break;
	if (g->safe > from) {
		if ((v->text = malloc(g->safe - from)))
			memcpy(v->text, g->text + from, v->n = g->safe - from);
		else
			rc = -1;
	}
	v->done = g->done && !rc;
	v->finish = g->finish;
	v->n_tokens = g->n_tokens;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

const struct skipper_run_stats *gen_stats(const struct gen *g)
{
	return &g->st;
}

const char *gen_error(const struct gen *g)
{
	return g->error;
}
