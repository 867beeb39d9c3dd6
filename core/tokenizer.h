/* Tokenizers read from GGUF metadata: byte-level BPE (GPT-2, Llama-3,
 * SmolLM2 pre-tokenizers) and SentencePiece-style BPE (Llama-2). */
#ifndef SKIPPER_TOKENIZER_H
#define SKIPPER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

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
/* The default system prompt embedded in a model's template (SmolLM2's
 * "You are a helpful AI assistant named SmolLM..."), or NULL. malloc'ed. */
char *skipper_chat_default_system(const char *jinja, size_t len);

#endif
