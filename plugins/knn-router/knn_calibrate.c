/* knn-router calibration (KNN-SSD §3.2, reference-code variant): per
 * domain, embed its prompts, K-means them into anchors_per_domain centroids
 * (the domain's anchors), pick the prompts nearest those centroids as the
 * development set and search the domain's skip set with BO on measured
 * tokens/s. Writes the profile and, beside it, the anchors safetensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics/kmeans.h"
#include "common/numerics/vec.h"
#include "common/selfsd/masksearch.h"
#include "knn_calibrate.h"
#include "knn_router.h"

struct domain {
	const char *name;
	int n, *idx;           /* prompts of this domain (indices into calib) */
};

/* Profile section names allow [A-Za-z0-9_.-] only. */
static void section_name(char *buf, size_t size, const char *domain)
{
	size_t j = snprintf(buf, size, "domain.");
	for (size_t i = 0; domain[i] && j + 1 < size; i++) {
		char ch = domain[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		         ch == '-' || ch == '.';
		buf[j++] = ok ? ch : '_';
	}
	buf[j] = 0;
}

static int group(const struct skipper_calibrate *c, struct domain **out, int *n_out)
{
	struct domain *d = NULL;
	int n = 0;
	for (int i = 0; i < c->n_prompts; i++) {
		int k = 0;
		while (k < n && strcmp(d[k].name, c->categories[i]))
			k++;
		if (k == n) {
			struct domain *nd = realloc(d, (size_t)(n + 1) * sizeof *nd);
			if (!nd)
				goto fail;
			d = nd;
			d[n].name = c->categories[i];
			d[n].n = 0;
			if (!(d[n].idx = malloc((size_t)c->n_prompts * sizeof(int))))
				goto fail;
			n++;
		}
		d[k].idx[d[k].n++] = i;
	}
	*out = d;
	*n_out = n;
	return SKIPPER_POLICY_OK;
fail:
	for (int k = 0; k < n; k++)
		free(d[k].idx);
	free(d);
	return SKIPPER_POLICY_NOMEM;
}

/* Development set: prompts nearest the domain's centroids, one per centroid
 * per pass, so every cluster of the domain is represented. */
static int representatives(const float *emb, int n, int dim, const float *cent, int k, int want, int *pick)
{
	unsigned char *used = calloc((size_t)n, 1);
	int m = 0;
	if (!used)
		return -1;
	if (want > n)
		want = n;
	while (m < want)
		for (int c = 0; c < k && m < want; c++) {
			int best = -1;
			double bd = 0;
			for (int i = 0; i < n; i++) {
				double dd = vec_dist2(emb + (size_t)i * dim, cent + (size_t)c * dim, (size_t)dim);
				if (!used[i] && (best < 0 || dd < bd))
					best = i, bd = dd;
			}
			used[best] = 1;
			pick[m++] = best;
		}
	free(used);
	return m;
}

struct run {
	struct knn_router *r;
	const struct skipper_calibrate *c;
	struct skipper_profile *p;
	float *anchors, *labels;
	int n_anchors;
	const char *journal;   /* resume journal (maskjournal.h) */
};

static int calibrate_domain(struct run *u, int di, const struct domain *d)
{
	struct knn_router *r = u->r;
	const struct skipper_host *h = r->host;
	int dim = h->n_embd, k = r->anchors_per_domain, L = h->n_layer, rc = SKIPPER_POLICY_OK;
	int *sel = malloc((size_t)d->n * sizeof *sel), *pick = malloc((size_t)d->n * sizeof *pick);
	float *emb = malloc((size_t)d->n * (size_t)dim * sizeof *emb);
	const char **pr = malloc((size_t)d->n * sizeof *pr);
	uint8_t *attn = malloc((size_t)L), *mlp = malloc((size_t)L);
	char label[96], sec[96], buf[64];
	struct ssd_search s;
	struct ssd_result res;
	int n;

	if (!sel || !pick || !emb || !pr || !attn || !mlp) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	n = ssd_pick(d->n, r->embed_prompts, u->c->seed + (uint64_t)di, sel);
	for (int i = 0; i < n && !rc; i++) {
		rc = h->embed_prompt(r->ctx, u->c->prompts[d->idx[sel[i]]], emb + (size_t)i * dim);
		if (u->c->progress && !rc) {
			snprintf(label, sizeof label, "domain %s: embedding", d->name);
			u->c->progress(u->c->progress_ctx, i + 1, n, label);
		}
	}
	if (rc)
		goto out;
	float *cent = u->anchors + (size_t)u->n_anchors * dim;
	if (kmeans(emb, n, dim, k, 100, u->c->seed + (uint64_t)di, cent, NULL)) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	for (int j = 0; j < k; j++)
		u->labels[u->n_anchors + j] = (float)di;
	int m = representatives(emb, n, dim, cent, k, r->k.calib_prompts, pick);
	u->n_anchors += k;
	if (m < 0) {
		rc = SKIPPER_POLICY_NOMEM;
		goto out;
	}
	for (int i = 0; i < m; i++)
		pr[i] = u->c->prompts[d->idx[sel[pick[i]]]];
	ssd_search_setup(&s, &r->k, u->c);
	s.seed += (uint64_t)di;
	s.n_prompts = m;
	s.prompts = pr;
	snprintf(label, sizeof label, "domain %s", d->name);
	s.label = label;
	section_name(sec, sizeof sec, d->name);
	s.journal = u->journal;
	s.journal_section = sec;
	if ((rc = ssd_search_run(h, r->ctx, &s, attn, mlp, &res)))
		goto out;
	snprintf(buf, sizeof buf, "%d", n);
	if ((rc = h->profile_set(r->ctx, u->p, sec, "embedded_prompts", buf)))
		goto out;
	rc = ssd_record(h, r->ctx, u->p, sec, sec, &s, &res, attn, mlp);
	if (!rc)
		h->log(r->ctx, SKIPPER_LOG_INFO, "knn-router: domain %s: %d anchors, best %.1f tok/s (plain decoding %.1f) in %.1f s",
		       d->name, k, res.tokens_per_s, res.ar_tokens_per_s, res.seconds);
out:
	free(sel), free(pick), free(emb), free(pr), free(attn), free(mlp);
	return rc;
}

int knn_calibrate(void *state, const struct skipper_calibrate *c)
{
	struct knn_router *r = state;
	const struct skipper_host *h = r->host;
	struct run u = { .r = r, .c = c };
	struct domain *d = NULL;
	int nd = 0, rc;
	char *afile = NULL, *jfile = NULL, buf[32];

	if (h->n_layer <= 0 || c->n_prompts <= 0) {
		h->set_error(r->ctx, "calibrate needs a model and prompts");
		return SKIPPER_POLICY_ERROR;
	}
	if (!c->categories) {
		h->set_error(r->ctx, "knn-router needs a domain label per prompt (skipper calibrate --domains KEY)");
		return SKIPPER_POLICY_ERROR;
	}
	if ((rc = group(c, &d, &nd)))
		return rc;
	u.anchors = malloc((size_t)nd * r->anchors_per_domain * (size_t)h->n_embd * sizeof *u.anchors);
	u.labels = malloc((size_t)nd * r->anchors_per_domain * sizeof *u.labels);
	afile = ssd_sibling_path(c->output, ".anchors.safetensors");
	u.journal = jfile = ssd_sibling_path(c->output, ".search");
	if (!u.anchors || !u.labels || !afile || !jfile)
		rc = SKIPPER_POLICY_NOMEM;
	if (!rc)
		rc = h->profile_new(r->ctx, "knn-router", &u.p);
	for (int i = 0; i < nd && !rc; i++)
		rc = calibrate_domain(&u, i, &d[i]);
	if (!rc) {
		const char *base = strrchr(afile, '/');
		rc = h->profile_set(r->ctx, u.p, "knn", "anchors", base ? base + 1 : afile);
	}
	if (!rc) {
		snprintf(buf, sizeof buf, "%d", r->anchors_per_domain);
		rc = h->profile_set(r->ctx, u.p, "knn", "anchors_per_domain", buf);
	}
	if (!rc) {
		struct skipper_tensor t[2] = {
			{ .name = "anchors", .data = u.anchors, .rows = u.n_anchors, .cols = h->n_embd },
			{ .name = "labels", .data = u.labels, .rows = u.n_anchors, .cols = 1 },
		};
		rc = h->tensor_write(r->ctx, afile, t, 2);
	}
	if (!rc)
		rc = h->profile_write(r->ctx, u.p, c->output);
	if (u.p)
		h->profile_free(r->ctx, u.p);
	for (int i = 0; i < nd; i++)
		free(d[i].idx);
	free(d), free(u.anchors), free(u.labels), free(afile), free(jfile);
	return rc;
}
