/* Model loading for the Llama family (llama, qwen2, qwen3) from GGUF
 * (hyper-parameters from ARCH.* keys) or a Hugging Face checkpoint
 * (hf_model.c); every weight checked for presence, shape and type, RoPE
 * layout and scaling resolved here so backends see one convention (see
 * model.h). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/sha256.h"
#include "model_impl.h"
#include "quant.h"

/* What distinguishes the architectures we load. The llama.cpp converter
 * permutes llama's Q/K rows into interleaved RoPE pairs; qwen2/qwen3 keep
 * the Hugging Face (NeoX) halves, as every Hugging Face checkpoint does. */
static const struct arch_info archs[] = {
	{ "llama", SKIPPER_ARCH_LLAMA, SKIPPER_ROPE_PAIRS, 0, 0 },
	{ "qwen2", SKIPPER_ARCH_QWEN2, SKIPPER_ROPE_HALVES, 1, 0 },
	{ "qwen3", SKIPPER_ARCH_QWEN3, SKIPPER_ROPE_HALVES, 0, 1 },
};

const struct arch_info *model_arch(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		if (len == strlen(archs[i].name) && !memcmp(name, archs[i].name, len))
			return &archs[i];
	return NULL;
}

static const struct skipper_gguf_tensor *gguf_find(const void *g, const char *name)
{
	return skipper_gguf_find_tensor(g, name);
}

static const struct skipper_gguf_tensor *gguf_at(const void *g, int64_t i)
{
	return skipper_gguf_tensor(g, i);
}

/* Required unsigned hyper-parameter "llama.<key>"; missing or odd -> error. */
static int hp_int(struct loader *L, const char *key, int required, int def, int *out)
{
	char full[128];
	uint32_t v;
	snprintf(full, sizeof full, "%s.%s", L->m->view.arch, key);
	int rc = skipper_gguf_get_u32(L->m->gguf, full, &v);
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
	int rc = skipper_gguf_get_f32(L->m->gguf, full, out);
	if (rc == SKIPPER_ERR_NOT_FOUND) {
		*out = def;
		return SKIPPER_OK;
	}
	if (rc || !isfinite(*out))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: metadata key %s is not a finite float", L->path, full);
	return SKIPPER_OK;
}

/* A shape as the model's format writes it: GGUF's "ne0 x ne1", or a
 * checkpoint's row-major "ne1, ne0". */
static void dims_str(const struct loader *L, char *buf, size_t cap, int n, const int64_t *ne)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && k < cap; i++) {
		int d = L->src.hf_name ? n - 1 - i : i;
		k += (size_t)snprintf(buf + k, cap - k, !i ? "%" PRId64 : L->src.hf_name ? ", %" PRId64 : " x %" PRId64, ne[d]);
	}
}

/* A tensor's name as the model's files have it. */
static const char *shown(const struct loader *L, const char *name, char *buf, size_t cap)
{
	return L->src.hf_name ? L->src.hf_name(name, buf, cap) : name;
}

/* Bind a weight view: tensor NAME must exist with exactly the given dims
 * (ne0 = row length) and, for norms, be F32. */
static int bind(struct loader *L, struct skipper_weight *w, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                int want_f32, int optional)
{
	const struct skipper_gguf_tensor *t = L->src.find(L->src.ctx, name);
	int64_t want[2] = { ne0, ne1 };
	char a[96], b[96], nb[128];

	memset(w, 0, sizeof *w);
	name = shown(L, name, nb, sizeof nb);
	if (!t) {
		if (optional)
			return SKIPPER_ERR_NOT_FOUND;
		dims_str(L, b, sizeof b, n_dims, want);
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing tensor '%s' (expected shape [%s])", L->path, name, b);
	}
	int same = t->n_dims == n_dims && t->ne[0] == ne0 && (n_dims == 1 || t->ne[1] == ne1);
	if (!same) {
		dims_str(L, a, sizeof a, t->n_dims, t->ne);
		dims_str(L, b, sizeof b, n_dims, want);
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

/* GGUF's ARCH.* keys into the hyper-parameters, defaults where a key may
 * be absent; model_check_hparams() judges them. */
static int gguf_hparams(struct loader *L)
{
	struct skipper_hparams *hp = &L->m->view.hp;
	const char *arch = L->m->view.arch;
	int rc;

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
		                    "context holds at least one token", L->path, arch, hp->n_ctx_train);
	if ((rc = hp_int(L, "attention.key_length", 0, hp->n_head ? hp->n_embd / hp->n_head : 0, &hp->head_dim)) ||
	    (rc = hp_int(L, "rope.dimension_count", 0, hp->head_dim, &hp->rope_dim)) ||
	    (rc = hp_float(L, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps)) ||
	    (rc = hp_float(L, "rope.freq_base", 10000.0f, &hp->rope_theta)))
		return rc;
	hp->rope_style = L->arch->rope_style;

	/* RoPE scaling: explicit keys, or the older llama.rope.scale_linear */
	char key[128];
	struct skipper_gguf_str s;
	hp->rope_scaling = SKIPPER_ROPE_SCALING_NONE;
	if ((rc = hp_int(L, "rope.scaling.original_context_length", 0, hp->n_ctx_train, &hp->rope_orig_ctx)) ||
	    (rc = hp_float(L, "rope.scaling.factor", 1.0f, &hp->rope_factor)) ||
	    (rc = hp_float(L, "rope.scaling.low_freq_factor", 1.0f, &hp->rope_low_freq_factor)) ||
	    (rc = hp_float(L, "rope.scaling.high_freq_factor", 4.0f, &hp->rope_high_freq_factor)))
		return rc;
	snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
	rc = skipper_gguf_get_str(L->m->gguf, key, &s);
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
	/* Llama-3.1 files carry the per-frequency factors as a tensor */
	if (skipper_gguf_find_tensor(L->m->gguf, "rope_freqs.weight") && hp->rope_scaling == SKIPPER_ROPE_SCALING_NONE)
		hp->rope_scaling = SKIPPER_ROPE_SCALING_LLAMA3;
	return SKIPPER_OK;
}

int model_check_hparams(struct loader *L)
{
	struct skipper_hparams *hp = &L->m->view.hp;

	if (hp->n_layer < 1 || hp->n_layer > 1024 || hp->n_embd < 1 || hp->n_ff < 1 || hp->n_head < 1 ||
	    hp->n_head_kv < 1 || hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT,
		                    "%s: inconsistent hyper-parameters: %d layers, embd %d, ff %d, %d heads, %d kv heads",
		                    L->path, hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv);
	if (hp->head_dim < 2 || hp->head_dim % 2 || (int64_t)hp->head_dim * hp->n_head > (1 << 20))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: head dimension %d is not a positive even number",
		                    L->path, hp->head_dim);
	if (hp->rope_dim < 2 || hp->rope_dim > hp->head_dim || hp->rope_dim % 2)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: rotary dimensions %d: must be even and <= head dim %d",
		                    L->path, hp->rope_dim, hp->head_dim);
	if (!(hp->rms_eps > 0) || !(hp->rope_theta > 0) || !isfinite(hp->rms_eps) || !isfinite(hp->rope_theta))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: rms epsilon %g and rope base %g must be positive",
		                    L->path, hp->rms_eps, hp->rope_theta);
	if (hp->rope_scaling != SKIPPER_ROPE_SCALING_NONE &&
	    (!(hp->rope_factor > 0) || hp->rope_orig_ctx <= 0 || !(hp->rope_low_freq_factor > 0) ||
	     !(hp->rope_high_freq_factor > hp->rope_low_freq_factor) || !isfinite(hp->rope_factor) ||
	     !isfinite(hp->rope_high_freq_factor)))
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
	char name[96], nb[128];
	int rc;

	for (size_t k = 0; k < sizeof x / sizeof x[0]; k++) {
		snprintf(name, sizeof name, "blk.%d.%s", i, x[k].n);
		if (x[k].want) {
			if ((rc = bind(L, x[k].w, name, 1, x[k].ne0, 1, 1, 0)))
				return rc;
		} else if (L->src.find(L->src.ctx, name)) {
			return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s' does not belong to architecture %s",
			                    L->path, shown(L, name, nb, sizeof nb), L->arch->name);
		}
	}
	return SKIPPER_OK;
}

int model_bind_tensors(struct loader *L)
{
	struct skipper_model_view *v = &L->m->view;
	struct skipper_hparams *hp = &v->hp;
	const struct skipper_gguf_tensor *te = L->src.find(L->src.ctx, "token_embd.weight");
	int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
	char name[96];
	int rc;

	if (!te)
		return bind(L, &v->tok_embd, "token_embd.weight", 2, E, hp->n_vocab, 0, 0);
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
	if (L->src.find(L->src.ctx, "rope_freqs.weight")) {
		struct skipper_weight w;
		if ((rc = bind(L, &w, "rope_freqs.weight", 1, hp->rope_dim / 2, 1, 1, 0)))
			return rc;
		v->rope_freqs = w.data;
	} else if (hp->rope_scaling == SKIPPER_ROPE_SCALING_LLAMA3) {
		if (!(L->m->rope_freqs_buf = llama3_factors(hp)))
			return skipper_fail(L->err, SKIPPER_ERR_NOMEM, "%s: out of memory", L->path);
		v->rope_freqs = L->m->rope_freqs_buf;
	}

	for (int64_t i = 0; i < L->src.n; i++) {
		const struct skipper_gguf_tensor *t = L->src.at(L->src.ctx, i);
		L->m->n_params += (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
		v->weight_bytes += t->nbytes;
	}
	return SKIPPER_OK;
}

/* The view's release hook: the view is the model's first member. */
static void release_pages(const struct skipper_model_view *v, const void *data, uint64_t bytes)
{
	const struct skipper_model *m = (const struct skipper_model *)v;
	if (m->gguf)
		skipper_gguf_release(m->gguf, data, bytes);
	else
		model_release_hf(m->hf, data, bytes);
}

void *model_alloc(struct skipper_model *m, size_t bytes)
{
	void **o = realloc(m->owned, sizeof *m->owned * (size_t)(m->n_owned + 1));
	void *p = o ? malloc(bytes ? bytes : 1) : NULL;
	if (o)
		m->owned = o;
	if (p)
		m->owned[m->n_owned++] = p;
	return p;
}

struct tensor_src model_tensors(const struct skipper_model *m)
{
	if (m->hf)
		return model_hf_tensors(m->hf);
	return (struct tensor_src){ m->gguf, gguf_find, gguf_at, skipper_gguf_n_tensors(m->gguf), NULL };
}

static int load_gguf(struct skipper_model *m, const char *path, struct skipper_error *err)
{
	struct skipper_gguf_str s;
	int rc;

	if ((rc = skipper_gguf_open(path, &m->gguf, err)))
		return rc;
	struct loader L = { NULL, m, model_tensors(m), path, err };
	rc = skipper_gguf_get_str(m->gguf, "general.architecture", &s);
	if (rc)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %s general.architecture", path,
		                    rc == SKIPPER_ERR_NOT_FOUND ? "missing metadata key" : "non-string metadata key");
	if (!(L.arch = model_arch(s.ptr, s.len)))
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: architecture \"%.*s\" is not supported (llama, qwen2 and qwen3 are)", path,
		                    (int)(s.len > 32 ? 32 : s.len), s.ptr);
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
	if ((rc = gguf_hparams(&L)) || (rc = model_check_hparams(&L)) || (rc = model_bind_tensors(&L)))
		return rc;
	m->view.path = skipper_gguf_path(m->gguf);
	return SKIPPER_OK;
}

int skipper_model_load_opts(const char *path, const struct skipper_model_opts *o, struct skipper_model **out,
                            struct skipper_error *err)
{
	struct skipper_model *m;
	struct stat st;
	int rc;

	*out = NULL;
	if (!(m = calloc(1, sizeof *m)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
	m->quantized = -1;
	/* a directory is a Hugging Face checkpoint; anything else is opened
	 * as GGUF, which says what is wrong with it */
	rc = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? model_load_hf(m, path, err) : load_gguf(m, path, err);
	if (rc == SKIPPER_OK && o && o->quantize >= 0)
		rc = model_quantize(m, o->quantize, err);
	if (rc) {
		skipper_model_free(m);
		return rc;
	}
	m->view.release = release_pages;
	*out = m;
	return SKIPPER_OK;
}

int skipper_model_load(const char *path, struct skipper_model **out, struct skipper_error *err)
{
	return skipper_model_load_opts(path, NULL, out, err);
}

void skipper_model_free(struct skipper_model *m)
{
	if (!m)
		return;
	free(m->view.layers);
	free(m->rope_freqs_buf);
	for (int i = 0; i < m->n_owned; i++)
		free(m->owned[i]);
	free(m->owned);
	skipper_gguf_close(m->gguf);
	model_free_hf(m->hf);
	free(m);
}

int skipper_model_sha256(struct skipper_model *m, char out[65], struct skipper_error *err)
{
	if (!m->sha256[0]) {
		/* the file rather than the mapping: the bytes on disk are what a
		 * profile and `sha256sum` refer to, and read() streams without
		 * faulting the whole model into this process */
		int rc = m->gguf ? skipper_sha256_file(skipper_gguf_path(m->gguf), m->sha256, err)
		                 : model_hf_sha256(m->hf, m->sha256, err);
		if (rc) {
			m->sha256[0] = '\0';
			return rc;
		}
		if (m->quantized >= 0) {
			/* other weights than the files hold: another model to a
			 * profile, with a hash of its own */
			const char *q = skipper_dtype_name(m->quantized);
			unsigned char md[32];
			if (skipper_sha256(m->sha256, 64, q, strlen(q), md)) {
				m->sha256[0] = '\0';
				return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			}
			skipper_hex(md, 32, m->sha256);
		}
	}
	memcpy(out, m->sha256, 65);
	return SKIPPER_OK;
}

const char *skipper_model_path(const struct skipper_model *m)
{
	return m->view.path;
}

void skipper_model_stem(const struct skipper_model *m, char *buf, size_t cap)
{
	const char *path = m->view.path, *file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(file), k = 0;

	if (m->gguf) {
		snprintf(buf, cap, "%.*s", (int)(n > 5 && !strcmp(file + n - 5, ".gguf") ? n - 5 : n), file);
		return;
	}
	/* a checkpoint: its name, ORG/NAME as the hub cache writes it */
	for (const char *c = m->view.name; *c && k + 3 < cap; c++)
		if (*c == '/') {
			buf[k++] = '-';
			buf[k++] = '-';
		} else {
			buf[k++] = *c;
		}
	buf[k] = '\0';
}

uint64_t skipper_model_file_size(const struct skipper_model *m)
{
	return m->gguf ? skipper_gguf_file_size(m->gguf) : model_hf_size(m->hf);
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

	if (g)
		fprintf(f, "file:            %s (GGUF v%u)\n", skipper_gguf_path(g), skipper_gguf_version(g));
	else
		fprintf(f, "checkpoint:      %s (Hugging Face, safetensors)\n", v->path);
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

	/* histogram over the types the loader accepts, as the files hold them */
	static const int types[] = { SKIPPER_F32,  SKIPPER_F16,  SKIPPER_BF16, SKIPPER_Q8_0, SKIPPER_Q4_0, SKIPPER_Q4_1,
		                     SKIPPER_Q5_0, SKIPPER_Q5_1, SKIPPER_Q4_K, SKIPPER_Q5_K, SKIPPER_Q6_K };
	struct tensor_src src = model_tensors(m);
	fprintf(f, "tensor types:   ");
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int n = 0;
		for (int64_t i = 0; i < src.n; i++)
			n += src.at(src.ctx, i)->type == types[k];
		if (n)
			fprintf(f, " %s x%d", skipper_dtype_name(types[k]), n);
	}
	fprintf(f, " (%lld tensors)\n", (long long)src.n);
	if (m->quantized >= 0)
		fprintf(f, "quantized:       to %s at load, in %.1f s\n", skipper_dtype_name(m->quantized), m->quantize_seconds);
	if (!g) {
		char *tj = skipper_model_hf_file(m, "tokenizer.json"), *tc = skipper_model_hf_file(m, "tokenizer_config.json");
		fprintf(f, "tokenizer:       %s%s\n", tj ? "tokenizer.json" : "(none: tokenizer.json is missing)",
		        tc ? " + tokenizer_config.json" : "");
		free(tj);
		free(tc);
	} else {
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
	}
	human(a, sizeof a, (double)m->n_params, "");
	human(b, sizeof b, (double)skipper_model_file_size(m), "B");
	fprintf(f, "parameters:      %s (%llu)\n", a, (unsigned long long)m->n_params);
	fprintf(f, "file size:       %s (%llu bytes)\n", b, (unsigned long long)skipper_model_file_size(m));
}
