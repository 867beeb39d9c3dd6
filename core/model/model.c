/* Model loading from GGUF for the Llama family (llama, qwen2, qwen3):
 * hyper-parameters from ARCH.* keys, every weight checked for presence,
 * shape and type, RoPE layout and scaling resolved here so backends see one
 * convention (see model.h). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/sha256.h"
#include "model.h"
#include "quant.h"

/* What distinguishes the architectures we load. The llama.cpp converter
 * permutes llama's Q/K rows into interleaved RoPE pairs; qwen2/qwen3 keep
 * the Hugging Face (NeoX) halves. */
static const struct arch_info {
	const char *name;
	int id, rope_style, qkv_bias, qk_norm;
} archs[] = {
	{ "llama", SKIPPER_ARCH_LLAMA, SKIPPER_ROPE_PAIRS, 0, 0 },
	{ "qwen2", SKIPPER_ARCH_QWEN2, SKIPPER_ROPE_HALVES, 1, 0 },
	{ "qwen3", SKIPPER_ARCH_QWEN3, SKIPPER_ROPE_HALVES, 0, 1 },
};

struct loader {
	const struct arch_info *arch;
	struct skipper_model *m;
	const struct skipper_gguf *g;
	const char *path;
	struct skipper_error *err;
};

/* Required unsigned hyper-parameter "llama.<key>"; missing or odd -> error. */
static int hp_int(struct loader *L, const char *key, int required, int def, int *out)
{
	char full[128];
	uint32_t v;
	snprintf(full, sizeof full, "%s.%s", L->m->view.arch, key);
	int rc = skipper_gguf_get_u32(L->g, full, &v);
	if (rc == SKIPPER_ERR_NOT_FOUND && !required) {
		*out = def;
		return SKIPPER_OK;
	}
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing metadata key %s", L->path, full);
	if (rc || v > INT32_MAX)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: metadata key %s is not a non-negative 32-bit integer",
		                    L->path, full);
	*out = (int)v;
	return SKIPPER_OK;
}

static int hp_float(struct loader *L, const char *key, float def, float *out)
{
	char full[128];
	snprintf(full, sizeof full, "%s.%s", L->m->view.arch, key);
	int rc = skipper_gguf_get_f32(L->g, full, out);
	if (rc == SKIPPER_ERR_NOT_FOUND) {
		*out = def;
		return SKIPPER_OK;
	}
	if (rc || !isfinite(*out))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: metadata key %s is not a finite float", L->path, full);
	return SKIPPER_OK;
}

static void dims_str(char *buf, size_t cap, int n, const int64_t *ne)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int d = 0; d < n && k < cap; d++)
		k += (size_t)snprintf(buf + k, cap - k, d ? " x %" PRId64 : "%" PRId64, ne[d]);
}

/* Bind a weight view: tensor NAME must exist with exactly the given dims
 * (ne0 = row length) and, for norms, be F32. */
static int bind(struct loader *L, struct skipper_weight *w, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                int want_f32, int optional)
{
	const struct skipper_gguf_tensor *t = skipper_gguf_find_tensor(L->g, name);
	int64_t want[2] = { ne0, ne1 };
	char a[96], b[96];

	memset(w, 0, sizeof *w);
	if (!t) {
		if (optional)
			return SKIPPER_ERR_NOT_FOUND;
		dims_str(b, sizeof b, n_dims, want);
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing tensor '%s' (expected shape [%s])", L->path, name, b);
	}
	int same = t->n_dims == n_dims && t->ne[0] == ne0 && (n_dims == 1 || t->ne[1] == ne1);
	if (!same) {
		dims_str(a, sizeof a, t->n_dims, t->ne);
		dims_str(b, sizeof b, n_dims, want);
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s' has shape [%s], expected [%s]", L->path, name, a, b);
	}
	if (want_f32 && t->type != SKIPPER_F32)
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, expected F32",
		                    L->path, name, skipper_dtype_name(t->type));
	w->type = t->type;
	w->ne0 = t->ne[0];
	w->ne1 = n_dims == 1 ? 1 : t->ne[1];
	w->row_bytes = skipper_dtype_row_bytes(t->type, t->ne[0]);
	w->data = t->data;
	int64_t bad = skipper_dtype_find_nonfinite(t->type, t->data, w->ne0 * w->ne1);
	if (bad >= 0)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s' (%s): block %lld (row %lld) has a %s",
		                    L->path, name, skipper_dtype_name(t->type), (long long)bad,
		                    (long long)(bad * skipper_dtype_block(t->type) / w->ne0),
		                    skipper_dtype_block(t->type) > 1 ? "non-finite scale: the file is corrupt"
		                                                     : "non-finite value: the file is corrupt");
	return SKIPPER_OK;
}

/* Llama-3.1 frequency factors from the scaling keys, the same per-frequency
 * smooth interpolation the llama.cpp converter bakes into rope_freqs.weight,
 * so backends only ever divide frequency i by rope_freqs[i]. */
static float *llama3_factors(const struct skipper_hparams *hp)
{
	int n = hp->rope_dim / 2;
	float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
	if (!f)
		return NULL;
	double low_wl = hp->rope_orig_ctx / hp->rope_low_freq_factor;
	double high_wl = hp->rope_orig_ctx / hp->rope_high_freq_factor;
	for (int i = 0; i < n; i++) {
		double freq = pow(hp->rope_theta, -2.0 * i / hp->rope_dim);
		double wl = 2 * M_PI / freq;
		if (wl < high_wl)
			f[i] = 1.0f;
		else if (wl > low_wl)
			f[i] = hp->rope_factor;
		else {
			double s = (hp->rope_orig_ctx / wl - hp->rope_low_freq_factor) /
			           (hp->rope_high_freq_factor - hp->rope_low_freq_factor);
			f[i] = (float)(1.0 / ((1 - s) / hp->rope_factor + s));
		}
	}
	return f;
}

static int load_hparams(struct loader *L)
{
	struct skipper_hparams *hp = &L->m->view.hp;
	int rc, key_len;

	if ((rc = hp_int(L, "block_count", 1, 0, &hp->n_layer)) || (rc = hp_int(L, "embedding_length", 1, 0, &hp->n_embd)) ||
	    (rc = hp_int(L, "feed_forward_length", 1, 0, &hp->n_ff)) ||
	    (rc = hp_int(L, "attention.head_count", 1, 0, &hp->n_head)) ||
	    (rc = hp_int(L, "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv)) ||
	    (rc = hp_int(L, "context_length", 0, 2048, &hp->n_ctx_train)) ||
	    (rc = hp_int(L, "vocab_size", 0, 0, &hp->n_vocab)))
		return rc;
	/* a context of no token would make every later size zero (the KV
	 * cache, the default context): the file is broken, say which key */
	if (hp->n_ctx_train < 1)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: metadata key %s.context_length = %d: a model's "
		                    "context holds at least one token", L->path, L->m->view.arch, hp->n_ctx_train);
	if (hp->n_layer < 1 || hp->n_layer > 1024 || hp->n_embd < 1 || hp->n_ff < 1 || hp->n_head < 1 ||
	    hp->n_head_kv < 1 || hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT,
		                    "%s: inconsistent hyper-parameters: %d layers, embd %d, ff %d, %d heads, %d kv heads",
		                    L->path, hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
	if ((rc = hp_int(L, "attention.key_length", 0, hp->n_embd / hp->n_head, &key_len)))
		return rc;
	hp->head_dim = key_len;
	if (hp->head_dim < 2 || hp->head_dim % 2 || (int64_t)hp->head_dim * hp->n_head > (1 << 20))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: head dimension %d is not a positive even number",
		                    L->path, hp->head_dim);
	if ((rc = hp_int(L, "rope.dimension_count", 0, hp->head_dim, &hp->rope_dim)))
		return rc;
	if (hp->rope_dim < 2 || hp->rope_dim > hp->head_dim || hp->rope_dim % 2)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: %s.rope.dimension_count = %d must be even and <= head dim %d",
		                    L->path, L->m->view.arch, hp->rope_dim, hp->head_dim);
	if ((rc = hp_float(L, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps)) ||
	    (rc = hp_float(L, "rope.freq_base", 10000.0f, &hp->rope_theta)))
		return rc;
	if (hp->rms_eps <= 0 || hp->rope_theta <= 0)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: rms epsilon %g and rope base %g must be positive",
		                    L->path, hp->rms_eps, hp->rope_theta);
	hp->rope_style = L->arch->rope_style;

	/* RoPE scaling: explicit keys, or the older llama.rope.scale_linear */
	char key[128];
	struct skipper_gguf_str s;
	hp->rope_scaling = SKIPPER_ROPE_SCALING_NONE;
	hp->rope_factor = 1.0f;
	hp->rope_low_freq_factor = 1.0f;
	hp->rope_high_freq_factor = 4.0f;
	if ((rc = hp_int(L, "rope.scaling.original_context_length", 0, hp->n_ctx_train, &hp->rope_orig_ctx)) ||
	    (rc = hp_float(L, "rope.scaling.factor", 1.0f, &hp->rope_factor)) ||
	    (rc = hp_float(L, "rope.scaling.low_freq_factor", 1.0f, &hp->rope_low_freq_factor)) ||
	    (rc = hp_float(L, "rope.scaling.high_freq_factor", 4.0f, &hp->rope_high_freq_factor)))
		return rc;

	snprintf(key, sizeof key, "%s.rope.scaling.type", L->m->view.arch);
	rc = skipper_gguf_get_str(L->g, key, &s);
	if (rc == SKIPPER_OK) {
		if (s.len == 4 && !memcmp(s.ptr, "none", 4))
			;
		else if (s.len == 6 && !memcmp(s.ptr, "linear", 6))
			hp->rope_scaling = SKIPPER_ROPE_SCALING_LINEAR;
		else if (s.len == 6 && !memcmp(s.ptr, "llama3", 6))
			hp->rope_scaling = SKIPPER_ROPE_SCALING_LLAMA3;
		else
			return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED, "%s: %s = \"%.*s\" is not supported (none, linear, llama3 are)",
			                    L->path, key, (int)(s.len > 32 ? 32 : s.len), s.ptr);
	} else if (rc != SKIPPER_ERR_NOT_FOUND) {
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: %s is not a string", L->path, key);
	} else {
		float lin;
		if ((rc = hp_float(L, "rope.scale_linear", 1.0f, &lin)))
			return rc;
		if (lin != 1.0f) {
			hp->rope_scaling = SKIPPER_ROPE_SCALING_LINEAR;
			hp->rope_factor = lin;
		}
	}
	if (hp->rope_scaling != SKIPPER_ROPE_SCALING_NONE &&
	    (hp->rope_factor <= 0 || hp->rope_orig_ctx <= 0 || hp->rope_low_freq_factor <= 0 ||
	     hp->rope_high_freq_factor <= hp->rope_low_freq_factor))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: bad rope scaling parameters (factor %g, original context %d, low %g, high %g)",
		                    L->path, hp->rope_factor, hp->rope_orig_ctx, hp->rope_low_freq_factor, hp->rope_high_freq_factor);
	return SKIPPER_OK;
}

/* The tensors only some architectures have: qwen2's Q/K/V biases, qwen3's
 * per-head Q/K norms. Required where the architecture has them, refused
 * where it does not (a file that mixes the two is not what it says it is). */
static int bind_extras(struct loader *L, int i, struct skipper_layer *l)
{
	const struct skipper_hparams *hp = &L->m->view.hp;
	int64_t Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
	struct { struct skipper_weight *w; const char *n; int64_t ne0; int want; } x[] = {
		{ &l->bq, "attn_q.bias", Q, L->arch->qkv_bias },      { &l->bk, "attn_k.bias", KV, L->arch->qkv_bias },
		{ &l->bv, "attn_v.bias", KV, L->arch->qkv_bias },     { &l->q_norm, "attn_q_norm.weight", hp->head_dim, L->arch->qk_norm },
		{ &l->k_norm, "attn_k_norm.weight", hp->head_dim, L->arch->qk_norm },
	};
	char name[96];
	int rc;

	for (size_t k = 0; k < sizeof x / sizeof x[0]; k++) {
		snprintf(name, sizeof name, "blk.%d.%s", i, x[k].n);
		if (x[k].want) {
			if ((rc = bind(L, x[k].w, name, 1, x[k].ne0, 1, 1, 0)))
				return rc;
		} else if (skipper_gguf_find_tensor(L->g, name)) {
			return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s' does not belong to architecture %s",
			                    L->path, name, L->arch->name);
		}
	}
	return SKIPPER_OK;
}

static int load_tensors(struct loader *L)
{
	struct skipper_model_view *v = &L->m->view;
	struct skipper_hparams *hp = &v->hp;
	const struct skipper_gguf_tensor *te = skipper_gguf_find_tensor(L->g, "token_embd.weight");
	int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
	char name[96];
	int rc;

	if (!te)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing tensor 'token_embd.weight' (expected shape [%d x n_vocab])",
		                    L->path, hp->n_embd);
	if (hp->n_vocab == 0) {
		if (te->n_dims != 2 || te->ne[1] > INT32_MAX)
			return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: tensor 'token_embd.weight' must be 2-dimensional", L->path);
		hp->n_vocab = (int)te->ne[1];
	}
	if ((rc = bind(L, &v->tok_embd, "token_embd.weight", 2, E, hp->n_vocab, 0, 0)) ||
	    (rc = bind(L, &v->out_norm, "output_norm.weight", 1, E, 1, 1, 0)))
		return rc;
	rc = bind(L, &v->output, "output.weight", 2, E, hp->n_vocab, 0, 1);
	if (rc == SKIPPER_ERR_NOT_FOUND) {
		v->output = v->tok_embd;
		v->tied_embeddings = 1;
	} else if (rc) {
		return rc;
	}

	v->layers = calloc((size_t)hp->n_layer, sizeof *v->layers);
	if (!v->layers)
		return skipper_fail(L->err, SKIPPER_ERR_NOMEM, "%s: no memory for %d layers", L->path, hp->n_layer);
	for (int i = 0; i < hp->n_layer; i++) {
		struct skipper_layer *l = &v->layers[i];
		struct { struct skipper_weight *w; const char *n; int nd; int64_t ne0, ne1; int f32; } spec[] = {
			{ &l->attn_norm, "attn_norm", 1, E, 1, 1 },   { &l->wq, "attn_q", 2, E, Q, 0 },
			{ &l->wk, "attn_k", 2, E, KV, 0 },            { &l->wv, "attn_v", 2, E, KV, 0 },
			{ &l->wo, "attn_output", 2, Q, E, 0 },        { &l->ffn_norm, "ffn_norm", 1, E, 1, 1 },
			{ &l->w_gate, "ffn_gate", 2, E, hp->n_ff, 0 }, { &l->w_up, "ffn_up", 2, E, hp->n_ff, 0 },
			{ &l->w_down, "ffn_down", 2, hp->n_ff, E, 0 },
		};
		for (size_t k = 0; k < sizeof spec / sizeof spec[0]; k++) {
			snprintf(name, sizeof name, "blk.%d.%s.weight", i, spec[k].n);
			if ((rc = bind(L, spec[k].w, name, spec[k].nd, spec[k].ne0, spec[k].ne1, spec[k].f32, 0)))
				return rc;
		}
		if ((rc = bind_extras(L, i, l)))
			return rc;
	}

	/* Llama-3.1 files carry the per-frequency factors as a tensor */
	const struct skipper_gguf_tensor *rf = skipper_gguf_find_tensor(L->g, "rope_freqs.weight");
	if (rf) {
		struct skipper_weight w;
		if ((rc = bind(L, &w, "rope_freqs.weight", 1, hp->rope_dim / 2, 1, 1, 0)))
			return rc;
		v->rope_freqs = w.data;
		if (hp->rope_scaling == SKIPPER_ROPE_SCALING_NONE)
			hp->rope_scaling = SKIPPER_ROPE_SCALING_LLAMA3;
	} else if (hp->rope_scaling == SKIPPER_ROPE_SCALING_LLAMA3) {
		if (!(L->m->rope_freqs_buf = llama3_factors(hp)))
			return skipper_fail(L->err, SKIPPER_ERR_NOMEM, "%s: out of memory", L->path);
		v->rope_freqs = L->m->rope_freqs_buf;
	}

	for (int64_t i = 0; i < skipper_gguf_n_tensors(L->g); i++) {
		const struct skipper_gguf_tensor *t = skipper_gguf_tensor(L->g, i);
		L->m->n_params += (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
		v->weight_bytes += t->nbytes;
	}
	return SKIPPER_OK;
}

/* The view's release hook: the view is the model's first member. */
static void release_pages(const struct skipper_model_view *v, const void *data, uint64_t bytes)
{
	skipper_gguf_release(((const struct skipper_model *)v)->gguf, data, bytes);
}

int skipper_model_load(const char *path, struct skipper_model **out, struct skipper_error *err)
{
	struct skipper_model *m;
	struct skipper_gguf_str s;
	int rc;

	*out = NULL;
	if (!(m = calloc(1, sizeof *m)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
	if ((rc = skipper_gguf_open(path, &m->gguf, err)))
		goto fail;

	struct loader L = { NULL, m, m->gguf, path, err };
	rc = skipper_gguf_get_str(m->gguf, "general.architecture", &s);
	if (rc) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %s general.architecture", path,
		                  rc == SKIPPER_ERR_NOT_FOUND ? "missing metadata key" : "non-string metadata key");
		goto fail;
	}
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		if (s.len == strlen(archs[i].name) && !memcmp(s.ptr, archs[i].name, s.len))
			L.arch = &archs[i];
	if (!L.arch) {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                  "%s: architecture \"%.*s\" is not supported (llama, qwen2 and qwen3 are)", path,
		                  (int)(s.len > 32 ? 32 : s.len), s.ptr);
		goto fail;
	}
	snprintf(m->view.arch, sizeof m->view.arch, "%s", L.arch->name);
	m->view.arch_id = L.arch->id;

	if (skipper_gguf_get_str(m->gguf, "general.name", &s) == SKIPPER_OK && s.len > 0) {
		size_t n = s.len < sizeof m->view.name - 1 ? (size_t)s.len : sizeof m->view.name - 1;
		memcpy(m->view.name, s.ptr, n);
		m->view.name[n] = '\0';
		skipper_printable(m->view.name); /* printed by info and written into file headers: one line */
	} else {
		const char *base = strrchr(path, '/');
		snprintf(m->view.name, sizeof m->view.name, "%s", base ? base + 1 : path);
	}
	if ((rc = load_hparams(&L)) || (rc = load_tensors(&L)))
		goto fail;
	m->view.path = skipper_gguf_path(m->gguf);
	m->view.release = release_pages;
	*out = m;
	return SKIPPER_OK;
fail:
	skipper_model_free(m);
	return rc;
}

void skipper_model_free(struct skipper_model *m)
{
	if (!m)
		return;
	free(m->view.layers);
	free(m->rope_freqs_buf);
	skipper_gguf_close(m->gguf);
	free(m);
}

int skipper_model_sha256(struct skipper_model *m, char out[65], struct skipper_error *err)
{
	const char *path = skipper_gguf_path(m->gguf);
	if (m->sha256[0]) {
		memcpy(out, m->sha256, 65);
		return SKIPPER_OK;
	}
	/* the file rather than the mapping: the bytes on disk are what a
	 * profile and `sha256sum` refer to, and read() streams without
	 * faulting the whole model into this process */
	int rc = skipper_sha256_file(path, m->sha256, err);
	if (rc) {
		m->sha256[0] = '\0';
		return rc;
	}
	memcpy(out, m->sha256, 65);
	return SKIPPER_OK;
}

static void print_gstr(FILE *f, const struct skipper_gguf *g, const char *key, const char *def)
{
	struct skipper_gguf_str s;
	char buf[201];
	if (skipper_gguf_get_str(g, key, &s) != SKIPPER_OK) {
		fputs(def, f);
		return;
	}
	snprintf(buf, sizeof buf, "%.*s", (int)(s.len < 200 ? s.len : 200), s.ptr);
	skipper_printable(buf); /* a file's bytes: no escapes to the terminal */
	fputs(buf, f);
}

static void human(char *buf, size_t cap, double v, const char *unit)
{
	const char *pre[] = { "", "K", "M", "G", "T" };
	int k = 0;
	while (v >= 1000 && k < 4) {
		v /= 1000;
		k++;
	}
	snprintf(buf, cap, k ? "%.2f %s%s" : "%.0f %s%s", v, pre[k], unit);
}

void skipper_model_print_info(const struct skipper_model *m, FILE *f)
{
	const struct skipper_model_view *v = &m->view;
	const struct skipper_hparams *hp = &v->hp;
	const struct skipper_gguf *g = m->gguf;
	static const char *scal[] = { "none", "linear", "llama3" };
	char a[32], b[32];
	uint64_t count;
	uint32_t id;

	fprintf(f, "file:            %s (GGUF v%u)\n", skipper_gguf_path(g), skipper_gguf_version(g));
	fprintf(f, "architecture:    %s%s\n", v->arch,
	        v->arch_id == SKIPPER_ARCH_QWEN2   ? " (Q/K/V biases)"
	        : v->arch_id == SKIPPER_ARCH_QWEN3 ? " (per-head Q/K norms)"
	                                           : "");
	fprintf(f, "name:            %s\n", v->name);
	fprintf(f, "layers:          %d\n", hp->n_layer);
	fprintf(f, "embedding:       %d\n", hp->n_embd);
	fprintf(f, "feed-forward:    %d\n", hp->n_ff);
	fprintf(f, "heads:           %d (kv %d, head dim %d)\n", hp->n_head, hp->n_head_kv, hp->head_dim);
	fprintf(f, "vocabulary:      %d\n", hp->n_vocab);
	fprintf(f, "context (train): %d\n", hp->n_ctx_train);
	fprintf(f, "rms epsilon:     %g\n", hp->rms_eps);
	fprintf(f, "rope:            base %g, %d dims, %s layout, scaling %s", hp->rope_theta, hp->rope_dim,
	        hp->rope_style == SKIPPER_ROPE_PAIRS ? "pairs" : "halves",
	        hp->rope_scaling >= 0 && hp->rope_scaling <= 2 ? scal[hp->rope_scaling] : "?");
	if (hp->rope_scaling != SKIPPER_ROPE_SCALING_NONE)
		fprintf(f, " (factor %g, original context %d%s)", hp->rope_factor, hp->rope_orig_ctx,
		        v->rope_freqs && v->rope_freqs != m->rope_freqs_buf ? ", rope_freqs tensor" : "");
	fprintf(f, "\n");
	fprintf(f, "tied embeddings: %s\n", v->tied_embeddings ? "yes" : "no");

	/* histogram over the types the loader accepts */
	static const int types[] = { SKIPPER_F32,  SKIPPER_F16,  SKIPPER_BF16, SKIPPER_Q8_0, SKIPPER_Q4_0, SKIPPER_Q4_1,
		                     SKIPPER_Q5_0, SKIPPER_Q5_1, SKIPPER_Q4_K, SKIPPER_Q5_K, SKIPPER_Q6_K };
	fprintf(f, "tensor types:   ");
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int n = 0;
		for (int64_t i = 0; i < skipper_gguf_n_tensors(g); i++)
			n += skipper_gguf_tensor(g, i)->type == types[k];
		if (n)
			fprintf(f, " %s x%d", skipper_dtype_name(types[k]), n);
	}
	fprintf(f, " (%lld tensors)\n", (long long)skipper_gguf_n_tensors(g));

	fprintf(f, "tokenizer:       ");
	print_gstr(f, g, "tokenizer.ggml.model", "(none)");
	fprintf(f, ", pre ");
	print_gstr(f, g, "tokenizer.ggml.pre", "(none)");
	if (skipper_gguf_get_arr(g, "tokenizer.ggml.tokens", NULL, &count) == SKIPPER_OK)
		fprintf(f, ", %llu tokens", (unsigned long long)count);
	if (skipper_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &id) == SKIPPER_OK)
		fprintf(f, ", bos %u", id);
	if (skipper_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &id) == SKIPPER_OK)
		fprintf(f, ", eos %u", id);
	fprintf(f, "\n");
	fprintf(f, "chat template:   %s\n", skipper_gguf_find_key(g, "tokenizer.chat_template") >= 0 ? "yes" : "no");
	human(a, sizeof a, (double)m->n_params, "");
	human(b, sizeof b, (double)skipper_gguf_file_size(g), "B");
	fprintf(f, "parameters:      %s (%llu)\n", a, (unsigned long long)m->n_params);
	fprintf(f, "file size:       %s (%llu bytes)\n", b, (unsigned long long)skipper_gguf_file_size(g));
}
