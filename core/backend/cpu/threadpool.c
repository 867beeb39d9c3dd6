#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "threadpool.h"

/* Iterations of the spin loop before a worker goes to sleep: long enough to
 * cover the gap between two kernels of one decode step (a few microseconds),
 * short enough not to burn a core while the engine is idle. */
#define SPIN_ITERS 20000
/* After this many pause-spins, spin with sched_yield(): on an oversubscribed
 * machine the thread we wait for may be descheduled, and yielding lets it
 * (or anyone else) run instead of burning our time slice. */
#define PAUSE_ITERS 2000

struct skipper_threadpool {
	int n_threads;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	pthread_cond_t done_cv;

	/* current job; published by bumping gen */
	skipper_task_fn fn;
	void *ctx;
	int n_tasks;
	atomic_int next;          /* next task to hand out */
	atomic_int active;        /* workers still inside the current job */
	atomic_uint gen;          /* job generation; odd/even does not matter */
	atomic_int stop;
	int sleepers;             /* workers blocked on wake (under mu) */
	int timing;               /* count the caller's waits */
	double waited;
};

struct worker_arg {
	struct skipper_threadpool *tp;
	int id;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline void spin_wait(int spins)
{
	if (spins < PAUSE_ITERS)
		cpu_relax();
	else
		sched_yield();
}

static void run_tasks(struct skipper_threadpool *tp, int id)
{
	for (;;) {
		int t = atomic_fetch_add_explicit(&tp->next, 1, memory_order_relaxed);
		if (t >= tp->n_tasks)
			break;
		tp->fn(tp->ctx, t, id);
	}
}

static void *worker_main(void *p)
{
	struct worker_arg a = *(struct worker_arg *)p;
	struct skipper_threadpool *tp = a.tp;
	/* gen starts at 0 and a job may be published before this thread runs:
	 * start from 0, not from the current value, or that job waits forever */
	unsigned seen = 0;

	free(p);
	for (;;) {
		unsigned g;
		int spins = 0;
		while ((g = atomic_load_explicit(&tp->gen, memory_order_acquire)) == seen &&
		       !atomic_load(&tp->stop)) {
			if (++spins < SPIN_ITERS) {
				spin_wait(spins);
				continue;
			}
			pthread_mutex_lock(&tp->mu);
			tp->sleepers++;
			while (atomic_load(&tp->gen) == seen && !atomic_load(&tp->stop))
				pthread_cond_wait(&tp->wake, &tp->mu);
			tp->sleepers--;
			pthread_mutex_unlock(&tp->mu);
			spins = 0;
		}
		if (atomic_load(&tp->stop))
			return NULL;
		seen = g;
		run_tasks(tp, a.id);
		if (atomic_fetch_sub_explicit(&tp->active, 1, memory_order_acq_rel) == 1) {
			/* last one out wakes the caller if it went to sleep */
			pthread_mutex_lock(&tp->mu);
			pthread_cond_signal(&tp->done_cv);
			pthread_mutex_unlock(&tp->mu);
		}
	}
}

struct skipper_threadpool *skipper_threadpool_new(int n_threads)
{
	struct skipper_threadpool *tp;

	if (n_threads < 1)
		n_threads = 1;
	tp = calloc(1, sizeof *tp);
	if (!tp)
		return NULL;
	tp->n_threads = n_threads;
	pthread_mutex_init(&tp->mu, NULL);
	pthread_cond_init(&tp->wake, NULL);
	pthread_cond_init(&tp->done_cv, NULL);
	atomic_init(&tp->next, 0);
	atomic_init(&tp->active, 0);
	atomic_init(&tp->gen, 0);
	atomic_init(&tp->stop, 0);
	tp->threads = calloc((size_t)n_threads, sizeof *tp->threads);
	if (!tp->threads) {
		free(tp);
		return NULL;
	}
	for (int i = 1; i < n_threads; i++) {
		struct worker_arg *a = malloc(sizeof *a);
		if (!a || (a->tp = tp, a->id = i, pthread_create(&tp->threads[i], NULL, worker_main, a))) {
			free(a);
			tp->n_threads = i; /* join only what started */
			skipper_threadpool_free(tp);
			return NULL;
		}
	}
	return tp;
}

void skipper_threadpool_free(struct skipper_threadpool *tp)
{
	if (!tp)
		return;
	pthread_mutex_lock(&tp->mu);
	atomic_store(&tp->stop, 1);
	pthread_cond_broadcast(&tp->wake);
	pthread_mutex_unlock(&tp->mu);
	for (int i = 1; i < tp->n_threads; i++)
		pthread_join(tp->threads[i], NULL);
	pthread_mutex_destroy(&tp->mu);
	pthread_cond_destroy(&tp->wake);
	pthread_cond_destroy(&tp->done_cv);
	free(tp->threads);
	free(tp);
}

int skipper_threadpool_size(const struct skipper_threadpool *tp)
{
	return tp->n_threads;
}

void skipper_threadpool_run(struct skipper_threadpool *tp, skipper_task_fn fn, void *ctx,
                            int n_tasks)
{
	if (n_tasks <= 0)
		return;
	if (tp->n_threads == 1 || n_tasks == 1) {
		for (int t = 0; t < n_tasks; t++)
			fn(ctx, t, 0);
		return;
	}
	tp->fn = fn;
	tp->ctx = ctx;
	tp->n_tasks = n_tasks;
	atomic_store_explicit(&tp->next, 0, memory_order_relaxed);
	atomic_store_explicit(&tp->active, tp->n_threads - 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&tp->gen, 1, memory_order_release);
	pthread_mutex_lock(&tp->mu);
	if (tp->sleepers)
		pthread_cond_broadcast(&tp->wake);
	pthread_mutex_unlock(&tp->mu);

	run_tasks(tp, 0);

	struct timespec t0, t1;
	if (tp->timing)
		clock_gettime(CLOCK_MONOTONIC, &t0);
	int spins = 0;
	while (atomic_load_explicit(&tp->active, memory_order_acquire) > 0) {
		if (++spins < SPIN_ITERS) {
			spin_wait(spins);
			continue;
		}
		pthread_mutex_lock(&tp->mu);
		while (atomic_load(&tp->active) > 0)
			pthread_cond_wait(&tp->done_cv, &tp->mu);
		pthread_mutex_unlock(&tp->mu);
	}
	if (tp->timing) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		tp->waited += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	}
}

void skipper_threadpool_timing(struct skipper_threadpool *tp, int on)
{
	tp->timing = on;
}

double skipper_threadpool_waited(struct skipper_threadpool *tp)
{
	double w = tp->waited;
	tp->waited = 0;
	return w;
}
