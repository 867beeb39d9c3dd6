/* What a search leaves in the profile: the set, or the verdict that no set
 * beat plain decoding, and the evidence either way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "masksearch.h"

static int put(const struct skipper_host *h, void *ctx, struct skipper_profile *p, const char *sec, const char *key,
               const char *fmt, double v)
{
	char buf[64];
	snprintf(buf, sizeof buf, fmt, v);
	return h->profile_set(ctx, p, sec, key, buf);
}

int ssd_record(const struct skipper_host *h, void *ctx, struct skipper_profile *p, const char *mask_sec,
               const char *rec_sec, const struct ssd_search *s, const struct ssd_result *res,
                   const uint8_t *attn, const uint8_t *mlp)
{
	int time = s->objective == SSD_OBJ_TIME, rc;
	const char *ms = time ? "%.3f" : "%.4f";
	char seed[32];
	uint8_t *none = calloc((size_t)h->n_layer, 1);

	if (!none)
		return SKIPPER_POLICY_NOMEM;
	/* a rejected set is kept as evidence, under names the policies ignore */
	rc = h->profile_set_mask(ctx, p, mask_sec, "attn", res->draft ? attn : none);
	if (!rc)
		rc = h->profile_set_mask(ctx, p, mask_sec, "mlp", res->draft ? mlp : none);
	free(none);
	if (!rc && !res->draft)
		rc = h->profile_set(ctx, p, mask_sec, "max_draft", "0");
	if (!rc && !res->draft)
		rc = h->profile_set_mask(ctx, p, rec_sec, "best_attn", attn);
	if (!rc && !res->draft)
		rc = h->profile_set_mask(ctx, p, rec_sec, "best_mlp", mlp);
#define REC(key, fmt, val)                                                    \
	if (!rc)                                                              \
		rc = put(h, ctx, p, rec_sec, key, fmt, (double)(val));
	REC("iterations", "%.0f", s->iterations)
	REC("probes", "%.0f", s->probes)
	REC("prompts", "%.0f", s->n_prompts)
	REC("tokens_per_prompt", "%.0f", s->max_tokens)
	snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
	if (!rc)
		rc = h->profile_set(ctx, p, rec_sec, "seed", seed);
	if (!rc)
		rc = h->profile_set(ctx, p, rec_sec, "objective", time ? "time" : "expected");
	REC("objective_value", "%.4f", res->objective)
	REC("tokens_per_s", "%.2f", res->tokens_per_s)
	REC("ar_tokens_per_s", "%.2f", res->ar_tokens_per_s)
	REC("alpha", "%.3f", res->alpha)
	REC("mean_accepted", "%.3f", res->mean_accepted)
	REC("evaluations", "%.0f", res->evaluations)
	REC("resumed", "%.0f", res->resumed)
	REC("stopped_early", "%.0f", res->stopped_early)
	REC("ar_trials", "%.0f", res->ar_trials)
	REC("confirm", "%.0f", time ? s->confirm : 0)
	REC("min_speedup", "%.3f", s->min_speedup > 1 ? s->min_speedup : 1.0)
	REC(time ? "best_ms_per_token" : "best_expected_speedup", ms, res->best_cost)
	REC(time ? "ar_ms_per_token" : "ar_expected_speedup", ms, res->ar_cost)
	if (!rc)
		rc = h->profile_set(ctx, p, rec_sec, "decision", res->draft ? "draft" : "no-draft");
	REC("seconds", "%.1f", res->seconds)
#undef REC
	if (!rc && !res->draft && time)
		h->log(ctx, SKIPPER_LOG_WARN,
		       "%s%sno skip set beat plain decoding (best %.2f ms/token vs %.2f ms/token): profile disables drafting",
		       s->label ? s->label : "", s->label ? ": " : "", res->best_cost, res->ar_cost);
	else if (!rc && !res->draft)
		h->log(ctx, SKIPPER_LOG_WARN,
		       "%s%sno skip set beat plain decoding (best expected speedup %.3f vs 1): profile disables drafting",
		       s->label ? s->label : "", s->label ? ": " : "", res->best_cost);
	return rc;
}

int ssd_profile_max_draft(const struct skipper_host *h, void *ctx, const struct skipper_profile *p, const char *path,
                          const char *sec, int *out)
{
	const char *v = h->profile_get(ctx, p, sec, "max_draft");
	int64_t i;
	if (!v)
		return SKIPPER_POLICY_OK;
	if (h->parse_int(ctx, v, 0, 32, &i)) {
		h->set_error(ctx, "%s: [%s] max_draft: expected an integer in [0, 32], got '%s'", path, sec, v);
		return SKIPPER_POLICY_ERROR;
	}
	*out = (int)i;
	return SKIPPER_POLICY_OK;
}

int ssd_profile_method(const struct skipper_host *h, void *ctx, const struct skipper_profile *p, const char *path,
                       const char *method)
{
	const char *m = h->profile_get(ctx, p, "profile", "method");
	if (m && strcmp(m, method)) {
		h->set_error(ctx, "%s: a profile of method %s, not %s", path, m, method);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

char *ssd_sibling_path(const char *out, const char *suffix)
{
	size_t n = strlen(out);
	char *s = malloc(n + strlen(suffix) + 1);
	if (!s)
		return NULL;
	if (n > 4 && !strcmp(out + n - 4, ".ini"))
		n -= 4;
	memcpy(s, out, n);
	strcpy(s + n, suffix);
	return s;
}
