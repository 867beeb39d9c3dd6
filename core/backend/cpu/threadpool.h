/* A fixed pool of worker threads for the CPU backend. Threads are created
 * once; between jobs they spin briefly (a decode step issues ~150 jobs, so
 * waking through the kernel each time would cost more than the work) and then
 * sleep on a condition variable.
 *
 * A job is a task range [0, n_tasks) handed out through an atomic counter.
 * Which thread runs a task never matters for the result: every task writes
 * its own outputs with arithmetic that does not depend on the split. */
#ifndef SKIPPER_THREADPOOL_H
#define SKIPPER_THREADPOOL_H

struct skipper_threadpool;

/* fn(ctx, task, thread) for each task; thread is in [0, n_threads). */
typedef void (*skipper_task_fn)(void *ctx, int task, int thread);

/* Create a pool of n_threads workers in total, the calling thread counted as
 * worker 0 (n_threads - 1 pthreads are started). Returns NULL when out of
 * memory or threads. Owned by the caller: skipper_threadpool_free(). */
struct skipper_threadpool *skipper_threadpool_new(int n_threads);
void skipper_threadpool_free(struct skipper_threadpool *tp);

int skipper_threadpool_size(const struct skipper_threadpool *tp);

/* Count the seconds the caller spends waiting for the other workers at the
 * end of each job (off by default: it costs two clock reads per job). */
void skipper_threadpool_timing(struct skipper_threadpool *tp, int on);
/* Seconds waited since the last call; resets the count. */
double skipper_threadpool_waited(struct skipper_threadpool *tp);

/* Run fn over [0, n_tasks) on all workers and return when all are done. */
void skipper_threadpool_run(struct skipper_threadpool *tp, skipper_task_fn fn, void *ctx,
                            int n_tasks);

#endif
