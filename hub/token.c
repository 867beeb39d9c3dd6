/* Access tokens. The token lives only in memory: it is never part of an
 * error message, a file we write, or a URL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/error.h"
#include "base/file.h"
#include "hub/hub.h"

static char *trimmed_dup(const char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	return n ? strndup(s, n) : NULL;
}

int skipper_hub_token_load(const char *token_file, char **token, struct skipper_error *err)
{
	const char *env = getenv("HF_TOKEN");
	char *path = NULL, line[4096];
	struct skipper_error e = { 0 };
	FILE *f;
	int rc = SKIPPER_OK;

	*token = NULL;
	/* An explicitly configured file wins over the environment, like every
	 * other [hub] key; otherwise HF_TOKEN, then the default token file. */
	if (env && *env && !(token_file && *token_file)) {
		*token = trimmed_dup(env, strlen(env));
		return SKIPPER_OK;
	}
	if (token_file && *token_file) {
		path = strdup(token_file);
	} else {
		const char *home = getenv("HF_HOME");
		if (home && *home) {
			if (asprintf(&path, "%s/token", home) < 0)
				path = NULL;
		} else {
			home = getenv("HOME");
			if (asprintf(&path, "%s/.cache/huggingface/token", home && *home ? home : ".") < 0)
				path = NULL;
		}
	}
	if (!path)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	/* a token is a line: a FIFO is refused, not waited on, and a large
	 * file is not a token file */
	f = skipper_open_regular(path, "r", 64 << 10, NULL, &e);
	if (!f) {
		/* Only an explicitly configured file must exist. */
		if (e.status != SKIPPER_ERR_NOT_FOUND || (token_file && *token_file))
			rc = skipper_fail(err, SKIPPER_ERR_IO, "token file %s", e.msg);
		free(path);
		return rc;
	}
	if (fgets(line, sizeof line, f))
		*token = trimmed_dup(line, strlen(line));
	else if (ferror(f)) /* a directory opens, then fails to read */
		rc = skipper_fail(err, SKIPPER_ERR_IO, "token file %s: %s", path, strerror(errno));
	OPENSSL_cleanse(line, sizeof line);
	fclose(f);
	free(path);
	return rc;
}

void skipper_hub_token_free(char *token)
{
	if (token) {
		OPENSSL_cleanse(token, strlen(token));
		free(token);
	}
}
