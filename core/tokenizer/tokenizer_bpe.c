/* Byte-level BPE (GPT-2 family): pre-tokenize, map each byte of a word to
 * its printable code point, then apply merges lowest rank first (leftmost
 * on ties), as llama.cpp and Hugging Face tokenizers do. Merges are looked
 * up by (left id, right id) in a hash table built at load. */
#include <stdlib.h>
#include <string.h>

#include "tok_heap.h"
#include "tokenizer_impl.h"

struct sym { int32_t id; int32_t prev, next; uint32_t off, len; /* bytes of the word */ };

struct pair { int32_t rank, left, right, lid, rid; };

struct bpe_ctx {
	const struct skipper_tokenizer *t;
	struct tok_ids *out;
	struct sym *syms;
	struct tok_heap heap; /* of struct pair */
	size_t cap;
	char *mapped;
};

static int pair_first(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

static int try_pair(struct bpe_ctx *c, int32_t l, int32_t r)
{
	int32_t rank, res;
	if (l < 0 || r < 0 || !tok_merge_find(c->t, c->syms[l].id, c->syms[r].id, &rank, &res))
		return 0;
	struct pair p = { rank, l, r, c->syms[l].id, c->syms[r].id };
	return tok_heap_push(&c->heap, &p);
}

static int emit_symbol(struct bpe_ctx *c, const unsigned char *w, const struct sym *s)
{
	const struct skipper_tokenizer *t = c->t;
	if (s->id < t->n_vocab)
		return tok_ids_push(c->out, s->id);
	/* Not a token (the vocabulary lacks some byte images or a merge
	 * result): llama.cpp then emits whichever single bytes of its text
	 * are tokens and drops the rest. */
	for (uint32_t i = 0; i < s->len; i++) {
		uint8_t b = w[s->off + i];
		for (int k = 0; k < t->byte_utf8_len[b]; k++) {
			int32_t id = tok_lookup(t, &t->byte_utf8[b][k], 1);
			if (id >= 0 && id < t->n_vocab && tok_ids_push(c->out, id))
				return -1;
		}
	}
	return 0;
}

static int encode_word(void *ctx, const char *word, size_t len)
{
	struct bpe_ctx *c = ctx;
	const struct skipper_tokenizer *t = c->t;
	const unsigned char *w = (const unsigned char *)word;

	if (t->ignore_merges) {
		/* Llama-3: a word that is a token as a whole is taken as is. */
		size_t n = 0;
		for (size_t i = 0; i < len; i++) {
			memcpy(c->mapped + n, t->byte_utf8[w[i]], t->byte_utf8_len[w[i]]);
			n += t->byte_utf8_len[w[i]];
		}
		int32_t id = tok_lookup(t, c->mapped, n);
		if (id >= 0 && id < t->n_vocab)
			return tok_ids_push(c->out, id);
	}
	for (size_t i = 0; i < len; i++)
		c->syms[i] = (struct sym){ t->byte_piece[w[i]], (int32_t)i - 1,
		                           i + 1 < len ? (int32_t)i + 1 : -1, (uint32_t)i, 1 };
	c->heap.n = 0;
	for (size_t i = 0; i + 1 < len; i++)
		if (try_pair(c, (int32_t)i, (int32_t)i + 1))
			return -1;
	while (c->heap.n) {
		struct pair p;
		tok_heap_pop(&c->heap, &p);
		struct sym *l = &c->syms[p.left], *r = &c->syms[p.right];
		/* stale: one side was merged since this pair was queued */
		if (!l->len || !r->len || l->next != p.right || l->id != p.lid || r->id != p.rid)
			continue;
		int32_t rank, res;
		tok_merge_find(t, l->id, r->id, &rank, &res);
		l->id = res;
		l->len += r->len;
		l->next = r->next;
		if (r->next >= 0)
			c->syms[r->next].prev = p.left;
		r->len = 0;
		if (try_pair(c, l->prev, p.left) || try_pair(c, p.left, l->next))
			return -1;
	}
	for (int32_t i = 0; i >= 0 && len; i = c->syms[i].next)
		if (emit_symbol(c, w, &c->syms[i]))
			return -1;
	return 0;
}

int tok_bpe_encode(const struct skipper_tokenizer *t, const char *text, size_t len, struct tok_ids *out)
{
	/* Words are at most as long as the (re-encoded) fragment: U+FFFD
	 * replacements can triple invalid bytes. */
	size_t cap = len * 3 + 1;
	struct bpe_ctx c = { t, out, malloc(cap * sizeof *c.syms), { 0 }, cap, malloc(cap * 2 + 1) };
	int rc = -1;
	tok_heap_init(&c.heap, sizeof(struct pair), pair_first);
	if (c.syms && c.mapped)
		rc = tok_pretokenize(t->pre, text, len, encode_word, &c);
	free(c.syms);
	tok_heap_free(&c.heap);
	free(c.mapped);
	return rc;
}
