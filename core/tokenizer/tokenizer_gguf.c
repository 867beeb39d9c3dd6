/* Adapter: tokenizer.ggml.* GGUF keys -> struct skipper_tokenizer_spec. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tokenizer.h"

/* An optional special token id: -1 if the key is absent; an error naming
 * the key when it is there but no token of the vocabulary (a negative
 * number, a non-integer, an id past the last token): such an id would be
 * dropped silently, and the model then never stops at its end token or
 * starts without its BOS. */
static int opt_id(const struct skipper_gguf *g, const char *key, int32_t n_vocab, int32_t *out,
                  struct skipper_error *err)
{
	uint32_t v;
	int rc = skipper_gguf_get_u32(g, key, &v);

	*out = -1;
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_OK;
	if (rc)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: metadata key %s is not a token id (an unsigned integer)",
		                    skipper_gguf_path(g), key);
	if (v >= (uint32_t)n_vocab)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: metadata key %s = %u is past the vocabulary (tokens 0 to %d)",
		                    skipper_gguf_path(g), key, v, n_vocab - 1);
	*out = (int32_t)v;
	return SKIPPER_OK;
}

static int opt_bool(const struct skipper_gguf *g, const char *key)
{
	int v;
	return skipper_gguf_get_bool(g, key, &v) == SKIPPER_OK ? !!v : -1;
}

/* Copy a GGUF string (not NUL-terminated) into buf. */
static const char *cstr(struct skipper_gguf_str s, char *buf, size_t cap)
{
	size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
	memcpy(buf, s.ptr, n);
	buf[n] = 0;
	return buf;
}

int skipper_tokenizer_from_gguf_pre(const struct skipper_gguf *g, const char *pre_override,
                                    struct skipper_tokenizer **out, struct skipper_error *err)
{
	struct skipper_tokenizer_spec sp = { 0 };
	struct skipper_gguf_str s;
	char model[32], pre[64];
	const char **tokens = NULL, **merges = NULL;
	uint32_t *token_lens = NULL, *merge_lens = NULL;
	int32_t *types = NULL;
	float *scores = NULL;
	int et, rc;
	uint64_t n;

	*out = NULL;
	if (skipper_gguf_get_str(g, "tokenizer.ggml.model", &s))
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no tokenizer.ggml.model", skipper_gguf_path(g));
	sp.model = cstr(s, model, sizeof model);
	sp.pre = pre_override;
	if (!sp.pre && skipper_gguf_get_str(g, "tokenizer.ggml.pre", &s) == SKIPPER_OK)
		sp.pre = cstr(s, pre, sizeof pre);

	if (skipper_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n) || et != GGUF_TYPE_STRING || !n ||
	    n > INT32_MAX)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tokenizer.ggml.tokens missing or not strings",
		                    skipper_gguf_path(g));
	sp.n_vocab = (int32_t)n;
	/* one row of the embedding (and head) per token, as llama.cpp
	 * requires: an id the model writes must be text */
	const struct skipper_gguf_tensor *te = skipper_gguf_find_tensor(g, "token_embd.weight");
	if (te && te->n_dims == 2 && (uint64_t)te->ne[1] != n)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: the vocabulary has %llu tokens, token_embd %lld rows",
		                    skipper_gguf_path(g), (unsigned long long)n, (long long)te->ne[1]);
	tokens = malloc(n * sizeof *tokens);
	token_lens = malloc(n * sizeof *token_lens);
	if (!tokens || !token_lens)
		goto nomem;
	for (uint64_t i = 0; i < n; i++) {
		if (skipper_gguf_arr_str(g, "tokenizer.ggml.tokens", i, &s) || s.len > UINT32_MAX) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad token %llu", skipper_gguf_path(g),
			                  (unsigned long long)i);
			goto out;
		}
		tokens[i] = s.ptr;
		token_lens[i] = (uint32_t)s.len;
	}
	sp.tokens = tokens;
	sp.token_lens = token_lens;

	uint64_t m;
	const void *data;
	if (skipper_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &m) == SKIPPER_OK) {
		if (et != GGUF_TYPE_FLOAT32 || m != n || skipper_gguf_arr_data(g, "tokenizer.ggml.scores", &data)) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tokenizer.ggml.scores: want %llu float32",
			                  skipper_gguf_path(g), (unsigned long long)n);
			goto out;
		}
		/* copied: metadata arrays in the mapping are not aligned */
		if (!(scores = malloc(n * sizeof *scores)))
			goto nomem;
		memcpy(scores, data, n * sizeof *scores);
		sp.scores = scores;
	}
	if (skipper_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &m) == SKIPPER_OK) {
		if ((et != GGUF_TYPE_INT32 && et != GGUF_TYPE_UINT32) || m != n ||
		    skipper_gguf_arr_data(g, "tokenizer.ggml.token_type", &data)) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tokenizer.ggml.token_type: want %llu int32",
			                  skipper_gguf_path(g), (unsigned long long)n);
			goto out;
		}
		if (!(types = malloc(n * sizeof *types)))
			goto nomem;
		memcpy(types, data, n * sizeof *types);
		sp.types = types;
	}
	if (skipper_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &m) == SKIPPER_OK) {
		if (et != GGUF_TYPE_STRING) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tokenizer.ggml.merges is not strings",
			                  skipper_gguf_path(g));
			goto out;
		}
		merges = malloc((m ? m : 1) * sizeof *merges);
		merge_lens = malloc((m ? m : 1) * sizeof *merge_lens);
		if (!merges || !merge_lens)
			goto nomem;
		for (uint64_t i = 0; i < m; i++) {
			if (skipper_gguf_arr_str(g, "tokenizer.ggml.merges", i, &s) || s.len > UINT32_MAX) {
				rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad merge %llu", skipper_gguf_path(g),
				                  (unsigned long long)i);
				goto out;
			}
			merges[i] = s.ptr;
			merge_lens[i] = (uint32_t)s.len;
		}
		sp.n_merges = m;
		sp.merges = merges;
		sp.merge_lens = merge_lens;
	}
	if ((rc = opt_id(g, "tokenizer.ggml.bos_token_id", sp.n_vocab, &sp.bos, err)) ||
	    (rc = opt_id(g, "tokenizer.ggml.eos_token_id", sp.n_vocab, &sp.eos, err)) ||
	    (rc = opt_id(g, "tokenizer.ggml.unknown_token_id", sp.n_vocab, &sp.unk, err)) ||
	    (rc = opt_id(g, "tokenizer.ggml.eot_token_id", sp.n_vocab, &sp.eot, err)) ||
	    (rc = opt_id(g, "tokenizer.ggml.eom_token_id", sp.n_vocab, &sp.eom, err)) ||
	    (rc = opt_id(g, "tokenizer.ggml.padding_token_id", sp.n_vocab, &sp.pad, err)))
		goto out;
	sp.add_bos = opt_bool(g, "tokenizer.ggml.add_bos_token");
	sp.add_eos = opt_bool(g, "tokenizer.ggml.add_eos_token");
	sp.add_space_prefix = opt_bool(g, "tokenizer.ggml.add_space_prefix");
	rc = skipper_tokenizer_from_arrays(&sp, out, err);
	if (rc)
		skipper_fail_prefix(err, "%s", skipper_gguf_path(g));
	goto out;
nomem:
	rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory reading the vocabulary", skipper_gguf_path(g));
out:
	free(tokens);
	free(token_lens);
	free(types);
	free(scores);
	free(merges);
	free(merge_lens);
	return rc;
}

int skipper_tokenizer_from_gguf(const struct skipper_gguf *g, struct skipper_tokenizer **out,
                                struct skipper_error *err)
{
	return skipper_tokenizer_from_gguf_pre(g, NULL, out, err);
}
