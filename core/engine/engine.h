/* core/engine/ -- the self-speculative decoding loop (DESIGN §2): full-model
 * prefill (prefill.c), draft rounds with the policy's skip mask (draft.c),
 * verification of the chain or tree by the full model with lossless
 * acceptance and KV compaction (verify.c), each round's plan (plan.c) and
 * pacing (pacing.c), sampling (sample.c), and the compute services plugins
 * reach through the policy host (services.c). An engine is made together
 * with its policy instance, which it owns. With no policy (or a draft
 * length of 0) it is plain autoregressive decoding. engine_impl.h maps the
 * files. May include: every subsystem below it (model, tokenizer, backend,
 * policy). Called by the session layer (core/session/). */
#ifndef SKIPPER_ENGINE_H
#define SKIPPER_ENGINE_H

#include <stdint.h>

#include "backend/backend.h"
#include "sample.h"
#include "tokenizer/tokenizer.h"

#include "policy/policy_host.h"
#include "skipper/skipper.h"

struct skipper_gen_params {
	int max_tokens;                   /* new tokens at most */
	struct skipper_sampling sampling; /* temperature 0 = greedy */
	uint64_t seed;
};

/* Called for every committed token, in order; return non-zero to stop. */
typedef int (*skipper_token_cb)(void *user, int32_t token);

struct skipper_engine;

/* Corpus n-grams for lookup (skipper vocab --ngrams): where the context
 * offers no better proposal, lookup drafts the chain of the tokens that
 * most often followed the last 1..4 tokens in the model's own writing.
 * Entry i: context ctx[S * i .. S * i + ctx_n[i]) (S =
 * SKIPPER_NGRAM_MAX_CTX, 1 <= ctx_n[i] <= S) was followed by next[i]
 * with probability p[i] (0 < p <= 1). */
#define SKIPPER_NGRAM_MAX_CTX 4
struct skipper_ngram_set {
	int32_t *ctx;
	uint8_t *ctx_n;
	int32_t *next;
	float *p;
	int n;
};

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

/* Everything an engine is made with; zero-initialised, it is plain
 * autoregressive decoding. */
struct skipper_engine_opts {
	/* The policy (NULL: none). The engine takes lib over (unloads it when
	 * freed, or when skipper_engine_new fails) and makes the instance
	 * itself, from a copy of env (NULL: the model's facts alone) whose
	 * compute services and engine pointer it sets, and from cfg's section
	 * of the policy (NULL: no keys). */
	struct skipper_policy_lib *lib;
	const struct skipper_policy_env *env;
	const struct skipper_config *cfg;
	struct skipper_lookup_opts lookup;
	/* 1: no guard ([policy] guard = no): a draft source keeps drafting
	 * however little it pays (for studying a method, or testing it on a
	 * model too small to gain). By default a source whose recent rounds
	 * yield fewer tokens per second than plain steps pauses and is probed
	 * again later. */
	int no_guard;
	/* Draft passes compute the LM head over these n vocabulary ids only
	 * ([generate] draft_vocab: the most frequent tokens), so a draft step
	 * does not pay for the whole head; verification always uses the full
	 * head, so greedy output stays identical and sampling exact (the
	 * draft's q lives on the subset; a target token outside it is simply
	 * never drafted). n = 0 or the whole vocabulary: the full head. A
	 * backend that cannot narrow its head keeps the full one (exact too). */
	const int32_t *draft_vocab;
	int n_draft_vocab;
	const struct skipper_ngram_set *ngrams; /* copied; NULL: none */
	/* where the cost curve is cached (skipper_engine_costs); NULL: measured
	 * when needed and not kept */
	const char *cost_cache;
	/* A line for the person waiting (NULL: none): what the engine is doing
	 * that takes long (measuring the cost curve) or did not go as asked (a
	 * cached curve refused). */
	void (*note)(void *ctx, const char *msg);
	void *note_ctx;
	int seq;                /* the backend's KV sequence the engine decodes in (0 .. n_seq - 1) */
	/* Earlier requests' text for lookup to draft from (with lookup on),
	 * borrowed; each request the engine finishes is added to it. NULL:
	 * none. skipper_engine_set_history changes it between requests. */
	struct skipper_history *history;
	/* 1: a request starts from the K/V of the longest prefix its prompt
	 * shares with what its sequence holds from an earlier one
	 * ([generate] prefix_cache; skipper_backend_kv_prefix); what it
	 * computes is the same bits (batch invariance). */
	int prefix_cache;
};

/* The engine borrows be and tok; they must outlive it. o NULL: plain
 * decoding. *out owned by the caller: skipper_engine_free().
 * SKIPPER_ERR_FORMAT when tok's vocabulary is not the model's (one head row
 * per token); the policy's errors as skipper_policy_instance_new gives
 * them. */
int skipper_engine_new(struct skipper_backend *be, const struct skipper_tokenizer *tok,
                       const struct skipper_engine_opts *o, struct skipper_engine **out, struct skipper_error *err);
/* Frees the policy instance and unloads its library too. */
void skipper_engine_free(struct skipper_engine *e);

struct skipper_history;
void skipper_engine_set_history(struct skipper_engine *e, struct skipper_history *h);

/* The engine's policy instance, or NULL (calibrate, policy statistics). */
struct skipper_policy_instance *skipper_engine_policy(const struct skipper_engine *e);

/* Generate up to p->max_tokens tokens after prompt[0..n_prompt). Stops at an
 * end-of-generation token (which is committed and reported) or max_tokens,
 * never past either. Fills *st. */
int skipper_engine_generate(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                            const struct skipper_gen_params *p, skipper_token_cb cb, void *user,
                            struct skipper_run_stats *st, struct skipper_error *err);

/* A request that passes drive (skipper_pass_run) rather than
 * skipper_engine_generate: begin sets it up (prompt stays the caller's
 * until end, which finishes it and gives the first error of its steps, rc
 * or its own); running says whether it has steps left. */
int skipper_engine_begin(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                         const struct skipper_gen_params *p, skipper_token_cb cb, void *user,
                         struct skipper_run_stats *st, struct skipper_error *err);
int skipper_engine_running(const struct skipper_engine *e);
int skipper_engine_end(struct skipper_engine *e, int rc, struct skipper_error *err);

/* Several engines' steps in one forward pass, each engine in its own KV
 * sequence (pass.c): the prompt of a request that has just begun, in
 * chunks of prefill_chunk tokens, or a round's verification batch (its
 * layer-skip draft steps before, in passes of their own). Scratch
 * owned by the caller: skipper_pass_free. */
struct skipper_pass;
int skipper_pass_new(struct skipper_backend *be, int prefill_chunk, struct skipper_pass **out,
                     struct skipper_error *err);
void skipper_pass_free(struct skipper_pass *p);
/* One pass over the engines that are running; rc[i] and err[i] the step's
 * outcome for engine i (an engine whose step failed, or that is no longer
 * running, is ended by the caller: skipper_engine_end). Returns the rows
 * the pass carried (0: no pass). */
int skipper_pass_run(struct skipper_pass *p, struct skipper_engine **engines, int n, int *rc,
                     struct skipper_error *err);
/* Draft passes run so far (several sequences' layer-skip draft steps, one
 * pass a step) and the rows they carried. */
void skipper_pass_drafts(const struct skipper_pass *p, uint64_t *passes, uint64_t *rows);

/* Mean over rows of the final-normed hidden state after the last layer of
 * a full-model prefill of prompt (writes the KV cache: call outside a
 * request). out has n_embd floats. */
int skipper_engine_prompt_mean(struct skipper_engine *e, const int32_t *prompt, int n, float *out,
                               struct skipper_error *err);

/* The clock the guard times rounds with, in seconds (NULL: the monotonic
 * clock). A test gives it a clock that counts modelled work, so that what
 * the guard decides does not depend on the machine or its load. */
void skipper_engine_set_clock(struct skipper_engine *e, double (*now)(void *ctx), void *ctx);

/* A prompt longer than two pieces of SKIPPER_PREFILL_PIECE tokens is
 * prefilled piece by piece, `tell(ctx, done, total)` called before the
 * first and after each with the prompt's tokens done so far, and once
 * more at the end (done == total; a prompt the engine already holds in
 * part starts with that part done); non-zero from it stops the request
 * with SKIPPER_ERR_INTERRUPTED.
 * The pieces give the bits of one pass (the backends are batch-invariant).
 * NULL (the default): one pass, nothing told. A command that draws a
 * progress line sets it: a 32K-token prompt takes minutes on a CPU. */
#define SKIPPER_PREFILL_PIECE 512
void skipper_engine_set_progress(struct skipper_engine *e, int (*tell)(void *ctx, int done, int total), void *ctx);

/* The cost curve of this engine's backend and model on this machine
 * (struct skipper_costs, skipper/policy.h): read from the cost_cache file
 * when that holds one for the same backend, model shape and draft head,
 * else measured (seconds to a minute: verify passes of 1..32 rows, draft
 * steps; the note says so first) and written there atomically. Kept by the
 * engine, which sizes drafts and backs off with it; *out stays valid until
 * skipper_engine_free. Call outside a request. */
int skipper_engine_costs(struct skipper_engine *e, const struct skipper_costs **out, struct skipper_error *err);

/* The costs the engine sizes drafts with replaced by c (as measured at
 * c->ctx; skipper_engine_costs then answers them priced at each request's
 * context): for tests and tools that know the curve they want. Call
 * outside a request. */
void skipper_engine_set_costs(struct skipper_engine *e, const struct skipper_costs *c);

/* The compute services of skipper-policy(3) on this engine (its policy
 * reaches them through the host; tests call them directly). */
int skipper_engine_score_mask(void *engine, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                              const int32_t *tokens, int n, int start_pos, int32_t *argmax_out,
                              struct skipper_error *err);
int skipper_engine_sublayer_forward(void *engine, int kind, int layer, int n_seq, int seq_len, float *states,
                                    const int32_t *pos, int n_past, struct skipper_error *err);
int skipper_engine_head_argmax(void *engine, int n, const float *states, int32_t *ids, struct skipper_error *err);
int skipper_engine_time_sublayer(void *engine, int kind, int layer, int ctx_len, double *seconds,
                                 struct skipper_error *err);

/* The backend the engine runs on, and its committed KV length (valid
 * between hooks of a request; 0 outside a request). */
struct skipper_backend *skipper_engine_backend(struct skipper_engine *e);
int skipper_engine_committed(const struct skipper_engine *e);

#endif
