/* Tokenizer construction from plain arrays: the piece and merge hash
 * tables, special and end-of-generation tokens, and simple accessors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tokenizer_impl.h"
#include "unicode.h"

#define PIECE_MAX_LEN 0xfffffu

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: short keys, good enough spread */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

int32_t tok_lookup(const struct skipper_tokenizer *t, const char *s, size_t len)
{
	size_t mask = t->map.cap - 1;
	for (size_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
		uint32_t v = t->map.slots[i];
		if (!v)
			return -1;
		size_t l;
		const char *p = tok_text(t, (int32_t)(v - 1), &l);
		if (l == len && memcmp(p, s, len) == 0)
			return (int32_t)(v - 1);
	}
}

/* Point the map at id for its text; a later duplicate text wins, as in
 * llama.cpp's token_to_id. */
static void map_set(struct skipper_tokenizer *t, int32_t id)
{
	size_t len, mask = t->map.cap - 1;
	const char *s = tok_text(t, id, &len);
	for (size_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
		uint32_t v = t->map.slots[i];
		if (v) {
			size_t l;
			const char *p = tok_text(t, (int32_t)(v - 1), &l);
			if (l != len || memcmp(p, s, len) != 0)
				continue;
		}
		t->map.slots[i] = (uint32_t)id + 1;
		return;
	}
}

static int map_grow(struct skipper_tokenizer *t, size_t want)
{
	if (want * 2 <= t->map.cap)
		return 0;
	size_t cap = t->map.cap ? t->map.cap : 1024;
	while (cap < want * 2)
		cap *= 2;
	uint32_t *old = t->map.slots;
	size_t old_cap = t->map.cap;
	t->map.slots = calloc(cap, sizeof *t->map.slots);
	if (!t->map.slots) {
		t->map.slots = old;
		return -1;
	}
	t->map.cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			map_set(t, (int32_t)(old[i] - 1));
	free(old);
	return 0;
}

/* Append a piece text to the arena; returns its id or -1 (no memory). */
static int32_t add_piece(struct skipper_tokenizer *t, const char *s, size_t len, size_t *pieces_cap)
{
	if (len > PIECE_MAX_LEN)
		return -1;
	if (t->arena_len + len + 1 > t->arena_cap) {
		size_t cap = t->arena_cap ? t->arena_cap * 2 : 4096;
		while (cap < t->arena_len + len + 1)
			cap *= 2;
		char *a = realloc(t->arena, cap);
		if (!a)
			return -1;
		t->arena = a;
		t->arena_cap = cap;
	}
	if ((size_t)t->n_pieces == *pieces_cap) {
		size_t cap = *pieces_cap ? *pieces_cap * 2 : 1024;
		uint64_t *o = realloc(t->piece_off, cap * sizeof *o);
		if (!o)
			return -1;
		t->piece_off = o;
		*pieces_cap = cap;
	}
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = 0;
	t->piece_off[t->n_pieces] = ((uint64_t)t->arena_len << 20) | len;
	t->arena_len += len + 1;
	return t->n_pieces++;
}

/* Id of text, adding a virtual piece when the vocabulary lacks it. */
static int32_t intern(struct skipper_tokenizer *t, const char *s, size_t len, size_t *pieces_cap)
{
	int32_t id = tok_lookup(t, s, len);
	if (id >= 0)
		return id;
	if (map_grow(t, (size_t)t->n_pieces + 1))
		return -1;
	id = add_piece(t, s, len, pieces_cap);
	if (id >= 0)
		map_set(t, id);
	return id;
}

int tok_merge_find(const struct skipper_tokenizer *t, int32_t left, int32_t right, int32_t *rank,
                   int32_t *result)
{
	if (!t->merge_cap)
		return 0;
	uint64_t key = ((uint64_t)(uint32_t)(left + 1) << 32) | (uint32_t)(right + 1);
	size_t mask = t->merge_cap - 1;
	for (size_t i = hash_u64(key) & mask;; i = (i + 1) & mask) {
		if (t->merges[i].key == 0)
			return 0;
		if (t->merges[i].key == key) {
			*rank = t->merges[i].rank;
			*result = t->merges[i].result;
			return 1;
		}
	}
}

static int load_merges(struct skipper_tokenizer *t, const struct skipper_tokenizer_spec *sp,
                       size_t *pieces_cap, struct skipper_error *err)
{
	size_t cap = 16;
	while (cap < sp->n_merges * 2)
		cap *= 2;
	t->merges = calloc(cap, sizeof *t->merges);
	if (!t->merges)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenizer: out of memory for %zu merges", sp->n_merges);
	t->merge_cap = cap;
	char *buf = NULL;
	size_t buf_cap = 0;
	for (size_t i = 0; i < sp->n_merges; i++) {
		const char *m = sp->merges[i];
		size_t len = sp->merge_lens ? sp->merge_lens[i] : (m ? strlen(m) : 0);
		/* The separator is the first space after the first byte: pieces
		 * in the byte-level alphabet never contain a plain space. */
		const char *sep = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
		if (!sep) {
			free(buf);
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "tokenizer: merge %zu (\"%.*s\") has no space",
			                    i, (int)(len > 64 ? 64 : len), m ? m : "");
		}
		size_t ll = (size_t)(sep - m), rl = len - ll - 1;
		if (len > buf_cap) {
			char *nb = realloc(buf, len + 16);
			if (!nb) {
				free(buf);
				return skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenizer: out of memory");
			}
			buf = nb;
			buf_cap = len + 16;
		}
		memcpy(buf, m, ll);
		memcpy(buf + ll, sep + 1, rl);
		int32_t l = intern(t, m, ll, pieces_cap);
		int32_t r = intern(t, sep + 1, rl, pieces_cap);
		int32_t res = intern(t, buf, ll + rl, pieces_cap);
		if (l < 0 || r < 0 || res < 0) {
			free(buf);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenizer: out of memory");
		}
		uint64_t key = ((uint64_t)(uint32_t)(l + 1) << 32) | (uint32_t)(r + 1);
		size_t mask = cap - 1;
		for (size_t j = hash_u64(key) & mask;; j = (j + 1) & mask) {
			if (t->merges[j].key == key)
				break; /* first (best) rank of a repeated merge wins */
			if (t->merges[j].key == 0) {
				t->merges[j].key = key;
				t->merges[j].rank = (int32_t)i;
				t->merges[j].result = res;
				break;
			}
		}
	}
	free(buf);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int is_eog(const struct skipper_tokenizer *t, int32_t id)
{
	for (size_t i = 0; i < t->n_eog; i++)
		if (t->eog[i] == id)
			return 1;
	return 0;
}

static int add_eog(struct skipper_tokenizer *t, int32_t id)
{
	if (id < 0 || id >= t->n_vocab || is_eog(t, id))
		return 0;
	int32_t *e = realloc(t->eog, (t->n_eog + 1) * sizeof *e);
	if (!e)
		return -1;
	t->eog = e;
	t->eog[t->n_eog++] = id;
	return 0;
}

int skipper_tokenizer_add_eog(struct skipper_tokenizer *t, int32_t id)
{
	return add_eog(t, id) ? SKIPPER_ERR_NOMEM : SKIPPER_OK;
}

/* End-of-generation markers of common chat formats. Like llama.cpp, such
 * tokens are treated as control tokens even when the file says otherwise,
 * so they never print and always stop generation. */
static const char *const eog_texts[] = {
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
	"<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
};

static int setup_special(struct skipper_tokenizer *t)
{
	for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
		int32_t id = tok_lookup(t, eog_texts[i], strlen(eog_texts[i]));
		if (id < 0 || id >= t->n_vocab)
			continue;
		t->types[id] = SKIPPER_TOKEN_CONTROL;
		if (add_eog(t, id))
			return -1;
	}
	if (add_eog(t, t->eos) || add_eog(t, t->eot) || add_eog(t, t->eom))
		return -1;

	size_t n = 0;
	for (int32_t i = 0; i < t->n_vocab; i++) {
		int ty = t->types[i];
		size_t len;
		tok_text(t, i, &len);
		if (len && (ty == SKIPPER_TOKEN_CONTROL || ty == SKIPPER_TOKEN_USER_DEFINED || ty == SKIPPER_TOKEN_UNKNOWN))
			n++;
	}
	t->special = malloc((n ? n : 1) * sizeof *t->special);
	uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
	if (!t->special || !keys) {
		free(keys);
		return -1;
	}
	for (int32_t i = 0; i < t->n_vocab; i++) {
		int ty = t->types[i];
		size_t len;
		tok_text(t, i, &len);
		/* sort key: longest text first, then lowest id */
		if (len && (ty == SKIPPER_TOKEN_CONTROL || ty == SKIPPER_TOKEN_USER_DEFINED || ty == SKIPPER_TOKEN_UNKNOWN))
			keys[t->n_special++] = ((uint64_t)(PIECE_MAX_LEN - len) << 32) | (uint32_t)i;
	}
	/* Longest first, so "<|im_start|>" is cut out before any shorter token
	 * that is a substring of it (llama.cpp's order). */
	qsort(keys, t->n_special, sizeof *keys, cmp_u64);
	for (size_t i = 0; i < t->n_special; i++)
		t->special[i] = (int32_t)(uint32_t)keys[i];
	free(keys);
	return 0;
}

static int parse_pre(const char *pre, int *out)
{
	static const struct { const char *name; int pre; } names[] = {
		{ "", PRE_DEFAULT }, { "default", PRE_DEFAULT },
		{ "gpt2", PRE_GPT2 }, { "gpt-2", PRE_GPT2 }, { "phi-2", PRE_GPT2 }, { "mpt", PRE_GPT2 },
		{ "olmo", PRE_GPT2 }, { "jais", PRE_GPT2 },
		{ "smollm", PRE_SMOLLM }, { "starcoder", PRE_SMOLLM }, { "refact", PRE_SMOLLM },
		{ "llama3", PRE_LLAMA3 }, { "llama-v3", PRE_LLAMA3 }, { "llama-bpe", PRE_LLAMA3 },
		{ "falcon3", PRE_LLAMA3 }, { "pixtral", PRE_LLAMA3 },
		{ "qwen2", PRE_QWEN2 },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(pre ? pre : "", names[i].name) == 0) {
			*out = names[i].pre;
			return 0;
		}
	return -1;
}

static const char *pre_name(int pre)
{
	switch (pre) {
	case PRE_GPT2: return "gpt2";
	case PRE_SMOLLM: return "smollm";
	case PRE_LLAMA3: return "llama3";
	case PRE_QWEN2: return "qwen2";
	default: return "default";
	}
}

static int32_t valid_id(const struct skipper_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? id : -1;
}

int skipper_tokenizer_from_arrays(const struct skipper_tokenizer_spec *sp, struct skipper_tokenizer **out,
                                  struct skipper_error *err)
{
	*out = NULL;
	if (!sp || !sp->model || !sp->tokens || sp->n_vocab <= 0)
		return skipper_fail(err, SKIPPER_ERR_ARG, "tokenizer: empty vocabulary");
	struct skipper_tokenizer *t = calloc(1, sizeof *t);
	if (!t)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenizer: out of memory");
	int rc = SKIPPER_ERR_NOMEM;
	size_t pieces_cap = 0;

	if (strcmp(sp->model, "gpt2") == 0) {
		t->kind = TOK_BPE;
		if (parse_pre(sp->pre, &t->pre)) {
			rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "tokenizer: unknown pre-tokenizer \"%s\"", sp->pre);
			goto fail;
		}
		snprintf(t->kind_name, sizeof t->kind_name, "gpt2/%s", pre_name(t->pre));
	} else if (strcmp(sp->model, "llama") == 0) {
		t->kind = TOK_SPM;
		snprintf(t->kind_name, sizeof t->kind_name, "llama/spm");
	} else {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "tokenizer: unsupported model \"%s\"", sp->model);
		goto fail;
	}

	t->n_vocab = sp->n_vocab;
	t->scores = calloc((size_t)t->n_vocab, sizeof *t->scores);
	t->types = malloc((size_t)t->n_vocab);
	if (!t->scores || !t->types || map_grow(t, (size_t)t->n_vocab + sp->n_merges / 4 + 512))
		goto nomem;
	for (int32_t i = 0; i < t->n_vocab; i++) {
		const char *s = sp->tokens[i] ? sp->tokens[i] : "";
		size_t len = sp->token_lens ? sp->token_lens[i] : strlen(s);
		if (add_piece(t, s, len, &pieces_cap) < 0) {
			if (len > PIECE_MAX_LEN) {
				rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "tokenizer: token %d is %zu bytes long", i, len);
				goto fail;
			}
			goto nomem;
		}
		map_set(t, i);
		t->scores[i] = sp->scores ? sp->scores[i] : 0.0f;
		int ty = sp->types ? sp->types[i] : SKIPPER_TOKEN_NORMAL;
		t->types[i] = (uint8_t)(ty >= SKIPPER_TOKEN_NORMAL && ty <= SKIPPER_TOKEN_BYTE ? ty : SKIPPER_TOKEN_NORMAL);
	}

	t->bos = valid_id(t, sp->bos);
	t->eos = valid_id(t, sp->eos);
	t->unk = valid_id(t, sp->unk);
	t->eot = valid_id(t, sp->eot);
	t->eom = valid_id(t, sp->eom);
	t->pad = valid_id(t, sp->pad);

	if (t->kind == TOK_BPE) {
		t->add_bos = t->pre == PRE_LLAMA3; /* llama.cpp's defaults when the file is silent */
		t->add_space_prefix = 0;
		t->ignore_merges = t->pre == PRE_LLAMA3;
		if ((rc = load_merges(t, sp, &pieces_cap, err)))
			goto fail;
		for (int i = 0; i < 324; i++)
			t->cp_byte[i] = -1;
		for (int b = 0; b < 256; b++) {
			uint32_t cp = skipper_byte_to_cp((uint8_t)b);
			t->byte_utf8_len[b] = (uint8_t)skipper_utf8_put(cp, t->byte_utf8[b]);
			t->cp_byte[cp] = (int16_t)b;
			t->byte_piece[b] = intern(t, t->byte_utf8[b], t->byte_utf8_len[b], &pieces_cap);
			if (t->byte_piece[b] < 0)
				goto nomem;
		}
	} else {
		t->add_bos = 1;
		t->add_space_prefix = 1;
		for (int b = 0; b < 256; b++) {
			char hex[8];
			snprintf(hex, sizeof hex, "<0x%02X>", b);
			int32_t id = tok_lookup(t, hex, 6);
			if (id < 0) {
				char c = (char)b;
				id = tok_lookup(t, &c, 1);
			}
			t->byte_piece[b] = id >= 0 && id < t->n_vocab ? id : t->unk;
		}
	}
	if (sp->add_bos >= 0)
		t->add_bos = !!sp->add_bos;
	t->add_eos = sp->add_eos > 0;
	if (sp->add_space_prefix >= 0 && t->kind == TOK_SPM)
		t->add_space_prefix = !!sp->add_space_prefix;
	if (t->add_bos && t->bos < 0)
		t->add_bos = 0;
	if (setup_special(t))
		goto nomem;
	*out = t;
	return SKIPPER_OK;
nomem:
	rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "tokenizer: out of memory");
fail:
	skipper_tokenizer_free(t);
	return rc;
}

void skipper_tokenizer_free(struct skipper_tokenizer *t)
{
	if (!t)
		return;
	free(t->arena);
	free(t->piece_off);
	free(t->scores);
	free(t->types);
	free(t->map.slots);
	free(t->merges);
	free(t->special);
	free(t->eog);
	free(t);
}

int skipper_tokenizer_n_vocab(const struct skipper_tokenizer *t) { return t->n_vocab; }
int32_t skipper_tokenizer_bos(const struct skipper_tokenizer *t) { return t->bos; }
int32_t skipper_tokenizer_eos(const struct skipper_tokenizer *t) { return t->eos; }
int skipper_tokenizer_add_bos(const struct skipper_tokenizer *t) { return t->add_bos; }
const char *skipper_tokenizer_kind(const struct skipper_tokenizer *t) { return t->kind_name; }

int skipper_tokenizer_is_eog(const struct skipper_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab && is_eog(t, id);
}

int skipper_tokenizer_token_type(const struct skipper_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? t->types[id] : 0;
}

int32_t skipper_tokenizer_find(const struct skipper_tokenizer *t, const char *piece)
{
	int32_t id = tok_lookup(t, piece, strlen(piece));
	return id < t->n_vocab ? id : -1;
}
