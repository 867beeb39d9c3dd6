/* What the parts of the engine share: the engine's state, one request's
 * round context, and the functions one part calls in another. Internal to
 * core/engine/. */
#ifndef SKIPPER_ENGINE_IMPL_H
#define SKIPPER_ENGINE_IMPL_H

#include <stdint.h>
#include <time.h>

#include "econ/adaptive.h"
#include "econ/econ.h"
#include "engine.h"
#include "lookup.h"
#include "ngram_table.h"

#define MAX_DRAFT 32        /* chain tokens per round */
#define MAX_NODES 128       /* tree nodes per round (root excluded) */

struct skipper_engine {
	struct skipper_backend *be;
	const struct skipper_tokenizer *tok;
	struct skipper_policy_instance *pol; /* NULL = autoregressive */
	int n_vocab, n_layer, top_k;
	uint64_t request_id;

	uint8_t *skip_attn, *skip_mlp;
	/* draft chain */
	int32_t d_tok[MAX_DRAFT];
	float d_prob[MAX_DRAFT];
	int32_t *d_top_ids;   /* [MAX_DRAFT][top_k] */
	float *d_top_probs;
	float *d_q;           /* [MAX_DRAFT][n_vocab] processed draft distributions (sampling) */
	/* verification batch (root + nodes) */
	int32_t b_tok[MAX_NODES + 1], b_pos[MAX_NODES + 1], b_parent[MAX_NODES + 1], b_rows[MAX_NODES + 1];
	int32_t b_depth[MAX_NODES + 1];
	int32_t v_top[MAX_NODES + 1];
	float *logits;        /* [MAX_NODES + 1][n_vocab] */
	float *p, *q;         /* [n_vocab] work distributions */
	struct skipper_prob_id *scratch;
	/* tree handed to the policy */
	int32_t t_tok[MAX_NODES], t_parent[MAX_NODES], t_chain[MAX_NODES];
	/* output so far */
	int32_t *gen;
	int gen_cap;
	int committed;        /* KV length visible to compute services */
	/* captures the policy needs (skipper_needs) */
	uint64_t needs;
	int prompt_rows;
	int n_points;         /* per captured row: n_layer + 1, or 2 n_layer + 1 (SUBLAYER_STATES) */
	int cap_sub;          /* captures at sub-layer boundaries (backend cap_sublayers) */
	int32_t cap_layers[1025];
	float *cap;           /* [MAX_NODES + 1][n_points][n_embd] */
	float *cap_sel;       /* the selected rows, handed to on_accept */
	int32_t cap_pos[MAX_NODES + 1], cap_tok[MAX_NODES + 1];
	/* fixed plan (no policy): host->trial */
	uint8_t *fixed_attn, *fixed_mlp;
	int fixed_max_draft;
	struct econ_adaptive fixed_exit; /* gamma: the exit threshold (adaptive when alpha > 0) */
	struct skipper_rng rng;
	/* context lookup: the history it searches (prompt + committed output),
	 * this round's proposal (from the context, or from the corpus n-grams
	 * when lk_corpus) with each token's acceptance to expect and, after
	 * build_batch, the batch row of each proposed token (-1 = not
	 * verified) */
	struct skipper_lookup_opts lk;
	int32_t *hist;
	int hist_n, hist_cap;
	struct lookup_stats lk_stats;
	struct ngram_table ngrams;
	struct ngram_stats ng_stats;
	struct lookup_tree lk_tree;
	/* lookup-only rounds verify the tree's most promising nodes (lk_sel) when
	 * that promises more than the chain; lk_tree_n of them, 0 = the chain */
	uint8_t lk_sel[LOOKUP_TREE_NODES];
	int lk_tree_n;
	int32_t lk_tok[MAX_DRAFT], lk_row[MAX_DRAFT];
	float lk_p[MAX_DRAFT];   /* acceptance to expect, given the tokens before it were accepted */
	float lk_table[MAX_DRAFT]; /* corpus proposals: the table's probabilities */
	int lk_n, lk_ngram, lk_corpus;
	/* draft head over a vocabulary subset (0 = full head) */
	int draft_n;
	int32_t *draft_ids;
	float *sub_logits;    /* [draft_n] a draft step's subset logits (sampling) */
	/* measured costs (costs.c) */
	struct skipper_costs costs;
	int have_costs;
	/* never slower than plain steps: a rate guard per draft source */
	struct guard {
		double tok, sec;   /* tokens and seconds of recent rounds, decayed */
		int rounds;        /* rounds in that window */
		int pause;         /* rounds left in which this source does not draft */
		int pause_len;     /* next pause, doubled by each failed probe */
	} guard[3];
	double plain_tok, plain_sec; /* recent plain rounds, decayed */
	double row_seen, row_model;  /* extra steps of recent lookup passes: measured, and the curve's; decayed */
	int no_guard;         /* skipper_engine_set_guard(e, 0) */
	double (*clock)(void *ctx); /* skipper_engine_set_clock; NULL = engine_now */
	void *clock_ctx;
	double skip_hits, skip_tries; /* the policy drafts' tokens accepted / tried, decayed */
};

/* Corpus n-gram proposals have a guard of their own: where the model
 * writes unlike its corpus they fail, and they must not pause the
 * context's copies with them. */
enum { GUARD_SKIP = 0, GUARD_LOOKUP = 1, GUARD_CORPUS = 2 };

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
	skipper_token_cb cb;
	void *user;
	struct skipper_run_stats *st;
};

static inline double engine_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Commit one output token: record, report, check EOS / max / callback
 * (engine.c). */
int engine_emit(struct skipper_engine *e, struct round_ctx *r, int32_t tok);

/* Draft up to max_draft chain tokens with the round's skip mask into
 * e->d_tok / d_prob / d_top_*; *n_out gets how many (draft.c). */
int engine_draft(struct skipper_engine *e, struct round_ctx *r, int max_draft, int *n_out,
                 struct skipper_error *err);

/* Verify the root and the n_draft drafted tokens (or the policy's tree)
 * with the full model, accept, compact the KV cache, emit, and report to
 * the policy (verify.c). */
int engine_verify(struct skipper_engine *e, struct round_ctx *r, int n_draft, struct skipper_error *err);

/* Cost of a full-model pass over n rows, in decode steps, as passes cost
 * now (costs.c). */
double engine_verify_cost(const struct skipper_engine *e, int n);

/* After every round: a round that was one verify pass over `rows` rows
 * (lookup alone; 0 otherwise) took sec seconds. engine_verify_cost scales
 * the curve's extra rows by what they cost, against plain steps; the
 * evidence fades round by round, so a curve found too cheap once is tried
 * again later (costs.c). */
void engine_learn_rows(struct skipper_engine *e, int rows, double sec);

/* The one full-model prefill of a request (prefill.c); see there. */
int engine_prefill(struct skipper_engine *e, const int32_t *prompt, int n_prompt, int greedy, float *mean,
                   int *st_rows, struct skipper_error *err);

#endif
