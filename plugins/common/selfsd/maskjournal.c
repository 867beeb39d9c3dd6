#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maskjournal.h"

/* What decides the meaning of a recorded y and the order of the probes: a
 * journal written under other values is not this search's. The prompts go
 * in as a hash (FNV-1a) of their texts. */
static void settings(const struct ssd_search *s, char *buf, size_t size)
{
	uint64_t hsh = 1469598103934665603ull;
	for (int i = 0; i < s->n_prompts; i++)
		for (const char *c = s->prompts[i];; c++) {
			hsh = (hsh ^ (unsigned char)*c) * 1099511628211ull;
			if (!*c)
				break;
		}
	snprintf(buf, size,
	         "prompts=%d:%016llx tokens=%d K=%d gamma0=%g adaptive=%d alpha=%g eps=%g beta1=%g beta2=%g "
	         "objective=%s seed=%llu probes=%d",
	         s->n_prompts, (unsigned long long)hsh, s->max_tokens, s->max_draft, s->gamma0, s->adaptive, s->alpha,
	         s->eps, s->beta1, s->beta2, s->objective == SSD_OBJ_EXPECTED ? "expected" : "time",
	         (unsigned long long)s->seed, s->probes);
}

int ssd_journal_open(const struct skipper_host *h, void *ctx, const struct ssd_search *s, struct ssd_journal *j)
{
	char want[512], key[32];
	const char *have;
	int rc;

	memset(j, 0, sizeof *j);
	if (!s->journal)
		return SKIPPER_POLICY_OK;
	j->path = s->journal;
	snprintf(j->sec, sizeof j->sec, "search.%s", s->journal_section ? s->journal_section : "mask");
	settings(s, want, sizeof want);
	rc = access(j->path, F_OK) == 0 ? h->profile_read(ctx, j->path, &j->p) : h->profile_new(ctx, "search", &j->p);
	if (rc)
		return rc;
	if (!(have = h->profile_get(ctx, j->p, j->sec, "settings")))
		return h->profile_set(ctx, j->p, j->sec, "settings", want);
	if (strcmp(have, want)) {
		h->set_error(ctx, "%s: [%s] was searched with other settings (%s; now %s): remove the file to start over",
		             j->path, j->sec, have, want);
		return SKIPPER_POLICY_ERROR;
	}
	for (;;) {
		snprintf(key, sizeof key, "e%d", j->n + 1);
		if (!h->profile_get(ctx, j->p, j->sec, key))
			break;
		j->n++;
	}
	return SKIPPER_POLICY_OK;
}

int ssd_journal_get(const struct skipper_host *h, void *ctx, const struct ssd_journal *j, int i, double *x, int dim,
                    double *y)
{
	char key[32], *end;
	const char *v;
	snprintf(key, sizeof key, "e%d", i + 1);
	if (!(v = h->profile_get(ctx, j->p, j->sec, key)))
		return SKIPPER_POLICY_UNKNOWN_KEY;
	*y = strtod(v, &end);
	for (int k = 0; k < dim && end != v; k++)
		x[k] = strtod(v = end, &end);
	if (end == v || *end) {
		h->set_error(ctx, "%s: [%s] %s: expected the objective and %d coordinates", j->path, j->sec, key, dim);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

int ssd_journal_add(const struct skipper_host *h, void *ctx, struct ssd_journal *j, const double *x, int dim, double y)
{
	char key[32], *v;
	size_t cap = (size_t)(dim + 1) * 26 + 1, len;
	int rc;
	if (!j->p)
		return SKIPPER_POLICY_OK;
	if (!(v = malloc(cap)))
		return SKIPPER_POLICY_NOMEM;
	/* %.17g: the GP of a resumed search sees exactly the same points */
	len = (size_t)snprintf(v, cap, "%.17g", y);
	for (int k = 0; k < dim; k++)
		len += (size_t)snprintf(v + len, cap - len, " %.17g", x[k]);
	snprintf(key, sizeof key, "e%d", j->n + 1);
	rc = h->profile_set(ctx, j->p, j->sec, key, v);
	free(v);
	if (!rc)
		rc = h->profile_write(ctx, j->p, j->path);
	if (!rc)
		j->n++;
	return rc;
}

void ssd_journal_close(const struct skipper_host *h, void *ctx, struct ssd_journal *j)
{
	if (j->p)
		h->profile_free(ctx, j->p);
	j->p = NULL;
}
