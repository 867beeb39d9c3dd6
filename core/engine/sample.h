/* Token selection: greedy argmax and sampling from the processed
 * distribution (temperature, top-k, top-p). The same processing is applied
 * to draft and target logits so speculative sampling stays exact. */
#ifndef SKIPPER_SAMPLE_H
#define SKIPPER_SAMPLE_H

#include <stdint.h>

#include "base/rng.h"

struct skipper_sampling {
	float temperature; /* 0 = greedy */
	int top_k;         /* 0 = whole vocabulary */
	float top_p;       /* 1 = off */
};

/* Index of the largest value; ties go to the lower index. */
int32_t skipper_argmax(const float *x, int n);

struct skipper_prob_id { float p; int32_t id; };

/* Turn raw logits into the processed probability distribution in probs[n]
 * (zeros outside the top-k / top-p set, sums to 1). idx is scratch of n. */
void skipper_process_logits(const struct skipper_sampling *s, const float *logits, int n, float *probs,
                            struct skipper_prob_id *idx);

/* Draw an index from probs[n] (sums to ~1). */
int32_t skipper_sample_probs(const float *probs, int n, struct skipper_rng *r);

#endif
