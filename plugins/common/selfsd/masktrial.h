/* One objective evaluation of the skip-set search: a set (or plain
 * decoding) run over the development prompts through host->trial.
 *
 * Why this is more than one trial call: on a CPU most sets are slower than
 * plain decoding, and an evaluation spends its time on prefills and on
 * decoding the whole budget of every prompt even for a set that is
 * obviously losing. With early stopping the prompts run one trial call each,
 * and after each one the set's speed so far is compared with plain
 * decoding's on the same prompts (the running sums of every plain trial);
 * below early_stop times that, the rest is skipped and the set's speed on
 * the full set is projected from the ratio. Winners always run every
 * prompt, so the set finally chosen was measured in full. */
#ifndef COMMON_SELFSD_MASKTRIAL_H
#define COMMON_SELFSD_MASKTRIAL_H

#include <stdint.h>

#include "masksearch.h"

/* Plain decoding per prompt, summed over all its trials so far. */
struct ssd_ar_ref {
	int n_prompts, trials;
	double *tok, *sec;     /* [n_prompts] decode tokens and seconds */
};

struct ssd_measure {
	struct skipper_trial_result r; /* summed over the prompts run */
	double tokens_per_s;   /* on all prompts, projected if stopped */
	int stopped;           /* prompts left out by early stopping */
};

int ssd_ar_ref_init(struct ssd_ar_ref *a, int n_prompts);
void ssd_ar_ref_free(struct ssd_ar_ref *a);
/* Plain decoding's tokens/s over all prompts and trials so far (0 if none). */
double ssd_ar_ref_speed(const struct ssd_ar_ref *a);

/* Plain decoding (z NULL; adds to ar) or set z[2L]; ar may be used for
 * early stopping (s->early_stop > 0, time objective, ar->trials > 0). */
int ssd_measure(const struct skipper_host *h, void *ctx, const struct ssd_search *s, const uint8_t *z,
                struct ssd_ar_ref *ar, struct ssd_measure *m);

#endif
