/* Fuzz target for the tokenizers and the GGUF tokenizer adapter.
 *
 * Input: first byte selects the mode, the rest is the payload.
 *   mode & 3 == 0..2: payload is text, tokenized by a small byte-level BPE
 *     (mode 0: gpt2, 1: llama3, 2: smollm pre-tokenizer) built from arrays;
 *   mode & 3 == 3: payload is text for a small SentencePiece vocabulary;
 *   mode & 4: parse special tokens. mode & 8: payload is a GGUF file whose
 *     tokenizer is loaded (and, if it loads, used on a fixed text).
 * Invariants checked (abort on violation, so libFuzzer and ASan report it):
 * ids in range; streamed output is valid UTF-8; valid UTF-8 input without
 * special tokens round-trips through byte-level BPE.
 *
 * libFuzzer build (from the source tree, after ./configure && make):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DSKIPPER_LIBFUZZER -Icore -I. \
 *     tests/fuzz-tokenizer.c core/tokenizer*.c core/tokenizer/pretokenize.c core/tokenizer/detok.c core/tokenizer/chat.c \
 *     core/unicode*.c core/model/gguf.c core/model/quant.c core/error.c -lm -o fuzz-tokenizer
 * Without -DSKIPPER_LIBFUZZER, main() runs each file named on the command
 * line, or with no arguments a seeded random campaign (used by make check). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"
#ifndef SKIPPER_LIBFUZZER
#include "gguf-writer.h"
#endif

static struct skipper_tokenizer *bpe[3], *spm;

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
	static const char *const pres[3] = { "gpt2", "llama3", "smollm" };
	for (int k = 0; k < 3; k++) {
		struct skipper_tokenizer_spec sp = { .model = "gpt2", .pre = pres[k], .n_vocab = 264, .tokens = toks,
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

static void run_gguf(const uint8_t *data, size_t n)
{
	char path[256];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/skipper-fuzz-tokenizer-%ld.gguf", tmp && *tmp ? tmp : "/tmp", (long)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(data, 1, n, f);
	fclose(f);
	struct skipper_gguf *g = NULL;
	struct skipper_tokenizer *t = NULL;
	struct skipper_error err;
	if (skipper_gguf_open(path, &g, &err) == 0) {
		if (skipper_tokenizer_from_gguf(g, &t, &err) == 0) {
			static const char text[] = "Hello <|im_start|> w\xc3\xb6rld 123 \xf0\x9f\x98\x80\n";
			run_text(t, text, sizeof text - 1, 1, 0);
			run_text(t, text, sizeof text - 1, 0, 0);
			skipper_tokenizer_free(t);
		}
		skipper_gguf_close(g);
	}
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!spm)
		setup();
	if (!size)
		return 0;
	int mode = data[0];
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	if (mode & 8)
		run_gguf(data + 1, n);
	else if ((mode & 3) == 3)
		run_text(spm, s, n, !!(mode & 4), 0);
	else
		run_text(bpe[mode & 3], s, n, !!(mode & 4), 1);
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

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			FILE *f = fopen(argv[i], "rb");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof buf, f);
			fclose(f);
			LLVMFuzzerTestOneInput(buf, n);
		}
		return 0;
	}
	/* Seeded campaign: fragments that exercise the interesting paths,
	 * glued with random bytes. */
	static const char *const frags[] = { " ", "  ", "\n", "\r\n", "\t", "the", " the", "'s", "'LL", "123",
	                                     "4567", "<|im_start|>", "<|im_end|>", "<special>", "<u>", "<s>",
	                                     "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xe2\x96\x81", "ab",
	                                     "xy", "!!", "\xc2\xa0", "\xe3\x80\x80", "\xff", "\xc3", "\xed\xa0\x80" };
	int runs = 20000;
	printf("1..2\n");
	for (int r = 0; r < runs; r++) {
		size_t n = 1;
		buf[0] = (uint8_t)rnd(8);
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
	printf("ok 1 - %d random inputs through 4 tokenizers: ids in range, streams valid UTF-8, BPE round trips\n",
	       runs);

	/* GGUF adapter: a valid tokenizer file, then truncations and random
	 * byte changes of it. */
	static const char *const toks[] = { "a", "b", "ab", "\xc4\xa0", "<|im_start|>", "<0x41>", "\xe2\x96\x81" };
	static const char *const merges[] = { "a b", "\xc4\xa0 a", "ab ab" };
	const int32_t types[] = { 1, 1, 1, 1, 3, 6, 1 };
	const float scores[] = { -1, -2, -3, -4, 0, 0, -5 };
	int loaded = 0;
	for (int model = 0; model < 2; model++) {
		struct gw *w = gw_new();
		gw_str(w, "tokenizer.ggml.model", model ? "llama" : "gpt2");
		gw_str(w, "tokenizer.ggml.pre", "smollm");
		gw_arr_str(w, "tokenizer.ggml.tokens", toks, 7);
		gw_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 7);
		gw_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, 7);
		gw_arr_str(w, "tokenizer.ggml.merges", merges, 3);
		gw_u32(w, "tokenizer.ggml.bos_token_id", 4);
		gw_u32(w, "tokenizer.ggml.eos_token_id", 4);
		gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
		uint8_t *file;
		size_t len;
		gw_build(w, &file, &len);
		gw_free(w);
		if (len + 1 > sizeof buf)
			return 1;
		buf[0] = 8;
		memcpy(buf + 1, file, len);
		LLVMFuzzerTestOneInput(buf, len + 1);
		{
			/* the unmodified file must load */
			char path[256];
			const char *tmp = getenv("TMPDIR");
			snprintf(path, sizeof path, "%s/skipper-fuzz-tokenizer-ok-%ld.gguf", tmp && *tmp ? tmp : "/tmp",
			         (long)getpid());
			FILE *f = fopen(path, "wb");
			struct skipper_gguf *g = NULL;
			struct skipper_tokenizer *t = NULL;
			struct skipper_error err;
			if (f) {
				fwrite(file, 1, len, f);
				fclose(f);
				if (skipper_gguf_open(path, &g, &err) == 0 && skipper_tokenizer_from_gguf(g, &t, &err) == 0)
					loaded++;
				skipper_tokenizer_free(t);
				skipper_gguf_close(g);
				unlink(path);
			}
		}
		for (size_t cut = 0; cut < len; cut += 1 + cut / 8)
			LLVMFuzzerTestOneInput(buf, cut + 1);
		for (int r = 0; r < 1500; r++) {
			memcpy(buf + 1, file, len);
			for (int k = 1 + (int)rnd(3); k > 0; k--)
				buf[1 + rnd((uint32_t)len)] = (uint8_t)(rnd(2) ? rnd(256) : 0xff);
			LLVMFuzzerTestOneInput(buf, len + 1);
		}
		free(file);
	}
	if (loaded == 2)
		printf("ok 2 - tokenizer GGUF files (BPE, SPM): valid ones load, truncations and byte changes are safe\n");
	else
		printf("not ok 2 - the unmodified tokenizer GGUF files did not load (%d of 2)\n", loaded);
	return loaded == 2 ? 0 : 1;
}
#endif
