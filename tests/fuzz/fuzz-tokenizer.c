/* Fuzz target: the tokenizers, their pre-tokenizers and the adapters that
 * build a tokenizer from untrusted data (GGUF metadata, tokenizer.json,
 * tokenizer_config.json).
 *
 * Input: the first byte selects what the rest is (byte & 15, so the digits
 * '0'-'9' and ':;<=>?' name the modes and seed files stay readable):
 *   0-4   text for a small byte-level BPE vocabulary with the gpt2, llama3,
 *         smollm, qwen2 or default pre-tokenizer (built from arrays);
 *   5     text for a small SentencePiece vocabulary;
 *   6     text split directly by every pre-tokenizer (tok_pretokenize);
 *   7     a GGUF file whose tokenizer is loaded (and used on a fixed text);
 *   8-13  as 0-5, with special tokens parsed in the text;
 *   14    a tokenizer.json, loaded (and used on a fixed text);
 *   15    a tokenizer_config.json: its chat template, detected and applied.
 * Invariants checked (abort on violation, so libFuzzer and ASan report it):
 * ids in range; streamed output is valid UTF-8; valid UTF-8 input without
 * special tokens round-trips through byte-level BPE; pre-tokenizer words are
 * non-empty and together give back the text (invalid UTF-8 as U+FFFD); with
 * the qwen2 and smollm pre-tokenizers every digit is a word of its own.
 *
 * `make check` runs main() below: the seeds (tests/fuzz/seeds/tokenizer/),
 * a seeded random campaign, and tokenizer GGUF files with truncations and
 * byte changes. `make fuzz` builds it with -DSKIPPER_LIBFUZZER instead
 * (tests/fuzz/README). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h" /* tok_pretokenize, PRE_* */
#include "tokenizer/unicode.h"
#ifndef SKIPPER_LIBFUZZER
#include "gguf-writer.h"
#endif

enum { N_BPE = 5 };
static const char *const bpe_pre[N_BPE] = { "gpt2", "llama3", "smollm", "qwen2", "default" };
static const int all_pre[] = { PRE_DEFAULT, PRE_GPT2, PRE_SMOLLM, PRE_LLAMA3, PRE_QWEN2 };
static struct skipper_tokenizer *bpe[N_BPE], *spm;

/* Strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF
 * (the tokenizer reads those leniently, as llama.cpp does, so they need
 * not round-trip). */
static int valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], lo = 0x80, hi = 0xbf;
		size_t l = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
		if (c == 0xe0) lo = 0xa0;
		if (c == 0xed) hi = 0x9f;
		if (c == 0xf0) lo = 0x90;
		if (c == 0xf4) hi = 0x8f;
		if (!l || i + l > n)
			return 0;
		if (l > 1 && (s[i + 1] < lo || s[i + 1] > hi))
			return 0;
		for (size_t k = 2; k < l; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += l;
	}
	return 1;
}

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-tokenizer: %s failed\n", #c); abort(); } } while (0)

/* GPT-2 byte alphabet as UTF-8, for building the BPE vocabulary. */
static void byte_char(int b, char *out)
{
	int p = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174, cp = b, k = 0;
	if (!p) {
		for (int x = 0; x < b; x++)
			k += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174);
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

static void setup(void)
{
	static char bytes[256][4];
	static const char *const extra[] = { "\xc4\xa0t", "he", "\xc4\xa0the", "in", "\xc4\xa0" "a", "<|im_start|>",
	                                     "<|im_end|>", "<special>" };
	static const char *const merges[] = { "\xc4\xa0 t", "h e", "\xc4\xa0t he", "i n", "\xc4\xa0 a",
	                                      "x y", "\xc4\xa0the re" /* result not a token */ };
	const char *toks[256 + 8];
	int32_t types[256 + 8];
	for (int b = 0; b < 256; b++) {
		byte_char(b, bytes[b]);
		toks[b] = bytes[b];
		types[b] = SKIPPER_TOKEN_NORMAL;
	}
	for (int i = 0; i < 8; i++) {
		toks[256 + i] = extra[i];
		types[256 + i] = i < 5 ? SKIPPER_TOKEN_NORMAL : i < 7 ? SKIPPER_TOKEN_CONTROL : SKIPPER_TOKEN_USER_DEFINED;
	}
	for (int k = 0; k < N_BPE; k++) {
		struct skipper_tokenizer_spec sp = { .model = "gpt2", .pre = bpe_pre[k], .n_vocab = 264, .tokens = toks,
		                                     .types = types, .n_merges = 7, .merges = merges, .bos = 261,
		                                     .eos = 262, .unk = -1, .eot = -1, .eom = -1, .pad = -1,
		                                     .add_bos = 0, .add_eos = 0, .add_space_prefix = -1 };
		CHECK(skipper_tokenizer_from_arrays(&sp, &bpe[k], NULL) == 0);
	}
	static char sbytes[256][8];
	static const char *const pieces[] = { "\xe2\x96\x81", "a", "b", "\xe2\x96\x81" "a", "ab", "<u>", "\xc3\xa9" };
	const char *st[3 + 256 + 7];
	float sc[3 + 256 + 7];
	int32_t sty[3 + 256 + 7];
	st[0] = "<unk>"; st[1] = "<s>"; st[2] = "</s>";
	for (int i = 0; i < 3 + 256 + 7; i++) {
		sty[i] = i == 0 ? SKIPPER_TOKEN_UNKNOWN : i < 3 ? SKIPPER_TOKEN_CONTROL : i < 259 ? SKIPPER_TOKEN_BYTE
		       : i == 264 ? SKIPPER_TOKEN_USER_DEFINED : SKIPPER_TOKEN_NORMAL;
		sc[i] = i >= 259 ? -(float)(i - 258) : 0;
		if (i >= 3 && i < 259) {
			snprintf(sbytes[i - 3], sizeof sbytes[i - 3], "<0x%02X>", i - 3);
			st[i] = sbytes[i - 3];
		} else if (i >= 259) {
			st[i] = pieces[i - 259];
		}
	}
	struct skipper_tokenizer_spec sp = { .model = "llama", .n_vocab = 3 + 256 + 7, .tokens = st, .scores = sc,
	                                     .types = sty, .bos = 1, .eos = 2, .unk = 0, .eot = -1, .eom = -1,
	                                     .pad = -1, .add_bos = 1, .add_eos = 0, .add_space_prefix = 1 };
	CHECK(skipper_tokenizer_from_arrays(&sp, &spm, NULL) == 0);
}

static void run_text(const struct skipper_tokenizer *t, const char *s, size_t n, int special, int roundtrip)
{
	int32_t *ids = NULL;
	size_t n_ids = 0;
	struct skipper_error err;
	if (skipper_tokenize(t, s, n, 1, special, &ids, &n_ids, &err))
		return; /* only out of memory */
	for (size_t i = 0; i < n_ids; i++)
		CHECK(ids[i] >= 0 && ids[i] < skipper_tokenizer_n_vocab(t));
	struct skipper_detok d;
	char chunk[1024];
	skipper_detok_init(&d, t, special);
	for (size_t i = 0; i < n_ids; i++)
		CHECK(valid_utf8((unsigned char *)chunk, skipper_detok_push(&d, ids[i], chunk, sizeof chunk)));
	CHECK(valid_utf8((unsigned char *)chunk, skipper_detok_flush(&d, chunk, sizeof chunk)));
	if (roundtrip && !special && valid_utf8((const unsigned char *)s, n)) {
		char *dec = NULL;
		size_t dl = 0;
		if (skipper_detokenize(t, ids, n_ids, 0, 1, &dec, &dl, &err) == 0)
			CHECK(dl == n && memcmp(dec, s, n) == 0);
		free(dec);
	}
	free(ids);
}

/* Pre-tokenizer words, appended in order; checked against the text. */
struct words {
	char *buf;
	size_t len, cap;
	int pre, n;
};

static int collect(void *ctx, const char *s, size_t len)
{
	struct words *w = ctx;
	CHECK(len > 0);
	if (w->pre == PRE_QWEN2 || w->pre == PRE_SMOLLM) /* \p{N} alone: a digit is a word of its own */
		for (size_t i = 0; i < len; i++)
			CHECK(!(s[i] >= '0' && s[i] <= '9') || len == 1);
	if (w->len + len > w->cap)
		return -1;
	memcpy(w->buf + w->len, s, len);
	w->len += len;
	w->n++;
	return 0;
}

static void run_pretokenize(const char *s, size_t n)
{
	/* the text as the pre-tokenizer sees it: invalid UTF-8 as U+FFFD */
	char *norm = malloc(n * 3 + 1), *got = malloc(n * 3 + 1);
	size_t nl = 0;
	CHECK(norm && got);
	for (size_t pos = 0; pos < n;)
		nl += skipper_utf8_put(skipper_utf8_next(s, n, &pos), norm + nl);
	for (size_t k = 0; k < sizeof all_pre / sizeof all_pre[0]; k++) {
		struct words w = { got, 0, n * 3 + 1, all_pre[k], 0 };
		if (tok_pretokenize(all_pre[k], s, n, collect, &w))
			continue; /* out of memory */
		CHECK(w.len == nl && memcmp(w.buf, norm, nl) == 0);
	}
	free(norm);
	free(got);
}

/* The adapters take a path: each input goes to an in-memory file. */
static int memfile(const uint8_t *data, size_t n, char *path, size_t cap)
{
	int fd = memfd_create("fuzz-tokenizer", 0);
	if (fd < 0)
		abort();
	if (n && write(fd, data, n) != (ssize_t)n)
		abort();
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

static const char probe_text[] = "Hello <|im_start|> w\xc3\xb6rld 123 4567 it's \xf0\x9f\x98\x80\n\t \xe2\x96\x81x";

static void use_tokenizer(const struct skipper_tokenizer *t)
{
	run_text(t, probe_text, sizeof probe_text - 1, 1, 0);
	run_text(t, probe_text, sizeof probe_text - 1, 0, 0);
}

static void run_gguf(const uint8_t *data, size_t n)
{
	char path[64];
	int fd = memfile(data, n, path, sizeof path);
	struct skipper_gguf *g = NULL;
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err;
	if (skipper_gguf_open(path, &g, &err) == 0) {
		if (skipper_tokenizer_from_gguf(g, &t, &err) == 0) {
			use_tokenizer(t);
			skipper_tokenizer_free(t);
		}
		skipper_gguf_close(g);
	}
	close(fd);
}

static void run_json(const uint8_t *data, size_t n)
{
	char path[64];
	int fd = memfile(data, n, path, sizeof path);
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err;
	if (skipper_tokenizer_from_hf(path, NULL, &t, &err) == 0) {
		use_tokenizer(t);
		skipper_tokenizer_free(t);
	} else {
		CHECK(strstr(err.msg, path)); /* every error names the file */
	}
	close(fd);
}

static void run_chat_config(const uint8_t *data, size_t n)
{
	char path[64];
	int fd = memfile(data, n, path, sizeof path);
	char *jinja = skipper_hf_chat_template(path);
	if (jinja) {
		size_t len = strlen(jinja);
		int tmpl = skipper_chat_template_detect(jinja, len);
		char *sys = skipper_chat_default_system(jinja, len), *out = NULL;
		struct skipper_error err;
		CHECK(tmpl >= SKIPPER_CHAT_NONE && tmpl <= SKIPPER_CHAT_ZEPHYR);
		if (skipper_chat_format(tmpl, sys, "Hi there", &out, &err) == 0)
			CHECK(out && strstr(out, "Hi there"));
		free(out);
		free(sys);
		free(jinja);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!spm)
		setup();
	if (!size)
		return 0;
	int mode = data[0] & 15, kind = mode & 7, special = mode >= 8;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	if (mode == 6)
		run_pretokenize(s, n);
	else if (mode == 7)
		run_gguf(data + 1, n);
	else if (mode == 14)
		run_json(data + 1, n);
	else if (mode == 15)
		run_chat_config(data + 1, n);
	else if (kind == 5)
		run_text(spm, s, n, special, 0);
	else
		run_text(bpe[kind], s, n, special, 1);
	return 0;
}

#ifndef SKIPPER_LIBFUZZER
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static uint8_t buf[1 << 20];

static size_t slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	return n;
}

/* Every file of dir through the target; the count, -1 if dir is unreadable. */
static int replay_dir(const char *dir)
{
	struct dirent **names;
	int k = scandir(dir, &names, NULL, alphasort), n = 0;
	char path[4096];
	if (k < 0)
		return -1;
	for (int j = 0; j < k; j++) {
		if (names[j]->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, names[j]->d_name);
			size_t len = slurp(path);
			uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees reads past the end */
			memcpy(copy, buf, len);
			LLVMFuzzerTestOneInput(copy, len);
			free(copy);
			n++;
		}
		free(names[j]);
	}
	free(names);
	return n;
}

/* A small tokenizer GGUF file: byte-level BPE with pre-tokenizer pre, or
 * (pre NULL) SentencePiece. */
static void tokenizer_gguf(const char *pre, uint8_t **file, size_t *len)
{
	static const char *const toks[] = { "a", "b", "ab", "\xc4\xa0", "<|im_start|>", "<0x41>", "\xe2\x96\x81", "1" };
	static const char *const merges[] = { "a b", "\xc4\xa0 a", "ab ab" };
	const int32_t types[] = { 1, 1, 1, 1, 3, 6, 1, 1 };
	const float scores[] = { -1, -2, -3, -4, 0, 0, -5, -6 };
	struct gw *w = gw_new();
	gw_str(w, "tokenizer.ggml.model", pre ? "gpt2" : "llama");
	if (pre)
		gw_str(w, "tokenizer.ggml.pre", pre);
	gw_arr_str(w, "tokenizer.ggml.tokens", toks, 8);
	gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 8);
	gw_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, 8);
	gw_arr_str(w, "tokenizer.ggml.merges", merges, 3);
	gw_u32(w, "tokenizer.ggml.bos_token_id", 4);
	gw_u32(w, "tokenizer.ggml.eos_token_id", 4);
	gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
	gw_build(w, file, len);
	gw_free(w);
}

static const char *const gguf_pre[] = { "smollm", "qwen2", NULL };
enum { N_GGUF = 3 };

/* --write-seeds DIR: the GGUF seeds of tests/fuzz/seeds/tokenizer/ (the
 * text and JSON seeds there are written by hand). */
static int write_seeds(const char *dir)
{
	for (int k = 0; k < N_GGUF; k++) {
		char path[4096];
		uint8_t *file;
		size_t len;
		tokenizer_gguf(gguf_pre[k], &file, &len);
		snprintf(path, sizeof path, "%s/gguf-%s", dir, gguf_pre[k] ? gguf_pre[k] : "spm");
		FILE *f = fopen(path, "wb");
		if (!f || fputc('7', f) == EOF || fwrite(file, 1, len, f) != len || fclose(f) != 0) {
			fprintf(stderr, "fuzz-tokenizer: cannot write %s\n", path);
			return 1;
		}
		free(file);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0)
		return write_seeds(argv[2]);
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			size_t n = slurp(argv[i]);
			uint8_t *copy = malloc(n ? n : 1);
			memcpy(copy, buf, n);
			LLVMFuzzerTestOneInput(copy, n);
			free(copy);
		}
		return 0;
	}
	printf("1..3\n");
	int seeds = replay_dir(FUZZ_SEED_DIR);
	if (seeds > 0)
		printf("ok 1 - %d seeds of %s\n", seeds, FUZZ_SEED_DIR);
	else
		printf("not ok 1 - no seeds in %s\n", FUZZ_SEED_DIR);

	/* Seeded campaign: fragments that exercise the interesting paths,
	 * glued with random bytes, through every text mode. */
	static const char *const frags[] = { " ", "  ", "\n", "\r\n", "\t", "the", " the", "'s", "'LL", "123",
	                                     "4567", "<|im_start|>", "<|im_end|>", "<special>", "<u>", "<s>",
	                                     "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xe2\x96\x81", "ab",
	                                     "xy", "!!", "\xc2\xa0", "\xe3\x80\x80", "\xff", "\xc3", "\xed\xa0\x80",
	                                     "\xd9\xa3", "\xc2\xb2", "$+", "...", "'re" };
	static const uint8_t text_modes[] = { 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13 };
	int runs = 30000;
	for (int r = 0; r < runs; r++) {
		size_t n = 1;
		buf[0] = text_modes[rnd(sizeof text_modes)];
		int parts = (int)rnd(40);
		for (int p = 0; p < parts && n < sizeof buf - 16; p++) {
			if (rnd(4) == 0) {
				buf[n++] = (uint8_t)rnd(256);
			} else {
				const char *f = frags[rnd(sizeof frags / sizeof frags[0])];
				memcpy(buf + n, f, strlen(f));
				n += strlen(f);
			}
		}
		LLVMFuzzerTestOneInput(buf, n);
	}
	printf("ok 2 - %d random inputs through 6 tokenizers and 5 pre-tokenizers: ids in range, streams valid "
	       "UTF-8, BPE round trips, words cover the text\n", runs);

	/* GGUF adapter: valid tokenizer files, then truncations and random
	 * byte changes of them. */
	int loaded = 0;
	for (int k = 0; k < N_GGUF; k++) {
		uint8_t *file;
		size_t len;
		tokenizer_gguf(gguf_pre[k], &file, &len);
		if (len + 1 > sizeof buf)
			return 1;
		buf[0] = 7;
		memcpy(buf + 1, file, len);
		LLVMFuzzerTestOneInput(buf, len + 1);
		{
			/* the unmodified file must load */
			char path[64];
			int fd = memfile(file, len, path, sizeof path);
			struct skipper_gguf *g = NULL;
			struct skipper_tokenizer *t = NULL;
			struct skipper_error err;
			if (skipper_gguf_open(path, &g, &err) == 0 && skipper_tokenizer_from_gguf(g, &t, &err) == 0)
				loaded++;
			skipper_tokenizer_free(t);
			skipper_gguf_close(g);
			close(fd);
		}
		for (size_t cut = 0; cut < len; cut += 1 + cut / 8)
			LLVMFuzzerTestOneInput(buf, cut + 1);
		for (int r = 0; r < 1500; r++) {
			memcpy(buf + 1, file, len);
			for (int c = 1 + (int)rnd(3); c > 0; c--)
				buf[1 + rnd((uint32_t)len)] = (uint8_t)(rnd(2) ? rnd(256) : 0xff);
			LLVMFuzzerTestOneInput(buf, len + 1);
		}
		free(file);
	}
	if (loaded == N_GGUF)
		printf("ok 3 - tokenizer GGUF files (BPE smollm, BPE qwen2, SPM): valid ones load, truncations and "
		       "byte changes are safe\n");
	else
		printf("not ok 3 - the unmodified tokenizer GGUF files did not load (%d of %d)\n", loaded, N_GGUF);
	return loaded == N_GGUF && seeds > 0 ? 0 : 1;
}
#endif
