#include <stdlib.h>
#include <string.h>

#include "masktrial.h"

int ssd_ar_ref_init(struct ssd_ar_ref *a, int n)
{
	memset(a, 0, sizeof *a);
	a->n_prompts = n;
	a->tok = calloc((size_t)n, sizeof *a->tok);
	a->sec = calloc((size_t)n, sizeof *a->sec);
	return a->tok && a->sec ? SKIPPER_POLICY_OK : SKIPPER_POLICY_NOMEM;
}

void ssd_ar_ref_free(struct ssd_ar_ref *a)
{
	free(a->tok);
	free(a->sec);
	memset(a, 0, sizeof *a);
}

static double speed(const struct ssd_ar_ref *a, int upto)
{
	double t = 0, s = 0;
	for (int i = 0; i < upto; i++)
		t += a->tok[i], s += a->sec[i];
	return s > 0 ? t / s : 0;
}

double ssd_ar_ref_speed(const struct ssd_ar_ref *a) { return speed(a, a->n_prompts); }

static void add(struct skipper_trial_result *sum, const struct skipper_trial_result *r)
{
	sum->n_generated += r->n_generated;
	sum->seconds += r->seconds;
	sum->rounds += r->rounds;
	sum->drafted += r->drafted;
	sum->accepted += r->accepted;
}

/* tokens/s, alpha and M of a sum over n prompts, as host->trial defines
 * them (each prompt's first token is the prefill's) */
static void finish(struct skipper_trial_result *r, int n)
{
	r->tokens_per_s = r->seconds > 0 && r->n_generated > n ? (r->n_generated - n) / r->seconds : 0;
	r->alpha = r->drafted ? (double)r->accepted / r->drafted : 0;
	r->mean_accepted = r->rounds ? (double)(r->n_generated - n) / r->rounds : 1.0;
}

int ssd_measure(const struct skipper_host *h, void *ctx, const struct ssd_search *s, const uint8_t *z,
                struct ssd_ar_ref *ar, struct ssd_measure *m)
{
	int L = h->n_layer, n = s->n_prompts, rc;
	int per_prompt = s->objective == SSD_OBJ_TIME && s->early_stop > 0;
	struct skipper_trial t = {
		.skip_attn = z, .skip_mlp = z ? z + L : NULL, .autoregressive = !z, .max_draft = s->max_draft,
		.threshold = s->gamma0, .n_prompts = per_prompt ? 1 : n, .prompts = s->prompts,
		.max_tokens = s->max_tokens, .adaptive = s->adaptive, .target_alpha = s->alpha, .epsilon = s->eps,
		.beta1 = s->beta1, .beta2 = s->beta2,
	};
	int check = z && per_prompt && ar->trials > 0;
	double tok = 0, sec = 0;

	memset(m, 0, sizeof *m);
	if (!per_prompt) {
		rc = h->trial(ctx, &t, &m->r);
		if (!rc && !z) { /* no per-prompt numbers: the total goes to prompt 0 */
			ar->tok[0] += m->r.n_generated > n ? m->r.n_generated - n : 0;
			ar->sec[0] += m->r.seconds;
			ar->trials++;
		}
		m->tokens_per_s = m->r.tokens_per_s;
		return rc;
	}
	for (int i = 0; i < n; i++) {
		struct skipper_trial_result r;
		t.prompts = s->prompts + i;
		if ((rc = h->trial(ctx, &t, &r)))
			return rc;
		add(&m->r, &r);
		double dt = r.n_generated > 1 ? r.n_generated - 1 : 0;
		tok += dt, sec += r.seconds;
		if (!z) {
			ar->tok[i] += dt;
			ar->sec[i] += r.seconds;
		}
		double ref = check ? speed(ar, i + 1) : 0;
		if (i + 1 < n && check && sec > 0 && ref > 0 && tok / sec < s->early_stop * ref) {
			/* same ratio to plain decoding on the prompts left out */
			finish(&m->r, i + 1);
			m->stopped = n - i - 1;
			m->tokens_per_s = tok / sec / ref * ssd_ar_ref_speed(ar);
			return SKIPPER_POLICY_OK;
		}
	}
	if (!z)
		ar->trials++;
	finish(&m->r, n);
	m->tokens_per_s = m->r.tokens_per_s;
	return SKIPPER_POLICY_OK;
}
