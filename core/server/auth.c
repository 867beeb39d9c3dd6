/* --api-key-file: the key clients must send as "Authorization: Bearer KEY".
 * The key is never logged nor put in a message. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/file.h"
#include "base/text.h"
#include "server.h"

#define KEY_MAX 4096

struct server_auth {
	char *key;
	size_t len;
};

int auth_load(const char *path, struct server_auth **out, struct skipper_error *err)
{
	struct server_auth *a;
	FILE *f = skipper_open_regular(path, "r", KEY_MAX, "API key file", err);
	char why[128], *text, *p, *end;

	if (!f)
		return SKIPPER_ERR_CONFIG;
	text = skipper_read_all(f, KEY_MAX, why, sizeof why);
	fclose(f);
	if (!text)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: API key file: %s", path, why);
	for (p = text; *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'; p++)
		;
	for (end = p + strlen(p); end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n');)
		*--end = '\0';
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			explicit_bzero(text, strlen(text));
			free(text);
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: API key file: the key holds white space or a control character "
			                    "(one key on one line)", path);
		}
	if (!*p) {
		free(text);
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: API key file: no key in it", path);
	}
	if (!(a = calloc(1, sizeof *a)) || !(a->key = strdup(p))) {
		free(a);
		explicit_bzero(text, strlen(text));
		free(text);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	a->len = strlen(p);
	explicit_bzero(text, strlen(p) + (size_t)(p - text));
	free(text);
	*out = a;
	return SKIPPER_OK;
}

void auth_free(struct server_auth *a)
{
	if (!a)
		return;
	explicit_bzero(a->key, a->len);
	free(a->key);
	free(a);
}

int auth_check(const struct server_auth *a, const char *authorization)
{
	const char *given;
	size_t n;
	unsigned char diff;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return 0;
	for (given = authorization + 7; *given == ' '; given++)
		;
	for (n = strlen(given); n && given[n - 1] == ' '; n--)
		;
	/* every byte of the key is compared whatever the client sent, so that
	 * the time taken tells nothing of how much of it was right */
	diff = n != a->len;
	for (size_t i = 0; i < a->len; i++)
		diff |= (unsigned char)(a->key[i] ^ (i < n ? given[i] : 0));
	return diff == 0;
}
