/* Token -> text: single pieces, whole sequences, and the streaming
 * detokenizer that only ever hands out complete, valid UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tokenizer_impl.h"
#include "unicode.h"

/* Writes min(len, cap) bytes (NUL-terminated when len < cap) and returns
 * the piece's full length, so a caller can retry with a bigger buffer. */
size_t skipper_token_piece(const struct skipper_tokenizer *t, int32_t id, int render_special, char *buf,
                           size_t cap)
{
	if (id < 0 || id >= t->n_vocab)
		return 0;
	size_t len, n = 0;
	const char *s = tok_text(t, id, &len);
	int ty = t->types[id];
#define PUT(c) do { if (n < cap) buf[n] = (char)(c); n++; } while (0)
	switch (ty) {
	case SKIPPER_TOKEN_CONTROL:
	case SKIPPER_TOKEN_UNKNOWN:
		if (!render_special)
			break;
		/* fall through */
	case SKIPPER_TOKEN_USER_DEFINED:
		for (size_t i = 0; i < len; i++)
			PUT(s[i]);
		break;
	case SKIPPER_TOKEN_BYTE:
		/* "<0xNN>" */
		if (len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>')
			PUT(strtol(s + 3, NULL, 16));
		break;
	case SKIPPER_TOKEN_NORMAL:
		if (t->kind == TOK_BPE) {
			for (size_t pos = 0; pos < len;) {
				size_t at = pos;
				uint32_t cp = skipper_utf8_next(s, len, &pos);
				if (cp < 324 && t->cp_byte[cp] >= 0) {
					PUT(t->cp_byte[cp]);
				} else {
					/* not from the byte alphabet: keep it verbatim */
					for (; at < pos; at++)
						PUT(s[at]);
				}
			}
		} else {
			for (size_t i = 0; i < len; i++) {
				if (i + 3 <= len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
					PUT(' ');
					i += 2;
				} else {
					PUT(s[i]);
				}
			}
		}
		break;
	default: /* unused: printed like a control token that is not rendered */
		break;
	}
#undef PUT
	if (n < cap)
		buf[n] = 0;
	return n;
}

int skipper_detokenize(const struct skipper_tokenizer *t, const int32_t *ids, size_t n, int render_special,
                       int strip_space_prefix, char **out, size_t *out_len, struct skipper_error *err)
{
	size_t total = 0, cap = 64, first = 1;
	char *buf = malloc(cap);
	if (!buf)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "detokenize: out of memory");
	for (size_t i = 0; i < n; i++) {
		size_t len = skipper_token_piece(t, ids[i], render_special, NULL, 0);
		if (total + len + 1 > cap) {
			while (total + len + 1 > cap)
				cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return skipper_fail(err, SKIPPER_ERR_NOMEM, "detokenize: out of memory");
			}
			buf = nb;
		}
		skipper_token_piece(t, ids[i], render_special, buf + total, len + 1);
		/* The space SentencePiece put before the first word is not part
		 * of the text (BOS before it does not count as a word). */
		if (first && len && ids[i] != t->bos) {
			if (strip_space_prefix && t->kind == TOK_SPM && t->add_space_prefix && buf[total] == ' ') {
				memmove(buf + total, buf + total + 1, len - 1);
				len--;
			}
			first = 0;
		}
		total += len;
	}
	buf[total] = 0;
	*out = buf;
	if (out_len)
		*out_len = total;
	return SKIPPER_OK;
}

void skipper_detok_init(struct skipper_detok *d, const struct skipper_tokenizer *t, int render_special)
{
	memset(d, 0, sizeof *d);
	d->t = t;
	d->render_special = render_special;
}

/* Length of the complete valid UTF-8 sequence at s (n bytes available):
 * > 0 complete, 0 a valid but unfinished prefix, -1 invalid first byte(s). */
static int utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	int len;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c < 0x80)
		return 1;
	if (c < 0xc2)
		return -1;
	if (c < 0xe0) {
		len = 2;
	} else if (c < 0xf0) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlongs */
		if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c < 0xf5) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else {
		return -1;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return 0;
		unsigned lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xbf;
		if (s[i] < lo_i || s[i] > hi_i)
			return -1;
	}
	return len;
}

/* Move complete characters of in[0..n) to buf; returns bytes written and
 * leaves an unfinished tail in d->pending (unless final). Text that does
 * not fit in cap is cut at a character boundary and dropped: with cap >= 256
 * that needs a single token longer than ~250 bytes. */
static size_t drain(struct skipper_detok *d, const unsigned char *in, size_t n, int final, char *buf, size_t cap)
{
	size_t w = 0, i = 0;
	int full = 0;
	d->n_pending = 0;
	while (i < n) {
		int l = utf8_seq(in + i, n - i);
		if (l == 0 && !final) {
			memcpy(d->pending, in + i, n - i); /* < 4 bytes */
			d->n_pending = n - i;
			break;
		}
		/* invalid, or unfinished at the end: one U+FFFD per byte */
		const unsigned char *src = l > 0 ? in + i : (const unsigned char *)"\xef\xbf\xbd";
		size_t out = l > 0 ? (size_t)l : 3;
		if (!full && w + out <= cap) {
			memcpy(buf + w, src, out);
			w += out;
		} else {
			full = 1;
		}
		i += l > 0 ? (size_t)l : 1;
	}
	return w;
}

size_t skipper_detok_push(struct skipper_detok *d, int32_t id, char *buf, size_t cap)
{
	unsigned char local[512], *tmp = local;
	size_t len = skipper_token_piece(d->t, id, d->render_special, NULL, 0);
	size_t n = d->n_pending + len;
	if (n > sizeof local && !(tmp = malloc(n)))
		return 0;
	memcpy(tmp, d->pending, d->n_pending);
	if (len) {
		/* token_piece NUL-terminates only when there is room; give it one
		 * more byte than the piece when writing to the heap copy */
		char piece[257], *p = len < sizeof piece ? piece : malloc(len + 1);
		if (!p) {
			if (tmp != local)
				free(tmp);
			return 0;
		}
		skipper_token_piece(d->t, id, d->render_special, p, len + 1);
		memcpy(tmp + d->n_pending, p, len);
		if (p != piece)
			free(p);
	}
	size_t w = drain(d, tmp, n, 0, buf, cap);
	if (tmp != local)
		free(tmp);
	return w;
}

size_t skipper_detok_flush(struct skipper_detok *d, char *buf, size_t cap)
{
	unsigned char tmp[8];
	size_t n = d->n_pending;
	memcpy(tmp, d->pending, n);
	return drain(d, tmp, n, 1, buf, cap);
}
