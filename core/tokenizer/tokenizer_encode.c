/* The encode driver: cut special tokens out of the text, then hand each
 * piece of plain text to the model's own algorithm (byte-level BPE or
 * SentencePiece). */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tokenizer_impl.h"

/* One piece of the input after special tokens were cut out: either raw
 * text [off, off+len) or a token. */
struct frag { size_t off, len; int32_t token; };

struct frags { struct frag *v; size_t n, cap; };

static int frags_insert(struct frags *f, size_t at, const struct frag *items, size_t k)
{
	if (f->n + k > f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		while (cap < f->n + k)
			cap *= 2;
		struct frag *v = realloc(f->v, cap * sizeof *v);
		if (!v)
			return -1;
		f->v = v;
		f->cap = cap;
	}
	memmove(f->v + at + k, f->v + at, (f->n - at) * sizeof *f->v);
	memcpy(f->v + at, items, k * sizeof *items);
	f->n += k;
	return 0;
}

/* Cut every special token (longest first) out of the raw fragments. With
 * parse_special off, user-defined tokens are still cut out, as the Hugging
 * Face tokenizers and llama.cpp do; control and unknown ones are not. */
static int partition(const struct skipper_tokenizer *t, const char *text, size_t len, int parse_special,
                     struct frags *f)
{
	struct frag whole = { 0, len, -1 };
	if (len && frags_insert(f, 0, &whole, 1))
		return -1;
	for (size_t s = 0; s < t->n_special; s++) {
		int32_t id = t->special[s];
		if (!parse_special && t->types[id] != SKIPPER_TOKEN_USER_DEFINED)
			continue;
		size_t tl;
		const char *tt = tok_text(t, id, &tl);
		for (size_t i = 0; i < f->n; i++) {
			struct frag fr = f->v[i];
			if (fr.token >= 0 || fr.len < tl)
				continue;
			const char *hit = memmem(text + fr.off, fr.len, tt, tl);
			if (!hit)
				continue;
			size_t pos = (size_t)(hit - text);
			struct frag parts[3];
			size_t k = 0;
			if (pos > fr.off)
				parts[k++] = (struct frag){ fr.off, pos - fr.off, -1 };
			parts[k++] = (struct frag){ pos, tl, id };
			if (pos + tl < fr.off + fr.len)
				parts[k++] = (struct frag){ pos + tl, fr.off + fr.len - pos - tl, -1 };
			memmove(f->v + i, f->v + i + 1, (f->n - i - 1) * sizeof *f->v);
			f->n--;
			if (frags_insert(f, i, parts, k))
				return -1;
			/* continue with the fragment after the token (it may hold
			 * more occurrences) */
			i += k - (parts[k - 1].token >= 0 ? 1 : 2);
		}
	}
	return 0;
}

int skipper_tokenize(const struct skipper_tokenizer *t, const char *text, size_t len, int add_bos,
                     int parse_special, int32_t **ids, size_t *n_ids, struct skipper_error *err)
{
	struct frags f = { 0 };
	struct tok_ids out = { 0 };
	int rc = SKIPPER_OK;
	*ids = NULL;
	*n_ids = 0;
	if (!text && len)
		return skipper_fail(err, SKIPPER_ERR_ARG, "tokenize: NULL text");
	add_bos = add_bos && t->add_bos && t->bos >= 0;
	if (partition(t, text, len, parse_special, &f))
		goto nomem;
	if (add_bos && tok_ids_push(&out, t->bos))
		goto nomem;
	/* SentencePiece puts a space before the text and after every special
	 * token, since its words carry their leading space. */
	int prev_special = 1;
	for (size_t i = 0; i < f.n; i++) {
		const struct frag *fr = &f.v[i];
		if (fr->token >= 0) {
			if (tok_ids_push(&out, fr->token))
				goto nomem;
			prev_special = 1;
			continue;
		}
		if (t->kind == TOK_BPE) {
			rc = tok_bpe_encode(t, text + fr->off, fr->len, &out);
		} else {
			int space = t->add_space_prefix && prev_special;
			char *buf = malloc(fr->len + 1);
			if (!buf)
				goto nomem;
			if (space)
				buf[0] = ' ';
			memcpy(buf + space, text + fr->off, fr->len);
			rc = tok_spm_encode(t, buf, fr->len + (size_t)space, &out);
			free(buf);
		}
		if (rc)
			goto nomem;
		prev_special = 0;
	}
	if (add_bos && t->add_eos && t->eos >= 0 && tok_ids_push(&out, t->eos))
		goto nomem;
	free(f.v);
	if (!out.v && !(out.v = malloc(sizeof *out.v)))
		goto nomem;
	*ids = out.v;
	*n_ids = out.n;
	return SKIPPER_OK;
nomem:
	free(f.v);
	free(out.v);
	return skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenize: out of memory (%zu bytes of text)", len);
}
