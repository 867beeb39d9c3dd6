/* Decode speed of the CPU backend: prefill a fixed prompt, then greedy
 * one-token steps. Usage: bench-decode MODEL.gguf [threads] [n_tokens].
 * Prints the generated ids and tokens/s (a command, not a timed test). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "base/error.h"
#include "model/model.h"

static double clk(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
	return clk(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	/* "The capital of France is" style prompt, SmolLM2 ids; any ids work */
	int32_t prompt[] = { 504, 3575, 282, 4649, 314, 253, 1345, 30, 378, 2015, 314 };
	int np = (int)(sizeof prompt / sizeof prompt[0]);
	struct skipper_error err = { 0 };
	struct skipper_model *m;
	struct skipper_backend *be;

	if (argc < 2) {
		fprintf(stderr, "usage: %s MODEL.gguf [threads] [n_tokens]\n", argv[0]);
		return 2;
	}
	int threads = argc > 2 ? atoi(argv[2]) : 0, ntok = argc > 3 ? atoi(argv[3]) : 128;
	if (skipper_model_load(argv[1], &m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	struct skipper_backend_opts o = { .n_ctx = 512, .n_threads = threads };
	if (skipper_backend_cpu_create(&m->view, &o, &be, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	int32_t last = np - 1, id;
	struct skipper_forward fw = {
		.n = np, .tokens = prompt, .n_past = 0, .kv_write = 1, .n_out = 1, .out_rows = &last,
		.top_k = 1, .top_ids = &id,
	};
	double t0 = now();
	if (skipper_backend_forward(be, &fw, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	double t1 = now(), c1 = clk(CLOCK_PROCESS_CPUTIME_ID);
	int32_t row0 = 0, tok;
	printf("ids:");
	for (int i = 0; i < ntok; i++) {
		tok = id;
		printf(" %d", tok);
		struct skipper_forward f1 = {
			.n = 1, .tokens = &tok, .n_past = np + i, .kv_write = 1, .n_out = 1,
			.out_rows = &row0, .top_k = 1, .top_ids = &id,
		};
		if (skipper_backend_forward(be, &f1, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
	}
	double t2 = now(), c2 = clk(CLOCK_PROCESS_CPUTIME_ID);
	/* tokens per CPU-second (all threads) stays meaningful on a loaded machine */
	printf("\nskipper: threads %d prefill %d tok %.1f tok/s, decode %d tok %.2f tok/s, "
	       "%.2f tok per CPU-s\n",
	       threads, np, np / (t1 - t0), ntok, ntok / (t2 - t1), ntok / (c2 - c1));
	be->ops->destroy(be);
	skipper_model_free(m);
	return 0;
}
