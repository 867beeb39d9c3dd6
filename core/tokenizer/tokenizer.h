/* core/tokenizer/ -- text <-> token ids. Byte-level BPE (GPT-2, Llama-3,
 * SmolLM2, Qwen2 pre-tokenizers) and SentencePiece-style BPE (Llama-2), read
 * from GGUF metadata or tokenizer.json; the streaming detokenizer; chat
 * templates by name. May include: core/model/ (GGUF metadata), error.h.
 * Called by the engine (end-of-generation ids) and the CLI. */
#ifndef SKIPPER_TOKENIZER_H
#define SKIPPER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"

struct skipper_model;

struct skipper_tokenizer; /* opaque */

/* Build from tokenizer.ggml.* keys. *out owned by the caller. */
int skipper_tokenizer_from_gguf(const struct skipper_gguf *g, struct skipper_tokenizer **out,
                                struct skipper_error *err);
void skipper_tokenizer_free(struct skipper_tokenizer *t);

/* Encode text. add_bos: prepend BOS when the model asks for it
 * (tokenizer.ggml.add_bos_token). parse_special: text like "<|im_start|>"
 * becomes the special token instead of plain text. *ids is malloc'ed and
 * owned by the caller. */
int skipper_tokenize(const struct skipper_tokenizer *t, const char *text, size_t len, int add_bos,
                     int parse_special, int32_t **ids, size_t *n_ids, struct skipper_error *err);

/* Raw bytes of one token as it appears in text (byte-level decoding applied,
 * "▁" -> " ", <0xNN> -> byte). Control tokens give "" unless render_special. */
size_t skipper_token_piece(const struct skipper_tokenizer *t, int32_t id, int render_special,
                           char *buf, size_t cap);

int skipper_tokenizer_n_vocab(const struct skipper_tokenizer *t);
int32_t skipper_tokenizer_bos(const struct skipper_tokenizer *t);   /* -1 if none */
int32_t skipper_tokenizer_eos(const struct skipper_tokenizer *t);
int skipper_tokenizer_add_bos(const struct skipper_tokenizer *t);
/* End of generation: EOS, EOT, <|im_end|>, <|eot_id|>, ... */
int skipper_tokenizer_is_eog(const struct skipper_tokenizer *t, int32_t id);
const char *skipper_tokenizer_kind(const struct skipper_tokenizer *t); /* "gpt2/smollm", "llama/spm", ... */
int32_t skipper_tokenizer_find(const struct skipper_tokenizer *t, const char *piece); /* exact vocab lookup, -1 */

/* Streaming detokenizer: holds back incomplete UTF-8 sequences so the
 * caller never prints half a character. */
struct skipper_detok { const struct skipper_tokenizer *t; char pending[8]; size_t n_pending; int render_special; };
void skipper_detok_init(struct skipper_detok *d, const struct skipper_tokenizer *t, int render_special);
/* Append the text of token id; writes complete characters into buf and
 * returns how many bytes (cap >= 256 is always enough). */
size_t skipper_detok_push(struct skipper_detok *d, int32_t id, char *buf, size_t cap);
/* Whatever is still pending at the end (invalid sequences as U+FFFD). */
size_t skipper_detok_flush(struct skipper_detok *d, char *buf, size_t cap);

/* Chat templates, chosen by name, detected from tokenizer.chat_template. */
enum skipper_chat_template { SKIPPER_CHAT_NONE = 0, SKIPPER_CHAT_CHATML, SKIPPER_CHAT_LLAMA2,
                             SKIPPER_CHAT_LLAMA3, SKIPPER_CHAT_MISTRAL, SKIPPER_CHAT_ZEPHYR };
int skipper_chat_template_by_name(const char *name);          /* -1 if unknown; "none" = raw prompt */
const char *skipper_chat_template_name(int tmpl);
int skipper_chat_template_detect(const char *jinja, size_t len); /* best match, SKIPPER_CHAT_NONE if unknown */
/* Format one user turn (optional system prompt) ready for generation, with
 * the assistant header appended. *out malloc'ed, owned by the caller. The
 * default system prompt of a template (e.g. SmolLM2's) is the caller's job:
 * pass it as system. */
int skipper_chat_format(int tmpl, const char *system, const char *user, char **out,
                        struct skipper_error *err);
/* A conversation: turns of role "system" (first only), "user" and
 * "assistant", the last the user's, formatted with the assistant's turn
 * opened. Llama-2 and Mistral need user and assistant in turn
 * (SKIPPER_ERR_UNSUPPORTED otherwise). *out malloc'ed, owned by the
 * caller. */
struct skipper_chat_turn {
	const char *role, *content;
};
int skipper_chat_format_turns(int tmpl, const struct skipper_chat_turn *turns, size_t n, char **out,
                              struct skipper_error *err);
/* The default system prompt embedded in a model's template (SmolLM2's
 * "You are a helpful AI assistant named SmolLM..."), or NULL. malloc'ed. */
char *skipper_chat_default_system(const char *jinja, size_t len);

/* --- Additions (tokenizer engineer) --- */

/* Notes on the calls above:
 * - skipper_token_piece writes min(len, cap) bytes, NUL-terminated when
 *   len < cap, and returns the piece's full length (call with cap 0 to size).
 *   User-defined tokens always print; control/unknown ones only with
 *   render_special; unused ones never.
 * - skipper_tokenize follows llama.cpp: user-defined tokens are matched in the
 *   text even with parse_special = 0; invalid UTF-8 reads as U+FFFD. EOS is
 *   appended only when add_bos is set and the model asks for EOS too.
 * - skipper_detok_push/flush output is always valid UTF-8: bytes that cannot
 *   start or continue a character come out as U+FFFD.
 * - A tokenizer does not change after construction: calls on one tokenizer
 *   from several threads are safe (each skipper_detok is per stream). */

/* Token types as stored in tokenizer.ggml.token_type. */
enum skipper_token_type { SKIPPER_TOKEN_NORMAL = 1, SKIPPER_TOKEN_UNKNOWN = 2, SKIPPER_TOKEN_CONTROL = 3,
                          SKIPPER_TOKEN_USER_DEFINED = 4, SKIPPER_TOKEN_UNUSED = 5, SKIPPER_TOKEN_BYTE = 6 };

/* Everything a tokenizer is built from, as plain arrays (what the GGUF keys
 * hold), so tests and other file formats need no GGUF. Arrays are read
 * during the call only; the tokenizer keeps its own copies. */
struct skipper_tokenizer_spec {
	const char *model;          /* "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE) */
	const char *pre;            /* pre-tokenizer ("smollm", "gpt2"/"gpt-2", "llama3"/"llama-bpe",
	                               "default"); NULL or "" = "default" */
	int32_t n_vocab;
	const char *const *tokens;  /* n_vocab pieces, not necessarily NUL-terminated */
	const uint32_t *token_lens; /* NULL: tokens are NUL-terminated */
	const float *scores;        /* NULL: all 0 (SPM merges by score) */
	const int32_t *types;       /* enum skipper_token_type; NULL: all normal */
	size_t n_merges;            /* BPE: "left right" strings, rank = index */
	const char *const *merges;
	const uint32_t *merge_lens; /* NULL: merges are NUL-terminated */
	int32_t bos, eos, unk, eot, eom, pad; /* -1: none */
	int add_bos, add_eos;       /* -1: the model type's default */
	int add_space_prefix;       /* SPM: -1 default (on) */
};
/* *out owned by the caller (skipper_tokenizer_free). */
int skipper_tokenizer_from_arrays(const struct skipper_tokenizer_spec *spec, struct skipper_tokenizer **out,
                                  struct skipper_error *err);
/* Like skipper_tokenizer_from_gguf, with tokenizer.ggml.pre replaced by
 * pre_override when that is non-NULL (tests run every pre-tokenizer on one
 * real vocabulary). */
int skipper_tokenizer_from_gguf_pre(const struct skipper_gguf *g, const char *pre_override,
                                    struct skipper_tokenizer **out, struct skipper_error *err);
int skipper_tokenizer_token_type(const struct skipper_tokenizer *t, int32_t id); /* 0 if out of range */

/* Hugging Face layout (safetensors models): tokenizer.json, plus optionally
 * tokenizer_config.json (config_json may be NULL) for the bos/eos/unk/pad
 * token names and add_bos_token/add_eos_token. Byte-level BPE with the GPT-2,
 * SmolLM2, Llama-3 or Qwen2 pre-tokenizer and SentencePiece-style BPE
 * (byte_fallback, "▁" normalizer) are recognised; anything else is refused.
 * *out owned by the caller. */
int skipper_tokenizer_from_hf(const char *tokenizer_json, const char *config_json, struct skipper_tokenizer **out,
                              struct skipper_error *err);
/* One more id that ends generation (a checkpoint's generation_config.json
 * may name several); an id outside the vocabulary is ignored. */
int skipper_tokenizer_add_eog(struct skipper_tokenizer *t, int32_t id);

/* The tokenizer of a loaded model: its GGUF metadata, or a checkpoint's
 * tokenizer.json + tokenizer_config.json (+ generation_config.json's
 * end ids). *out owned by the caller. Errors name the file. */
int skipper_tokenizer_for_model(const struct skipper_model *m, struct skipper_tokenizer **out,
                                struct skipper_error *err);
/* The model's chat template text (GGUF tokenizer.chat_template; a
 * checkpoint's tokenizer_config.json chat_template, else its
 * chat_template.jinja), or NULL when it has none. malloc'ed, owned by the
 * caller. */
char *skipper_model_chat_template(const struct skipper_model *m);

/* The same with at least min_vocab ids: a model's embedding may have more
 * rows than its tokenizer has tokens (Qwen2.5: 151936 for 151665); the
 * ids between are unused tokens that decode to nothing. */
int skipper_tokenizer_from_hf_vocab(const char *tokenizer_json, const char *config_json, int32_t min_vocab,
                                    struct skipper_tokenizer **out, struct skipper_error *err);
/* The spec a tokenizer.json (+ tokenizer_config.json) describes, handed
 * to fn while it is valid (skipper convert writes it into GGUF metadata):
 * fn's result is the result. */
int skipper_hf_tokenizer_spec(const char *tokenizer_json, const char *config_json, int32_t min_vocab,
                              int (*fn)(const struct skipper_tokenizer_spec *sp, void *arg, struct skipper_error *err),
                              void *arg, struct skipper_error *err);
/* chat_template of a tokenizer_config.json (the "default" one when there
 * are several), or NULL. malloc'ed, owned by the caller. */
char *skipper_hf_chat_template(const char *config_json);

/* Whole-sequence decode: concatenated pieces; with strip_space_prefix the
 * space a SentencePiece model (add_space_prefix) put before the first word
 * is removed from the first token after any BOS, so that decode(encode(s))
 * == s. *out malloc'ed (NUL-terminated), owned by the caller. */
int skipper_detokenize(const struct skipper_tokenizer *t, const int32_t *ids, size_t n, int render_special,
                       int strip_space_prefix, char **out, size_t *out_len, struct skipper_error *err);

#endif
