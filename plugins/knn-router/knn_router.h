/* knn-router's state, shared by its run-time (knn_router.c), profile
 * loading (knn_profile.c) and calibration (knn_calibrate.c) files. */
#ifndef KNN_ROUTER_H
#define KNN_ROUTER_H

#include "common/drafting/costrule.h"
#include "common/selfsd/ssdkeys.h"
#include "econ/adaptive.h"
#include "skipper/policy.h"

struct knn_router {
	const struct skipper_host *host;
	void *ctx;
	struct ssd_keys k;
	char *profile;           /* owned; NULL = [policy] profile */
	int anchors_per_domain, embed_prompts;

	/* the loaded profile */
	int n_layer, n_embd;
	int n_domains;
	char **domains;          /* [n_domains] owned names */
	uint8_t *masks;          /* [n_domains][2][n_layer]: attn then mlp */
	int *max_draft;          /* [n_domains] profile cap (32 = none; 0 = drafting does not pay) */
	int n_anchors;
	float *anchors;          /* [n_anchors][n_embd], unit length */
	int *label;              /* [n_anchors] domain index */

	/* the current request */
	int route;
	double route_sim;
	struct econ_adaptive ad;
	struct cost_rule econ;     /* the cost rule; its acceptance estimate restarts with each request's domain */
};

const char *knn_profile_file(const struct knn_router *r);

/* Load profile INI + anchors; refuses a model or size mismatch. */
int knn_load(struct knn_router *r, const char *path);

/* Anchors file named in the profile, resolved against the profile's
 * directory; malloc'ed. */
char *knn_anchor_path(const char *profile_path, const char *name);

#endif
