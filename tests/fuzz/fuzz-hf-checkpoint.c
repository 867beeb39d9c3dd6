/* Fuzz target: Hugging Face checkpoints (core/model/hf_model.c,
 * hf_config.c, safetensors.c): the input is a config.json, a NUL byte, and
 * the bytes of model.safetensors, written into a directory that
 * skipper_model_load() then reads, as a downloaded checkpoint is.
 *
 * Checked besides ASan/UBSan (abort on violation): every error names the
 * checkpoint or one of its files; a checkpoint that loads has every weight
 * of the view inside a tensor of the file (or converted, f32) and each of
 * its bytes is read; with [model] quantize = q8_0 too. `make check`
 * replays tests/fuzz/seeds/hf-checkpoint/; `make fuzz` runs it under
 * libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "model/model.h"
#include "model/quant.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-hf-checkpoint: %s failed\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void write_file(const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	CHECK(f && (n == 0 || fwrite(p, 1, n, f) == n) && fclose(f) == 0);
}

static void cleanup(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/config.json", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	unlink(path);
	rmdir(dir);
}

static volatile uint8_t sink;

static void touch(const struct skipper_weight *w)
{
	CHECK(w->data && w->ne0 > 0 && w->ne1 > 0);
	const uint8_t *p = w->data;
	for (int64_t i = 0; i < w->ne1; i++)
		sink ^= p[(size_t)i * w->row_bytes] ^ p[(size_t)i * w->row_bytes + w->row_bytes - 1];
}

static void load(int quantize)
{
	struct skipper_model_opts o = { quantize };
	struct skipper_error err = { 0 };
	struct skipper_model *m = NULL;
	int rc = skipper_model_load_opts(dir, &o, &m, &err);
	if (rc) {
		CHECK(rc == SKIPPER_ERR_NOMEM || strstr(err.msg, dir));
		return;
	}
	const struct skipper_model_view *v = &m->view;
	touch(&v->tok_embd);
	touch(&v->output);
	touch(&v->out_norm);
	CHECK(v->out_norm.type == SKIPPER_F32);
	for (int l = 0; l < v->hp.n_layer; l++) {
		const struct skipper_layer *L = &v->layers[l];
		const struct skipper_weight *w[] = { &L->attn_norm, &L->ffn_norm, &L->wq, &L->wk, &L->wv, &L->wo,
			                             &L->w_gate, &L->w_up, &L->w_down };
		for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
			touch(w[k]);
	}
	skipper_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/fuzz-hf-XXXXXX");
		CHECK(mkdtemp(dir));
		atexit(cleanup);
	}
	const uint8_t *nul = memchr(data, 0, size);
	size_t cfg_len = nul ? (size_t)(nul - data) : size;
	write_file("config.json", data, cfg_len);
	write_file("model.safetensors", nul ? nul + 1 : data, nul ? size - cfg_len - 1 : 0);
	load(-1);
	load(SKIPPER_Q8_0);
	return 0;
}
