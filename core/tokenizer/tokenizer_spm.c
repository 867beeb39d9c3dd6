/* SentencePiece-style BPE (Llama-2 "llama" vocabularies): spaces become
 * U+2581, the text starts as one symbol per UTF-8 character, and adjacent
 * symbols whose concatenation is a token merge highest score first (leftmost
 * on ties). Characters left without a token fall back to <0xNN> tokens. */
#include <stdlib.h>
#include <string.h>

#include "tok_heap.h"
#include "tokenizer_impl.h"
#include "unicode.h"

struct ssym { int32_t prev, next; size_t off, len; };
struct bigram { float score; int32_t left, right; size_t size; };

struct spm_ctx {
	const struct skipper_tokenizer *t;
	const char *s;
	struct ssym *syms;
	struct tok_heap heap; /* of struct bigram */
};

static int big_first(const void *a, const void *b)
{
	const struct bigram *x = a, *y = b;
	return x->score > y->score || (x->score == y->score && x->left < y->left);
}

static int try_bigram(struct spm_ctx *c, int32_t l, int32_t r)
{
	if (l < 0 || r < 0)
		return 0;
	size_t size = c->syms[l].len + c->syms[r].len;
	int32_t id = tok_lookup(c->t, c->s + c->syms[l].off, size);
	if (id < 0 || id >= c->t->n_vocab)
		return 0;
	struct bigram b = { c->t->scores[id], l, r, size };
	return tok_heap_push(&c->heap, &b);
}

int tok_spm_encode(const struct skipper_tokenizer *t, const char *text, size_t len, struct tok_ids *out)
{
	/* ' ' -> U+2581 "▁" (3 bytes) */
	size_t n_sp = 0;
	for (size_t i = 0; i < len; i++)
		n_sp += text[i] == ' ';
	size_t blen = len + 2 * n_sp;
	char *buf = malloc(blen + 1);
	struct spm_ctx c = { t, buf, malloc((blen + 1) * sizeof *c.syms), { 0 } };
	int rc = -1;
	tok_heap_init(&c.heap, sizeof(struct bigram), big_first);
	if (!buf || !c.syms)
		goto out;
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(buf + k, "\xe2\x96\x81", 3);
			k += 3;
		} else {
			buf[k++] = text[i];
		}
	}
	int32_t n = 0;
	for (size_t off = 0; off < blen; n++) {
		size_t l = skipper_utf8_len1((unsigned char)buf[off]);
		if (l > blen - off)
			l = blen - off;
		c.syms[n] = (struct ssym){ n - 1, -1, off, l };
		if (n)
			c.syms[n - 1].next = n;
		off += l;
	}
	for (int32_t i = 0; i + 1 < n; i++)
		if (try_bigram(&c, i, i + 1))
			goto out;
	while (c.heap.n) {
		struct bigram b;
		tok_heap_pop(&c.heap, &b);
		struct ssym *l = &c.syms[b.left], *r = &c.syms[b.right];
		if (!l->len || !r->len || l->len + r->len != b.size || l->next != b.right)
			continue; /* stale */
		l->len += r->len;
		l->next = r->next;
		if (r->next >= 0)
			c.syms[r->next].prev = b.left;
		r->len = 0;
		if (try_bigram(&c, l->prev, b.left) || try_bigram(&c, b.left, l->next))
			goto out;
	}
	for (int32_t i = n ? 0 : -1; i >= 0; i = c.syms[i].next) {
		int32_t id = tok_lookup(t, buf + c.syms[i].off, c.syms[i].len);
		if (id >= 0 && id < t->n_vocab) {
			if (tok_ids_push(out, id))
				goto out;
			continue;
		}
		for (size_t j = 0; j < c.syms[i].len; j++) {
			int32_t b = t->byte_piece[(unsigned char)buf[c.syms[i].off + j]];
			if (b >= 0 && tok_ids_push(out, b))
				goto out;
		}
	}
	rc = 0;
out:
	free(buf);
	free(c.syms);
	tok_heap_free(&c.heap);
	return rc;
}
