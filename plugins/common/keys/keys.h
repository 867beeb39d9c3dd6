/* Small INI-key helpers every policy's config() needs, so each plugin does
 * not grow its own copy. Errors are set through the host like its parsers'. */
#ifndef COMMON_KEYS_KEYS_H
#define COMMON_KEYS_KEYS_H

#include <stdint.h>

#include "skipper/policy.h"

/* Replace the owned string *dst with a copy of v (the old one is freed only
 * once the copy exists). SKIPPER_POLICY_OK or SKIPPER_POLICY_NOMEM. */
int key_set_string(char **dst, const char *v);

/* host->parse_int into an int; *out is left alone on error. */
int key_parse_int(const struct skipper_host *h, void *ctx, const char *v, int64_t lo, int64_t hi, int *out);

#endif
