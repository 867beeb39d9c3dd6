/* Loading a knn-router profile: [domain.NAME] attn/mlp sections (file
 * order = domain index) and [knn] anchors = FILE, a safetensors file beside
 * the profile with `anchors` [n][n_embd] and `labels` [n][1] (domain index
 * as a float). Anything that does not fit the bound model is refused. */
#include <stdlib.h>
#include <string.h>

#include "common/numerics/vec.h"
#include "common/selfsd/masksearch.h"
#include "knn_router.h"

char *knn_anchor_path(const char *profile_path, const char *name)
{
	const char *slash = strrchr(profile_path, '/');
	size_t dir = slash ? (size_t)(slash - profile_path) + 1 : 0;
	char *s;
	if (name[0] == '/' || !dir)
		return strdup(name);
	if (!(s = malloc(dir + strlen(name) + 1)))
		return NULL;
	memcpy(s, profile_path, dir);
	strcpy(s + dir, name);
	return s;
}

static int load_domains(struct knn_router *r, const struct skipper_profile *p, const char *path)
{
	const struct skipper_host *h = r->host;
	const char *sec;
	int L = r->n_layer, rc;

	for (int i = 0; (sec = h->profile_section(r->ctx, p, i)); i++) {
		if (strncmp(sec, "domain.", 7) != 0)
			continue;
		int d = r->n_domains;
		char **nd = realloc(r->domains, (size_t)(d + 1) * sizeof *nd);
		if (!nd)
			return SKIPPER_POLICY_NOMEM;
		r->domains = nd;
		uint8_t *nm = realloc(r->masks, (size_t)(d + 1) * 2 * (size_t)L);
		if (!nm)
			return SKIPPER_POLICY_NOMEM;
		r->masks = nm;
		int *nk = realloc(r->max_draft, (size_t)(d + 1) * sizeof *nk);
		if (!nk)
			return SKIPPER_POLICY_NOMEM;
		r->max_draft = nk;
		nk[d] = 32;
		if ((rc = ssd_profile_max_draft(h, r->ctx, p, path, sec, &nk[d])))
			return rc;
		if (!(r->domains[d] = strdup(sec + 7)))
			return SKIPPER_POLICY_NOMEM;
		r->n_domains++;
		memset(nm + (size_t)d * 2 * L, 0, (size_t)2 * L);
		rc = h->profile_get_mask(r->ctx, p, sec, "attn", nm + (size_t)d * 2 * L);
		if (rc < 0 && rc != SKIPPER_POLICY_UNKNOWN_KEY)
			return rc;
		rc = h->profile_get_mask(r->ctx, p, sec, "mlp", nm + (size_t)d * 2 * L + L);
		if (rc < 0 && rc != SKIPPER_POLICY_UNKNOWN_KEY)
			return rc;
	}
	if (!r->n_domains) {
		h->set_error(r->ctx, "%s: no [domain.NAME] sections (not a knn-router profile?)", path);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int load_anchors(struct knn_router *r, const char *file)
{
	const struct skipper_host *h = r->host;
	float *lab = NULL;
	int rows, cols, lr, lc, rc;

	rc = h->tensor_read(r->ctx, file, "anchors", NULL, 0, &rows, &cols);
	if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
		h->set_error(r->ctx, "%s: no tensor 'anchors'", file);
	if (rc)
		return rc < 0 && rc != SKIPPER_POLICY_UNKNOWN_KEY ? rc : SKIPPER_POLICY_ERROR;
	if (cols != r->n_embd || rows <= 0) {
		h->set_error(r->ctx, "%s: anchors are %d x %d, the model's hidden size is %d (profile for another model?)",
		             file, rows, cols, r->n_embd);
		return SKIPPER_POLICY_ERROR;
	}
	r->anchors = malloc((size_t)rows * (size_t)cols * sizeof *r->anchors);
	r->label = malloc((size_t)rows * sizeof *r->label);
	lab = malloc((size_t)rows * sizeof *lab);
	if (!r->anchors || !r->label || !lab) {
		free(lab);
		return SKIPPER_POLICY_NOMEM;
	}
	if ((rc = h->tensor_read(r->ctx, file, "anchors", r->anchors, (size_t)rows * cols, &rows, &cols)))
		goto out;
	rc = h->tensor_read(r->ctx, file, "labels", NULL, 0, &lr, &lc);
	if (rc == 0 && (lr != rows || lc != 1)) {
		h->set_error(r->ctx, "%s: labels are %d x %d, expected %d x 1", file, lr, lc, rows);
		rc = SKIPPER_POLICY_ERROR;
	} else if (rc == SKIPPER_POLICY_UNKNOWN_KEY) {
		h->set_error(r->ctx, "%s: no tensor 'labels'", file);
		rc = SKIPPER_POLICY_ERROR;
	}
	if (rc || (rc = h->tensor_read(r->ctx, file, "labels", lab, (size_t)rows, &lr, &lc)))
		goto out;
	for (int i = 0; i < rows; i++) {
		int d = (int)lab[i];
		if (d < 0 || d >= r->n_domains || (float)d != lab[i]) {
			h->set_error(r->ctx, "%s: anchor %d has label %g, the profile has %d domains", file, i,
			             (double)lab[i], r->n_domains);
			rc = SKIPPER_POLICY_ERROR;
			goto out;
		}
		r->label[i] = d;
		/* unit rows: routing becomes a dot product per anchor; a row of
		 * zeros has no direction to route by */
		if (vec_dot(r->anchors + (size_t)i * cols, r->anchors + (size_t)i * cols, (size_t)cols) <= 0) {
			h->set_error(r->ctx, "%s: anchor %d is all zeros", file, i);
			rc = SKIPPER_POLICY_ERROR;
			goto out;
		}
		vec_normalize(r->anchors + (size_t)i * cols, (size_t)cols);
	}
	r->n_anchors = rows;
out:
	free(lab);
	return rc;
}

int knn_load(struct knn_router *r, const char *path)
{
	const struct skipper_host *h = r->host;
	struct skipper_profile *p;
	const char *name;
	char *file = NULL;
	int rc;

	r->n_layer = h->n_layer;
	r->n_embd = h->n_embd;
	if ((rc = h->profile_read(r->ctx, path, &p)))
		return rc; /* the host refuses another model's hash or layer count */
	if (!(rc = ssd_profile_method(h, r->ctx, p, path, "knn-router")))
		rc = load_domains(r, p, path);
	if (!rc && !(name = h->profile_get(r->ctx, p, "knn", "anchors"))) {
		h->set_error(r->ctx, "%s: no [knn] anchors = FILE", path);
		rc = SKIPPER_POLICY_ERROR;
	}
	if (!rc && !(file = knn_anchor_path(path, name)))
		rc = SKIPPER_POLICY_NOMEM;
	if (!rc)
		rc = load_anchors(r, file);
	free(file);
	h->profile_free(r->ctx, p);
	return rc;
}
