/* core/engine/ -- the self-speculative decoding loop (DESIGN §2): full-model
 * prefill (prefill.c), draft rounds with the policy's skip mask (draft.c),
 * verification of the chain or tree by the full model with lossless
 * acceptance and KV compaction (verify.c), sampling (sample.c), and the
 * compute services plugins reach through the policy host
 * (engine_services.c). With no policy (or a draft length of 0) it is plain
 * autoregressive decoding. May include: every subsystem below it (model,
 * tokenizer, backend, policy). Called by the CLI. */
#ifndef SKIPPER_ENGINE_H
#define SKIPPER_ENGINE_H

#include <stdint.h>

#include "backend/backend.h"
#include "sample.h"
#include "tokenizer/tokenizer.h"

#include "policy/policy_host.h"

struct skipper_gen_params {
	int max_tokens;                   /* new tokens at most */
	struct skipper_sampling sampling; /* temperature 0 = greedy */
	uint64_t seed;
};

/* DESIGN §4. Times in seconds. */
struct skipper_run_stats {
	int n_prompt, n_generated;
	int rounds;          /* verification passes (AR: one per decoded token after the first) */
	int drafted, accepted;
	double t_prefill, t_draft, t_verify, t_policy, t_total; /* policy = time inside its hooks */
	double t_sample;     /* sampling and acceptance on the host (inside draft and verify) */
	double alpha;        /* accepted / drafted (0 when nothing was drafted) */
	int lookup_drafted, lookup_accepted; /* of drafted / accepted: context-lookup candidates */
	int ngram_drafted, ngram_accepted;   /* of those: proposed by the corpus n-grams */
	int backoffs;        /* times drafting was found slower than plain steps and paused */
	double mean_accepted;/* M: tokens committed per verify pass (1.00 for autoregressive) */
	double tokens_per_s; /* decode speed: tokens after the first / (t_total - t_prefill) */
	int draft_head;      /* tokens the draft passes' LM head covers; 0: the whole vocabulary */
};

/* Called for every committed token, in order; return non-zero to stop. */
typedef int (*skipper_token_cb)(void *user, int32_t token);

struct skipper_engine;

/* The engine borrows be, tok and pol (NULL = autoregressive); they must
 * outlive it. *out owned by the caller: skipper_engine_free().
 * SKIPPER_ERR_FORMAT when tok's vocabulary is not the model's (one head row
 * per token). */
int skipper_engine_new(struct skipper_backend *be, const struct skipper_tokenizer *tok,
                       struct skipper_policy_instance *pol, struct skipper_engine **out,
                       struct skipper_error *err);
void skipper_engine_free(struct skipper_engine *e);

/* Generate up to p->max_tokens tokens after prompt[0..n_prompt). Stops at an
 * end-of-generation token (which is committed and reported) or max_tokens,
 * never past either. Fills *st. */
int skipper_engine_generate(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                            const struct skipper_gen_params *p, skipper_token_cb cb, void *user,
                            struct skipper_run_stats *st, struct skipper_error *err);

/* Draft with a fixed plan instead of a policy (host->trial): this mask,
 * up to max_draft tokens, stopping early when the draft's top probability
 * falls below threshold (0 = never). max_draft = 0 turns it off. */
void skipper_engine_set_fixed_plan(struct skipper_engine *e, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                                   int max_draft, double threshold);
/* Make the fixed plan's threshold adaptive (Self-SD rule, host->trial's
 * adaptive members): after each round AR is smoothed with beta1 (restarting
 * with each generate call), and the threshold moves towards +-eps around
 * itself with weight 1-beta2 depending on AR <= alpha. Call after
 * skipper_engine_set_fixed_plan; alpha <= 0 turns it off. */
void skipper_engine_set_fixed_adaptive(struct skipper_engine *e, double alpha, double eps, double beta1,
                                       double beta2);

/* Mean over rows of the final-normed hidden state after the last layer of
 * a full-model prefill of prompt (writes the KV cache: call outside a
 * request). out has n_embd floats. */
int skipper_engine_prompt_mean(struct skipper_engine *e, const int32_t *prompt, int n, float *out,
                               struct skipper_error *err);

/* Context-lookup drafts beside (or instead of) the policy's: the
 * continuation of the longest suffix n-gram of the prompt and output that
 * occurred earlier, verified like any draft, sized by the cost curve and
 * the acceptance seen so far. */
struct skipper_lookup_opts {
	int enable;
	int min_ngram, max_ngram; /* 1..8 */
	int max_draft;            /* tokens per round, 1..32 */
	int branches;             /* continuations verified together, 1..8; 0 or 1: one */
};
void skipper_engine_set_lookup(struct skipper_engine *e, const struct skipper_lookup_opts *o);

/* Corpus n-grams for lookup (skipper vocab --ngrams): where the context
 * offers no better proposal, lookup drafts the chain of the tokens that
 * most often followed the last 1..4 tokens in the model's own writing.
 * Entry i: context ctx[S * i .. S * i + ctx_n[i]) (S =
 * SKIPPER_NGRAM_MAX_CTX, 1 <= ctx_n[i] <= S) was followed by next[i]
 * with probability p[i] (0 < p <= 1). The engine copies them; n = 0
 * removes the table. */
#define SKIPPER_NGRAM_MAX_CTX 4
int skipper_engine_set_ngrams(struct skipper_engine *e, const int32_t *ctx, const uint8_t *ctx_n,
                              const int32_t *next, const float *p, int n, struct skipper_error *err);

/* The guard ([policy] guard): a draft source whose recent rounds yield
 * fewer tokens per second than plain steps pauses and is probed again
 * later. On by default; off lets a policy draft whatever it costs (for
 * studying a method, or testing it on a model too small to gain). */
void skipper_engine_set_guard(struct skipper_engine *e, int on);
/* The clock the guard times rounds with, in seconds (NULL: the monotonic
 * clock). A test gives it a clock that counts modelled work, so that what
 * the guard decides does not depend on the machine or its load. */
void skipper_engine_set_clock(struct skipper_engine *e, double (*now)(void *ctx), void *ctx);

/* Draft passes compute the LM head over these n vocabulary ids only
 * ([generate] draft_vocab: the most frequent tokens), so a draft step does
 * not pay for the whole head; verification always uses the full head, so
 * greedy output stays identical and sampling exact (the draft's q lives on
 * the subset; a target token outside it is simply never drafted). n = 0
 * restores the full head. A backend that cannot narrow its head keeps the
 * full one (still exact). Call outside a request, before
 * skipper_engine_costs. */
int skipper_engine_set_draft_vocab(struct skipper_engine *e, const int32_t *ids, int n, struct skipper_error *err);

/* The cost curve of this engine's backend and model on this machine
 * (struct skipper_costs, skipper/policy.h): read from cache_path when that
 * file holds a valid one for the same backend, model shape and draft head
 * (core/engine/costs_cache.h), else measured (a few seconds: verify passes
 * of 1..32 rows, draft steps) and written there atomically (cache_path
 * NULL: measured, not cached). Kept by the engine, which sizes drafts and
 * backs off with it; *out stays valid until skipper_engine_free. Call
 * outside a request.
 *
 * A caller that talks to a user calls skipper_engine_costs_load first: it
 * takes the cached curve (SKIPPER_OK), finds none (SKIPPER_ERR_NOT_FOUND:
 * say that a measurement follows) or refuses the file, err then holding
 * one line to print before skipper_engine_costs measures ("PATH:LINE: why:
 * ignored, measuring again"; a file that is not a regular one,
 * such as a directory or a link to /dev/zero, is refused without being
 * read). The library itself never prints. */
int skipper_engine_costs_load(struct skipper_engine *e, const char *cache_path, struct skipper_error *err);
int skipper_engine_costs(struct skipper_engine *e, const char *cache_path, const struct skipper_costs **out,
                         struct skipper_error *err);

/* The backend the engine runs on, and its committed KV length (valid
 * between hooks of a request; 0 outside a request). */
struct skipper_backend *skipper_engine_backend(struct skipper_engine *e);
int skipper_engine_committed(const struct skipper_engine *e);

#endif
