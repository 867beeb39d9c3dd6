/* The real default model, SmolLM2-135M-Instruct Q4_1, when it is on this
 * machine (SKIPPER_TEST_MODEL, else the fetch script's cache path): its
 * hyper-parameters and its SHA-256 against the sha256sum command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "model/quant.h"
#include "tap.h"

int main(void)
{
	char def[1024], cmd[1200], want[80] = "";
	const char *p = getenv("SKIPPER_TEST_MODEL");
	if (!p || !*p) {
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		if (xdg && *xdg)
			snprintf(def, sizeof def, "%s/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", xdg);
		else
			snprintf(def, sizeof def, "%s/.cache/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
		p = def;
	}
	if (access(p, R_OK) != 0) {
		char why[1100];
		snprintf(why, sizeof why, "SmolLM2 model not found at %s (set SKIPPER_TEST_MODEL)", p);
		tap_skip_all(why);
	}

	struct skipper_model *m;
	struct skipper_error err = { 0 };
	if (!ok(skipper_model_load(p, &m, &err) == 0, "load %s", p)) {
		diag("%s", err.msg);
		return tap_done();
	}
	const struct skipper_hparams *hp = &m->view.hp;
	is_int(hp->n_layer, 30, "30 layers");
	is_int(hp->n_embd, 576, "embedding 576");
	is_int(hp->n_head, 9, "9 heads");
	is_int(hp->n_head_kv, 3, "3 kv heads");
	is_int(hp->head_dim, 64, "head dim 64");
	is_int(hp->n_ff, 1536, "feed-forward 1536");
	is_int(hp->n_vocab, 49152, "vocabulary 49152");
	ok(m->view.tied_embeddings && m->view.output.data == m->view.tok_embd.data, "tied embeddings");
	ok(hp->rope_theta == 100000.0f, "rope theta 100000 (got %g)", hp->rope_theta);
	ok(hp->rope_style == SKIPPER_ROPE_PAIRS && hp->rope_scaling == SKIPPER_ROPE_SCALING_NONE && !m->view.rope_freqs, "plain pairs RoPE");
	ok(m->view.layers[0].wq.type == SKIPPER_Q4_1 || m->view.layers[0].wq.type == SKIPPER_Q8_0, "quantised weights (%s)",
	   skipper_dtype_name(m->view.layers[0].wq.type));
	uint64_t n;
	struct skipper_gguf_str s;
	ok(skipper_gguf_get_arr(m->gguf, "tokenizer.ggml.tokens", NULL, &n) == 0 && n == 49152 &&
	   skipper_gguf_arr_str(m->gguf, "tokenizer.ggml.tokens", 49151, &s) == 0 && s.len > 0, "49152 vocab strings by index");

	char got[65];
	ok(skipper_model_sha256(m, got, &err) == 0 && strlen(got) == 64, "sha256 computes");
	snprintf(cmd, sizeof cmd, "sha256sum '%s' 2>/dev/null", p);
	FILE *f = strchr(p, '\'') ? NULL : popen(cmd, "r");
	if (f && fscanf(f, "%64s", want) == 1 && pclose(f) == 0) {
		is_str(got, want, "sha256 equals sha256sum's");
	} else {
		if (f)
			pclose(f);
		tap_skip(1, "sha256sum not available");
	}
	char again[65];
	ok(skipper_model_sha256(m, again, &err) == 0 && !strcmp(again, got), "sha256 cached");
	skipper_model_free(m);
	return tap_done();
}
