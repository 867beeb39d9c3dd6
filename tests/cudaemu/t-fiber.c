/* cudaemu's thread scheduler (fiber.c) on its own: the orders the tests
 * rely on (ascending, and descending for t-cudaemu-reverse.sh; warps
 * running ahead of each other), barrier and shuffle semantics, deadlock
 * reports, and that the two orders really do resolve races differently. */
#include <string.h>

#include "fiber.h"
#include "tap.h"

#define N 64

/* what the bodies record, in the order the threads get there */
struct trace {
	int seen[4 * N], n;
	int got[N];
	int shared; /* stands for a __shared__ variable */
};

static int tid(void)
{
	return (int)cudaemu_fiber_self()->thread_idx.x;
}

static void barrier_body(void *p)
{
	struct trace *t = p;
	t->seen[t->n++] = tid();
	cudaemu_syncthreads();
	t->seen[t->n++] = tid();
}

static void shuffle_body(void *p)
{
	struct trace *t = p;
	uint32_t a = cudaemu_shfl_xor(0xffffffffu, (uint32_t)tid(), 1);
	uint32_t b = cudaemu_shfl_xor(0xffffffffu, (uint32_t)tid() * 10, 16);
	t->got[tid()] = (int)(a * 1000 + b);
}

/* thread 1 writes, thread 0 reads, no barrier between: a race */
static void race_body(void *p)
{
	struct trace *t = p;
	if (tid() == 1)
		t->shared = 1;
	if (tid() == 0)
		t->got[0] = t->shared;
}

/* the same with the barrier: no race */
static void fixed_body(void *p)
{
	struct trace *t = p;
	if (tid() == 1)
		t->shared = 1;
	cudaemu_syncthreads();
	if (tid() == 0)
		t->got[0] = t->shared;
}

/* every thread reads the value, then, after a shuffle, lane 0 of each warp
 * overwrites it, with no barrier between the reads and the writes (the
 * mistake a missing barrier before reusing shared memory makes): a warp
 * running ahead clobbers it before another warp reads */
static void reuse_body(void *p)
{
	struct trace *t = p;
	t->got[tid()] = t->shared;
	cudaemu_shfl_xor(0xffffffffu, 0, 1);
	if (tid() % 32 == 0)
		t->shared = 100 + tid() / 32;
}

static void lone_shuffle_body(void *p)
{
	(void)p;
	if (tid() == 3)
		cudaemu_shfl_xor(0xffffffffu, 0, 1);
}

/* threads that exit count as arrived at a barrier (as on sm_70 and later) */
static void early_exit_body(void *p)
{
	struct trace *t = p;
	if (tid() % 2)
		return;
	cudaemu_syncthreads();
	t->seen[t->n++] = tid();
}

static int run(void (*body)(void *), int reverse, struct trace *t, char *why, size_t cap)
{
	struct cudaemu_block b;
	memset(&b, 0, sizeof b);
	b.block_dim.x = N;
	b.block_dim.y = b.block_dim.z = 1;
	b.grid_dim.x = b.grid_dim.y = b.grid_dim.z = 1;
	b.reverse = reverse;
	memset(t, 0, sizeof *t);
	why[0] = 0;
	return cudaemu_run_block(&b, body, t, why, cap);
}

int main(void)
{
	struct trace t;
	char why[256];
	int asc, desc;

	for (int rev = 0; rev < 2; rev++) {
		const char *o = rev ? "descending" : "ascending";
		is_int(run(barrier_body, rev, &t, why, sizeof why), 0, "%s: a block with a barrier runs", o);
		int in_order = t.n == 2 * N;
		for (int i = 0; i < 2 * N && in_order; i++)
			in_order = t.seen[i] == (rev ? N - 1 - i % N : i % N);
		ok(in_order, "%s: every thread reaches the barrier, then every thread passes it, in %s order", o, o);

		run(shuffle_body, rev, &t, why, sizeof why);
		int right = 1;
		for (int i = 0; i < N; i++)
			right &= t.got[i] == (i ^ 1) * 1000 + (i ^ 16) * 10;
		ok(right, "%s: __shfl_xor_sync gives lane ^ mask's value (masks 1 and 16, two warps)", o);

		is_int(run(early_exit_body, rev, &t, why, sizeof why), 0,
		       "%s: a barrier that half the threads exit before still opens", o);
		is_int(t.n, N / 2, "%s: ... for the other half", o);

		is_int(run(lone_shuffle_body, rev, &t, why, sizeof why), -1,
		       "%s: a shuffle the rest of the warp never reaches is a deadlock", o);
		ok(strstr(why, "0 wait at __syncthreads and 1 in a warp shuffle") && strstr(why, "63 exited"),
		   "%s: ... reported as such: %s", o, why);

		run(fixed_body, rev, &t, why, sizeof why);
		is_int(t.got[0], 1, "%s: write, barrier, read: the reader sees the write", o);
	}

	/* warps run ahead of each other as far as barriers let them */
	run(reuse_body, 0, &t, why, sizeof why);
	asc = t.got[N - 1];
	run(reuse_body, 1, &t, why, sizeof why);
	desc = t.got[0];
	ok(asc == 100 && desc == 101, "a read racing with another warp's write after a shuffle: the last warp "
	   "reads warp 0's write ascending (%d), the first warp reads warp 1's descending (%d)", asc, desc);

	/* the property t-cudaemu-reverse.sh rests on */
	run(race_body, 0, &t, why, sizeof why);
	asc = t.got[0];
	run(race_body, 1, &t, why, sizeof why);
	desc = t.got[0];
	ok(asc == 0 && desc == 1, "a read racing with a later thread's write: the old value ascending (%d), "
	   "the new one descending (%d)", asc, desc);
	return tap_done();
}
