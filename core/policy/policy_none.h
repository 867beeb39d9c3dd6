#ifndef SKIPPER_POLICY_NONE_H
#define SKIPPER_POLICY_NONE_H

#include "build-config.h"
#include "skipper/policy.h"

extern const struct skipper_policy skipper_policy_none;

#endif
