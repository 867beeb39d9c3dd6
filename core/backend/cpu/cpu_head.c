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

int32_t cpu_argmax(const float *l, int n)
{
	int32_t best = 0;
	for (int i = 1; i < n; i++)
		if (l[i] > l[best])
			best = i;
	return best;
}

void cpu_topk(const struct cpu_kernels *K, float *l, int n, int k, int32_t *ids, float *probs)
{
	int have = 0;

	if (k <= 0)
		return;
	if (k > n)
		k = n;
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
	/* the normaliser through the table's vector exp: a scalar expf per id
	 * cost 0.85 ms a row on a 152k vocabulary, a tenth of a verify row */
	double z = K->exp_sum(l, n, l[ids[0]]);
	for (int i = 0; i < k; i++)
		probs[i] = (float)((double)l[ids[i]] / z);
}
