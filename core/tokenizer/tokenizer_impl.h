/* Internal layout of struct skipper_tokenizer, shared by tokenizer*.c. */
#ifndef SKIPPER_TOKENIZER_IMPL_H
#define SKIPPER_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

enum tok_kind { TOK_BPE = 1, TOK_SPM = 2 };
enum tok_pre { PRE_DEFAULT = 0, PRE_GPT2, PRE_SMOLLM, PRE_LLAMA3, PRE_QWEN2 };

/* A piece -> id map for exact strings. Besides vocabulary tokens it holds
 * "virtual" pieces (id >= n_vocab): merge operands or results that are not
 * tokens themselves, so the BPE loop can work on ids only. */
struct tok_strmap {
	uint32_t *slots; /* id + 1, 0 = empty */
	size_t cap;      /* power of two */
};

struct tok_merge_slot {
	uint64_t key;   /* (left id + 1) << 32 | (right id + 1); 0 = empty */
	int32_t rank;
	int32_t result; /* id of left+right (maybe virtual) */
};

struct skipper_tokenizer {
	int kind, pre;
	char kind_name[48];
	int32_t n_vocab;
	int32_t n_pieces;    /* n_vocab + virtual pieces */
	char *arena;         /* all piece texts */
	size_t arena_len, arena_cap;
	uint64_t *piece_off; /* offset << 20 | length, per piece */
	float *scores;       /* n_vocab */
	uint8_t *types;      /* n_vocab, enum skipper_token_type */
	struct tok_strmap map;
	struct tok_merge_slot *merges;
	size_t merge_cap;
	int32_t bos, eos, unk, eot, eom, pad;
	int add_bos, add_eos, add_space_prefix, ignore_merges;
	int32_t *special;    /* control/user-defined/unknown ids, longest text first */
	size_t n_special;
	int32_t *eog;
	size_t n_eog;
	int32_t byte_piece[256]; /* BPE: piece of the byte's code point; SPM: <0xNN> token */
	char byte_utf8[256][3];  /* BPE: byte -> UTF-8 of its code point */
	uint8_t byte_utf8_len[256];
	int16_t cp_byte[324];    /* BPE: code point -> byte, -1 */
};

static inline const char *tok_text(const struct skipper_tokenizer *t, int32_t id, size_t *len)
{
	uint64_t o = t->piece_off[id];
	*len = (size_t)(o & 0xfffff);
	return t->arena + (o >> 20);
}

int32_t tok_lookup(const struct skipper_tokenizer *t, const char *s, size_t len); /* -1 */
int tok_merge_find(const struct skipper_tokenizer *t, int32_t left, int32_t right, int32_t *rank,
                   int32_t *result);

/* Growable id list. */
struct tok_ids { int32_t *v; size_t n, cap; };
int tok_ids_push(struct tok_ids *a, int32_t id);

/* Pre-tokenizer: split text[0..len) into words; calls back with byte spans. */
typedef int (*tok_word_fn)(void *ctx, const char *s, size_t len);
int tok_pretokenize(int pre, const char *text, size_t len, tok_word_fn fn, void *ctx);

/* Encode one raw-text fragment (no special tokens inside). */
int tok_bpe_encode(const struct skipper_tokenizer *t, const char *text, size_t len, struct tok_ids *out);
int tok_spm_encode(const struct skipper_tokenizer *t, const char *text, size_t len, struct tok_ids *out);

#endif
