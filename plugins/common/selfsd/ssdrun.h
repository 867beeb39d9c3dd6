/* The run-time half bo-static and knn-router share: one skip set drafts a
 * round, capped by the K key, the profile's max_draft and the cost rule of
 * common/drafting/costrule.h, and the draft exits on the static or adaptive threshold of
 * ssd_keys inside that cap. */
#ifndef COMMON_SELFSD_SSDRUN_H
#define COMMON_SELFSD_SSDRUN_H

#include <stdint.h>

#include "common/drafting/costrule.h"
#include "econ/adaptive.h"
#include "skipper/policy.h"
#include "ssdkeys.h"

/* select_draft: the set attn/mlp[n_layer] into plan, max_draft capped at
 * k_max, at prof_max (the profile's; 0 = drafting does not pay) and by
 * cost_rule_plan. A plan for another layer count is an error. */
int ssd_plan(const struct skipper_host *h, void *ctx, struct skipper_plan *plan, int n_layer, const uint8_t *attn,
             const uint8_t *mlp, int k_max, int prof_max, struct cost_rule *econ);

/* should_exit: conf_j is the raw top probability (Self-SD Alg. 4), also
 * when sampling. */
int ssd_should_exit(const struct ssd_keys *k, const struct econ_adaptive *ad, const struct skipper_step *step);

/* on_accept: the adaptive rule's update (nothing when adaptive is off) and
 * the acceptance estimate of the cost rule. */
void ssd_on_accept(const struct ssd_keys *k, struct econ_adaptive *ad, struct cost_rule *econ,
                   const struct skipper_verdict *v);

#endif
