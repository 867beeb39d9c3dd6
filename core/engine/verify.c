/* Verification and acceptance, the engine's lossless core: the candidates
 * (chain or the policy's tree) go through the full model in one batch; a
 * greedy draft token is accepted iff it equals the target argmax, sampled
 * ones by speculative sampling (multi-candidate for trees); the accepted
 * path is compacted in the KV cache and reported to the policy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "base/error.h"

/* Residual distribution norm(max(0, p - q)) into p; returns 0 if empty. */
static int residual(float *p, const float *q, int n)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		float d = p[i] - q[i];
		p[i] = d > 0 ? d : 0;
		sum += p[i];
	}
	if (sum <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		p[i] = (float)(p[i] / sum);
	return 1;
}

/* Copy captured rows (batch rows, all layer points) into cap_sel and
 * describe them; row r sits at position base + its index in the path. */
static void select_states(struct skipper_engine *e, const int *rows, int n, int base, struct skipper_states *st)
{
	size_t per = (size_t)e->cap.n_points * e->be->model->hp.n_embd;
	for (int i = 0; i < n; i++) {
		memcpy(&e->cap.sel[i * per], &e->cap.buf[(size_t)rows[i] * per], per * sizeof *e->cap.buf);
		e->cap.pos[i] = base + i;
		e->cap.tok[i] = e->vb.tok[rows[i]];
	}
	if (n == 1) /* only the last committed row: its position is base + path length */
		e->cap.pos[0] = base + e->vb.depth[rows[0]];
	*st = (struct skipper_states){ .n_rows = n, .n_points = e->cap.n_points, .n_embd = e->be->model->hp.n_embd,
	                               .pos = e->cap.pos, .token = e->cap.tok, .data = e->cap.sel };
}

/* Build the verification batch from the policy's tree (or the chain).
 * Row 0 is the root; node i is row i + 1. In sampling mode only nodes
 * hanging off the root or a chain node are kept, and siblings of a chain
 * token are redrawn from the draft distribution without replacement, which
 * is what makes multi-candidate rejection sampling exact. */
/* Beside a policy's draft (greedy only): the lookup proposal as a branch
 * from the root, sharing the rows of any prefix the draft already has, cut
 * to the k whose expected extra tokens pay for its extra rows. With a the
 * lookup's per-token acceptance and s the policy draft's, the branch adds
 * sum over j <= k of a_1..a_j (1 - s^j) expected tokens (it helps where the
 * draft fails) to a round that yields T tokens for C decode steps; it is
 * kept when (T + gain) / (C + extra cost) beats T / C. */
static int add_lookup_branch(struct skipper_engine *e, int n_draft, int n)
{
	double t = 1, c, chain = 1, tokens[MAX_DRAFT], cost[MAX_DRAFT], best, gain = 0;
	double s = engine_skip_accept(e), d = engine_skip_step_cost(e);
	int shared = 0, row = 0, m = 0;

	for (int j = 1; j <= n_draft; j++)
		t += pow(s, j);
	c = n_draft * d + engine_verify_cost(e, n);
	/* the prefix already in the tree */
	for (; shared < e->lk.n; shared++) {
		int child = -1;
		for (int i = row + 1; i < n && child < 0; i++)
			if (e->vb.parent[i] == row && e->vb.tok[i] == e->lk.tok[shared])
				child = i;
		if (child < 0)
			break;
		e->lk.row[shared] = row = child;
	}
	for (int k = 1; k <= e->lk.n && n + (k - shared) <= MAX_NODES + 1; k++, m++) {
		chain *= e->lk.p[k - 1];
		gain += chain * (1.0 - (k <= n_draft ? pow(s, k) : 0.0));
		tokens[k - 1] = t + gain;
		cost[k - 1] = c + (k > shared ? engine_verify_cost(e, n + k - shared) - engine_verify_cost(e, n) : 0.0);
	}
	e->lk.n = econ_best_ratio(tokens, cost, m, t / c, &best);
	for (int i = shared; i < e->lk.n; i++) {
		e->vb.tok[n] = e->lk.tok[i];
		e->vb.parent[n] = row;
		e->vb.depth[n] = e->vb.depth[row] + 1;
		e->lk.row[i] = row = n++;
	}
	return n;
}

/* A lookup-only round: the tree's selected nodes as rows 1.., each
 * after its parent; lk_row gets the rows of the spine's selected nodes
 * (lk_n of them, a prefix of the spine: a node is selected only with its
 * parent). */
static int add_lookup_tree(struct skipper_engine *e, int n)
{
	const struct lookup_tree *t = &e->lk.tree;
	int16_t row[LOOKUP_TREE_NODES];

	e->lk.n = 0;
	for (int i = 0; i < t->n; i++) {
		if (!e->lk.sel[i])
			continue;
		int par = t->parent[i] < 0 ? 0 : row[t->parent[i]];
		e->vb.tok[n] = t->tok[i];
		e->vb.parent[n] = par;
		e->vb.depth[n] = e->vb.depth[par] + 1;
		if (i < t->spine)
			e->lk.row[e->lk.n++] = n;
		row[i] = (int16_t)n++;
	}
	return n;
}

static int build_batch(struct skipper_engine *e, struct round_ctx *r, int n_draft, int *n_rows,
                       struct skipper_error *err)
{
	struct skipper_tree tree = { .capacity = MAX_NODES, .tokens = e->vb.t_tok, .parent = e->vb.t_parent,
	                             .chain_node = e->vb.t_chain };
	int rc, n;

	if (e->pol && n_draft > 0 && !r->lookup_only) {
		struct skipper_draft d = { .root = r->root, .n = n_draft, .tokens = e->draft.tok, .probs = e->draft.prob,
		                           .top_k = e->draft.top_k, .top_ids = e->draft.top_ids, .top_probs = e->draft.top_probs,
		                           .n_committed = r->n_past };
		double t0 = engine_now();
		rc = skipper_policy_verify(e->pol, &d, &tree, err);
		r->st->t_policy += engine_now() - t0;
		if (rc)
			return rc;
		if (r->n_past + 1 + tree.n > e->be->n_ctx)
			tree.n = 0; /* near the end of the context only the chain fits */
	}
	if (tree.n == 0) { /* the chain */
		for (int i = 0; i < n_draft; i++) {
			e->vb.t_tok[i] = e->draft.tok[i];
			e->vb.t_parent[i] = i - 1;
		}
		tree.n = n_draft;
	}
	e->vb.tok[0] = r->root;
	e->vb.parent[0] = -1;
	e->vb.depth[0] = 0;
	n = 1;
	for (int i = 0; i < tree.n; i++) {
		int par = tree.parent[i]; /* checked by skipper_policy_verify */
		e->vb.tok[n] = tree.tokens[i];
		e->vb.parent[n] = par + 1; /* node index -> batch row */
		e->vb.depth[n] = e->vb.depth[par + 1] + 1;
		n++;
	}
	r->n_policy_rows = r->lookup_only ? 1 : n;
	if (r->lookup_only && e->lk.tree_n > 0)
		n = add_lookup_tree(e, n);
	else if (r->lookup_only)
		for (int i = 0; i < e->lk.n; i++)
			e->lk.row[i] = i + 1;
	else if (e->lk.n > 0)
		n = add_lookup_branch(e, n_draft, n);
	for (int i = 0; i < n; i++)
		e->vb.pos[i] = r->n_past + e->vb.depth[i];
	*n_rows = n;
	return SKIPPER_OK;
}

/* Row of the chain token at depth d (1-based) or -1: the chain is the path of
 * rows whose tokens equal d_tok[0..]. */
static int chain_row(struct skipper_engine *e, int n_rows, int depth, int n_draft)
{
	int row = 0;
	for (int d = 1; d <= depth; d++) {
		int found = -1;
		if (d > n_draft)
			return -1;
		for (int i = 1; i < n_rows && found < 0; i++)
			if (e->vb.parent[i] == row && e->vb.tok[i] == e->draft.tok[d - 1])
				found = i;
		if (found < 0)
			return -1;
		row = found;
	}
	return row;
}

/* Greedy: the longest root path whose tokens match the target argmax at
 * their parent; first such path on ties. path[] gets the accepted rows. */
static int accept_greedy(struct skipper_engine *e, int n_rows, int32_t *path, int32_t *bonus)
{
	int len = 0, row = 0;

	for (;;) {
		int next = -1;
		for (int i = row + 1; i < n_rows; i++) {
			if (e->vb.parent[i] == row && e->vb.tok[i] == e->vb.top[row]) {
				next = i;
				break;
			}
		}
		if (next < 0)
			break;
		path[len++] = next;
		row = next;
	}
	*bonus = e->vb.top[row];
	return len;
}

/* Speculative sampling over the spine (chain) with leaf siblings. */
static int accept_sample(struct skipper_engine *e, struct round_ctx *r, int n_rows, int n_draft,
                         int32_t *path, int32_t *bonus)
{
	int nv = e->n_vocab, len = 0, row = 0;
	float *p = e->vb.p, *q = e->vb.q;

	skipper_process_logits(&r->gp->sampling, &e->vb.logits[0], nv, p, e->vb.scratch);
	for (int depth = 1; depth <= n_draft; depth++) {
		const float *qj = &e->draft.q[(size_t)(depth - 1) * nv];
		int accepted = -1;
		memcpy(q, qj, (size_t)nv * sizeof *q);
		for (int i = 1; i < n_rows; i++) {
			double qs = 0;
			int32_t x;
			if (e->vb.parent[i] != row)
				continue;
			x = e->vb.tok[i];
			if (q[x] <= 0)
				continue; /* already tried or impossible under q~ */
			if (skipper_rng_double(&e->rng) < fmin(1.0, (double)p[x] / q[x])) {
				accepted = i;
				break;
			}
			/* rejected: p <- norm(max(0, p - q~)), q~ <- q without x */
			if (!residual(p, q, nv))
				break;
			q[x] = 0;
			for (int k = 0; k < nv; k++)
				qs += q[k];
			if (qs <= 0)
				break;
			for (int k = 0; k < nv; k++)
				q[k] = (float)(q[k] / qs);
		}
		if (accepted < 0)
			break;
		path[len++] = accepted;
		row = accepted;
		skipper_process_logits(&r->gp->sampling, &e->vb.logits[(size_t)row * nv], nv, p, e->vb.scratch);
		if (chain_row(e, n_rows, depth, n_draft) != row)
			break; /* an accepted sibling is a leaf */
	}
	*bonus = skipper_sample_probs(p, nv, &e->rng);
	return len;
}

/* Speculative sampling over a lookup tree: deterministic proposals (q = 1
 * on each token). At each accepted row its children are tried in turn,
 * each accepted with its token's share of what is left of the target
 * distribution p, then removed from it; when all are rejected the bonus
 * token is drawn from the rest. Each token keeps its probability under p
 * (for one child this is the chain's rule with q = 1). */
static int accept_sample_lookup(struct skipper_engine *e, struct round_ctx *r, int n_rows, int32_t *path,
                                int32_t *bonus)
{
	int nv = e->n_vocab, len = 0, row = 0;
	float *p = e->vb.p;

	skipper_process_logits(&r->gp->sampling, &e->vb.logits[0], nv, p, e->vb.scratch);
	for (;;) {
		int accepted = -1;
		double left = 1.0;
		for (int i = row + 1; i < n_rows && accepted < 0; i++) {
			int32_t x = e->vb.tok[i];
			if (e->vb.parent[i] != row || p[x] <= 0)
				continue;
			if (skipper_rng_double(&e->rng) * left < p[x]) {
				accepted = i;
			} else {
				left -= p[x];
				p[x] = 0;
			}
		}
		if (accepted < 0)
			break;
		path[len++] = accepted;
		row = accepted;
		skipper_process_logits(&r->gp->sampling, &e->vb.logits[(size_t)row * nv], nv, p, e->vb.scratch);
	}
	*bonus = skipper_sample_probs(p, nv, &e->rng);
	return len;
}

/* Replace the siblings of each chain node by draws without replacement
 * from that depth's draft distribution (sampling mode). */
static void redraw_siblings(struct skipper_engine *e, int n_rows, int n_draft)
{
	int nv = e->n_vocab;
	for (int depth = 1; depth <= n_draft; depth++) {
		int parent = chain_row(e, n_rows, depth - 1, n_draft), chain = chain_row(e, n_rows, depth, n_draft);
		float *q = e->vb.q;
		if (parent < 0 || chain < 0)
			return;
		memcpy(q, &e->draft.q[(size_t)(depth - 1) * nv], (size_t)nv * sizeof *q);
		q[e->vb.tok[chain]] = 0;
		for (int i = 1; i < n_rows; i++) {
			if (e->vb.parent[i] != parent || i == chain)
				continue;
			int32_t x = skipper_sample_probs(q, nv, &e->rng);
			if (q[x] <= 0)
				x = e->vb.tok[chain]; /* q exhausted: a duplicate is rejected harmlessly */
			e->vb.tok[i] = x;
			q[x] = 0;
		}
	}
}

/* Drop tree nodes that sampling cannot verify (parent off the spine). */
static int prune_to_spine(struct skipper_engine *e, int n_rows, int n_draft)
{
	int map[MAX_NODES + 1], n = 1;
	map[0] = 0;
	for (int i = 1; i < n_rows; i++) {
		int par = e->vb.parent[i], keep = 0;
		for (int d = 0; d <= n_draft && !keep; d++)
			keep = map[par] >= 0 && chain_row(e, n_rows, d, n_draft) == par;
		map[i] = keep ? n : -1;
		if (keep) {
			e->vb.tok[n] = e->vb.tok[i];
			e->vb.parent[n] = map[par];
			e->vb.depth[n] = e->vb.depth[i];
			e->vb.pos[n] = e->vb.pos[i];
			n++;
		}
	}
	return n;
}

/* The full model over the batch rows (KV written), top-1 of every row (the
 * id alone: a softmax normaliser over the vocabulary would cost a tenth of
 * a millisecond a row), raw logits when sampling, captures when the round
 * asks for them. */
void engine_verify_forward(struct skipper_engine *e, const struct round_ctx *r, struct skipper_forward *fw)
{
	*fw = (struct skipper_forward){
		.n = r->n_rows, .tokens = e->vb.tok, .pos = e->vb.pos, .parent = r->chain ? NULL : e->vb.parent, .seq = e->seq,
		.n_past = r->n_past, .kv_write = 1, .n_out = r->n_rows, .out_rows = e->vb.rows, .top_k = 1,
		.top_ids = e->vb.top, .logits = r->greedy ? NULL : e->vb.logits,
	};
	if (r->capture) {
		fw->n_cap_layers = e->cap.n_points;
		fw->cap_layers = e->cap.layers;
		fw->cap_sublayers = e->cap.sub;
		fw->n_cap_rows = r->n_rows;
		fw->cap_rows = e->vb.rows;
		fw->captures = e->cap.buf;
	}
}

/* Move the accepted path's K/V to contiguous slots after the root, emit its
 * tokens and the bonus token, and advance the committed length. The root's
 * K/V is now committed, and each emitted accepted token's except the last
 * emitted one (it becomes the next root, exactly as in autoregressive
 * decoding). Generation may stop inside the accepted run (EOS, max_tokens):
 * what follows is not committed. */
static int commit_path(struct skipper_engine *e, struct round_ctx *r, const int32_t *path, int n_acc, int chain,
                       int32_t bonus, struct skipper_error *err)
{
	int emitted = 0, rc;

	if (!chain && n_acc > 0) {
		int32_t src[MAX_NODES], dst[MAX_NODES], m = 0;
		for (int i = 0; i < n_acc; i++) {
			if (path[i] != i + 1) {
				src[m] = r->n_past + path[i];
				dst[m] = r->n_past + i + 1;
				m++;
			}
		}
		if (m && (rc = skipper_backend_kv_move(e->be, e->seq, src, dst, m, err)))
			return rc;
	}
	for (int i = 0; i < n_acc && !r->done; i++, emitted++)
		if ((rc = engine_emit(e, r, e->vb.tok[path[i]])))
			return skipper_fail(err, rc, "out of memory");
	if (!r->done) {
		if ((rc = engine_emit(e, r, bonus)))
			return skipper_fail(err, rc, "out of memory");
		r->n_past += n_acc + 1;
	} else {
		r->n_past += emitted;
	}
	e->out.committed = r->n_past;
	r->root = bonus;
	return SKIPPER_OK;
}

/* Who proposed the accepted path: its leading rows among the policy's
 * candidates, and its leading rows along the lookup branch (a shared
 * prefix counts for both). */
static void count_sources(const struct skipper_engine *e, const struct round_ctx *r, const int32_t *path, int n_acc,
                          int *pol_acc, int *lk_acc)
{
	*pol_acc = *lk_acc = 0;
	while (*pol_acc < n_acc && path[*pol_acc] < r->n_policy_rows)
		(*pol_acc)++;
	while (*lk_acc < n_acc && *lk_acc < e->lk.n && path[*lk_acc] == e->lk.row[*lk_acc])
		(*lk_acc)++;
}

struct verdict_counts {
	int drafted, accepted;     /* the policy's own */
	int lookup, lookup_accepted;
};

/* The policy's on_accept hook: what of its own draft was accepted, what
 * lookup added, and, when the round captured states, those of the
 * committed rows (the root and the accepted path with ACCEPTED_STATES, or
 * only the last of them). */
static int report_verdict(struct skipper_engine *e, struct round_ctx *r, const int32_t *path, int n_acc,
                          const struct verdict_counts *vc, int n_rows, int32_t bonus, double t_verify,
                          struct skipper_error *err)
{
	int32_t acc_tok[MAX_NODES], acc_node[MAX_NODES];
	struct skipper_states states;
	int sel_rows[MAX_NODES + 1], n_sel = 0, rc;

	for (int i = 0; i < vc->accepted; i++) {
		acc_tok[i] = e->vb.tok[path[i]];
		acc_node[i] = path[i] - 1;
	}
	if (r->capture) {
		if (e->cap.needs & SKIPPER_NEED_ACCEPTED_STATES) {
			sel_rows[n_sel++] = 0;
			for (int i = 0; i < n_acc; i++)
				sel_rows[n_sel++] = path[i];
		} else {
			sel_rows[n_sel++] = n_acc ? path[n_acc - 1] : 0;
		}
		select_states(e, sel_rows, n_sel, r->n_past - n_acc - 1, &states);
	}
	struct skipper_verdict v = {
		.round = r->st->rounds - 1, .n_drafted = vc->drafted, .n_verified = n_rows - 1, .n_accepted = vc->accepted,
		.accepted = acc_tok, .accepted_nodes = acc_node, .bonus = r->done ? -1 : bonus,
		.n_committed = r->n_past, .generated = e->out.gen, .n_generated = r->n_gen,
		.draft_seconds = r->t_draft, .verify_seconds = t_verify, .states = r->capture ? &states : NULL,
		.n_lookup = vc->lookup, .n_lookup_accepted = vc->lookup_accepted,
	};
	double t0 = engine_now();
	rc = skipper_policy_on_accept(e->pol, &v, err);
	r->st->t_policy += engine_now() - t0;
	return rc;
}

int engine_verify_build(struct skipper_engine *e, struct round_ctx *r, int n_draft, struct skipper_error *err)
{
	int rc, n_rows = 0;

	if ((rc = build_batch(e, r, n_draft, &n_rows, err)))
		return rc;
	r->chain = 1;
	for (int i = 1; i < n_rows; i++)
		if (e->vb.parent[i] != i - 1)
			r->chain = 0;
	if (!r->greedy && !r->chain && !e->lk.tree_n) {
		n_rows = prune_to_spine(e, n_rows, n_draft);
		redraw_siblings(e, n_rows, n_draft);
	}
	for (int i = 0; i < n_rows; i++)
		e->vb.rows[i] = i;
	r->n_rows = n_rows;
	r->n_draft = n_draft;
	return SKIPPER_OK;
}

int engine_verify_pass(struct skipper_engine *e, struct round_ctx *r, struct skipper_error *err)
{
	struct skipper_forward fw;
	int rc;

	r->t_verify0 = engine_now();
	engine_verify_forward(e, r, &fw);
	if ((rc = skipper_backend_forward(e->be, &fw, err)))
		return rc;
	engine_verify_passed(e, r, engine_now() - r->t_verify0);
	return SKIPPER_OK;
}

void engine_verify_passed(struct skipper_engine *e, struct round_ctx *r, double seconds)
{
	r->st->t_verify += seconds;
	r->st->rounds++;
}

int engine_verify_accept(struct skipper_engine *e, struct round_ctx *r, struct skipper_error *err)
{
	int32_t path[MAX_NODES], bonus;
	int rc, n_acc, n_rows = r->n_rows, n_draft = r->n_draft, chain = r->chain;

	double ts = engine_now();
	if (r->greedy)
		n_acc = accept_greedy(e, n_rows, path, &bonus);
	else if (e->lk.tree_n)
		n_acc = accept_sample_lookup(e, r, n_rows, path, &bonus);
	else
		n_acc = accept_sample(e, r, n_rows, n_draft, path, &bonus);
	r->st->t_sample += engine_now() - ts;
	int pol_drafted = r->lookup_only ? 0 : n_draft, pol_acc = 0, lk_acc = 0;
	int lk_drafted = e->lk.tree_n ? e->lk.tree_n : e->lk.n;
	count_sources(e, r, path, n_acc, &pol_acc, &lk_acc);
	if (e->lk.opts.enable && (e->lk.corpus || e->lk.from_history)) {
		ngram_record(e->lk.corpus ? &e->lk.ng_stats : &e->lk.hist_stats, e->lk.table, e->lk.n, lk_acc);
		lookup_record(&e->lk.stats, 0, 0, 0); /* the context's evidence fades all the same */
		if (e->lk.corpus) {
			r->st->ngram_drafted += e->lk.n;
			r->st->ngram_accepted += lk_acc;
		} else {
			r->st->history_drafted += e->lk.n;
			r->st->history_accepted += lk_acc;
		}
	} else if (e->lk.opts.enable) {
		/* a tree's spine is evidence as a chain's; the rest of it, where
		 * the model left the spine */
		lookup_record(&e->lk.stats, e->lk.ngram, e->lk.n, lk_acc);
		if (e->lk.tree_n) {
			int32_t target[MAX_NODES + 1];
			for (int i = 0; i < n_acc; i++)
				target[i] = e->vb.tok[path[i]];
			target[n_acc] = bonus;
			lookup_record_alt(&e->lk.stats, &e->lk.tree, e->lk.sel, target, n_acc + 1);
			lk_acc = n_acc;
		}
	}
	if (pol_drafted > 0) {
		e->pace.skip_hits = 0.9 * e->pace.skip_hits + pol_acc;
		e->pace.skip_tries = 0.9 * e->pace.skip_tries + pol_acc + (pol_acc < pol_drafted);
	}
	r->st->drafts += pol_drafted > 0;
	r->st->lookup_drafts += lk_drafted > 0;
	r->st->ngram_drafts += lk_drafted > 0 && e->lk.opts.enable && e->lk.corpus;
	r->st->history_drafts += lk_drafted > 0 && e->lk.opts.enable && e->lk.from_history;
	r->st->drafted += pol_drafted + lk_drafted;
	r->st->accepted += n_acc;
	r->st->lookup_drafted += lk_drafted;
	r->st->lookup_accepted += lk_acc;
	if ((rc = commit_path(e, r, path, n_acc, chain, bonus, err)))
		return rc;
	if (!e->pol)
		return SKIPPER_OK;
	struct verdict_counts vc = { pol_drafted, pol_acc, lk_drafted, lk_acc };
	return report_verdict(e, r, path, n_acc, &vc, n_rows, bonus, engine_now() - r->t_verify0, err);
}
