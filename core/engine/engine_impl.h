/* What the parts of the engine share: the engine's state, grouped by job,
 * one request's round context, and the functions one part calls in
 * another. Internal to core/engine/.
 *
 * engine.c   lifecycle and the request loop
 * plan.c     each round's plan: the policy's draft, lookup's proposal
 *            sized by the cost curve (chains and trees)
 * pacing.c   the guards that pause drafting slower than plain steps, and
 *            what rounds teach about the cost curve
 * draft.c    layer-skip draft steps
 * verify.c   the verification pass, acceptance, KV compaction
 * prefill.c  the full-model prefill and its captures
 * costs.c    the cost curve: measured, cached
 * pass.c     several engines' steps as one forward pass (continuous batching)
 * lookup.c, ngram_table.c, history.c   lookup's proposals from the context,
 *            a corpus, and earlier requests */
#ifndef SKIPPER_ENGINE_IMPL_H
#define SKIPPER_ENGINE_IMPL_H

#include <stdint.h>
#include <time.h>

#include "econ/econ.h"
#include "engine.h"
#include "history.h"
#include "lookup.h"
#include "ngram_table.h"

#define MAX_DRAFT 32        /* chain tokens per round */
#define MAX_NODES 128       /* tree nodes per round (root excluded) */

/* This round's layer-skip draft chain (draft.c) and the draft head. */
struct engine_draft {
	uint8_t *skip_attn, *skip_mlp; /* [n_layer], the policy's mask */
	int top_k;                     /* top-k per draft step the policy reads */
	int32_t tok[MAX_DRAFT];
	float prob[MAX_DRAFT];
	int32_t *top_ids;   /* [MAX_DRAFT][top_k] */
	float *top_probs;
	float *q;           /* [MAX_DRAFT][n_vocab] processed draft distributions (sampling) */
	/* draft head over a vocabulary subset (0 = full head) */
	int head_n;
	int32_t *head_ids;
	float *sub_logits;  /* [head_n] a draft step's subset logits (sampling) */
};

/* The verification pass (verify.c): root + candidates as batch rows. */
struct engine_batch {
	int32_t tok[MAX_NODES + 1], pos[MAX_NODES + 1], parent[MAX_NODES + 1], rows[MAX_NODES + 1];
	int32_t depth[MAX_NODES + 1];
	int32_t top[MAX_NODES + 1];   /* each row's target argmax */
	float *logits;        /* [MAX_NODES + 1][n_vocab] (sampling) */
	float *p, *q;         /* [n_vocab] work distributions */
	struct skipper_prob_id *scratch;
	/* the tree handed to the policy's verify hook */
	int32_t t_tok[MAX_NODES], t_parent[MAX_NODES], t_chain[MAX_NODES];
};

/* Hidden states the policy needs (skipper_needs). */
struct engine_capture {
	uint64_t needs;
	int prompt_rows;
	int n_points;         /* per captured row: n_layer + 1, or 2 n_layer + 1 (SUBLAYER_STATES) */
	int sub;              /* captures at sub-layer boundaries (backend cap_sublayers) */
	int32_t layers[1025];
	float *buf;           /* [MAX_NODES + 1][n_points][n_embd]; NULL: no captures */
	float *sel;           /* the selected rows, handed to on_accept */
	int32_t pos[MAX_NODES + 1], tok[MAX_NODES + 1];
};

/* Context lookup: the history it searches (prompt + committed output),
 * this round's proposal (from the context, or from the corpus n-grams
 * when corpus) with each token's acceptance to expect and, after the
 * batch is built, the batch row of each proposed token (-1 = not
 * verified). */
struct engine_lookup {
	struct skipper_lookup_opts opts;
	int32_t *hist;
	int hist_n, hist_cap;
	struct lookup_stats stats;
	struct ngram_table ngrams;
	struct ngram_stats ng_stats;
	struct skipper_history *history; /* earlier requests' text (borrowed), or NULL */
	struct ngram_stats hist_stats;   /* how its proposals' counts fare */
	struct lookup_tree tree;
	struct lookup_tree htree; /* the history's proposal */
	/* lookup-only rounds verify the tree's most promising nodes (sel) when
	 * that promises more than the chain; tree_n of them, 0 = the chain */
	uint8_t sel[LOOKUP_TREE_NODES];
	int tree_n;
	int32_t tok[MAX_DRAFT], row[MAX_DRAFT];
	float p[MAX_DRAFT];     /* acceptance to expect, given the tokens before it were accepted */
	float table[MAX_DRAFT]; /* corpus proposals: the table's probabilities */
	int n, ngram;
	int corpus;           /* the proposal is the corpus n-grams' */
	int from_history;     /* the proposal is the history's */
};

/* Never slower than plain steps: a rate guard per draft source. */
struct guard {
	double tok, sec;   /* tokens and seconds of recent rounds, decayed */
	int rounds;        /* rounds in that window */
	int pause;         /* rounds left in which this source does not draft */
	int pause_len;     /* next pause, doubled by each failed probe */
};

/* Corpus n-gram and history proposals have guards of their own: where the
 * model writes unlike its corpus or its earlier requests they fail, and
 * they must not pause the context's copies with them. */
enum { GUARD_SKIP = 0, GUARD_LOOKUP = 1, GUARD_CORPUS = 2, GUARD_HISTORY = 3, GUARDS };

/* What drafting costs and has paid lately (costs.c, pacing.c). */
struct engine_pacing {
	struct skipper_costs base;    /* as measured, at a short context (costs.c) */
	struct skipper_costs costs;   /* base priced at the request's context: what the
	                                 engine and the policy read (engine_costs_price) */
	int have_costs;
	char *cost_cache;             /* where the curve is cached, or NULL */
	struct guard guard[GUARDS];
	double plain_tok, plain_sec;  /* recent plain rounds, decayed */
	double row_seen, row_model;   /* extra steps of recent lookup passes: measured, and the curve's; decayed */
	int no_guard;                 /* skipper_engine_opts.guard = 0 */
	double (*clock)(void *ctx);   /* skipper_engine_set_clock; NULL = engine_now */
	void *clock_ctx;
	double skip_hits, skip_tries; /* the policy drafts' tokens accepted / tried, decayed */
	void (*note)(void *ctx, const char *msg); /* skipper_engine_opts.note */
	void *note_ctx;
};

/* The request's output so far. */
struct engine_output {
	int32_t *gen;
	int cap;
	int committed;        /* KV length visible to compute services */
};

struct round_ctx {
	const struct skipper_gen_params *gp;
	int greedy;
	int n_past;           /* committed KV length */
	int32_t root;         /* last committed token, not yet in the KV cache */
	int n_gen;
	int done;
	int capture;          /* this round's verify pass captures states (plan.capture) */
	int lookup_only;      /* the chain is the lookup proposal (no policy draft) */
	int n_policy_rows;    /* batch rows 1 .. n_policy_rows - 1 are the policy's candidates */
	double t_round;       /* when the round started (for the guards) */
	double p_round;       /* st->t_policy then */
	double t_draft;       /* this round's draft steps, policy hooks excluded (verdict.draft_seconds) */
	int n_draft;          /* chain tokens drafted this round (the policy's, or lookup's as a chain) */
	int n_rows, chain;    /* the verification batch: rows, and whether they are one chain */
	double t_verify0;     /* when the verification pass started */
	int n_gen0, drafted0; /* output and drafted tokens when the round started */
	skipper_token_cb cb;
	void *user;
	struct skipper_run_stats *st;
};

struct skipper_engine {
	struct skipper_backend *be;
	const struct skipper_tokenizer *tok;
	int n_vocab, n_layer;
	uint64_t request_id;
	struct skipper_rng rng;
	/* the policy, made with the engine and freed with it */
	struct skipper_policy_lib *lib;
	struct skipper_policy_instance *pol; /* NULL = autoregressive */
	struct skipper_policy_env env;

	struct engine_draft draft;
	struct engine_batch vb;
	struct engine_capture cap;
	struct engine_lookup lk;
	struct engine_pacing pace;
	struct engine_output out;
	/* the pass this engine's rounds share with other sequences (pass.c):
	 * their roots (0: alone, every round its own pass) and the tokens per
	 * decode step such passes yield lately */
	struct {
		int others;
		double rate;
	} batch;
	int seq;              /* the backend's KV sequence */
	int prefix_cache;     /* skipper_engine_opts.prefix_cache */
	int (*progress)(void *ctx, int done, int total); /* skipper_engine_set_progress */
	void *progress_ctx;
	/* the request in progress */
	struct round_ctx r;
	struct skipper_gen_params gp;
	double t_start;
	int began;            /* the policy's begin hook ran: its end hook runs too */
	int in_request;       /* skipper_engine_begin .. skipper_engine_end */
	const int32_t *prompt;/* the caller's, valid until skipper_engine_end */
	int n_prompt, prefilled;
	double prefill_seconds;
};


static inline double engine_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One request as steps (engine.c), so that a batch can interleave several
 * engines' passes: start (checks, the request's state), prefill (the
 * full-model prompt pass, the policy's begin hook, the first token),
 * rounds of prepare (plan, draft, build the verification batch) -> the
 * verification pass -> finish (accept, emit, account) while !e->r.done,
 * then finish the request (its statistics, the end hook; rc is the first
 * error, kept). skipper_engine_generate is exactly these steps. */
int engine_request_start(struct skipper_engine *e, const int32_t *prompt, int n_prompt,
                         const struct skipper_gen_params *gp, skipper_token_cb cb, void *user,
                         struct skipper_run_stats *st, struct skipper_error *err);
int engine_request_prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, struct skipper_error *err);
/* The tail of a prefill done elsewhere (a batch's chunks): see engine.c. */
int engine_prefill_done(struct skipper_engine *e, const int32_t *prompt, int n_prompt, const float *mean, int n_rows,
                        double t_prefill, struct skipper_error *err);
int engine_round_prepare(struct skipper_engine *e, struct skipper_error *err);
/* engine_round_prepare in its three parts, for a batch that runs several
 * sequences' draft steps together (pass.c): the plan (*n_draft: the
 * policy's draft steps to run, 0 when none or the round is lookup's), the
 * draft steps (engine_draft, or the batch's), then the verification batch
 * of the n_draft tokens drafted. */
int engine_round_plan(struct skipper_engine *e, int *n_draft, struct skipper_error *err);
int engine_round_build(struct skipper_engine *e, int n_draft, struct skipper_error *err);
int engine_round_finish(struct skipper_engine *e, struct skipper_error *err);
int engine_request_finish(struct skipper_engine *e, int rc, struct skipper_error *err);

/* Commit one output token: record, report, check EOS / max / callback
 * (engine.c). */
int engine_emit(struct skipper_engine *e, struct round_ctx *r, int32_t tok);

/* This round's plan (plan.c): the skip mask (e->draft.skip_*) and draft
 * length *n_draft from the policy, and the lookup tokens worth verifying
 * (e->lk.n, or the tree's e->lk.tree_n nodes); r->lookup_only when the
 * round is lookup's alone. */
int engine_plan_round(struct skipper_engine *e, struct round_ctx *r, int *n_draft, struct skipper_error *err);
/* Beside other sequences: how many of the n tokens its policy asks to
 * draft are worth drafting when g sequences draft with the same mask
 * (each step one pass of their rows) (plan.c). */
int engine_batch_draft_len(const struct skipper_engine *e, int n, int g);

/* What to do about a full context, for its error message (engine.c). */
const char *engine_ctx_advice(const struct skipper_engine *e);

/* A lookup-only round's chain into the draft arrays (plan.c). */
int engine_lookup_as_chain(struct skipper_engine *e, const struct round_ctx *r);

/* Draft up to max_draft chain tokens with the round's skip mask into
 * e->draft; *n_out gets how many (draft.c). */
int engine_draft(struct skipper_engine *e, struct round_ctx *r, int max_draft, int *n_out,
                 struct skipper_error *err);
/* Draft token n from its step's outputs, which the forward left where
 * engine_draft's does (top ids and probabilities at [n], logits in
 * e->vb.logits or, with a draft head, e->draft.sub_logits): the token,
 * its probability, and *stop when the chain ends with it (the policy's
 * should_exit, an end-of-generation token). */
int engine_draft_took(struct skipper_engine *e, struct round_ctx *r, int n, int max_draft, int *stop,
                      struct skipper_error *err);

/* Verification (verify.c), in three steps so that a batch can run the
 * pass of several engines as one: build the batch of the root and the
 * n_draft drafted tokens (or the policy's tree, or lookup's) into e->vb
 * and r->n_rows / r->chain; the pass (engine_verify_forward describes it,
 * engine_verify_passed counts it); then accept, compact the KV cache, emit
 * and report to the policy. engine_verify_pass is the pass on this
 * engine's backend alone. */
int engine_verify_build(struct skipper_engine *e, struct round_ctx *r, int n_draft, struct skipper_error *err);
void engine_verify_forward(struct skipper_engine *e, const struct round_ctx *r, struct skipper_forward *fw);
void engine_verify_passed(struct skipper_engine *e, struct round_ctx *r, double seconds);
int engine_verify_pass(struct skipper_engine *e, struct round_ctx *r, struct skipper_error *err);
int engine_verify_accept(struct skipper_engine *e, struct round_ctx *r, struct skipper_error *err);

/* Pacing (pacing.c). The clock rounds are timed with. */
double engine_clock(const struct skipper_engine *e);
/* Whether a draft source may draft this round (and one round of its
 * pause served if not). */
int engine_guard_open(struct skipper_engine *e, struct guard *g);
/* What the layer-skip drafts delivered lately, as a multiple of plain
 * steps' tokens per second. */
double engine_skip_rate(const struct skipper_engine *e);
/* The policy drafts' per-token acceptance lately (a prior of 1/2), and
 * what a draft step with this round's mask costs, in decode steps. */
double engine_skip_accept(const struct skipper_engine *e);
double engine_skip_step_cost(const struct skipper_engine *e);
/* After a round that drafted `drafted` tokens (all sources) and started
 * with n_gen0 tokens out: the guards and the plain-step rate learn. */
void engine_account_round(struct skipper_engine *e, struct round_ctx *r, int drafted, int n_gen0);

/* Cost of a full-model pass over n rows, in decode steps, as passes cost
 * now (pacing.c). */
double engine_verify_cost(const struct skipper_engine *e, int n);

/* After every round: a round that was one verify pass over `rows` rows
 * (lookup alone; 0 otherwise) took sec seconds. engine_verify_cost scales
 * the curve's extra rows by what they cost, against plain steps; the
 * evidence fades round by round, so a curve found too cheap once is tried
 * again later (pacing.c). */
void engine_learn_rows(struct skipper_engine *e, int rows, double sec);

/* The costs priced at a context of n_past committed tokens, into
 * e->pace.costs (costs.c): every round and prefill does it first. */
void engine_costs_price(struct skipper_engine *e, int n_past);

/* The measured curve at n rows, past its range extrapolated (costs.c). */
double engine_curve(const struct skipper_engine *e, int n);

/* Prompt tokens whose K/V the engine's sequence still holds from an
 * earlier request (none without prefix_cache), leaving at least `keep`
 * (>= 1) rows to compute: the last one gives the first token. Sets the
 * request's n_reused. */
int engine_reusable(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int keep);

/* The one full-model prefill of a request (prefill.c); see there. */
int engine_prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int greedy, float *mean,
                   int *st_rows, struct skipper_error *err);

/* The compute services a policy calls through its host (services.c), set
 * into the engine's policy env. */
void engine_bind_services(struct skipper_engine *e);

#endif
