/* Pre-tokenizers: split text into words before BPE, reproducing the regex
 * cascades llama.cpp uses for each tokenizer.ggml.pre. The patterns are
 * hand-coded scanners over code points (no regex engine); each stage
 * splits the ranges left by the previous one, and text a pattern does not
 * match stays as a word of its own, as in llama.cpp. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "unicode.h"

struct span { size_t a, b; }; /* code point indices [a, b) */

struct spans { struct span *v; size_t n, cap; };

struct text {
	const uint32_t *cp;
	const uint8_t *cls; /* skipper_ucls per code point */
	const uint8_t *ws;  /* White_Space per code point */
};

static int push(struct spans *s, size_t a, size_t b)
{
	if (a >= b)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct span *v = realloc(s->v, cap * sizeof *v);
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct span){ a, b };
	return 0;
}

/* Classes at i, "out of range" beyond the span end: a pattern never looks
 * past the range it was given. */
#define IS_L(i) ((i) < end && T->cls[i] == UCLS_L)
#define IS_N(i) ((i) < end && T->cls[i] == UCLS_N)
#define IS_WS(i) ((i) < end && T->ws[i])
#define IS_OTHER(i) ((i) < end && !T->ws[i] && T->cls[i] != UCLS_L && T->cls[i] != UCLS_N)
#define CP(i) ((i) < end ? T->cp[i] : 0xFFFFFFFFu)

static size_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive: length or 0. */
static size_t contraction(const struct text *T, size_t pos, size_t end, int icase)
{
	if (CP(pos) != '\'' || pos + 1 >= end)
		return 0;
	uint32_t c1 = CP(pos + 1), c2 = CP(pos + 2);
	if (icase) {
		c1 = (uint32_t)ascii_lower(c1);
		c2 = (uint32_t)ascii_lower(c2);
	}
	if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
		return 2;
	if (pos + 2 < end && ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')))
		return 3;
	return 0;
}

/* Whitespace run at pos: \s+(?!\S) leaves the last space to the next word
 * when a non-space follows; else \s+ takes it all. */
static size_t ws_run(const struct text *T, size_t pos, size_t end)
{
	size_t n = 0;
	while (IS_WS(pos + n))
		n++;
	if (n > 1 && pos + n < end)
		return n - 1;
	return n;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static int split_gpt2(const struct text *T, size_t pos, size_t end, struct spans *out)
{
	while (pos < end) {
		size_t start = pos, n;
		if ((n = contraction(T, pos, end, 0))) {
			pos += n;
		} else {
			size_t q = pos + (CP(pos) == ' ' && pos + 1 < end);
			if (IS_L(q)) {
				for (pos = q; IS_L(pos); pos++)
					;
			} else if (IS_N(q)) {
				for (pos = q; IS_N(pos); pos++)
					;
			} else if (IS_OTHER(q)) {
				for (pos = q; IS_OTHER(pos); pos++)
					;
			} else if ((n = ws_run(T, pos, end))) {
				pos += n;
			} else {
				pos++;
			}
		}
		if (push(out, start, pos))
			return -1;
	}
	return 0;
}

/* Llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *          ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Qwen2 is the same with \p{N} (one digit per word): max_digits 1. */
static int split_llama3(const struct text *T, size_t pos, size_t end, size_t max_digits, struct spans *out)
{
	while (pos < end) {
		size_t start = pos, n;
		uint32_t c = CP(pos);
		if ((n = contraction(T, pos, end, 1))) {
			pos += n;
		} else if (c != '\r' && c != '\n' && !IS_N(pos) && (IS_L(pos) || IS_L(pos + 1))) {
			for (pos++; IS_L(pos); pos++)
				;
		} else if (IS_N(pos)) {
			while (IS_N(pos)) { /* groups of at most max_digits */
				size_t s = pos;
				while (IS_N(pos) && pos - s < max_digits)
					pos++;
				if (push(out, s, pos))
					return -1;
			}
			start = pos;
		} else if (IS_OTHER(c == ' ' ? pos + 1 : pos)) {
			for (pos += c == ' '; IS_OTHER(pos); pos++)
				;
			while (CP(pos) == '\r' || CP(pos) == '\n')
				pos++;
		} else {
			size_t k = 0, last_nl = 0;
			while (IS_WS(pos + k)) {
				if (CP(pos + k) == '\r' || CP(pos + k) == '\n')
					last_nl = pos + k + 1;
				k++;
			}
			if (last_nl)
				pos = last_nl;
			else if ((n = ws_run(T, pos, end)))
				pos += n;
			else
				pos++;
		}
		if (push(out, start, pos))
			return -1;
	}
	return 0;
}

/* A pattern run through std::regex in llama.cpp: matches and the text
 * between them both become words. match(T, pos, end) gives the length of a
 * match at pos or 0. */
typedef size_t (*matcher)(const struct text *T, size_t pos, size_t end);

static int split_matches(const struct text *T, size_t pos, size_t end, matcher m, struct spans *out)
{
	size_t gap = pos;
	while (pos < end) {
		size_t n = m(T, pos, end);
		if (!n) {
			pos++;
			continue;
		}
		if (push(out, gap, pos) || push(out, pos, pos + n))
			return -1;
		pos += n;
		gap = pos;
	}
	return push(out, gap, end);
}

static size_t m_one_number(const struct text *T, size_t pos, size_t end) { return IS_N(pos); }

static size_t m_numbers(const struct text *T, size_t pos, size_t end)
{
	size_t n = 0;
	while (IS_N(pos + n))
		n++;
	return n;
}

static size_t m_three_digits(const struct text *T, size_t pos, size_t end)
{
	for (size_t i = 0; i < 3; i++)
		if (CP(pos + i) < '0' || CP(pos + i) > '9')
			return 0;
	return 3;
}

/* [\p{P}\$\+<=>\^~\|]+ */
static size_t m_punct(const struct text *T, size_t pos, size_t end)
{
	size_t n = 0;
	for (;; n++) {
		uint32_t c = CP(pos + n);
		if (pos + n >= end)
			break;
		if (T->cls[pos + n] != UCLS_P && !(c < 128 && strchr("$+<=>^~|", (int)c) && c))
			break;
	}
	return n;
}

enum stage { ST_GPT2, ST_LLAMA3, ST_QWEN2, ST_ONE_NUMBER, ST_NUMBERS, ST_THREE_DIGITS, ST_PUNCT };

static int run_stage(const struct text *T, int st, const struct spans *in, struct spans *out)
{
	for (size_t i = 0; i < in->n; i++) {
		size_t a = in->v[i].a, b = in->v[i].b;
		int rc;
		switch (st) {
		case ST_GPT2: rc = split_gpt2(T, a, b, out); break;
		case ST_LLAMA3: rc = split_llama3(T, a, b, 3, out); break;
		case ST_QWEN2: rc = split_llama3(T, a, b, 1, out); break;
		case ST_ONE_NUMBER: rc = split_matches(T, a, b, m_one_number, out); break;
		case ST_NUMBERS: rc = split_matches(T, a, b, m_numbers, out); break;
		case ST_THREE_DIGITS: rc = split_matches(T, a, b, m_three_digits, out); break;
		default: rc = split_matches(T, a, b, m_punct, out); break;
		}
		if (rc)
			return -1;
	}
	return 0;
}

int tok_pretokenize(int pre, const char *text, size_t len, tok_word_fn fn, void *ctx)
{
	static const int st_default[] = { ST_PUNCT, ST_GPT2, ST_NUMBERS, ST_THREE_DIGITS, -1 };
	static const int st_gpt2[] = { ST_GPT2, -1 };
	static const int st_smollm[] = { ST_ONE_NUMBER, ST_GPT2, -1 };
	static const int st_llama3[] = { ST_LLAMA3, -1 };
	static const int st_qwen2[] = { ST_QWEN2, -1 };
	const int *stages = pre == PRE_GPT2 ? st_gpt2 : pre == PRE_SMOLLM ? st_smollm
	                  : pre == PRE_LLAMA3 ? st_llama3 : pre == PRE_QWEN2 ? st_qwen2 : st_default;
	int rc = -1;
	if (!len)
		return 0;

	/* Decode once; invalid bytes become U+FFFD and the words are cut from
	 * the re-encoded text, which is what llama.cpp feeds to BPE. */
	uint32_t *cp = malloc(len * sizeof *cp);
	uint8_t *cls = malloc(len), *ws = malloc(len);
	size_t *off = malloc((len + 1) * sizeof *off);
	char *norm = malloc(len * 3 + 1);
	struct spans a = { 0 }, b = { 0 };
	if (!cp || !cls || !ws || !off || !norm)
		goto out;
	size_t n = 0, nb = 0;
	for (size_t pos = 0; pos < len; n++) {
		cp[n] = skipper_utf8_next(text, len, &pos);
		cls[n] = (uint8_t)skipper_ucls(cp[n]);
		ws[n] = (uint8_t)skipper_uspace(cp[n]);
		off[n] = nb;
		nb += skipper_utf8_put(cp[n], norm + nb);
	}
	off[n] = nb;
	struct text T = { cp, cls, ws };
	if (push(&a, 0, n))
		goto out;
	for (const int *st = stages; *st >= 0; st++) {
		b.n = 0;
		if (run_stage(&T, *st, &a, &b))
			goto out;
		struct spans tmp = a;
		a = b;
		b = tmp;
	}
	for (size_t i = 0; i < a.n; i++)
		if ((rc = fn(ctx, norm + off[a.v[i].a], off[a.v[i].b] - off[a.v[i].a])))
			goto out;
	rc = 0;
out:
	free(cp);
	free(cls);
	free(ws);
	free(off);
	free(norm);
	free(a.v);
	free(b.v);
	return rc;
}
