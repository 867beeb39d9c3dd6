/* Drafts from history: the prompts and answers of earlier requests, kept in
 * a bounded token buffer with an index of where each pair of tokens
 * occurred (hash chains, as LZ77 compressors find earlier matches), so
 * that lookup can propose what followed the current text's longest suffix
 * whenever it was written before (SuffixDecoding's idea; llama.cpp's
 * ngram-mod pool). Proposals carry how often each continuation was taken
 * (the tree's counts), which scores them.
 *
 * Thread-safe: requests of a server read one history while finished ones
 * are added. A file keeps it across runs ([lookup] history). Used by the
 * engine (lookup.c, plan.c) and the session. */
#ifndef SKIPPER_HISTORY_H
#define SKIPPER_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "lookup.h"
#include "skipper/status.h"

struct skipper_history; /* opaque */

/* Bytes each token of history takes (its id, its chain link, its share of
 * the index's heads): what [lookup] history_mb buys. */
#define HISTORY_BYTES_PER_TOKEN 12
/* Shortest suffix matched: a pair of tokens (single tokens over many
 * requests' text match anything). */
#define HISTORY_MIN_MATCH 2

/* An empty history of at most max_bytes (at least 1 MiB's worth is
 * required), for the model of hash model_sha (hex, kept in its file)
 * whose token ids are below n_vocab (a file's are checked against it).
 * *out owned by the caller: skipper_history_free(). */
int skipper_history_new(size_t max_bytes, const char *model_sha, int32_t n_vocab, struct skipper_history **out,
                        struct skipper_error *err);
void skipper_history_free(struct skipper_history *h);

/* Append one request's tokens (prompt and answer); past the bound the
 * oldest half goes. */
int skipper_history_add(struct skipper_history *h, const int32_t *tok, int n);

/* Tokens held now, and the bound. */
size_t skipper_history_tokens(const struct skipper_history *h);
size_t skipper_history_capacity(const struct skipper_history *h);

/* The continuations, up to max_out tokens each and at most `branches`
 * distinct ones, of the longest suffix of ctx[0..n) (HISTORY_MIN_MATCH ..
 * max_match tokens) that occurs in the history, merged into t as lookup
 * merges the context's (lookup.h), counts included. Returns the spine's
 * length (0: no match); *match gets the matched length. */
int history_propose(struct skipper_history *h, const int32_t *ctx, int n, int max_match, int max_out, int branches,
                    struct lookup_tree *t, int *match);

/* The history into path, atomically (a temporary file beside it, then a
 * rename): a header (format version, model hash, token count), the tokens,
 * and a SHA-256 of everything before it. */
int skipper_history_save(struct skipper_history *h, const char *path, struct skipper_error *err);
/* Tokens of a file written by skipper_history_save appended to h (its
 * oldest dropped past h's bound). A file that is damaged, cut short, made
 * for another model (model_sha), holding an id outside the model's
 * vocabulary or larger than max_file bytes is refused with the reason and
 * h is left as it was. */
int skipper_history_load(struct skipper_history *h, const char *path, size_t max_file, struct skipper_error *err);

#endif
