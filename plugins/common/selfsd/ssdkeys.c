#include <string.h>

#include "common/keys/keys.h"
#include "ssdkeys.h"

int ssd_keys_config(const struct skipper_host *h, void *ctx, struct ssd_keys *k, const char *key,
                       const char *v)
{
	if (!strcmp(key, "max_draft"))
		return key_parse_int(h, ctx, v, 1, 32, &k->max_draft);
	if (!strcmp(key, "threshold"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->threshold);
	if (!strcmp(key, "adaptive"))
		return h->parse_bool(ctx, v, &k->adaptive);
	if (!strcmp(key, "alpha"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->alpha);
	if (!strcmp(key, "epsilon"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->eps);
	if (!strcmp(key, "beta1"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->beta1);
	if (!strcmp(key, "beta2"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->beta2);
	if (!strcmp(key, "iterations"))
		return key_parse_int(h, ctx, v, 0, 100000, &k->iterations);
	if (!strcmp(key, "probes"))
		return key_parse_int(h, ctx, v, 0, 3, &k->probes);
	if (!strcmp(key, "calib_prompts"))
		return key_parse_int(h, ctx, v, 1, 1000, &k->calib_prompts);
	if (!strcmp(key, "calib_tokens"))
		return key_parse_int(h, ctx, v, 1, 4096, &k->calib_tokens);
	if (!strcmp(key, "search_max_draft"))
		return key_parse_int(h, ctx, v, 1, 32, &k->search_max_draft);
	if (!strcmp(key, "search_threshold"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->search_threshold);
	if (!strcmp(key, "acq_samples"))
		return key_parse_int(h, ctx, v, 1, 1000000, &k->acq_samples);
	if (!strcmp(key, "acq_starts"))
		return key_parse_int(h, ctx, v, 1, 1000, &k->acq_starts);
	if (!strcmp(key, "early_stop"))
		return h->parse_double(ctx, v, 0.0, 1.0, &k->early_stop);
	if (!strcmp(key, "ar_every"))
		return key_parse_int(h, ctx, v, 0, 100000, &k->ar_every);
	if (!strcmp(key, "confirm"))
		return key_parse_int(h, ctx, v, 0, 100, &k->confirm);
	if (!strcmp(key, "min_speedup"))
		return h->parse_double(ctx, v, 0.0, 100.0, &k->min_speedup);
	if (!strcmp(key, "objective")) {
		if (strcmp(v, "time") && strcmp(v, "expected")) {
			h->set_error(ctx, "expected time or expected, got '%s'", v);
			return SKIPPER_POLICY_ERROR;
		}
		k->objective = v[0] == 'e';
		return SKIPPER_POLICY_OK;
	}
	return SKIPPER_POLICY_UNKNOWN_KEY;
}
