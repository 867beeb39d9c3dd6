/* The policies built into libskipper: `none` (plain decoding, the baseline),
 * `lookup` (context-lookup drafts only, no layer skipping), and `trial`,
 * which only host->trial makes. */
#ifndef SKIPPER_POLICY_BUILTIN_H
#define SKIPPER_POLICY_BUILTIN_H

#include "build-config.h"
#include "skipper/policy.h"

extern const struct skipper_policy skipper_policy_none;
/* Drafts nothing itself: whoever runs it turns the engine's context lookup
 * on ([lookup] keys, skipper-policy-lookup(5)). */
extern const struct skipper_policy skipper_policy_lookup;
/* host->trial's runs (policy_trial.c): keys attn, mlp, max_draft,
 * threshold, adaptive, target_alpha, epsilon, beta1, beta2 (struct
 * skipper_trial's members). Never in a search path. */
extern const struct skipper_policy skipper_policy_trial;

#endif
