#include <stdlib.h>
#include <string.h>

#include "keys.h"

int key_set_string(char **dst, const char *v)
{
	char *s = strdup(v);
	if (!s)
		return SKIPPER_POLICY_NOMEM;
	free(*dst);
	*dst = s;
	return SKIPPER_POLICY_OK;
}

int key_parse_int(const struct skipper_host *h, void *ctx, const char *v, int64_t lo, int64_t hi, int *out)
{
	int64_t i;
	int rc = h->parse_int(ctx, v, lo, hi, &i);
	if (rc == 0)
		*out = (int)i;
	return rc;
}
