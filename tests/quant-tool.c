/* Helper for tests/t-gguf-ref.sh, which compares our element types with an
 * independent implementation (the gguf Python package of llama.cpp):
 *   quant-tool quantize TYPE IN.f32 OUT   quantise rows of raw f32 (row
 *                                          length 64, 256 for the K-quants)
 *                                          with our reference quantisers
 *   quant-tool dequant FILE TENSOR OUT.f32 dequantise a whole tensor of a GGUF file
 *   quant-tool meta FILE                   print hyper-parameters as key=value
 *   quant-tool logits FILE N OUT.f32       the CPU backend's logits [N][n_vocab]
 *                                          of a prefill of N seeded token ids
 *                                          (LCG: s = s * 1103515245 + 12345 mod
 *                                          2^32 from s = 7, id = (s >> 8) mod
 *                                          n_vocab), for comparing with llama.cpp
 * TYPE is the GGML type number. Exit 0 on success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/quant.h"

static void *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	void *b = malloc(*len ? *len : 1);
	if (b && fread(b, 1, *len, f) != *len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static int logits(const char *path, int n, const char *out)
{
	struct skipper_error err = { 0 };
	struct skipper_model *m = NULL;
	struct skipper_backend *be = NULL;
	int rc = 1;

	if (n < 1 || n > 256 || skipper_model_load(path, &m, &err)) {
		fprintf(stderr, "quant-tool: %s\n", err.msg[0] ? err.msg : "N must be in [1, 256]");
		return 1;
	}
	int V = m->view.hp.n_vocab;
	int32_t tok[256], rows[256];
	uint32_t s = 7;
	for (int i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		tok[i] = (int32_t)((s >> 8) % (uint32_t)V);
		rows[i] = i;
	}
	float *lg = malloc(sizeof(float) * (size_t)V * n);
	struct skipper_backend_opts o = { .n_ctx = n, .n_threads = 2, .kind = SKIPPER_BACKEND_CPU };
	struct skipper_forward fw = { .n = n, .tokens = tok, .kv_write = 1, .n_out = n, .out_rows = rows, .logits = lg };
	FILE *f = NULL;
	if (lg && !skipper_backend_create(&m->view, &o, &be, &err) && !skipper_backend_forward(be, &fw, &err) &&
	    (f = fopen(out, "wb")) && fwrite(lg, sizeof(float) * V, (size_t)n, f) == (size_t)n)
		rc = 0;
	if (f && fclose(f))
		rc = 1;
	if (rc && err.msg[0])
		fprintf(stderr, "quant-tool: %s\n", err.msg);
	if (be)
		be->ops->destroy(be);
	free(lg);
	skipper_model_free(m);
	return rc;
}

int main(int argc, char **argv)
{
	struct skipper_error err = { 0 };
	if (argc == 5 && !strcmp(argv[1], "quantize")) {
		int type = atoi(argv[2]);
		size_t len;
		float *x = slurp(argv[3], &len);
		const int64_t n = skipper_dtype_block(type) == SKIPPER_QK_K ? SKIPPER_QK_K : 64;
		size_t rb = skipper_dtype_row_bytes(type, n);
		if (!x || !rb || len % (n * 4))
			return 1;
		size_t rows = len / (n * 4);
		unsigned char *q = malloc(rb * rows);
		for (size_t r = 0; r < rows; r++)
			skipper_quantize_row(type, x + r * n, q + r * rb, n);
		FILE *f = fopen(argv[4], "wb");
		int bad = !f || fwrite(q, rb, rows, f) != rows;
		if (f)
			bad |= fclose(f) != 0;
		free(x);
		free(q);
		return bad;
	}
	if (argc == 5 && !strcmp(argv[1], "dequant")) {
		struct skipper_gguf *g;
		if (skipper_gguf_open(argv[2], &g, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		const struct skipper_gguf_tensor *t = skipper_gguf_find_tensor(g, argv[3]);
		if (!t)
			return 1;
		int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
		size_t rb = skipper_dtype_row_bytes(t->type, t->ne[0]);
		float *row = malloc((size_t)t->ne[0] * sizeof *row);
		FILE *f = fopen(argv[4], "wb");
		int bad = !f;
		for (int64_t r = 0; r < rows && !bad; r++) {
			skipper_dequant_row(t->type, (const char *)t->data + r * rb, row, t->ne[0]);
			bad = fwrite(row, sizeof *row, (size_t)t->ne[0], f) != (size_t)t->ne[0];
		}
		if (f)
			bad |= fclose(f) != 0;
		free(row);
		skipper_gguf_close(g);
		return bad;
	}
	if (argc == 3 && !strcmp(argv[1], "meta")) {
		struct skipper_model *m;
		if (skipper_model_load(argv[2], &m, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		const struct skipper_hparams *hp = &m->view.hp;
		printf("n_layer=%d\nn_embd=%d\nn_ff=%d\nn_head=%d\nn_head_kv=%d\nn_vocab=%d\nn_ctx_train=%d\n"
		       "rope_theta=%.9g\nrms_eps=%.9g\ntied=%d\nn_tensors=%lld\n",
		       hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->n_vocab, hp->n_ctx_train,
		       hp->rope_theta, hp->rms_eps, m->view.tied_embeddings, (long long)skipper_gguf_n_tensors(m->gguf));
		skipper_model_free(m);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "logits"))
		return logits(argv[2], atoi(argv[3]), argv[4]);
	fprintf(stderr, "usage: quant-tool quantize TYPE IN.f32 OUT | dequant FILE TENSOR OUT.f32 | meta FILE |\n"
	                "       logits FILE N OUT.f32\n");
	return 2;
}
