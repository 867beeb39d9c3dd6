/* Final norm, LM head, and the reductions over the vocabulary (softmax
 * top-k, argmax) done on the CPU without sorting the vocabulary. */
#include "build-config.h"

#include <math.h>

#include "cpu_backend.h"

#pragma GCC optimize("fp-contract=off")

void cpu_head_logits(struct cpu_backend *be, const float *states, size_t ss, int nr, int subset)
{
	const struct cpu_weight *w = subset ? &be->sub_head : &be->head;
	size_t xs;

	cpu_prof(be, SKIPPER_PROF_HEAD);
	cpu_rmsnorm_rows(be, states, ss, be->norm_out, be->xn, be->xn_w, nr);
	const void *x = cpu_prepare_act(be, w, be->xn, be->xn_w, nr, be->n_embd, &xs);
	cpu_matmul(be, w, x, xs, nr, be->logits, be->n_vocab);
	cpu_prof(be, SKIPPER_PROF_TOPK);
}

/* Eight running maxima, so that the compiler keeps them in a vector
 * (fmaxf is a library call here, one per element); a NaN never wins. */
float cpu_max(const float *x, int n)
{
	float m[8];
	int k = 0;
	for (int l = 0; l < 8; l++)
		m[l] = -INFINITY;
	for (; k + 8 <= n; k += 8)
		for (int l = 0; l < 8; l++)
			m[l] = x[k + l] > m[l] ? x[k + l] : m[l];
	for (; k < n; k++)
		m[0] = x[k] > m[0] ? x[k] : m[0];
	for (int l = 1; l < 8; l++)
		m[0] = m[l] > m[0] ? m[l] : m[0];
	return m[0];
}

/* The first id of the largest logit in two vector passes (the largest,
 * then where it first is, 64 ids per test), not a scan comparing each id
 * with l[best]: a dependent load per id, 13x slower on a 152k vocabulary.
 * The result is that scan's: a NaN never wins, but at id 0, where it starts. */
int32_t cpu_argmax(const float *l, int n)
{
	int i = 0;
	if (n <= 0 || l[0] != l[0])
		return 0;
	float m = cpu_max(l, n);
	for (; i + 64 <= n; i += 64) {
		int hit = 0;
		for (int j = 0; j < 64; j++)
			hit |= l[i + j] == m;
		if (hit)
			break;
	}
	for (; i < n; i++)
		if (l[i] == m)
			return i;
	return 0;
}

void cpu_topk(const struct cpu_kernels *K, float *l, int n, int k, int32_t *ids, float *probs)
{
	int have = 0;

	if (k <= 0)
		return;
	if (k > n)
		k = n;
	if (k == 1) {
		ids[0] = cpu_argmax(l, n);
	} else {
		/* Scan ids in increasing order keeping the k best sorted: an equal
		 * logit met later has a higher id, so it goes after (ties by lower id). */
		for (int i = 0; i < n; i++) {
			float v = l[i];
			if (have == k && !(v > l[ids[k - 1]]))
				continue;
			int p = have < k ? have++ : k - 1;
			while (p > 0 && v > l[ids[p - 1]]) {
				ids[p] = ids[p - 1];
				p--;
			}
			ids[p] = i;
		}
	}
	if (!probs)
		return; /* greedy verification wants the ids alone */
	/* the normaliser through the table's vector exp: a scalar expf per id
	 * cost 0.85 ms a row on a 152k vocabulary, a tenth of a verify row */
	double z = K->exp_sum(l, n, l[ids[0]]);
	for (int i = 0; i < k; i++)
		probs[i] = (float)((double)l[ids[i]] / z);
}
