/* Tokenizer tests: ids equal to llama.cpp's (tests/data/tokenizer-ref.tsv,
 * recorded by tests/ref/tokenizer-ref.py) for the SmolLM2 vocabulary under
 * every BPE pre-tokenizer and for a tiny SentencePiece vocabulary built in
 * memory; round trips; the streaming detokenizer; special tokens. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include <jansson.h>

#include "gguf-writer.h"
#include "model/gguf.h"
#include "model/quant.h"
#include "tap.h"
#include "testmodel.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h" /* tok_pretokenize, to test word splits directly */

struct refcase { char vocab[16]; int add_bos, special; char *text; size_t len; int32_t ids[512]; size_t n; };

static struct refcase cases[512];
static size_t n_cases;

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static void load_ref(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof line, f) && n_cases < 512) {
		if (line[0] == '#')
			continue;
		struct refcase *c = &cases[n_cases++];
		char *save, *vocab = strtok_r(line, "\t\n", &save);
		snprintf(c->vocab, sizeof c->vocab, "%s", vocab);
		c->add_bos = atoi(strtok_r(NULL, "\t", &save));
		c->special = atoi(strtok_r(NULL, "\t", &save));
		/* empty hex and id fields: strtok would skip them, so split by hand */
		char *hex = save, *tab = strchr(hex, '\t');
		*tab = 0;
		char *ids = tab + 1;
		c->len = strlen(hex) / 2;
		c->text = malloc(c->len + 1);
		for (size_t i = 0; i < c->len; i++)
			c->text[i] = (char)(hexval(hex[2 * i]) * 16 + hexval(hex[2 * i + 1]));
		c->text[c->len] = 0;
		for (char *tok = strtok_r(ids, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
			c->ids[c->n++] = (int32_t)atoi(tok);
	}
	fclose(f);
}

static void show(const char *what, const int32_t *v, size_t n)
{
	printf("#   %s:", what);
	for (size_t i = 0; i < n && i < 64; i++)
		printf(" %d", v[i]);
	printf("\n");
}

static int same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static void printable(const char *s, size_t len, char *out, size_t cap)
{
	size_t w = 0;
	for (size_t i = 0; i < len && w + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0xc0 && w + 10 >= cap)
			break; /* do not cut a character in half */
		if (c == '\n') { out[w++] = '\\'; out[w++] = 'n'; }
		else if (c == '\t') { out[w++] = '\\'; out[w++] = 't'; }
		else if (c == '\r') { out[w++] = '\\'; out[w++] = 'r'; }
		else out[w++] = (char)c;
	}
	out[w] = 0;
}

/* Compare every reference case of one vocabulary. */
static void check_cases(const struct skipper_tokenizer *t, const char *vocab, int roundtrip)
{
	for (size_t i = 0; i < n_cases; i++) {
		struct refcase *c = &cases[i];
		if (strcmp(c->vocab, vocab) != 0)
			continue;
		int32_t *ids = NULL;
		size_t n = 0;
		struct skipper_error err = { 0 };
		char name[128];
		printable(c->text, c->len, name, 60);
		int rc = skipper_tokenize(t, c->text, c->len, c->add_bos, c->special, &ids, &n, &err);
		int good = rc == 0 && same_ids(ids, n, c->ids, c->n);
		ok(good, "%s bos=%d special=%d \"%s\" = llama.cpp", vocab, c->add_bos, c->special, name);
		if (!good) {
			show("got ", ids, n);
			show("want", c->ids, c->n);
		}
		if (roundtrip && rc == 0) {
			char *text = NULL;
			size_t len = 0;
			skipper_detokenize(t, ids, n, c->special, 1, &text, &len, &err);
			ok(text && len == c->len && memcmp(text, c->text, len) == 0, "%s decode(encode(\"%s\"))", vocab,
			   name);
			free(text);
		}
		free(ids);
	}
}

static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t l = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
		if (!l || i + l > n)
			return 0;
		for (size_t k = 1; k < l; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += l;
	}
	return 1;
}

static void check_stream(const struct skipper_tokenizer *t, const char *text)
{
	int32_t *ids;
	size_t n;
	struct skipper_error err;
	skipper_tokenize(t, text, strlen(text), 0, 0, &ids, &n, &err);
	struct skipper_detok d;
	skipper_detok_init(&d, t, 0);
	char all[1024], chunk[256];
	size_t total = 0;
	int all_valid = 1, split_token = 0;
	for (size_t i = 0; i < n; i++) {
		char piece[64];
		size_t pl = skipper_token_piece(t, ids[i], 0, piece, sizeof piece);
		if (!valid_utf8((unsigned char *)piece, pl))
			split_token = 1;
		size_t k = skipper_detok_push(&d, ids[i], chunk, sizeof chunk);
		all_valid &= valid_utf8((unsigned char *)chunk, k);
		memcpy(all + total, chunk, k);
		total += k;
	}
	size_t k = skipper_detok_flush(&d, chunk, sizeof chunk);
	memcpy(all + total, chunk, k);
	total += k;
	ok(all_valid, "stream \"%s\": every chunk is whole UTF-8 (%zu tokens%s)", text, n,
	   split_token ? ", some split a character" : "");
	ok(total == strlen(text) && memcmp(all, text, total) == 0, "stream \"%s\": chunks concatenate to the text",
	   text);
	free(ids);
}

/* The tiny SentencePiece vocabulary of tests/ref/tokenizer-ref.py. */
static const struct { const char *piece; float score; } spm_pieces[] = {
	{ "\xe2\x96\x81", -1.0f }, { "a", -2.0f }, { "b", -2.0f }, { "c", -2.0f }, { "d", -2.0f }, { "e", -2.0f },
	{ "h", -2.0f }, { "l", -2.0f }, { "o", -2.0f }, { "r", -2.0f }, { "w", -2.0f },
	{ "\xe2\x96\x81h", -3.0f }, { "he", -4.0f }, { "ll", -3.5f }, { "llo", -5.0f }, { "hello", -6.0f },
	{ "\xe2\x96\x81hello", -5.5f }, { "\xe2\x96\x81w", -3.2f }, { "or", -3.3f }, { "\xe2\x96\x81wor", -7.0f },
	{ "ld", -4.5f }, { "\xe2\x96\x81world", -6.5f }, { "\xc3\xa9", -2.5f }, { "<user>", 0.0f },
};
#define N_SPM (3 + 256 + (int)(sizeof spm_pieces / sizeof spm_pieces[0]))

static struct skipper_tokenizer *tiny_spm(void)
{
	static char bytes[256][8];
	const char *toks[N_SPM];
	float scores[N_SPM];
	int32_t types[N_SPM];
	toks[0] = "<unk>"; toks[1] = "<s>"; toks[2] = "</s>";
	types[0] = SKIPPER_TOKEN_UNKNOWN; types[1] = types[2] = SKIPPER_TOKEN_CONTROL;
	scores[0] = scores[1] = scores[2] = 0;
	for (int b = 0; b < 256; b++) {
		snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
		toks[3 + b] = bytes[b];
		types[3 + b] = SKIPPER_TOKEN_BYTE;
		scores[3 + b] = 0;
	}
	for (int i = 259; i < N_SPM; i++) {
		toks[i] = spm_pieces[i - 259].piece;
		scores[i] = spm_pieces[i - 259].score;
		types[i] = i == N_SPM - 1 ? SKIPPER_TOKEN_USER_DEFINED : SKIPPER_TOKEN_NORMAL;
	}
	struct skipper_tokenizer_spec sp = {
		.model = "llama", .n_vocab = N_SPM, .tokens = toks, .scores = scores, .types = types,
		.bos = 1, .eos = 2, .unk = 0, .eot = -1, .eom = -1, .pad = -1,
		.add_bos = 1, .add_eos = 0, .add_space_prefix = 1,
	};
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err = { 0 };
	if (skipper_tokenizer_from_arrays(&sp, &t, &err))
		printf("# %s\n", err.msg);
	return t;
}

static void spm_tests(void)
{
	struct skipper_tokenizer *t = tiny_spm();
	ok(t != NULL, "tiny SentencePiece vocabulary builds from arrays");
	if (!t)
		return;
	is_str(skipper_tokenizer_kind(t), "llama/spm", "kind");
	/* Hand-computed: "▁hello▁world" merges ▁h (-3.0), ▁w (-3.2), or
	 * (-3.3), ll (-3.5), ld (-4.5), llo (-5.0), then ▁wor (-7.0) and
	 * ▁wor+ld = ▁world (-6.5); ▁h+e is no token, so: ▁h e llo ▁world. */
	int32_t *ids;
	size_t n;
	struct skipper_error err;
	skipper_tokenize(t, "hello world", 11, 1, 0, &ids, &n, &err);
	const int32_t want1[] = { 1, 270, 264, 273, 280 };
	ok(same_ids(ids, n, want1, 5), "SPM \"hello world\" = <s> ▁h e llo ▁world (hand-computed)");
	free(ids);
	/* 'H' and 'ö' have no piece: byte fallback <0x48>, <0xC3> <0xB6>. */
	skipper_tokenize(t, "H\xc3\xb6", 3, 0, 0, &ids, &n, &err);
	const int32_t want2[] = { 259, 3 + 0x48, 3 + 0xc3, 3 + 0xb6 };
	ok(same_ids(ids, n, want2, 4), "SPM byte fallback: \"Hö\" = ▁ <0x48> <0xC3> <0xB6>");
	char *text;
	skipper_detokenize(t, ids, n, 0, 1, &text, NULL, &err);
	is_str(text, "H\xc3\xb6", "SPM bytes decode back (space prefix stripped)");
	free(text);
	free(ids);
	char piece[16];
	skipper_token_piece(t, 280, 0, piece, sizeof piece);
	is_str(piece, " world", "SPM piece: ▁ -> space");
	skipper_token_piece(t, 1, 0, piece, sizeof piece);
	is_str(piece, "", "control token hidden unless rendered");
	skipper_token_piece(t, 1, 1, piece, sizeof piece);
	is_str(piece, "<s>", "control token rendered");
	check_cases(t, "spm", 0);
	skipper_tokenizer_free(t);
}

struct words { char buf[4096]; size_t n; };

static int collect_word(void *ctx, const char *s, size_t len)
{
	struct words *w = ctx;
	for (size_t i = 0; i < len && w->n + 3 < sizeof w->buf; i++)
		w->n += (size_t)sprintf(w->buf + w->n, "%02x", (unsigned char)s[i]);
	if (w->n + 1 < sizeof w->buf)
		w->buf[w->n++] = ' ';
	w->buf[w->n] = 0;
	return 0;
}

/* Word splits of the GPT-2 and Llama-3 patterns against the regex module
 * (tests/data/pretokenize-ref.tsv): covers \p{N}{1,3} digit groups and
 * case-insensitive contractions that no SmolLM2 token distinguishes. */
static void pretokenize_tests(const char *srcdir)
{
	char path[4096], line[8192];
	snprintf(path, sizeof path, "%s/tests/data/pretokenize-ref.tsv", srcdir);
	FILE *f = fopen(path, "r");
	if (!ok(f != NULL, "open %s", path))
		return;
	int n = 0, bad = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t2)
			continue;
		*t1 = *t2 = 0;
		int pre = strcmp(line, "gpt2") == 0 ? PRE_GPT2 : strcmp(line, "qwen2") == 0 ? PRE_QWEN2 : PRE_LLAMA3;
		char text[2048];
		size_t len = strlen(t1 + 1) / 2;
		for (size_t i = 0; i < len; i++)
			text[i] = (char)(hexval(t1[1 + 2 * i]) * 16 + hexval(t1[2 + 2 * i]));
		struct words w = { .n = 0 };
		w.buf[0] = 0;
		tok_pretokenize(pre, text, len, collect_word, &w);
		if (w.n && w.buf[w.n - 1] == ' ')
			w.buf[--w.n] = 0;
		n++;
		if (strcmp(w.buf, t2 + 1) != 0) {
			bad++;
			printf("# %s split of %s\n#   got  %s\n#   want %s\n", line, t1 + 1, w.buf, t2 + 1);
		}
	}
	fclose(f);
	ok(n > 100 && bad == 0, "GPT-2, Llama-3 and Qwen2 word splits equal the regex module's (%d texts, %d wrong)", n, bad);
}

/* Write w to a temporary file, open it and build a tokenizer; returns the
 * status and leaves the error message in err. */
static int load_written(struct gw *w, struct skipper_tokenizer **t, struct skipper_error *err)
{
	char path[512];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/skipper-t-tokenizer-%ld.gguf", tmp && *tmp ? tmp : "/tmp", (long)getpid());
	gw_write_file(w, path);
	gw_free(w);
	struct skipper_gguf *g = NULL;
	*t = NULL;
	int rc = skipper_gguf_open(path, &g, err);
	unlink(path);
	if (rc)
		return rc;
	rc = skipper_tokenizer_from_gguf(g, t, err);
	skipper_gguf_close(g);
	return rc;
}

enum { SPM_OK, SPM_NO_MODEL, SPM_BERT, SPM_TOKENS_U32, SPM_SCORES_SHORT, SPM_TYPES_F32, SPM_BOS_RANGE,
       SPM_BOS_HUGE, SPM_EOS_NEG, SPM_PAD_RANGE, SPM_EMBD_ROWS, BPE_BAD_MERGE, BPE_MERGES_U32 };

static struct gw *tokenizer_gguf(int variant)
{
	static char bytes[256][8];
	const char *toks[N_SPM];
	float scores[N_SPM];
	int32_t types[N_SPM];
	uint32_t u32s[N_SPM];
	toks[0] = "<unk>"; toks[1] = "<s>"; toks[2] = "</s>";
	for (int i = 0; i < N_SPM; i++) {
		types[i] = i == 0 ? SKIPPER_TOKEN_UNKNOWN : i < 3 ? SKIPPER_TOKEN_CONTROL : i < 259 ? SKIPPER_TOKEN_BYTE
		         : i == N_SPM - 1 ? SKIPPER_TOKEN_USER_DEFINED : SKIPPER_TOKEN_NORMAL;
		scores[i] = i >= 259 ? spm_pieces[i - 259].score : 0.0f;
		u32s[i] = (uint32_t)i;
		if (i >= 3 && i < 259) {
			snprintf(bytes[i - 3], sizeof bytes[i - 3], "<0x%02X>", i - 3);
			toks[i] = bytes[i - 3];
		} else if (i >= 259) {
			toks[i] = spm_pieces[i - 259].piece;
		}
	}
	struct gw *w = gw_new();
	gw_str(w, "general.architecture", "llama");
	if (variant == BPE_BAD_MERGE || variant == BPE_MERGES_U32) {
		static const char *const btoks[] = { "a", "b", "ab" };
		static const char *const merges[] = { "a b", "ab" };
		gw_str(w, "tokenizer.ggml.model", "gpt2");
		gw_str(w, "tokenizer.ggml.pre", "gpt-2");
		gw_arr_str(w, "tokenizer.ggml.tokens", btoks, 3);
		if (variant == BPE_BAD_MERGE)
			gw_arr_str(w, "tokenizer.ggml.merges", merges, 2);
		else
			gw_arr(w, "tokenizer.ggml.merges", GGUF_TYPE_UINT32, u32s, 2);
		return w;
	}
	if (variant != SPM_NO_MODEL)
		gw_str(w, "tokenizer.ggml.model", variant == SPM_BERT ? "bert" : "llama");
	if (variant == SPM_TOKENS_U32)
		gw_arr(w, "tokenizer.ggml.tokens", GGUF_TYPE_UINT32, u32s, N_SPM);
	else
		gw_arr_str(w, "tokenizer.ggml.tokens", toks, N_SPM);
	gw_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, variant == SPM_SCORES_SHORT ? N_SPM - 1 : N_SPM);
	if (variant == SPM_TYPES_F32)
		gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_FLOAT32, scores, N_SPM);
	else
		gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, N_SPM);
	gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
	gw_u32(w, "tokenizer.ggml.bos_token_id", variant == SPM_BOS_RANGE ? 99999 : variant == SPM_BOS_HUGE ? 4000000000u : 1);
	if (variant == SPM_EOS_NEG)
		gw_i32(w, "tokenizer.ggml.eos_token_id", -1);
	else
		gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
	if (variant == SPM_PAD_RANGE)
		gw_u32(w, "tokenizer.ggml.padding_token_id", 300);
	gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
	gw_bool(w, "tokenizer.ggml.add_space_prefix", 1);
	if (variant == SPM_EMBD_ROWS) { /* an embedding of one row fewer than the tokens */
		static float zeros[8 * N_SPM];
		const int64_t ne[2] = { 8, N_SPM - 1 };
		gw_tensor(w, "token_embd.weight", SKIPPER_F32, 2, ne, zeros);
	}
	return w;
}

/* The GGUF adapter: a SentencePiece vocabulary read from a file gives the
 * same ids as the in-memory one; bad tokenizer metadata is refused. */
static void gguf_adapter_tests(void)
{
	struct skipper_tokenizer *t;
	struct skipper_error err = { 0 };
	int rc = load_written(tokenizer_gguf(SPM_OK), &t, &err);
	if (ok(rc == 0, "tiny SentencePiece GGUF loads")) {
		int32_t *ids;
		size_t n;
		skipper_tokenize(t, "hello world", 11, 1, 0, &ids, &n, &err);
		const int32_t want[] = { 1, 270, 264, 273, 280 };
		ok(same_ids(ids, n, want, 5), "ids from the GGUF vocabulary (scores read from the file)");
		free(ids);
		is_int(skipper_tokenizer_add_bos(t), 1, "add_bos_token read");
		skipper_tokenizer_free(t);
	} else {
		diag("%s", err.msg);
	}
	static const struct { int variant, want; const char *what; } bad[] = {
		{ SPM_NO_MODEL, SKIPPER_ERR_NOT_FOUND, "no tokenizer.ggml.model" },
		{ SPM_BERT, SKIPPER_ERR_UNSUPPORTED, "unsupported tokenizer model" },
		{ SPM_TOKENS_U32, SKIPPER_ERR_FORMAT, "tokens not strings" },
		{ SPM_SCORES_SHORT, SKIPPER_ERR_FORMAT, "scores shorter than the vocabulary" },
		{ SPM_TYPES_F32, SKIPPER_ERR_FORMAT, "token types of the wrong type" },
		{ BPE_BAD_MERGE, SKIPPER_ERR_FORMAT, "merge without a space" },
		{ BPE_MERGES_U32, SKIPPER_ERR_FORMAT, "merges not strings" },
		{ SPM_EMBD_ROWS, SKIPPER_ERR_FORMAT, "a vocabulary of another size than token_embd's rows" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err.msg[0] = 0;
		rc = load_written(tokenizer_gguf(bad[i].variant), &t, &err);
		ok(rc == bad[i].want && t == NULL && err.msg[0], "refused: %s (%s)", bad[i].what, err.msg);
	}
	/* a special token that is no token of the vocabulary was dropped in
	 * silence (a model that never stops, or starts without its BOS) */
	static const struct { int variant; const char *want, *what; } ids[] = {
		{ SPM_BOS_RANGE, "tokenizer.ggml.bos_token_id = 99999 is past the vocabulary (tokens 0 to ", "BOS past the vocabulary" },
		{ SPM_BOS_HUGE, "tokenizer.ggml.bos_token_id = 4000000000 is past the vocabulary", "BOS of 4000000000" },
		{ SPM_EOS_NEG, "tokenizer.ggml.eos_token_id is not a token id", "a negative EOS" },
		{ SPM_PAD_RANGE, "tokenizer.ggml.padding_token_id = 300 is past the vocabulary", "padding past the vocabulary" },
	};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		err.msg[0] = 0;
		rc = load_written(tokenizer_gguf(ids[i].variant), &t, &err);
		ok(rc == SKIPPER_ERR_FORMAT && t == NULL && strstr(err.msg, ids[i].want), "refused, naming the key: %s (%s)",
		   ids[i].what, err.msg);
	}
}

/* The vocabularies of the test-model generator (used by the engine and
 * policy tests) load and round-trip. */
static void testmodel_tests(void)
{
	static const char *const texts[] = { "hello world", "Hello, world! 123", "a  b\n\tc", "caf\xc3\xa9" };
	for (int tk = SKIPPER_TEST_TOK_BYTES; tk <= SKIPPER_TEST_TOK_SPM; tk++) {
		struct skipper_test_model_opts o;
		char path[512];
		const char *tmp = getenv("TMPDIR");
		snprintf(path, sizeof path, "%s/skipper-t-tokenizer-model-%ld.gguf", tmp && *tmp ? tmp : "/tmp",
		         (long)getpid());
		skipper_test_model_defaults(&o);
		o.tokenizer = tk;
		struct skipper_gguf *g = NULL;
		struct skipper_tokenizer *t = NULL;
		struct skipper_error err = { 0 };
		int rc = skipper_test_model_write(path, &o);
		if (rc == 0)
			rc = skipper_gguf_open(path, &g, &err);
		unlink(path);
		if (rc == 0)
			rc = skipper_tokenizer_from_gguf(g, &t, &err);
		if (!ok(rc == 0, "test-model %s vocabulary loads", tk ? "SentencePiece" : "byte-level"))
			diag("%s", err.msg);
		for (size_t i = 0; t && i < sizeof texts / sizeof texts[0]; i++) {
			int32_t *ids;
			size_t n;
			char *dec = NULL;
			skipper_tokenize(t, texts[i], strlen(texts[i]), 1, 0, &ids, &n, &err);
			skipper_detokenize(t, ids, n, 0, 1, &dec, NULL, &err);
			is_str(dec, texts[i], "test-model %s round trip", skipper_tokenizer_kind(t));
			free(dec);
			free(ids);
		}
		skipper_tokenizer_free(t);
		skipper_gguf_close(g);
	}
}

/* ---- Hugging Face tokenizer.json ---- */

static const char *tmp_path(const char *name, char *buf, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(buf, cap, "%s/skipper-t-tokenizer-%ld-%s", tmp && *tmp ? tmp : "/tmp", (long)getpid(), name);
	return buf;
}

static json_t *hf_bytelevel_pre(const char *pre)
{
	static const char llama3_re[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
	static const char qwen2_re[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
	if (strcmp(pre, "smollm") == 0)
		return json_pack("{s:s, s:[{s:s, s:b}, {s:s, s:b, s:b, s:b}]}", "type", "Sequence", "pretokenizers",
		                 "type", "Digits", "individual_digits", 1, "type", "ByteLevel", "add_prefix_space", 0,
		                 "trim_offsets", 1, "use_regex", 1);
	if (strcmp(pre, "gpt2") == 0)
		return json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 1);
	return json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]}", "type", "Sequence", "pretokenizers",
	                 "type", "Split", "pattern", "Regex", strcmp(pre, "llama3") == 0 ? llama3_re : qwen2_re,
	                 "behavior", "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 0);
}

/* The SmolLM2 vocabulary written the way Hugging Face lays out
 * tokenizer.json (vocab object, merges, added_tokens, pre_tokenizer). */
static int write_hf_from_gguf(const struct skipper_gguf *g, const char *pre, int pair_merges, const char *path)
{
	json_t *vocab = json_object(), *merges = json_array(), *added = json_array();
	int et;
	uint64_t n, m;
	const void *types_raw;
	skipper_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n);
	skipper_gguf_arr_data(g, "tokenizer.ggml.token_type", &types_raw);
	for (uint64_t i = 0; i < n; i++) {
		struct skipper_gguf_str s;
		int32_t ty;
		skipper_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &s);
		memcpy(&ty, (const char *)types_raw + 4 * i, 4);
		json_object_setn_new(vocab, s.ptr, s.len, json_integer((json_int_t)i));
		if (ty == SKIPPER_TOKEN_CONTROL)
			json_array_append_new(added, json_pack("{s:I, s:s%, s:b}", "id", (json_int_t)i, "content", s.ptr,
			                                       (size_t)s.len, "special", 1));
	}
	skipper_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &m);
	for (uint64_t i = 0; i < m; i++) {
		struct skipper_gguf_str s;
		skipper_gguf_arr_str(g, "tokenizer.ggml.merges", i, &s);
		if (pair_merges) {
			const char *sp = memchr(s.ptr + 1, ' ', s.len - 1);
			json_array_append_new(merges, json_pack("[s%, s%]", s.ptr, (size_t)(sp - s.ptr), sp + 1,
			                                        (size_t)(s.len - (uint64_t)(sp - s.ptr) - 1)));
		} else {
			json_array_append_new(merges, json_stringn(s.ptr, s.len));
		}
	}
	json_t *root = json_pack("{s:s, s:o, s:n, s:o, s:{s:s, s:b}, s:{s:s, s:b, s:o, s:o}}", "version", "1.0",
	                         "added_tokens", added, "normalizer", "pre_tokenizer", hf_bytelevel_pre(pre),
	                         "decoder", "type", "ByteLevel", "use_regex", 1, "model", "type", "BPE",
	                         "byte_fallback", 0, "vocab", vocab, "merges", merges);
	int rc = json_dump_file(root, path, JSON_COMPACT);
	json_decref(root);
	return rc;
}

/* The tiny SentencePiece vocabulary as a Llama-2-style tokenizer.json:
 * byte_fallback, "▁" normalizer, merges ordered by piece score (what the
 * Hugging Face converter writes); no scores. */
static int write_hf_spm(const char *path, const char *cfg_path)
{
	json_t *vocab = json_object();
	json_object_set_new(vocab, "<unk>", json_integer(0));
	json_object_set_new(vocab, "<s>", json_integer(1));
	json_object_set_new(vocab, "</s>", json_integer(2));
	for (int b = 0; b < 256; b++) {
		char hex[8];
		snprintf(hex, sizeof hex, "<0x%02X>", b);
		json_object_set_new(vocab, hex, json_integer(3 + b));
	}
	for (int i = 259; i < N_SPM; i++)
		json_object_set_new(vocab, spm_pieces[i - 259].piece, json_integer(i));
	json_t *merges = json_pack("[s,s,s,s,s,s,s,s,s,s,s]", "\xe2\x96\x81 h", "\xe2\x96\x81 w", "o r", "l l", "h e",
	                           "l d", "ll o", "\xe2\x96\x81 hello", "he llo", "\xe2\x96\x81wor ld",
	                           "\xe2\x96\x81w or");
	json_t *root = json_pack(
		"{s:[{s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b}, {s:i, s:s, s:b}],"
		" s:{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}, s:n,"
		" s:{s:s, s:[{s:s}, {s:s}]}, s:{s:s, s:b, s:o, s:o}}",
		"added_tokens", "id", 0, "content", "<unk>", "special", 1, "id", 1, "content", "<s>", "special", 1,
		"id", 2, "content", "</s>", "special", 1, "id", N_SPM - 1, "content", "<user>", "special", 0,
		"normalizer", "type", "Sequence", "normalizers", "type", "Prepend", "prepend", "\xe2\x96\x81",
		"type", "Replace", "pattern", "String", " ", "content", "\xe2\x96\x81",
		"pre_tokenizer",
		"decoder", "type", "Sequence", "decoders", "type", "ByteFallback", "type", "Fuse",
		"model", "type", "BPE", "byte_fallback", 1, "vocab", vocab, "merges", merges);
	int rc = json_dump_file(root, path, JSON_COMPACT);
	json_decref(root);
	json_t *cfg = json_pack("{s:b, s:b, s:{s:s}, s:s, s:s, s:s}", "add_bos_token", 1, "add_eos_token", 0,
	                        "bos_token", "content", "<s>", "eos_token", "</s>", "unk_token", "<unk>",
	                        "chat_template", "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}");
	rc |= json_dump_file(cfg, cfg_path, JSON_COMPACT);
	json_decref(cfg);
	return rc;
}

static void hf_spm_tests(void)
{
	char path[512], cfg[512];
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err = { 0 };
	tmp_path("spm-tokenizer.json", path, sizeof path);
	tmp_path("spm-tokenizer_config.json", cfg, sizeof cfg);
	int rc = write_hf_spm(path, cfg) ? -1 : skipper_tokenizer_from_hf(path, cfg, &t, &err);
	if (ok(rc == 0, "Llama-2-style tokenizer.json loads")) {
		is_str(skipper_tokenizer_kind(t), "llama/spm", "recognised as SentencePiece BPE");
		ok(skipper_tokenizer_bos(t) == 1 && skipper_tokenizer_eos(t) == 2 && skipper_tokenizer_add_bos(t) == 1,
		   "bos/eos/add_bos from tokenizer_config.json");
		check_cases(t, "spm", 0);
		skipper_tokenizer_free(t);
	} else {
		diag("%s", err.msg);
	}
	char *tmpl = skipper_hf_chat_template(cfg);
	ok(tmpl && skipper_chat_template_detect(tmpl, strlen(tmpl)) == SKIPPER_CHAT_MISTRAL,
	   "chat_template read from tokenizer_config.json");
	free(tmpl);
	unlink(path);
	unlink(cfg);
	FILE *f = fopen(path, "w");
	fputs("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}", f);
	fclose(f);
	ok(skipper_tokenizer_from_hf(path, NULL, &t, &err) == SKIPPER_ERR_UNSUPPORTED, "Unigram refused: %s", err.msg);
	f = fopen(path, "w");
	fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", f);
	fclose(f);
	ok(skipper_tokenizer_from_hf(path, NULL, &t, &err) == SKIPPER_ERR_FORMAT, "truncated JSON refused: %s", err.msg);
	unlink(path);
}

/* The same SmolLM2 vocabulary from a tokenizer.json gives llama.cpp's ids,
 * under each pre-tokenizer pipeline. */
static void hf_bytelevel_tests(const struct skipper_gguf *g)
{
	static const struct { const char *pre, *vocab, *kind; int pairs; } v[] = {
		{ "smollm", "smollm", "gpt2/smollm", 0 }, { "gpt2", "gpt2", "gpt2/gpt2", 1 },
		{ "llama3", "llama3", "gpt2/llama3", 0 }, { "qwen2", "qwen2", "gpt2/qwen2", 1 },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char path[512];
		struct skipper_tokenizer *t = NULL;
		struct skipper_error err = { 0 };
		tmp_path("tokenizer.json", path, sizeof path);
		int rc = write_hf_from_gguf(g, v[i].pre, v[i].pairs, path) ? -1 : skipper_tokenizer_from_hf(path, NULL, &t, &err);
		unlink(path);
		if (!ok(rc == 0, "SmolLM2 tokenizer.json (%s pipeline%s) loads", v[i].pre, v[i].pairs ? ", pair merges" : "")) {
			diag("%s", err.msg);
			continue;
		}
		is_str(skipper_tokenizer_kind(t), v[i].kind, "pipeline recognised as %s", v[i].kind);
		check_cases(t, v[i].vocab, 0);
		skipper_tokenizer_free(t);
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *model_path(char *buf, size_t cap)
{
	const char *p = getenv("SKIPPER_TEST_MODEL");
	if (p && *p)
		return p;
	const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (cache && *cache)
		snprintf(buf, cap, "%s/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
	else
		snprintf(buf, cap, "%s/.cache/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
	return buf;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

static size_t put_utf8(uint32_t cp, char *o)
{
	if (cp < 0x80) { o[0] = (char)cp; return 1; }
	if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Seeded random texts: valid UTF-8 from mixed scripts must round-trip and
 * stream as whole characters; random bytes must tokenize without harm. */
static void random_tests(const struct skipper_tokenizer *t)
{
	static const uint32_t ranges[][2] = { { 0x20, 0x7e }, { 0x20, 0x20 }, { 0x09, 0x0d }, { 0xa0, 0x24f },
	                                      { 0x370, 0x52f }, { 0x600, 0x6ff }, { 0x3040, 0x30ff },
	                                      { 0x4e00, 0x9fff }, { 0xac00, 0xd7a3 }, { 0x1f300, 0x1f6ff },
	                                      { 0x30, 0x39 } };
	int rt_bad = 0, stream_bad = 0, bytes_bad = 0;
	char text[1024], out[4096], chunk[256];
	for (int iter = 0; iter < 300; iter++) {
		size_t len = 0, n_cp = 1 + rnd(60);
		for (size_t i = 0; i < n_cp; i++) {
			const uint32_t *r = ranges[rnd(sizeof ranges / sizeof ranges[0])];
			len += put_utf8(r[0] + rnd(r[1] - r[0] + 1), text + len);
		}
		int32_t *ids;
		size_t n;
		struct skipper_error err;
		if (skipper_tokenize(t, text, len, 0, 0, &ids, &n, &err)) {
			rt_bad++;
			continue;
		}
		char *dec = NULL;
		size_t dl = 0;
		skipper_detokenize(t, ids, n, 0, 0, &dec, &dl, &err);
		rt_bad += !(dec && dl == len && memcmp(dec, text, len) == 0);
		free(dec);
		struct skipper_detok d;
		skipper_detok_init(&d, t, 0);
		size_t total = 0;
		for (size_t i = 0; i < n; i++) {
			size_t k = skipper_detok_push(&d, ids[i], chunk, sizeof chunk);
			stream_bad += !valid_utf8((unsigned char *)chunk, k);
			memcpy(out + total, chunk, k);
			total += k;
		}
		total += skipper_detok_flush(&d, out + total, sizeof out - total);
		stream_bad += !(total == len && memcmp(out, text, len) == 0);
		free(ids);

		/* random bytes */
		len = rnd(200);
		for (size_t i = 0; i < len; i++)
			text[i] = (char)rnd(256);
		if (skipper_tokenize(t, text, len, 0, rnd(2), &ids, &n, &err)) {
			bytes_bad++;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			bytes_bad += ids[i] < 0 || ids[i] >= skipper_tokenizer_n_vocab(t);
		skipper_detok_init(&d, t, 1);
		for (size_t i = 0; i < n; i++)
			stream_bad += !valid_utf8((unsigned char *)chunk, skipper_detok_push(&d, ids[i], chunk, sizeof chunk));
		stream_bad += !valid_utf8((unsigned char *)chunk, skipper_detok_flush(&d, chunk, sizeof chunk));
		free(ids);
	}
	ok(rt_bad == 0, "300 random mixed-script texts round-trip (%d failed)", rt_bad);
	ok(stream_bad == 0, "streamed random texts are whole UTF-8 and complete (%d failed)", stream_bad);
	ok(bytes_bad == 0, "300 random byte strings tokenize to valid ids (%d failed)", bytes_bad);
}

/* The Qwen2.5 vocabulary (151936 tokens, qwen2 pre-tokenizer, chatml
 * specials) from the cached Qwen2.5-Coder-0.5B file, when it is there. */
static void qwen_tests(void)
{
	const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char path[4096];
	struct skipper_gguf *g = NULL;
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err = { 0 };

	if (cache && *cache)
		snprintf(path, sizeof path, "%s/skipper/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", cache);
	else
		snprintf(path, sizeof path, "%s/.cache/skipper/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
		         home ? home : "");
	if (skipper_gguf_open(path, &g, &err)) {
		tap_skip(1, "Qwen2.5-Coder-0.5B not cached (scripts/fetch-model.sh qwen2.5-coder-0.5b)");
		return;
	}
	if (!ok(skipper_tokenizer_from_gguf(g, &t, &err) == 0, "Qwen2.5 tokenizer loads from GGUF")) {
		diag("%s", err.msg);
		skipper_gguf_close(g);
		return;
	}
	is_str(skipper_tokenizer_kind(t), "gpt2/qwen2", "Qwen2.5 kind");
	is_int(skipper_tokenizer_n_vocab(t), 151936, "Qwen2.5 n_vocab");
	is_int(skipper_tokenizer_add_bos(t), 0, "Qwen2.5 does not add BOS");
	ok(skipper_tokenizer_is_eog(t, 151645) && skipper_tokenizer_is_eog(t, 151643) &&
	   !skipper_tokenizer_is_eog(t, 151644),
	   "Qwen2.5 EOG: <|im_end|> and <|endoftext|>, not <|im_start|>");
	check_cases(t, "qwen", 1);
	check_cases(t, "qwen-bad", 0);
	skipper_tokenizer_free(t);
	skipper_gguf_close(g);
}

static void smollm_tests(const char *path)
{
	struct skipper_gguf *g = NULL;
	struct skipper_error err = { 0 };
	if (skipper_gguf_open(path, &g, &err)) {
		ok(0, "open %s: %s", path, err.msg);
		return;
	}
	struct skipper_tokenizer *t = NULL;
	double t0 = now_ms();
	int rc = skipper_tokenizer_from_gguf(g, &t, &err);
	double dt = now_ms() - t0;
	if (!ok(rc == 0, "SmolLM2 tokenizer loads from GGUF"))
		diag("%s", err.msg);
	if (rc) {
		skipper_gguf_close(g);
		return;
	}
	diag("49152-token vocabulary + 48900 merges loaded in %.1f ms", dt);
	ok(dt < 1000, "vocabulary loads in under a second (%.1f ms; target < 100 ms unsanitized)", dt);
	is_str(skipper_tokenizer_kind(t), "gpt2/smollm", "kind");
	is_int(skipper_tokenizer_n_vocab(t), 49152, "n_vocab");
	is_int(skipper_tokenizer_bos(t), 1, "bos");
	is_int(skipper_tokenizer_eos(t), 2, "eos");
	is_int(skipper_tokenizer_add_bos(t), 0, "SmolLM2 does not add BOS");
	ok(skipper_tokenizer_is_eog(t, 2) && skipper_tokenizer_is_eog(t, 0) && !skipper_tokenizer_is_eog(t, 1),
	   "EOG: <|im_end|> and <|endoftext|>, not <|im_start|>");
	is_int(skipper_tokenizer_find(t, "<|im_start|>"), 1, "find <|im_start|>");
	is_int(skipper_tokenizer_find(t, "no-such-piece-xyz"), -1, "find unknown piece");

	check_cases(t, "smollm", 1);
	check_cases(t, "smollm-bad", 0);
	random_tests(t);

	/* special tokens on/off */
	int32_t *ids;
	size_t n;
	skipper_tokenize(t, "<|im_start|>", 12, 0, 1, &ids, &n, &err);
	ok(n == 1 && ids[0] == 1, "parse_special=1: \"<|im_start|>\" is token 1");
	free(ids);
	skipper_tokenize(t, "<|im_start|>", 12, 0, 0, &ids, &n, &err);
	int has1 = 0;
	for (size_t i = 0; i < n; i++)
		has1 |= ids[i] == 1;
	ok(n > 1 && !has1, "parse_special=0: \"<|im_start|>\" is plain text (%zu tokens)", n);
	free(ids);
	char piece[32];
	skipper_token_piece(t, 1, 0, piece, sizeof piece);
	is_str(piece, "", "<|im_start|> not rendered by default");
	skipper_token_piece(t, 1, 1, piece, sizeof piece);
	is_str(piece, "<|im_start|>", "<|im_start|> rendered with render_special");
	skipper_token_piece(t, 19556, 0, piece, sizeof piece);
	is_str(piece, "Hello", "byte-level piece decoded");
	skipper_token_piece(t, 905, 0, piece, sizeof piece);
	is_str(piece, " world", "byte-level piece with space (Ġ)");

	check_stream(t, "emoji \xf0\x9f\x98\x80\xf0\x9f\x8e\x89\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd family");
	check_stream(t, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 "
	                "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4");
	check_stream(t, "na\xc3\xafve caf\xc3\xa9 \xc3\x85ngstr\xc3\xb6m");

	/* A lone byte token of a 4-byte character stays pending, then the
	 * flush turns the unfinished sequence into U+FFFD. */
	{
		struct skipper_detok d;
		char buf[256];
		skipper_detok_init(&d, t, 0);
		int32_t lead = skipper_tokenizer_find(t, "\xc3\xb0"); /* byte 0xF0 in the GPT-2 alphabet: ð */
		size_t k = lead >= 0 ? skipper_detok_push(&d, lead, buf, sizeof buf) : 1;
		ok(k == 0 && d.n_pending == 1, "lone lead byte held back");
		k = skipper_detok_flush(&d, buf, sizeof buf);
		ok(k == 3 && memcmp(buf, "\xef\xbf\xbd", 3) == 0, "flush turns it into U+FFFD");
	}
	/* A buffer too small for the text: cut at a character boundary. */
	{
		int32_t *ids2;
		size_t n2;
		struct skipper_detok d;
		char small[4];
		const char *cjk = "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac";
		skipper_tokenize(t, cjk, strlen(cjk), 0, 0, &ids2, &n2, &err);
		skipper_detok_init(&d, t, 0);
		size_t k = 0, total = 0;
		int all_valid = 1;
		for (size_t i = 0; i < n2; i++) {
			k = skipper_detok_push(&d, ids2[i], small, sizeof small);
			all_valid &= k <= sizeof small && valid_utf8((unsigned char *)small, k);
			total += k;
		}
		ok(all_valid && total > 0 && total % 3 == 0, "small output buffer: whole characters only (%zu bytes)", total);
		free(ids2);
	}
	skipper_tokenizer_free(t);

	/* The same vocabulary under the other pre-tokenizers. */
	static const struct { const char *vocab, *pre, *kind; } pres[] = {
		{ "gpt2", "gpt-2", "gpt2/gpt2" }, { "llama3", "llama-bpe", "gpt2/llama3" },
		{ "default", "default", "gpt2/default" }, { "qwen2", "qwen2", "gpt2/qwen2" },
	};
	for (size_t i = 0; i < sizeof pres / sizeof pres[0]; i++) {
		if (skipper_tokenizer_from_gguf_pre(g, pres[i].pre, &t, &err)) {
			ok(0, "pre %s: %s", pres[i].pre, err.msg);
			continue;
		}
		is_str(skipper_tokenizer_kind(t), pres[i].kind, "pre-tokenizer %s", pres[i].pre);
		check_cases(t, pres[i].vocab, 0);
		skipper_tokenizer_free(t);
	}
	ok(skipper_tokenizer_from_gguf_pre(g, "no-such-pre", &t, &err) == SKIPPER_ERR_UNSUPPORTED,
	   "unknown pre-tokenizer refused: %s", err.msg);
	hf_bytelevel_tests(g);
	skipper_gguf_close(g);
}

int main(void)
{
	const char *srcdir = getenv("top_srcdir");
	char path[4096], mbuf[4096];
	snprintf(path, sizeof path, "%s/tests/data/tokenizer-ref.tsv", srcdir ? srcdir : ".");
	load_ref(path);
	ok(n_cases > 100, "reference cases loaded (%zu)", n_cases);

	spm_tests();
	pretokenize_tests(srcdir ? srcdir : ".");
	gguf_adapter_tests();
	testmodel_tests();
	hf_spm_tests();

	const char *model = model_path(mbuf, sizeof mbuf);
	FILE *f = fopen(model, "rb");
	if (f) {
		fclose(f);
		smollm_tests(model);
	} else {
		tap_skip(1, "SmolLM2 GGUF not found (set SKIPPER_TEST_MODEL)");
	}
	qwen_tests();
	for (size_t i = 0; i < n_cases; i++)
		free(cases[i].text);
	return tap_done();
}
