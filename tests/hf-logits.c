/* hf-logits: the logits of every position of a token sequence, for
 * tests/hf-check.py to compare a Hugging Face checkpoint with the GGUF it
 * came from and with transformers.
 *   hf-logits MODEL QUANTIZE ID,ID,...   (QUANTIZE: none, q8_0, q4_k, ...)
 * Writes n_tokens x n_vocab little-endian float32 to stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "model/model.h"

int main(int argc, char **argv)
{
	struct skipper_error err = { 0 };
	struct skipper_model *m;
	struct skipper_backend *be;
	int32_t tok[4096], rows[4096];
	int n = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: hf-logits MODEL QUANTIZE ID,ID,...\n");
		return 2;
	}
	for (char *save = NULL, *s = strtok_r(argv[3], ",", &save); s && n < 4096; s = strtok_r(NULL, ",", &save)) {
		rows[n] = n;
		tok[n++] = (int32_t)atoi(s);
	}
	struct skipper_model_opts mo = { skipper_model_quantize_type(argv[2]) };
	if (mo.quantize < -1 || skipper_model_load_opts(argv[1], &mo, &m, &err)) {
		fprintf(stderr, "hf-logits: %s\n", mo.quantize < -1 ? "unknown quantize type" : err.msg);
		return 1;
	}
	struct skipper_backend_opts o = { .n_ctx = n + 16, .n_threads = 2 };
	if (skipper_backend_cpu_create(&m->view, &o, &be, &err)) {
		fprintf(stderr, "hf-logits: %s\n", err.msg);
		return 1;
	}
	size_t V = (size_t)m->view.hp.n_vocab;
	float *lg = malloc(sizeof *lg * (size_t)n * V);
	struct skipper_forward fw = { .n = n, .tokens = tok, .n_past = 0, .kv_write = 1,
		                      .n_out = n, .out_rows = rows, .logits = lg };
	if (!lg || skipper_backend_forward(be, &fw, &err)) {
		fprintf(stderr, "hf-logits: %s\n", lg ? err.msg : "out of memory");
		return 1;
	}
	fwrite(lg, sizeof *lg, (size_t)n * V, stdout);
	free(lg);
	be->ops->destroy(be);
	skipper_model_free(m);
	return 0;
}
