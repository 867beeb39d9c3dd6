/* Adapter: Hugging Face tokenizer.json (+ tokenizer_config.json) ->
 * struct skipper_tokenizer_spec, for models stored as safetensors.
 *
 * Only "BPE" models are read. The tokenizer kind and pre-tokenizer are
 * recognised from the pipeline the file describes:
 *   ByteLevel pre-tokenizer/decoder          byte-level BPE ("gpt2"), then
 *     Split with the Llama-3 regex           -> llama3
 *     Split with the Qwen2 regex             -> qwen2
 *     Digits(individual) + ByteLevel(regex)  -> smollm
 *     ByteLevel(use_regex)                   -> gpt2
 *   byte_fallback / "▁" normalizer, Metaspace -> SentencePiece-style ("llama")
 * Anything else is refused rather than tokenized differently from the model.
 * SentencePiece merging needs piece scores, which tokenizer.json does not
 * carry: the converter orders merges by score, so the score of a piece is
 * minus the rank of the merge that makes it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "model/model.h"
#include "tokenizer.h"

struct pipe_info { int bytelevel, bytelevel_regex, digits_single, metaspace, split_llama3, split_qwen2, split_other; };

static void scan_pre(json_t *node, struct pipe_info *p)
{
	if (!json_is_object(node))
		return;
	const char *type = json_string_value(json_object_get(node, "type"));
	if (!type)
		return;
	if (strcmp(type, "Sequence") == 0) {
		json_t *list = json_object_get(node, "pretokenizers");
		if (!list)
			list = json_object_get(node, "normalizers");
		if (!list)
			list = json_object_get(node, "decoders");
		size_t i;
		json_t *v;
		json_array_foreach(list, i, v)
			scan_pre(v, p);
	} else if (strcmp(type, "ByteLevel") == 0) {
		json_t *r = json_object_get(node, "use_regex");
		p->bytelevel = 1;
		p->bytelevel_regex |= !r || json_is_true(r);
	} else if (strcmp(type, "Digits") == 0) {
		p->digits_single |= json_is_true(json_object_get(node, "individual_digits"));
	} else if (strcmp(type, "Metaspace") == 0) {
		p->metaspace = 1;
	} else if (strcmp(type, "Split") == 0) {
		const char *re = json_string_value(json_object_get(json_object_get(node, "pattern"), "Regex"));
		if (re && strstr(re, "\\p{N}{1,3}"))
			p->split_llama3 = 1;
		else if (re && strstr(re, "|\\p{N}|") && strstr(re, "'s"))
			p->split_qwen2 = 1;
		else
			p->split_other = 1;
	}
}

/* "<s>" or {"content": "<s>", ...} */
static const char *token_text(json_t *v)
{
	if (json_is_string(v))
		return json_string_value(v);
	return json_string_value(json_object_get(v, "content"));
}

static int is_byte_piece(const char *s)
{
	return strlen(s) == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>';
}

int skipper_tokenizer_from_hf(const char *tokenizer_json, const char *config_json, struct skipper_tokenizer **out,
                              struct skipper_error *err)
{
	return skipper_tokenizer_from_hf_vocab(tokenizer_json, config_json, 0, out, err);
}

static int make_tokenizer(const struct skipper_tokenizer_spec *sp, void *out, struct skipper_error *err)
{
	return skipper_tokenizer_from_arrays(sp, out, err);
}

int skipper_tokenizer_from_hf_vocab(const char *tokenizer_json, const char *config_json, int32_t min_vocab,
                                    struct skipper_tokenizer **out, struct skipper_error *err)
{
	*out = NULL;
	return skipper_hf_tokenizer_spec(tokenizer_json, config_json, min_vocab, make_tokenizer, out, err);
}

int skipper_hf_tokenizer_spec(const char *tokenizer_json, const char *config_json, int32_t min_vocab,
                              int (*fn)(const struct skipper_tokenizer_spec *sp, void *arg, struct skipper_error *err),
                              void *arg, struct skipper_error *err)
{
	json_t *root = NULL, *cfg = NULL;
	const char **tokens = NULL;
	char **merge_buf = NULL;
	int32_t *types = NULL;
	float *scores = NULL;
	size_t n_merges = 0;
	int rc;

	if (!(root = skipper_hf_json_file(tokenizer_json, err)))
		return err->status;
	if (config_json && !(cfg = skipper_hf_json_file(config_json, err))) {
		rc = err->status;
		goto out;
	}
	json_t *model = json_object_get(root, "model");
	const char *mtype = json_string_value(json_object_get(model, "type"));
	json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
	if (!mtype || strcmp(mtype, "BPE") != 0 || !json_is_object(vocab)) {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: only BPE models are supported (model.type %s)",
		                  tokenizer_json, mtype ? mtype : "missing");
		goto out;
	}

	/* ids: vocab plus added tokens, which may lie past it */
	int64_t n_vocab = 0;
	const char *key;
	json_t *v, *added = json_object_get(root, "added_tokens");
	json_object_foreach(vocab, key, v)
		if (json_integer_value(v) + 1 > n_vocab)
			n_vocab = json_integer_value(v) + 1;
	size_t i;
	json_array_foreach(added, i, v)
		if (json_integer_value(json_object_get(v, "id")) + 1 > n_vocab)
			n_vocab = json_integer_value(json_object_get(v, "id")) + 1;
	if (n_vocab > 0 && min_vocab > n_vocab)
		n_vocab = min_vocab; /* rows of the embedding no token uses (padding to a round size) */
	if (n_vocab <= 0 || n_vocab > (1 << 24)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad vocabulary size %lld", tokenizer_json,
		                  (long long)n_vocab);
		goto out;
	}
	tokens = calloc((size_t)n_vocab, sizeof *tokens);
	types = malloc((size_t)n_vocab * sizeof *types);
	scores = calloc((size_t)n_vocab, sizeof *scores);
	if (!tokens || !types || !scores)
		goto nomem;
	json_object_foreach(vocab, key, v) {
		json_int_t id = json_integer_value(v);
		if (id < 0 || !json_is_integer(v)) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad id for \"%s\"", tokenizer_json, key);
			goto out;
		}
		tokens[id] = key;
	}
	for (int64_t k = 0; k < n_vocab; k++) {
		types[k] = tokens[k] ? SKIPPER_TOKEN_NORMAL : SKIPPER_TOKEN_UNUSED;
		if (!tokens[k])
			tokens[k] = ""; /* holes: never produced by encoding, nothing when decoded */
	}
	json_array_foreach(added, i, v) {
		json_int_t id = json_integer_value(json_object_get(v, "id"));
		const char *content = json_string_value(json_object_get(v, "content"));
		if (id < 0 || !content)
			continue;
		tokens[id] = content;
		types[id] = json_is_true(json_object_get(v, "special")) ? SKIPPER_TOKEN_CONTROL : SKIPPER_TOKEN_USER_DEFINED;
	}

	struct pipe_info p = { 0 };
	scan_pre(json_object_get(root, "pre_tokenizer"), &p);
	scan_pre(json_object_get(root, "decoder"), &p);
	json_t *norm = json_object_get(root, "normalizer");
	char *norm_text = norm ? json_dumps(norm, JSON_COMPACT) : NULL;
	int norm_space = norm_text && strstr(norm_text, "\xe2\x96\x81") != NULL;
	int norm_prepend = norm_text && strstr(norm_text, "\"Prepend\"") != NULL;
	free(norm_text);

	struct skipper_tokenizer_spec sp = { .n_vocab = (int32_t)n_vocab, .tokens = tokens, .types = types,
	                                     .bos = -1, .eos = -1, .unk = -1, .eot = -1, .eom = -1, .pad = -1,
	                                     .add_bos = -1, .add_eos = -1, .add_space_prefix = -1 };
	if (p.bytelevel) {
		sp.model = "gpt2";
		if (p.split_other) {
			rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: unknown pre-tokenizer Split pattern",
			                  tokenizer_json);
			goto out;
		}
		sp.pre = p.split_llama3 ? "llama3" : p.split_qwen2 ? "qwen2" : p.digits_single ? "smollm"
		       : p.bytelevel_regex ? "gpt2" : NULL;
		if (!sp.pre) {
			rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: byte-level model without a known pre-tokenizer",
			                  tokenizer_json);
			goto out;
		}
	} else if (json_is_true(json_object_get(model, "byte_fallback")) || p.metaspace || norm_space) {
		sp.model = "llama";
		sp.scores = scores;
		sp.add_space_prefix = norm_prepend || p.metaspace;
		for (int64_t k = 0; k < n_vocab; k++)
			if (types[k] == SKIPPER_TOKEN_NORMAL && is_byte_piece(tokens[k]))
				types[k] = SKIPPER_TOKEN_BYTE;
	} else {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: neither byte-level nor SentencePiece-style BPE",
		                  tokenizer_json);
		goto out;
	}

	/* merges: "a b" strings, or ["a", "b"] pairs in newer files */
	n_merges = json_array_size(merges);
	merge_buf = calloc(n_merges ? n_merges : 1, sizeof *merge_buf);
	if (!merge_buf)
		goto nomem;
	json_array_foreach(merges, i, v) {
		const char *a, *b = NULL;
		if (json_is_string(v)) {
			a = json_string_value(v);
		} else {
			a = json_string_value(json_array_get(v, 0));
			b = json_string_value(json_array_get(v, 1));
		}
		if (!a || (!json_is_string(v) && !b)) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad merge %zu", tokenizer_json, i);
			goto out;
		}
		size_t la = strlen(a), lb = b ? strlen(b) : 0;
		if (!(merge_buf[i] = malloc(la + lb + 2)))
			goto nomem;
		if (b)
			snprintf(merge_buf[i], la + lb + 2, "%s %s", a, b);
		else
			memcpy(merge_buf[i], a, la + 1);
	}
	if (!p.bytelevel) {
		/* piece score = -(rank of the merge that makes it); multi-character
		 * pieces no merge makes come last */
		for (int64_t k = 0; k < n_vocab; k++)
			scores[k] = -(float)(n_merges + (size_t)k);
		for (size_t m = n_merges; m-- > 0;) {
			char *sp_ = strchr(merge_buf[m] + (merge_buf[m][0] ? 1 : 0), ' ');
			if (!sp_)
				continue;
			size_t la = (size_t)(sp_ - merge_buf[m]);
			char *joined = malloc(strlen(merge_buf[m]));
			if (!joined)
				goto nomem;
			memcpy(joined, merge_buf[m], la);
			strcpy(joined + la, sp_ + 1);
			json_t *id = json_object_get(vocab, joined);
			if (json_is_integer(id) && json_integer_value(id) < n_vocab)
				scores[json_integer_value(id)] = -(float)m;
			free(joined);
		}
	} else {
		sp.n_merges = n_merges;
		sp.merges = (const char *const *)merge_buf;
	}

	/* special ids: tokenizer_config.json names them by text */
	static const char *const bos_guess[] = { "<s>", "<|begin_of_text|>", NULL };
	static const char *const eos_guess[] = { "</s>", "<|end_of_text|>", "<|endoftext|>", NULL };
	const char *bos = cfg ? token_text(json_object_get(cfg, "bos_token")) : NULL;
	const char *eos = cfg ? token_text(json_object_get(cfg, "eos_token")) : NULL;
	const char *unk = cfg ? token_text(json_object_get(cfg, "unk_token")) : NULL;
	const char *pad = cfg ? token_text(json_object_get(cfg, "pad_token")) : NULL;
	for (int64_t k = 0; k < n_vocab; k++) {
		const char *t = tokens[k];
		if (bos ? strcmp(t, bos) == 0 : (sp.bos < 0 && (strcmp(t, bos_guess[0]) == 0 || strcmp(t, bos_guess[1]) == 0)))
			sp.bos = (int32_t)k;
		if (eos ? strcmp(t, eos) == 0
		        : (sp.eos < 0 && (!strcmp(t, eos_guess[0]) || !strcmp(t, eos_guess[1]) || !strcmp(t, eos_guess[2]))))
			sp.eos = (int32_t)k;
		if (unk && strcmp(t, unk) == 0)
			sp.unk = (int32_t)k;
		if (pad && strcmp(t, pad) == 0)
			sp.pad = (int32_t)k;
	}
	if (sp.unk >= 0 && types[sp.unk] != SKIPPER_TOKEN_NORMAL)
		types[sp.unk] = SKIPPER_TOKEN_UNKNOWN;
	json_t *ab = cfg ? json_object_get(cfg, "add_bos_token") : NULL, *ae = cfg ? json_object_get(cfg, "add_eos_token") : NULL;
	if (json_is_boolean(ab))
		sp.add_bos = json_is_true(ab);
	if (json_is_boolean(ae))
		sp.add_eos = json_is_true(ae);

	rc = fn(&sp, arg, err);
	if (rc)
		skipper_fail_prefix(err, "%s", tokenizer_json);
	goto out;
nomem:
	rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", tokenizer_json);
out:
	if (merge_buf)
		for (size_t m = 0; m < n_merges; m++)
			free(merge_buf[m]);
	free(merge_buf);
	free(tokens);
	free(types);
	free(scores);
	json_decref(root);
	json_decref(cfg);
	return rc;
}

char *skipper_hf_chat_template(const char *config_json)
{
	struct skipper_error err = { 0 };
	json_t *cfg = skipper_hf_json_file(config_json, &err);
	if (!cfg)
		return NULL;
	json_t *t = json_object_get(cfg, "chat_template");
	const char *s = json_string_value(t);
	if (!s && json_is_array(t)) {
		/* [{"name": "default", "template": ...}, ...]: "default", else the first */
		size_t i;
		json_t *v;
		json_array_foreach(t, i, v) {
			const char *name = json_string_value(json_object_get(v, "name"));
			if (!s || (name && strcmp(name, "default") == 0))
				s = json_string_value(json_object_get(v, "template"));
		}
	}
	char *r = s ? strdup(s) : NULL;
	json_decref(cfg);
	return r;
}
