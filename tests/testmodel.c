/* Test-model generator: see testmodel.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "gguf-writer.h"
#include "model/gguf.h"
#include "model/quant.h"
#include "testmodel.h"

void skipper_test_model_defaults(struct skipper_test_model_opts *o)
{
	memset(o, 0, sizeof *o);
	o->dtype = SKIPPER_F32;
	o->n_layer = 4;
	o->n_embd = 64;
	o->n_ff = 128;
	o->n_head = 4;
	o->n_head_kv = 2;
	o->n_ctx = 256;
	o->seed = 1;
	o->rope_theta = 10000.0f;
	o->rms_eps = 1e-5f;
	o->name = "skipper-test";
	o->arch = "llama";
}

int skipper_test_model_parse_layers(struct skipper_test_model_opts *o, const char *list)
{
	const char *p = list;
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 0 || v >= SKIPPER_TEST_MAX_LAYERS || (*end && *end != ','))
			return -1;
		o->redundant[v] = 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* uniform in [-1, 1), 24 random bits: exact in f32 */
static float unif(uint64_t *s) { return (float)(int32_t)((skipper_splitmix64(s) >> 40) - (1u << 23)) * 0x1p-23f; }

/* ---- tokenizers ------------------------------------------------------------ */

struct vocab { char **tok; float *score; int32_t *type; int n, cap; char **merges; int n_merges; };

static void vadd(struct vocab *v, const char *s, float score, int type)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 512;
		v->tok = realloc(v->tok, (size_t)v->cap * sizeof *v->tok);
		v->score = realloc(v->score, (size_t)v->cap * sizeof *v->score);
		v->type = realloc(v->type, (size_t)v->cap * sizeof *v->type);
		if (!v->tok || !v->score || !v->type)
			abort();
	}
	v->tok[v->n] = strdup(s);
	v->score[v->n] = score;
	v->type[v->n] = type;
	v->n++;
}

static int vfind(const struct vocab *v, const char *s)
{
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->tok[i], s))
			return i;
	return -1;
}

static void vfree(struct vocab *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->tok[i]);
	for (int i = 0; i < v->n_merges; i++)
		free(v->merges[i]);
	free(v->tok);
	free(v->score);
	free(v->type);
	free(v->merges);
}

/* GPT-2's byte -> printable code point table: printable Latin-1 bytes map to
 * themselves, the rest to U+0100 upwards in byte order. */
static void byte_char(int b, char out[3])
{
	int cp;
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)) {
		cp = b;
	} else {
		int k = 0;
		for (int x = 0; x < b; x++)
			if (!((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff)))
				k++;
		cp = 256 + k;
	}
	if (cp < 0x80) {
		out[0] = (char)cp;
		out[1] = 0;
	} else {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		out[2] = 0;
	}
}

/* Merge pairs in priority order; the merged pieces become tokens. "Ġ" is the
 * GPT-2 stand-in for a space. */
static const char *bpe_merges[] = {
	"Ġ t", "h e", "Ġ a", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t", "Ġ w", "Ġ o", "e n", "Ġ c",
	"i s", "i t", "o r", "e s", "a n", "Ġ b", "e d", "Ġ f", "in g", "Ġ p", "o u", "Ġ m", "Ġ d", "a l",
	"Ġ h", "Ġ i", "l l", "Ġ l", "l e", "Ġ n", "Ġ g", "o m", "a r", "Ġ y", "Ġ he", "Ġt o", "Ġ is",
	"Ġ T", "Ġ I", "Ġ 1", "Ġ A", "Ġ S", "Ġ =", "( )", "Ġ {", "Ġ }", "Ġ (", "Ġ \"", "Ġ re", "Ġ in",
	"Ġ on", "Ġ an", "Ġ it", "Ġ or", "Ġ at", "Ġ en", "Ġ ou", "Ġ er",
};

static void tok_bytes(struct vocab *v, int want)
{
	char bc[3];
	for (int b = 0; b < 256; b++) {
		byte_char(b, bc);
		vadd(v, bc, 0, 1);
	}
	static const char *special[] = { "<|endoftext|>", "<|im_start|>", "<|im_end|>" };
	int n_merge = (int)(sizeof bpe_merges / sizeof bpe_merges[0]);
	int room = want > 0 ? want - 256 - 3 : n_merge;
	v->merges = calloc((size_t)n_merge, sizeof *v->merges);
	for (int i = 0; i < n_merge && i < room; i++) {
		char a[32], *sp;
		snprintf(a, sizeof a, "%s", bpe_merges[i]);
		sp = strchr(a, ' ');
		*sp = 0;
		char joined[32];
		snprintf(joined, sizeof joined, "%s%s", a, sp + 1);
		if (vfind(v, joined) >= 0)
			continue;
		v->merges[v->n_merges++] = strdup(bpe_merges[i]);
		vadd(v, joined, 0, 1);
	}
	for (int i = 0; i < 3; i++)
		vadd(v, special[i], 0, 3);
	/* Llama-3 style reserved control tokens fill any requested extra room */
	for (int i = 0; v->n < want; i++) {
		char s[48];
		snprintf(s, sizeof s, "<|reserved_special_token_%d|>", i);
		vadd(v, s, 0, 3);
	}
}

static void tok_spm(struct vocab *v, int want)
{
	static const char *pieces[] = {
		"▁", "▁t", "▁a", "he", "in", "▁the", "er", "on", "▁s", "▁w", "▁o", "re", "▁c", "is", "it",
		"▁b", "▁f", "▁p", "▁m", "▁d", "▁h", "▁i", "▁l", "▁n", "▁g", "▁y", "▁to", "▁is", "▁he",
		"▁hello", "▁world", "▁and", "▁of", "▁in", "▁it", "ing", "ed", "es", "or", "an", "at", "en", "al",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
		"t", "u", "v", "w", "x", "y", "z",
	};
	vadd(v, "<unk>", 0, 2);
	vadd(v, "<s>", 0, 3);
	vadd(v, "</s>", 0, 3);
	for (int b = 0; b < 256; b++) {
		char s[8];
		snprintf(s, sizeof s, "<0x%02X>", b);
		vadd(v, s, 0, 6);
	}
	int n = (int)(sizeof pieces / sizeof pieces[0]);
	for (int i = 0; i < n && (want <= 0 || v->n < want); i++)
		vadd(v, pieces[i], -(float)(i + 1), 1);
	for (int i = 0; v->n < want; i++) {
		char s[32];
		snprintf(s, sizeof s, "<unused%d>", i);
		vadd(v, s, -1e9f, 5);
	}
}

static const char chatml_template[] =
	"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
	"'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

static const char llama2_template[] =
	"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
	"message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + "
	"eos_token }}{% endif %}{% endfor %}";

/* ---- weights ---------------------------------------------------------------- */

/* Generated tensors draw from the one PRNG stream in file order (the
 * writer fills them in that order), so a model far larger than memory is
 * streamed to disk and still has the same bytes as when built in memory. */
struct gen { int dtype; int64_t cols; float a; uint64_t *rng; };

/* rows of a matrix: uniform with variance scale^2 / fan_in, quantised */
static void fill_matrix(void *ctx, void *dst, int64_t row0, int64_t nrows)
{
	struct gen *g = ctx;
	size_t rb = skipper_dtype_row_bytes(g->dtype, g->cols);
	float *row = malloc((size_t)g->cols * sizeof *row);
	if (!row)
		abort();
	for (int64_t r = 0; r < nrows; r++) {
		for (int64_t c = 0; c < g->cols; c++)
			row[c] = g->a * unif(g->rng);
		skipper_quantize_row(g->dtype, row, (uint8_t *)dst + (size_t)r * rb, g->cols);
	}
	free(row);
}

/* a norm vector: 1 + 0.1 * U(-1, 1), F32 */
static void fill_norm(void *ctx, void *dst, int64_t row0, int64_t nrows)
{
	struct gen *g = ctx;
	float *v = dst;
	for (int64_t i = 0; i < g->cols; i++)
		v[i] = 1.0f + 0.1f * unif(g->rng);
}

static struct gen *gen_new(int dtype, int64_t cols, float a, uint64_t *rng)
{
	struct gen *g = malloc(sizeof *g);
	if (!g)
		abort();
	*g = (struct gen){ dtype, cols, a, rng };
	return g;
}

/* rows x cols matrix (cols = row length = fan-in), uniform with variance
 * scale^2 / fan_in, quantised to dtype. */
static int add_matrix(struct gw *w, const char *name, int dtype, int64_t cols, int64_t rows, float scale, uint64_t *rng)
{
	if (!skipper_dtype_row_bytes(dtype, cols)) {
		fprintf(stderr, "gen-model: %s: row length %lld is not a multiple of the %s block\n", name,
		        (long long)cols, skipper_dtype_name(dtype));
		return -1;
	}
	int64_t ne[2] = { cols, rows };
	gw_tensor_gen(w, name, dtype, 2, ne, fill_matrix, gen_new(dtype, cols, scale * sqrtf(3.0f / (float)cols), rng));
	return 0;
}

static void add_norm(struct gw *w, const char *name, int64_t n, uint64_t *rng)
{
	gw_tensor_gen(w, name, SKIPPER_F32, 1, &n, fill_norm, gen_new(SKIPPER_F32, n, 0, rng));
}

int skipper_test_model_write(const char *path, const struct skipper_test_model_opts *o)
{
	struct vocab v = { 0 };
	struct gw *w;
	uint64_t rng = o->seed;
	char name[96];
	int rc = 0;

	const char *arch = o->arch ? o->arch : "llama";
	int qwen2 = !strcmp(arch, "qwen2"), qwen3 = !strcmp(arch, "qwen3");
	int hd = o->head_dim ? o->head_dim : o->n_head ? o->n_embd / o->n_head : 0;
	if (!skipper_dtype_name(o->dtype) || o->n_layer < 1 || o->n_layer > SKIPPER_TEST_MAX_LAYERS || o->n_embd < 2 ||
	    o->n_ff < 1 || o->n_head < 1 || o->n_head_kv < 1 || (!o->head_dim && o->n_embd % o->n_head) ||
	    o->n_head % o->n_head_kv || hd < 2 || hd % 2 || o->n_ctx < 1 || (!qwen2 && !qwen3 && strcmp(arch, "llama"))) {
		fprintf(stderr, "gen-model: inconsistent options (dtype %d, %d layers, embd %d, ff %d, heads %d/%d)\n",
		        o->dtype, o->n_layer, o->n_embd, o->n_ff, o->n_head, o->n_head_kv);
		return -1;
	}
	if (o->tokenizer == SKIPPER_TEST_TOK_SPM)
		tok_spm(&v, o->n_vocab);
	else
		tok_bytes(&v, o->n_vocab);

	w = gw_new();
	gw_set_alignment(w, 32);
	gw_str(w, "general.architecture", arch);
	gw_str(w, "general.name", o->name ? o->name : "skipper-test");
	/* llama.cpp's file-type numbering, not the tensor type's */
	static const struct { int dtype; uint32_t ftype; } ftypes[] = {
		{ SKIPPER_F32, 0 },   { SKIPPER_F16, 1 },  { SKIPPER_Q4_0, 2 }, { SKIPPER_Q4_1, 3 },  { SKIPPER_Q8_0, 7 },
		{ SKIPPER_Q5_0, 8 },  { SKIPPER_Q5_1, 9 }, { SKIPPER_Q4_K, 15 }, { SKIPPER_Q5_K, 17 }, { SKIPPER_Q6_K, 18 },
		{ SKIPPER_BF16, 32 },
	};
	uint32_t ftype = 0;
	for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
		if (ftypes[i].dtype == o->dtype)
			ftype = ftypes[i].ftype;
	gw_u32(w, "general.file_type", ftype);
	char key[96];
#define KEY(s) (snprintf(key, sizeof key, "%s." s, arch), key)
	gw_u32(w, KEY("block_count"), (uint32_t)o->n_layer);
	gw_u32(w, KEY("context_length"), (uint32_t)o->n_ctx);
	gw_u32(w, KEY("embedding_length"), (uint32_t)o->n_embd);
	gw_u32(w, KEY("feed_forward_length"), (uint32_t)o->n_ff);
	gw_u32(w, KEY("attention.head_count"), (uint32_t)o->n_head);
	gw_u32(w, KEY("attention.head_count_kv"), (uint32_t)o->n_head_kv);
	if (o->head_dim) {
		gw_u32(w, KEY("attention.key_length"), (uint32_t)hd);
		gw_u32(w, KEY("attention.value_length"), (uint32_t)hd);
	}
	gw_u32(w, KEY("rope.dimension_count"), (uint32_t)hd);
	gw_f32(w, KEY("rope.freq_base"), o->rope_theta);
	gw_f32(w, KEY("attention.layer_norm_rms_epsilon"), o->rms_eps);
	gw_u32(w, KEY("vocab_size"), (uint32_t)v.n);
	int orig_ctx = o->n_ctx / 4 > 0 ? o->n_ctx / 4 : 1;
	if (o->rope_llama3 == 2) {
		gw_str(w, KEY("rope.scaling.type"), "llama3");
		gw_f32(w, KEY("rope.scaling.factor"), 8.0f);
		gw_f32(w, KEY("rope.scaling.low_freq_factor"), 1.0f);
		gw_f32(w, KEY("rope.scaling.high_freq_factor"), 4.0f);
		gw_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)orig_ctx);
	}
#undef KEY

	if (o->tokenizer == SKIPPER_TEST_TOK_SPM) {
		gw_str(w, "tokenizer.ggml.model", "llama");
		gw_str(w, "tokenizer.ggml.pre", "default");
		gw_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, (size_t)v.n);
		gw_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v.score, (size_t)v.n);
		gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.type, (size_t)v.n);
		gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
		gw_u32(w, "tokenizer.ggml.bos_token_id", 1);
		gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
		gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
		gw_bool(w, "tokenizer.ggml.add_eos_token", 0);
		gw_str(w, "tokenizer.chat_template", llama2_template);
	} else {
		gw_str(w, "tokenizer.ggml.model", "gpt2");
		gw_str(w, "tokenizer.ggml.pre", qwen2 || qwen3 ? "qwen2" : "gpt-2");
		gw_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, (size_t)v.n);
		gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.type, (size_t)v.n);
		gw_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v.merges, (size_t)v.n_merges);
		gw_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)vfind(&v, "<|im_start|>"));
		gw_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)vfind(&v, "<|im_end|>"));
		gw_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)vfind(&v, "<|endoftext|>"));
		gw_bool(w, "tokenizer.ggml.add_bos_token", 0);
		gw_str(w, "tokenizer.chat_template", chatml_template);
	}

	/* weights in llama.cpp's file order; embeddings ~U(-1,1), projections
	 * with variance 1/fan_in so the residual stream stays O(1) */
	int64_t E = o->n_embd, Q = (int64_t)o->n_head * hd, KV = (int64_t)o->n_head_kv * hd, F = o->n_ff;
	rc |= add_matrix(w, "token_embd.weight", o->dtype, E, v.n, sqrtf((float)E), &rng);
	add_norm(w, "output_norm.weight", E, &rng);
	if (o->rope_llama3 == 1) {
		/* same smooth interpolation as the key form, written out per frequency */
		int64_t nf = hd / 2;
		float *f = malloc((size_t)nf * sizeof *f);
		if (!f)
			abort();
		for (int64_t i = 0; i < nf; i++) {
			double wl = 2 * M_PI / pow(o->rope_theta, -2.0 * (double)i / hd);
			double lo_wl = orig_ctx / 1.0, hi_wl = orig_ctx / 4.0;
			if (wl < hi_wl)
				f[i] = 1.0f;
			else if (wl > lo_wl)
				f[i] = 8.0f;
			else {
				double sm = (orig_ctx / wl - 1.0) / (4.0 - 1.0);
				f[i] = (float)(1.0 / ((1 - sm) / 8.0 + sm));
			}
		}
		gw_tensor(w, "rope_freqs.weight", SKIPPER_F32, 1, &nf, f);
		free(f);
	}
	if (!o->tied)
		rc |= add_matrix(w, "output.weight", o->dtype, E, v.n, 1.0f, &rng);
	for (int l = 0; l < o->n_layer && !rc; l++) {
		float res = o->redundant[l] ? 1e-3f : 1.0f;
#define T(s) (snprintf(name, sizeof name, "blk.%d." s ".weight", l), name)
		add_norm(w, T("attn_norm"), E, &rng);
		rc |= add_matrix(w, T("attn_q"), o->dtype, E, Q, 1.0f, &rng);
		rc |= add_matrix(w, T("attn_k"), o->dtype, E, KV, 1.0f, &rng);
		rc |= add_matrix(w, T("attn_v"), o->dtype, E, KV, 1.0f, &rng);
		if (qwen2) { /* F32 biases ~U(-0.5, 0.5) */
			snprintf(name, sizeof name, "blk.%d.attn_q.bias", l);
			gw_tensor_gen(w, name, SKIPPER_F32, 1, &Q, fill_matrix, gen_new(SKIPPER_F32, Q, 0.5f, &rng));
			snprintf(name, sizeof name, "blk.%d.attn_k.bias", l);
			gw_tensor_gen(w, name, SKIPPER_F32, 1, &KV, fill_matrix, gen_new(SKIPPER_F32, KV, 0.5f, &rng));
			snprintf(name, sizeof name, "blk.%d.attn_v.bias", l);
			gw_tensor_gen(w, name, SKIPPER_F32, 1, &KV, fill_matrix, gen_new(SKIPPER_F32, KV, 0.5f, &rng));
		}
		if (qwen3) {
			add_norm(w, T("attn_q_norm"), hd, &rng);
			add_norm(w, T("attn_k_norm"), hd, &rng);
		}
		rc |= add_matrix(w, T("attn_output"), o->dtype, Q, E, res, &rng);
		add_norm(w, T("ffn_norm"), E, &rng);
		rc |= add_matrix(w, T("ffn_gate"), o->dtype, E, F, 1.0f, &rng);
		rc |= add_matrix(w, T("ffn_up"), o->dtype, E, F, 1.0f, &rng);
		rc |= add_matrix(w, T("ffn_down"), o->dtype, F, E, res, &rng);
#undef T
	}
	if (!rc && gw_write_file(w, path) != 0) {
		fprintf(stderr, "gen-model: cannot write %s\n", path);
		rc = -1;
	}
	gw_free(w);
	vfree(&v);
	return rc ? -1 : 0;
}

const char *skipper_test_smollm2_path(char *buf, size_t n)
{
	const char *p = getenv("SKIPPER_TEST_MODEL");
	if (p && *p)
		return p;
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (xdg && *xdg)
		snprintf(buf, n, "%s/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", xdg);
	else
		snprintf(buf, n, "%s/.cache/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
	return buf;
}

double skipper_test_chi_square(const struct skipper_test_cell *c, int n_cells, int n_draws, int *df)
{
	double chi = 0, other_p = 0;
	int other_n = 0;

	*df = -1;
	for (int i = 0; i < n_cells; i++) {
		double e = c[i].p * n_draws;
		if (e < 5) {
			other_p += c[i].p;
			other_n += c[i].count;
			continue;
		}
		chi += (c[i].count - e) * (c[i].count - e) / e;
		(*df)++;
	}
	if (other_p * n_draws >= 5) {
		double e = other_p * n_draws;
		chi += (other_n - e) * (other_n - e) / e;
		(*df)++;
	}
	return chi;
}
