/* cudaemu fibers: see fiber.h.
 *
 * Context switch: on x86-64 a few instructions that save the callee-saved
 * registers and swap stack pointers (glibc's swapcontext makes a system call
 * per switch, and a block of the top-k kernel switches ~10^5 times); other
 * machines use ucontext. Stacks are mmap'ed once, CUDAEMU_MAX_THREADS of
 * them, and only the pages a kernel touches are ever committed. */
#define _GNU_SOURCE
#include "fiber.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define STACK_BYTES ((size_t)512 << 10)
#else
#define STACK_BYTES ((size_t)128 << 10)
#endif

/* Where a switched-out fiber (or the scheduler) resumes. */
struct ctx {
#if defined(__x86_64__)
	void *sp;
#else
	ucontext_t uc;
#endif
	const void *stack; /* bottom and size, for ASan */
	size_t stack_size;
};

struct fiber {
	struct cudaemu_fiber pub; /* first: cudaemu_fiber_self() returns it */
	struct ctx ctx;
	int done;
	unsigned lane, warp;
	unsigned shfl_seq;
	const char *waits; /* where it waits, for the deadlock message */
};

/* per warp: the values of the last two shuffles, how many lanes arrived at
 * each and which shuffle completed last in each buffer (two suffice: no lane
 * can write shuffle s + 2 before every lane has arrived at s + 1, hence has
 * read s) */
struct warp {
	uint32_t val[2][32];
	unsigned arrived[2], complete[2];
	unsigned n_lanes;
};

static struct {
	struct fiber f[CUDAEMU_MAX_THREADS];
	struct warp w[CUDAEMU_MAX_THREADS / 32];
	char *stacks;
	unsigned n, live;
	unsigned bar_arrived, bar_gen;
	/* progress: events that let some thread go on (a start, an exit, a
	 * barrier or shuffle passed); its value when the running warp began
	 * its current round of lanes, and when the current round of warps
	 * began */
	unsigned long progress, warp_mark, block_mark;
	int deadlock, reverse;
	int restart; /* a barrier opened: schedule from the first thread */
	struct fiber *cur;
	struct ctx sched;
	void (*body)(void *);
	void *arg;
	const char *fault;
} S;

#if defined(__x86_64__)
/* cudaemu_swap(&save_sp, new_sp): push the callee-saved registers, switch
 * stacks, pop the other side's. MXCSR and the x87 control word are left
 * alone: nothing here changes rounding modes. */
void cudaemu_swap(void **save_sp, void *new_sp) __attribute__((visibility("hidden")));
__asm__(".text\n"
        ".globl cudaemu_swap\n"
        ".hidden cudaemu_swap\n"
        ".type cudaemu_swap,@function\n"
        "cudaemu_swap:\n"
        "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
        "\tmovq %rsp, (%rdi)\n"
        "\tmovq %rsi, %rsp\n"
        "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
        "\tret\n"
        ".size cudaemu_swap, .-cudaemu_swap\n");
#endif

struct cudaemu_fiber *cudaemu_fiber_self(void)
{
	return &S.cur->pub;
}

/* Save the running context in `from` and resume `to`; `exiting` tells ASan
 * that from's frames are gone for good. */
static void jump(struct ctx *from, const struct ctx *to, int exiting)
{
#if defined(__SANITIZE_ADDRESS__)
	void *fake = NULL;
	__sanitizer_start_switch_fiber(exiting ? NULL : &fake, to->stack, to->stack_size);
#else
	(void)exiting;
#endif
#if defined(__x86_64__)
	cudaemu_swap(&from->sp, to->sp);
#else
	swapcontext(&from->uc, &to->uc);
#endif
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* The next fiber to run, or NULL (back to the scheduler) when none is left
 * or a whole round of warps passed with no thread getting anywhere (a
 * deadlock). Greedy by warp, as GPU warp schedulers are: the running warp's
 * lanes round robin while one of them gets somewhere, then the next warp;
 * so one warp runs ahead of the others as far as barriers let it. Lanes and
 * warps ascending, or descending with S.reverse; after a barrier opens,
 * from the first lane of the first warp. */
static struct fiber *next_fiber(void)
{
	unsigned nw = (S.n + 31) / 32, i = (unsigned)(S.cur - S.f), w = i / 32, l = i % 32;
	int step = 1;
	if (S.restart) {
		S.restart = 0;
		w = S.reverse ? nw - 1 : 0;
		l = S.reverse ? S.w[w].n_lanes - 1 : 0;
		S.warp_mark = S.progress;
		step = 0;
	}
	if (S.live == 0)
		return NULL;
	for (;; step = 1) {
		if (step) {
			unsigned nl = S.w[w].n_lanes;
			int round = S.reverse ? l == 0 : l == nl - 1;
			l = S.reverse ? (l ? l - 1 : nl - 1) : (l + 1) % nl;
			if (round && S.progress == S.warp_mark) { /* the warp is stuck: the next one */
				if (S.reverse ? w == 0 : w == nw - 1) {
					if (S.progress == S.block_mark) {
						S.deadlock = 1;
						return NULL;
					}
					S.block_mark = S.progress;
				}
				w = S.reverse ? (w ? w - 1 : nw - 1) : (w + 1) % nw;
				l = S.reverse ? S.w[w].n_lanes - 1 : 0;
			}
			if (round)
				S.warp_mark = S.progress;
		}
		if (!S.f[w * 32 + l].done)
			return &S.f[w * 32 + l];
	}
}

/* Leave the running fiber for the next one (or the scheduler). */
static void yield(int exiting)
{
	struct fiber *f = S.cur, *next = next_fiber();
	if (next == f)
		return;
	S.cur = next;
	jump(&f->ctx, next ? &next->ctx : &S.sched, exiting);
	S.cur = f;
}

static void fiber_main(void)
{
#if defined(__SANITIZE_ADDRESS__)
	const void *from;
	size_t from_size;
	__sanitizer_finish_switch_fiber(NULL, &from, &from_size);
	if (!S.sched.stack) { /* the first fiber is entered from the scheduler */
		S.sched.stack = from;
		S.sched.stack_size = from_size;
	}
#endif
	S.progress++; /* starting is getting somewhere */
	S.body(S.arg);
	S.cur->done = 1;
	S.live--;
	S.progress++;
	/* threads that exit count as arrived at a barrier the others wait at */
	if (S.bar_arrived > 0 && S.bar_arrived == S.live) {
		S.bar_arrived = 0;
		S.bar_gen++;
		S.restart = 1;
	}
	yield(1);
	__builtin_unreachable();
}

static void fiber_init(struct fiber *f)
{
	char *stack = (char *)f->ctx.stack;
	/* stacks are STACK_BYTES apart, which would put every fiber's top
	 * frames in the same cache sets: start each a few lines lower */
	size_t color = (size_t)(f - S.f) % 512 * 64;
#if defined(__SANITIZE_ADDRESS__)
	/* the last fiber here left its final frames (the switch away) behind,
	 * poisoned: clear the top of the stack, where they were */
	ASAN_UNPOISON_MEMORY_REGION(stack + STACK_BYTES - (64 << 10), 64 << 10);
#endif
#if defined(__x86_64__)
	uint64_t *sp = (uint64_t *)(stack + STACK_BYTES - color);
	*--sp = 0;                          /* fiber_main's "return address": keeps the ABI alignment */
	*--sp = (uint64_t)(uintptr_t)fiber_main; /* where cudaemu_swap's ret goes */
	for (int i = 0; i < 6; i++)
		*--sp = 0;                  /* rbp rbx r12 r13 r14 r15 */
	f->ctx.sp = sp;
#else
	getcontext(&f->ctx.uc);
	f->ctx.uc.uc_stack.ss_sp = stack;
	f->ctx.uc.uc_stack.ss_size = STACK_BYTES - color;
	f->ctx.uc.uc_link = NULL;
	makecontext(&f->ctx.uc, fiber_main, 0);
#endif
}

static int alloc_stacks(char *why, size_t cap)
{
	if (S.stacks)
		return 0;
	void *p = mmap(NULL, STACK_BYTES * CUDAEMU_MAX_THREADS, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		snprintf(why, cap, "cannot map fiber stacks");
		return -1;
	}
	S.stacks = p;
	for (unsigned i = 0; i < CUDAEMU_MAX_THREADS; i++) {
		S.f[i].ctx.stack = S.stacks + (size_t)i * STACK_BYTES;
		S.f[i].ctx.stack_size = STACK_BYTES;
	}
	return 0;
}

/* Give the CPU to the next fiber until cond holds. */
#define WAIT_UNTIL(cond, what)                  \
	do {                                    \
		while (!(cond)) {               \
			S.cur->waits = (what);  \
			yield(0);               \
		}                               \
		S.cur->waits = NULL;            \
		S.progress++;                   \
	} while (0)

void cudaemu_syncthreads(void)
{
	unsigned gen = S.bar_gen;
	if (++S.bar_arrived == S.live) {
		S.bar_arrived = 0;
		S.bar_gen++;
		S.progress++;
		/* the threads pass in order from the first, not from the last
		 * to arrive */
		S.restart = 1;
		yield(0);
		return;
	}
	WAIT_UNTIL(S.bar_gen != gen, "__syncthreads");
}

uint32_t cudaemu_shfl_xor(unsigned mask, uint32_t v, int xor_mask)
{
	struct fiber *f = S.cur;
	struct warp *w = &S.w[f->warp];
	unsigned seq = f->shfl_seq++, b = seq & 1, src = f->lane ^ (unsigned)xor_mask;

	if (mask != 0xffffffffu || w->n_lanes != 32 || src >= 32) {
		/* not a form the kernels use: stop the block with a reason */
		S.fault = "shuffle with a partial mask, a partial warp or a lane out of range";
		WAIT_UNTIL(0, "a faulty shuffle");
	}
	w->val[b][f->lane] = v;
	if (++w->arrived[b] == w->n_lanes) {
		w->arrived[b] = 0;
		w->complete[b] = seq;
		S.progress++;
		yield(0); /* the lanes go on in turn, the last to arrive last */
	} else {
		WAIT_UNTIL(w->complete[b] == seq, "a warp shuffle");
	}
	return w->val[b][src];
}

int cudaemu_run_block(const struct cudaemu_block *b, void (*body)(void *), void *arg, char *why,
                      size_t cap)
{
	unsigned n = b->block_dim.x * b->block_dim.y * b->block_dim.z;

	if (n == 0 || n > CUDAEMU_MAX_THREADS) {
		snprintf(why, cap, "%u threads per block", n);
		return -1;
	}
	if (alloc_stacks(why, cap))
		return -1;
	S.n = S.live = n;
	S.bar_arrived = S.bar_gen = 0;
	S.body = body;
	S.arg = arg;
	S.fault = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct fiber *f = &S.f[i];
		f->pub.thread_idx.x = i % b->block_dim.x;
		f->pub.thread_idx.y = i / b->block_dim.x % b->block_dim.y;
		f->pub.thread_idx.z = i / (b->block_dim.x * b->block_dim.y);
		f->pub.block = b;
		f->done = 0;
		f->lane = i % 32;
		f->warp = i / 32;
		f->shfl_seq = 0;
		f->waits = NULL;
		fiber_init(f);
	}
	for (unsigned wi = 0; wi < (n + 31) / 32; wi++) {
		S.w[wi].n_lanes = n - wi * 32 < 32 ? n - wi * 32 : 32;
		S.w[wi].arrived[0] = S.w[wi].arrived[1] = 0;
		S.w[wi].complete[0] = S.w[wi].complete[1] = UINT_MAX; /* none yet */
	}
	S.progress = 0;
	S.warp_mark = S.block_mark = ~0UL;
	S.restart = 0;
	S.deadlock = 0;
	S.reverse = b->reverse;
	S.cur = S.reverse ? &S.f[n - 1] : &S.f[0];
	jump(&S.sched, &S.cur->ctx, 0);
	if (!S.deadlock)
		return 0;
#if defined(__SANITIZE_ADDRESS__)
	/* the stuck fibers' frames stay behind at any depth */
	ASAN_UNPOISON_MEMORY_REGION(S.stacks, STACK_BYTES * CUDAEMU_MAX_THREADS);
#endif
	unsigned bar = 0, shfl = 0;
	for (unsigned i = 0; i < n; i++)
		if (!S.f[i].done && S.f[i].waits)
			(strcmp(S.f[i].waits, "__syncthreads") ? shfl++ : bar++);
	if (S.fault)
		snprintf(why, cap, "%s", S.fault);
	else
		snprintf(why, cap,
		         "deadlock: of %u threads, %u wait at __syncthreads and %u in a warp shuffle "
		         "that the others (%u exited) never reach",
		         n, bar, shfl, n - S.live);
	return -1;
}
