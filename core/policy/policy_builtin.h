/* The policies built into libskipper: `none` (plain decoding, the baseline)
 * and `lookup` (context-lookup drafts only, no layer skipping). */
#ifndef SKIPPER_POLICY_BUILTIN_H
#define SKIPPER_POLICY_BUILTIN_H

#include "build-config.h"
#include "skipper/policy.h"

extern const struct skipper_policy skipper_policy_none;
/* Drafts nothing itself: whoever runs it turns the engine's context lookup
 * on ([lookup] keys, skipper-policy-lookup(5)). */
extern const struct skipper_policy skipper_policy_lookup;

#endif
