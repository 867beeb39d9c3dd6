/* The access log: one line per request, to standard error or appended to
 * a file ([server] access_log). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "server.h"

struct access_log {
	FILE *f;
	int own;   /* a file we opened (else stderr) */
};

int access_log_open(const char *where, struct access_log **out, struct skipper_error *err)
{
	struct access_log *l;

	*out = NULL;
	if (strcmp(where, "off") == 0)
		return SKIPPER_OK;
	if (!(l = calloc(1, sizeof *l)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (!*where) {
		l->f = stderr;
	} else if (!(l->f = fopen(where, "a"))) {
		int e = errno;
		free(l);
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: cannot open the access log: %s", where, strerror(e));
	} else {
		l->own = 1;
		setvbuf(l->f, NULL, _IOLBF, 0);
	}
	*out = l;
	return SKIPPER_OK;
}

void access_log_close(struct access_log *l)
{
	if (!l)
		return;
	if (l->own)
		fclose(l->f);
	free(l);
}

/* A field the client chose (the path, the method), so that it cannot
 * forge lines or fields: printable ASCII, no quote, at most cap - 1 bytes. */
static const char *clean(const char *s, char *buf, size_t cap)
{
	size_t i = 0;

	for (; s && s[i] && i + 1 < cap; i++)
		buf[i] = s[i] > 0x20 && s[i] < 0x7f && s[i] != '"' ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

void access_log_write(struct access_log *l, const struct access_entry *e)
{
	char when[32], method[24], path[256];
	time_t t;
	struct tm tm;

	if (!l)
		return;
	t = time(NULL);
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* one call: stdio keeps the line whole among the connections' threads */
	fprintf(l->f, "%s %s \"%s %s\" %d %d %d %.3f %s\n", when, e->client, clean(e->method, method, sizeof method),
	        clean(e->path, path, sizeof path), e->status, e->prompt_tokens, e->completion_tokens, e->seconds,
	        e->finish ? e->finish : "-");
	fflush(l->f);
}
