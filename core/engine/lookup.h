/* Context-lookup drafts (prompt lookup decoding): the tokens that followed
 * an earlier occurrence of the longest suffix n-gram of the prompt and
 * output, the one whose preceding context matches longest. No model pass
 * at all; the engine verifies them like any draft. Internal to
 * core/engine/. */
#ifndef SKIPPER_LOOKUP_H
#define SKIPPER_LOOKUP_H

#include <stdint.h>

#define LOOKUP_MAX_NGRAM 8
/* tokens of context compared beyond the n-gram when choosing among its
 * occurrences */
#define LOOKUP_CONTEXT 64

/* Distinct continuations a proposal holds at most ([lookup] branches). */
#define LOOKUP_BRANCHES 8
#define LOOKUP_TREE_NODES (LOOKUP_BRANCHES * 32)

/* A proposal: the continuations of the earlier occurrences of the longest
 * suffix n-gram, merged into a tree. Nodes 0 .. spine-1 are the
 * best-ranked continuation, each the child of the one before (the chain
 * that a round verifies when it cannot verify a tree); a parent always
 * comes before its children. */
struct lookup_tree {
	int n, spine;
	int32_t tok[LOOKUP_TREE_NODES];
	int16_t parent[LOOKUP_TREE_NODES]; /* -1: the first token after the history */
	int32_t count[LOOKUP_TREE_NODES];  /* occurrences whose continuation runs through it */
	uint8_t first[LOOKUP_TREE_NODES];  /* its parent's first child: the best-ranked way on */
};

/* The continuations, up to max_out tokens each and at most `branches`
 * distinct ones, of the longest suffix of hist[0..n) of length
 * min_ngram..max_ngram that occurs earlier in hist. They rank by how far
 * the tokens before each occurrence agree with those before the suffix
 * (up to LOOKUP_CONTEXT), the most recent first among equals: where a
 * prompt repeats a phrase, the copy being followed is the one whose
 * context matches (replayed on the 1.5B's Spec-Bench outputs, code edits
 * +3 %, overall +0.4 % against the most recent occurrence). Occurrences
 * whose continuations agree (over the shorter one) count as one, the
 * longer kept; the 1024 most recent occurrences at most are looked at
 * (a bounded cost per round). Returns the spine's length, 0 when nothing
 * matches; *ngram gets the matched length (acceptance is kept per
 * length). */
int lookup_propose(const int32_t *hist, int n, int min_ngram, int max_ngram, int max_out, int branches,
                   struct lookup_tree *t, int *ngram);

/* Collecting one proposal's continuations (lookup_propose's, and the
 * history's over its own text): occurrences at a[j .. j + g) of the key
 * ctx[nc - g .. nc), ranked by how far the text before them agrees with
 * the text before the key (with by_count set, by how often each was taken
 * first), continuations read from a up to a -1 (the line between two
 * requests in a history) or a's end. */
struct lookup_branch {
	int j, agree, start, len, count;
};
struct lookup_collect {
	const int32_t *a, *ctx;
	int na, nc, g, max_out, max;
	int by_count;         /* rank by how often each continuation occurred first (a history's) */
	struct lookup_branch b[LOOKUP_BRANCHES];
	int m;
};
void lookup_collect_init(struct lookup_collect *c, const int32_t *a, int na, const int32_t *ctx, int nc, int g,
                         int max_out, int branches);
void lookup_collect_add(struct lookup_collect *c, int j);
/* The kept continuations merged into t (lookup_propose's tree); the
 * spine's length, 0 when none was kept. */
int lookup_collect_tree(struct lookup_collect *c, struct lookup_tree *t);

/* How often proposals are accepted, per matched n-gram length and per
 * whether the previous proposal was accepted whole (copying tends to go
 * on): each proposed token is modelled as accepted with probability a
 * (given the ones before it were), a estimated from recent rounds. The
 * evidence fades every round, proposals or not, so a kind of match that
 * stopped being tried drifts back to the prior and is probed again. */
struct lookup_stats {
	double hits[LOOKUP_MAX_NGRAM + 1][2], tries[LOOKUP_MAX_NGRAM + 1][2];
	int streak; /* the last proposal was accepted whole */
	/* where the model left the best-ranked continuation at a node that
	 * had others verified beside it: how often it took one of those */
	double alt_hits, alt_tries;
};

/* a for a match of length n now. */
double lookup_accept_rate(const struct lookup_stats *s, int n);
/* The tokens of evidence behind all of them (tried and faded). */
double lookup_evidence(const struct lookup_stats *s);

/* The chance that the model, leaving a node's best-ranked continuation,
 * takes one of the others. */
double lookup_alt_rate(const struct lookup_stats *s);

/* After a round that verified the nodes of t with sel[i] set: walk the
 * tree along the tokens the model wrote (target[0..n_target), the
 * accepted ones and the bonus) and learn whether, where it left the
 * best-ranked continuation, it took one of the other verified ones. */
void lookup_record_alt(struct lookup_stats *s, const struct lookup_tree *t, const uint8_t *sel,
                       const int32_t *target, int n_target);

/* Record a round: k tokens proposed after an n-gram match, the first
 * `accepted` of them accepted (k = 0: nothing proposed, only time passes). */
void lookup_record(struct lookup_stats *s, int n, int k, int accepted);

#endif
