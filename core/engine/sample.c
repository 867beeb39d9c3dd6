#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

int32_t skipper_argmax(const float *x, int n)
{
	int32_t best = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

static int by_prob_desc(const void *a, const void *b)
{
	const struct skipper_prob_id *x = a, *y = b;
	if (x->p != y->p)
		return x->p > y->p ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* "a ranks below b" in the by_prob_desc order */
static int worse(const struct skipper_prob_id *a, const struct skipper_prob_id *b)
{
	return by_prob_desc(a, b) > 0;
}

static void sift_down(struct skipper_prob_id *h, int k, int i)
{
	for (;;) {
		int w = i, l = 2 * i + 1, r = l + 1;
		if (l < k && worse(&h[l], &h[w]))
			w = l;
		if (r < k && worse(&h[r], &h[w]))
			w = r;
		if (w == i)
			return;
		struct skipper_prob_id t = h[i];
		h[i] = h[w];
		h[w] = t;
		i = w;
	}
}

/* The k best of probs into h[0..k) (unordered) via a heap whose root is the
 * worst kept entry. */
static int select_top(const float *probs, int n, int k, struct skipper_prob_id *h)
{
	for (int i = 0; i < k; i++)
		h[i] = (struct skipper_prob_id){ probs[i], i };
	for (int i = k / 2; i-- > 0;)
		sift_down(h, k, i);
	for (int i = k; i < n; i++) {
		struct skipper_prob_id c = { probs[i], i };
		if (worse(&h[0], &c)) {
			h[0] = c;
			sift_down(h, k, 0);
		}
	}
	return k;
}

void skipper_process_logits(const struct skipper_sampling *s, const float *logits, int n, float *probs,
                            struct skipper_prob_id *idx)
{
	float t = s->temperature > 0 ? s->temperature : 1.0f, mx = logits[skipper_argmax(logits, n)];
	double sum = 0;
	int keep = n;

	if (s->temperature <= 0) { /* greedy is the one-hot distribution of the argmax */
		memset(probs, 0, (size_t)n * sizeof *probs);
		probs[skipper_argmax(logits, n)] = 1.0f;
		return;
	}
	for (int i = 0; i < n; i++) {
		probs[i] = expf((logits[i] - mx) / t);
		sum += probs[i];
	}
	for (int i = 0; i < n; i++)
		probs[i] = (float)(probs[i] / sum);
	if ((s->top_k <= 0 || s->top_k >= n) && s->top_p >= 1.0f)
		return;

	/* Order by probability; ties by lower id so the kept set is deterministic.
	 * With top-k only the k best are selected (heap) and sorted. */
	if (s->top_k > 0 && s->top_k < n) {
		keep = select_top(probs, n, s->top_k, idx);
	} else {
		for (int i = 0; i < n; i++)
			idx[i] = (struct skipper_prob_id){ probs[i], i };
	}
	qsort(idx, (size_t)keep, sizeof *idx, by_prob_desc);
	if (s->top_p < 1.0f) {
		double cum = 0;
		for (int i = 0; i < keep; i++) {
			cum += idx[i].p;
			if (cum >= s->top_p) {
				keep = i + 1;
				break;
			}
		}
	}
	sum = 0;
	for (int i = 0; i < keep; i++)
		sum += idx[i].p;
	/* Zero everything, then restore the kept entries (idx holds their values). */
	memset(probs, 0, (size_t)n * sizeof *probs);
	for (int i = 0; i < keep; i++)
		probs[idx[i].id] = (float)(idx[i].p / sum);
}

int32_t skipper_sample_probs(const float *probs, int n, struct skipper_rng *r)
{
	double u = skipper_rng_double(r), cum = 0, total = 0;
	int32_t last = -1;

	for (int i = 0; i < n; i++)
		total += probs[i];
	u *= total; /* tolerate sums a rounding error away from 1 */
	for (int i = 0; i < n; i++) {
		if (probs[i] <= 0)
			continue;
		cum += probs[i];
		last = i;
		if (u < cum)
			return i;
	}
	return last >= 0 ? last : 0;
}
